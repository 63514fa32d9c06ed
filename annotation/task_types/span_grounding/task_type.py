"""``span_grounding``: highlight the factual spans of an argument and ground each to a KB variable or Others
(ArgU §3.1, Phase 1: Span Detection + Span Grounding), optionally with the argument's schemes.

Config (``project.config``)::

    {"ask_schemes": false,            # also ask which argument scheme(s) the argument follows (multi-label)
     "schemes": [...],                # default: the paper's six Walton-based schemes + "Others" (annotation.task_types.span_grounding.schemes)
     "variables_per_item": [2, 5],    # how many of the topic's active KB variables an item offers (paper: 2 to 5)
     "show_stance": true, "show_scheme": false,
     "seed": 0,                       # variable choice is seeded by this and the sentence's content hash
     "threshold": null}               # votes a token needs in the aggregate (default a strict majority)

Item payload (:meth:`SpanGrounding.build_items` / :func:`build_payload`)::

    {"argument_id": <corpus Sentence id>, "text": "...", "topic": "...", "stance": "pro" | "con" | "none",
     "scheme": "From Consequence",            # optional (sentence.metadata["scheme"]), shown when show_scheme
     "tokens": [[0, 14], [15, 23], ...],       # [begin, end) of every token: spans snap to these
     "variables": [{"id": 7, "text": "..."}, ...],   # 2-5 active variables of the topic, keys 1..5 in this order
     "suggestions": [{"begin", "end", "variable": id | null, "source": "model:<version>" | "silver"}, ...]}

Suggestions come from the sentence's ``metadata["spans"]`` (silver) or, when a model is active, from
:func:`ml.spans.suggest` (the project's active ``argspan`` version), which is given each item's offered variables so
that its spans arrive grounded to one of them (or Others).

Response (JSON)::

    {"spans": [{"begin": 0, "end": 14, "variable": 7 | null (= Others), "from_suggestion": false}, ...],
     "rejected": [{"begin": 40, "end": 52}, ...],   # suggestions the annotator rejected (also "40:52" or [40, 52])
     "schemes": ["From Consequence"]}          # only when ask_schemes; [] = none

No-JS form: ``item-<id>-spans[]`` = ``"begin:end:variable"`` (variable an id or ``other``),
``item-<id>-suggested[]`` = ``"begin:end"`` of the suggestions the annotator decided on: taken when a span has those
offsets, else rejected (the no-JS page lists every suggestion, its menu's "leave it" is a rejection),
``item-<id>-rejected[]`` = ``"begin:end"`` of rejected suggestions (what the script sends), ``item-<id>-schemes[]``.
An empty span list is a valid answer (no factual span).

Refusals (HTTP 400 ``responses.<item>.<field>``): ``spans`` (outside the text, not on token boundaries, empty,
overlapping: "spans overlap: ..."), ``variable`` (not offered for this item), ``rejected`` (not one of the item's
suggestions, or also taken as a span from that suggestion), ``schemes`` (unknown scheme, or schemes sent to a project
that does not ask them). Cleaned data: spans sorted by begin, each with its ``text``; ``from_suggestion`` is kept only
when the span's offsets are those of one of the item's suggestions; ``rejected`` (sorted ``{"begin", "end"}``) is
stored when the annotator rejected a suggestion -- a suggestion neither taken nor rejected stays undecided
(:mod:`annotation.task_types.span_grounding.suggestions` counts the decisions: acceptance rate per project, per suggestion in the export).

Gold: ``GoldItem.expected`` in the response shape; the score is the mean of token F1 and grounding accuracy
(:mod:`annotation.task_types.span_grounding.metrics`); no expected span -> 1.0 only for an empty answer.
"""

from __future__ import annotations

import itertools
import json
import random
import re

from annotation import providers
from annotation.services import ProjectInvalid
from annotation.task_types.span_grounding import metrics
from annotation.task_types.span_grounding.aggregation import aggregate_spans
from annotation.task_types.span_grounding.agreement import reliability_data
from annotation.task_types.span_grounding.export import export_row
from annotation.task_types.span_grounding.schemes import (
    DEFAULT_SCHEMES,
    aggregate_schemes,
    clean_scheme_list,
    match_scheme,
)
from corpus.models import FactVariable
from corpus.tokens import token_offsets

from .. import register
from ..base import ResponseInvalid, TaskType
from . import NAME

DEFAULT_VARIABLES_PER_ITEM = [2, 5]
MAX_VARIABLES = 5  # keys 1..5 on the page
RESPONSE_FIELDS = {"spans", "suggested", "rejected", "schemes"}
_FORM_SPAN = re.compile(r"^\s*(-?\d+)\s*:\s*(-?\d+)\s*(?::\s*([^:\s]*)\s*)?$")
_OTHER = {"", "other", "others", "null", "none"}


def config_of(project) -> dict:
    """The project's config with the defaults filled in (never raises)."""
    config = dict(getattr(project, "config", None) or {})
    config.setdefault("ask_schemes", False)
    config.setdefault("schemes", list(DEFAULT_SCHEMES))
    config.setdefault("variables_per_item", list(DEFAULT_VARIABLES_PER_ITEM))
    config.setdefault("show_stance", True)
    config.setdefault("show_scheme", False)
    return config


def choose_variables(candidates: list, k_range, *, seed, key: str, required=()) -> list:
    """Seeded choice of ``lo..hi`` of ``candidates`` (objects with ``pk``): ``required`` ones first, then random
    others; returned in a seeded shuffled order (the order the page shows them with keys 1..5)."""
    lo, hi = int(k_range[0]), int(k_range[1])
    rng = random.Random(f"{seed}:{key}")
    hi = min(hi, len(candidates))
    lo = min(lo, hi)
    k = rng.randint(lo, hi) if hi > 0 else 0
    req_ids = list(required)
    chosen = [c for c in candidates if c.pk in req_ids][:hi]
    k = max(k, len(chosen))
    rest = [c for c in candidates if c.pk not in req_ids]
    chosen += rng.sample(rest, min(k - len(chosen), len(rest)))
    rng.shuffle(chosen)
    return chosen


def clean_suggestions(raw, text: str, variable_ids: set, *, source: str = "silver") -> list[dict]:
    """Suggestions that lie inside ``text`` and do not overlap, sorted; a variable not offered becomes null."""
    out: list[dict] = []
    for s in raw or []:
        try:
            b, e = int(s["begin"]), int(s["end"])
        except (KeyError, TypeError, ValueError):
            continue
        if not 0 <= b < e <= len(text):
            continue
        v = s.get("variable")
        v = v if isinstance(v, int) and not isinstance(v, bool) and v in variable_ids else None
        row = {"begin": b, "end": e, "variable": v, "source": str(s.get("source") or source)}
        conf = s.get("confidence")
        if isinstance(conf, (int, float)) and not isinstance(conf, bool):
            row["confidence"] = round(float(conf), 4)
        out.append(row)
    out.sort(key=lambda s: (s["begin"], s["end"]))
    kept: list[dict] = []
    for s in out:
        if not kept or s["begin"] >= kept[-1]["end"]:
            kept.append(s)
    return kept


def build_payload(sentence, variables: list, *, suggestions=None) -> dict:
    """The payload of one corpus Sentence with its chosen ``variables`` (FactVariable rows)."""
    text = sentence.text
    topic = getattr(sentence, "topic", None)
    meta = sentence.metadata or {}
    payload = {
        "argument_id": sentence.pk,
        "text": text,
        "topic": str(topic) if topic else "",
        "stance": sentence.stance,
        "tokens": token_offsets(text),
        "variables": [{"id": v.pk, "text": v.text} for v in variables],
        "suggestions": [],
    }
    if meta.get("scheme"):
        payload["scheme"] = str(meta["scheme"])
    ids = {v.pk for v in variables}
    if suggestions is None and meta.get("spans"):
        suggestions = clean_suggestions(meta["spans"], text, ids, source="silver")
    payload["suggestions"] = clean_suggestions(suggestions, text, ids) if suggestions else []
    return payload


# --- response parsing ---------------------------------------------------------------------------------
def _int(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return None


def _variable(value):
    """``None`` for Others; an int id; raise ValueError on anything else."""
    if value is None or (isinstance(value, str) and value.strip().lower() in _OTHER):
        return None
    v = _int(value)
    if v is None:
        raise ValueError(value)
    return v


def _as_list(value):
    if value is None or value == "":
        return []
    if isinstance(value, (str, dict)):
        return [value]
    if isinstance(value, (list, tuple)):
        return list(value)
    raise ResponseInvalid("spans", "expected a list of spans")


def parse_spans(raw_spans, raw_suggested) -> list[dict]:
    """JSON spans or form strings -> ``[{"begin", "end", "variable", "from_suggestion"}]`` (unchecked offsets)."""
    suggested: set[tuple[int, int]] = set()
    for s in _as_list(raw_suggested):
        m = _FORM_SPAN.match(s) if isinstance(s, str) else None
        if not m:
            raise ResponseInvalid("suggested", f"{s!r} is not begin:end")
        suggested.add((int(m.group(1)), int(m.group(2))))
    out = []
    for s in _as_list(raw_spans):
        if isinstance(s, str):
            if not s.strip():
                continue
            m = _FORM_SPAN.match(s)
            if not m:
                raise ResponseInvalid("spans", f"{s!r} is not begin:end:variable")
            begin, end = int(m.group(1)), int(m.group(2))
            try:
                variable = _variable(m.group(3))
            except ValueError:
                raise ResponseInvalid("variable", f"{m.group(3)!r} is not a variable id or 'other'") from None
            out.append({"begin": begin, "end": end, "variable": variable, "from_suggestion": (begin, end) in suggested})
            continue
        if isinstance(s, (list, tuple)) and len(s) in (2, 3):
            s = {"begin": s[0], "end": s[1], "variable": s[2] if len(s) == 3 else None}
        if not isinstance(s, dict):
            raise ResponseInvalid("spans", f"{s!r} is not a span {{begin, end, variable}}")
        extra = set(s) - {"begin", "end", "variable", "from_suggestion", "text"}
        if extra:
            raise ResponseInvalid("spans", f"unknown span field {sorted(extra)[0]!r}")
        begin, end = _int(s.get("begin")), _int(s.get("end"))
        if begin is None or end is None:
            raise ResponseInvalid("spans", "begin and end must be whole numbers (character offsets)")
        try:
            variable = _variable(s.get("variable"))
        except ValueError:
            raise ResponseInvalid("variable", f"{s.get('variable')!r} is not a variable id or null (Others)") from None
        flag = s.get("from_suggestion", False)
        if isinstance(flag, str):
            flag = flag.strip().lower() in {"1", "true", "on", "yes"}
        if not isinstance(flag, bool):
            raise ResponseInvalid("spans", "from_suggestion must be true or false")
        out.append(
            {"begin": begin, "end": end, "variable": variable, "from_suggestion": flag or (begin, end) in suggested}
        )
    return out


def parse_offsets(raw, field: str) -> list[tuple[int, int]]:
    """``"begin:end"`` strings, ``[begin, end]`` pairs or ``{"begin", "end"}`` objects -> offsets (unchecked)."""
    if raw is not None and not isinstance(raw, (str, dict, list, tuple)):
        raise ResponseInvalid(field, "expected a list of begin:end")
    out = []
    for s in _as_list(raw):
        if isinstance(s, str):
            if not s.strip():
                continue
            m = _FORM_SPAN.match(s)
            if not m or m.group(3):
                raise ResponseInvalid(field, f"{s!r} is not begin:end")
            out.append((int(m.group(1)), int(m.group(2))))
            continue
        if isinstance(s, (list, tuple)) and len(s) == 2:
            s = {"begin": s[0], "end": s[1]}
        if not isinstance(s, dict) or set(s) - {"begin", "end", "variable", "source", "text"}:
            raise ResponseInvalid(field, f"{s!r} is not a suggestion {{begin, end}}")
        b, e = _int(s.get("begin")), _int(s.get("end"))
        if b is None or e is None:
            raise ResponseInvalid(field, "begin and end must be whole numbers (character offsets)")
        out.append((b, e))
    return out


def suggestion_decisions(text: str, suggestions, spans: list[dict], raw_rejected, raw_suggested) -> list[dict]:
    """The rejected suggestions of a response: those named in ``rejected`` (each must be one of ``suggestions``
    and not also taken as a span from it) plus those named in ``suggested`` that no span took."""
    offered = {(int(s["begin"]), int(s["end"])) for s in suggestions or []}
    taken = {(s["begin"], s["end"]) for s in spans if s["from_suggestion"]}
    rejected: set[tuple[int, int]] = set()
    for b, e in parse_offsets(raw_rejected, "rejected"):
        if (b, e) not in offered:
            what = repr(text[b:e]) if 0 <= b < e <= len(text) else "that"
            raise ResponseInvalid("rejected", f"{b}:{e} ({what}) is not one of this item's suggestions")
        if (b, e) in taken:
            raise ResponseInvalid(
                "rejected", f"the suggestion {text[b:e]!r} ({b}:{e}) is both taken as a span and rejected"
            )
        rejected.add((b, e))
    span_offsets = {(s["begin"], s["end"]) for s in spans}
    for b, e in parse_offsets(raw_suggested, "suggested"):
        if (b, e) in offered and (b, e) not in span_offsets:
            rejected.add((b, e))  # decided on (no-JS menu: "leave it") and not taken
    return [{"begin": b, "end": e} for b, e in sorted(rejected)]


def check_spans(text: str, tokens, spans: list[dict], offered: set) -> list[dict]:
    """Offsets on token boundaries inside the text, no empty or overlapping span, offered variables only."""
    starts = {int(b) for b, _ in tokens}
    ends = {int(e) for _, e in tokens}
    for s in spans:
        b, e = s["begin"], s["end"]
        if b < 0 or e > len(text) or b > len(text) or e < 0:
            raise ResponseInvalid("spans", f"{b}:{e} is outside the text ({len(text)} characters)")
        if e <= b:
            raise ResponseInvalid("spans", f"{b}:{e} is an empty span")
        if b not in starts or e not in ends:
            where = "start" if b not in starts else "end"
            raise ResponseInvalid(
                "spans", f"{text[b:e]!r} ({b}:{e}) does not {where} on a token boundary: a span covers whole tokens"
            )
        if s["variable"] is not None and s["variable"] not in offered:
            raise ResponseInvalid("variable", f"variable {s['variable']} was not offered for this item")
    spans = sorted(spans, key=lambda s: (s["begin"], s["end"]))
    for a, b in itertools.pairwise(spans):
        if b["begin"] < a["end"]:
            raise ResponseInvalid(
                "spans",
                f"spans overlap: {text[a['begin'] : a['end']]!r} ({a['begin']}:{a['end']}) "
                f"and {text[b['begin'] : b['end']]!r} ({b['begin']}:{b['end']})",
            )
    return spans


@register
class SpanGrounding(TaskType):
    name = NAME
    label = "Factual spans grounded to the KB (+ argument schemes)"
    release_kinds = ("spans",)  # export.KIND, registered in release.py
    template = "task_types/span_grounding/hit.html"
    script = "task_types/span_grounding/hit.js"
    stylesheet = "task_types/span_grounding/hit.css"
    builds_from_sentences = True
    guidelines_template = "task_types/span_grounding/guidelines.html"
    config_keys = {
        "ask_schemes": "true: also ask which argument schemes the argument follows (default false)",
        "schemes": "the schemes offered, in order (default the six Walton-based schemes + Others)",
        "variables_per_item": "[min, max] KB variables of the topic an item offers, 1 to 5 (default [2, 5])",
        "show_stance": "show the argument's stance (default true)",
        "show_scheme": "show the argument's scheme from the corpus (default false)",
        "seed": "seed of the variables each item offers, with the sentence's content hash (default 0)",
        "threshold": "votes a token needs in the aggregate (default null: a strict majority)",
    }
    keys_help = (
        (
            "drag over words, or <kbd>←</kbd><kbd>→</kbd> and <kbd>Shift</kbd>+<kbd>←</kbd><kbd>→</kbd>, then <kbd>Enter</kbd>",
            "mark a factual span (snaps to whole words)",
        ),
        ("<kbd>1</kbd>…<kbd>5</kbd>", "ground the selected span to that variable (the list beside the argument)"),
        ("<kbd>0</kbd> or <kbd>O</kbd>", "ground the selected span to Others"),
        (
            "<kbd>Shift</kbd>+<kbd>←</kbd><kbd>→</kbd> / <kbd>Alt</kbd>+<kbd>Shift</kbd>+<kbd>←</kbd><kbd>→</kbd>",
            "on a selected span: move its end / its start (or drag its handles)",
        ),
        ("<kbd>Del</kbd>", "remove the selected span"),
        ("<kbd>A</kbd> / <kbd>R</kbd>", "accept / reject the outlined suggestion"),
    )

    # --- set-up -----------------------------------------------------------------------------------
    def clean_config(self, config):
        config = dict(config or {})
        for flag, default in (("ask_schemes", False), ("show_stance", True), ("show_scheme", False)):
            value = config.get(flag, default)
            if not isinstance(value, bool):
                raise ResponseInvalid(flag, "true or false")
            config[flag] = value
        try:
            config["schemes"] = clean_scheme_list(config.get("schemes", list(DEFAULT_SCHEMES)))
        except ValueError as exc:
            raise ResponseInvalid("schemes", str(exc)) from None
        k = config.get("variables_per_item", list(DEFAULT_VARIABLES_PER_ITEM))
        if (
            not isinstance(k, (list, tuple))
            or len(k) != 2
            or any(_int(v) is None or isinstance(v, str) for v in k)
            or not 1 <= k[0] <= k[1] <= MAX_VARIABLES
        ):
            raise ResponseInvalid("variables_per_item", f"[min, max] with 1 <= min <= max <= {MAX_VARIABLES}")
        config["variables_per_item"] = [int(k[0]), int(k[1])]
        threshold = config.get("threshold")
        if threshold is not None and (_int(threshold) is None or isinstance(threshold, str) or threshold < 1):
            raise ResponseInvalid("threshold", "a whole number of votes >= 1 (or null for a majority)")
        seed = config.get("seed", 0)
        if _int(seed) is None or isinstance(seed, str):
            raise ResponseInvalid("seed", "a whole number")
        return config

    def build_items(self, project, rows):
        """One item per corpus Sentence, offering ``variables_per_item`` active KB variables of its topic
        (the sentence's own ``metadata["variables"]`` ids first, when it has them), seeded per sentence."""
        config = config_of(project)
        seed = config.get("seed", 0)
        rows = list(rows)
        by_topic: dict[int, list] = {}
        payloads = []
        for sentence in rows:
            if sentence.topic_id not in by_topic:
                by_topic[sentence.topic_id] = list(
                    FactVariable.objects.filter(topic_id=sentence.topic_id, status=FactVariable.Status.ACTIVE).order_by(
                        "id"
                    )
                )
            candidates = by_topic[sentence.topic_id]
            lo = config["variables_per_item"][0]
            if len(candidates) < lo:
                raise ProjectInvalid(
                    "variables",
                    f"topic {str(sentence.topic)!r} has {len(candidates)} active fact "
                    f"variable(s); an item needs at least {lo} (import the KB first)",
                )
            required = [v for v in ((sentence.metadata or {}).get("variables") or []) if isinstance(v, int)]
            chosen = choose_variables(
                candidates,
                config["variables_per_item"],
                seed=seed,
                key=sentence.content_hash or str(sentence.pk),
                required=required,
            )
            payloads.append(build_payload(sentence, chosen))
        if providers.span_suggester.filled and payloads:
            # the offered variables go with each text: the model grounds its spans to one of them (or Others)
            suggested = (
                providers.span_suggester(
                    project, [p["text"] for p in payloads], [[dict(v) for v in p["variables"]] for p in payloads]
                )
                or []
            )
            for payload, raw in zip(payloads, suggested):
                if raw:
                    ids = {v["id"] for v in payload["variables"]}
                    payload["suggestions"] = clean_suggestions(raw, payload["text"], ids, source="model")
        return payloads

    def item_links(self, payload):
        links = {}
        argument_id = payload.get("argument_id")
        if isinstance(argument_id, int) and not isinstance(argument_id, bool):
            links["sentence_id"] = argument_id
            links["external_key"] = f"sentence:{argument_id}"
        return links

    def item_context(self, project, item):
        config = config_of(project)
        payload = item.payload or {}
        text = payload.get("text", "")
        variables = [dict(v, key=i + 1) for i, v in enumerate(payload.get("variables") or [])]
        tokens = payload.get("tokens") or token_offsets(text)
        return {
            "item": item,
            "payload": payload,
            "config": config,
            "text": text,
            "topic": payload.get("topic", ""),
            "stance": payload.get("stance", ""),
            "scheme": payload.get("scheme", ""),
            "show_stance": config["show_stance"],
            "show_scheme": config["show_scheme"],
            "ask_schemes": config["ask_schemes"],
            "schemes": config["schemes"],
            "variables": variables,
            "suggestions": payload.get("suggestions") or [],
            "tokens": [{"begin": b, "end": e, "text": text[b:e]} for b, e in tokens],
            "tokens_json": json.dumps(tokens),
            "variables_json": json.dumps(variables),
            "suggestions_json": json.dumps(payload.get("suggestions") or []),
        }

    # --- responses ----------------------------------------------------------------------------------
    def validate_response(self, project, item, data, *, assignment=None):
        if not isinstance(data, dict):
            raise ResponseInvalid("spans", 'expected an object {"spans": [...]}')
        extra = set(data) - RESPONSE_FIELDS
        if extra:
            raise ResponseInvalid(sorted(extra)[0], "unknown field")
        config = config_of(project)
        payload = item.payload or {}
        text = payload.get("text", "")
        tokens = payload.get("tokens") or token_offsets(text)
        offered = {v["id"] for v in payload.get("variables") or [] if isinstance(v, dict)}
        spans = check_spans(text, tokens, parse_spans(data.get("spans"), data.get("suggested")), offered)
        suggestions = payload.get("suggestions") or []
        suggestion_offsets = {(int(s["begin"]), int(s["end"])) for s in suggestions}
        cleaned = {
            "spans": [
                {
                    "begin": s["begin"],
                    "end": s["end"],
                    "variable": s["variable"],
                    "from_suggestion": bool(s["from_suggestion"] and (s["begin"], s["end"]) in suggestion_offsets),
                    "text": text[s["begin"] : s["end"]],
                }
                for s in spans
            ]
        }
        rejected = suggestion_decisions(
            text, suggestions, cleaned["spans"], data.get("rejected"), data.get("suggested")
        )
        if rejected:
            cleaned["rejected"] = rejected
        raw_schemes = data.get("schemes")
        raw_schemes = [] if raw_schemes in (None, "") else raw_schemes
        if isinstance(raw_schemes, str):
            raw_schemes = [raw_schemes]
        if not isinstance(raw_schemes, list):
            raise ResponseInvalid("schemes", "expected a list of scheme names")
        if config["ask_schemes"]:
            chosen = set()
            for value in raw_schemes:
                if not isinstance(value, str) or not value.strip():
                    raise ResponseInvalid("schemes", f"{value!r} is not a scheme name")
                name = match_scheme(value, config["schemes"])
                if name is None:
                    raise ResponseInvalid(
                        "schemes", f"unknown scheme {value!r} (known: {', '.join(config['schemes'])})"
                    )
                chosen.add(name)
            cleaned["schemes"] = [s for s in config["schemes"] if s in chosen]
        elif any(str(v).strip() for v in raw_schemes):
            raise ResponseInvalid("schemes", "this project does not ask for argument schemes")
        return cleaned

    def score_gold(self, project, gold, data):
        expected = gold.expected or {}
        payload = gold.item.payload or {}
        text = payload.get("text", "")
        want, got = expected.get("spans") or [], data.get("spans") or []
        if not want:
            return 1.0 if not got else 0.0
        scores = metrics.evaluate_example(text, want, got, tokens=payload.get("tokens"))
        return (scores["f1"] + (scores["label_accuracy"] or 0.0)) / 2

    def aggregate(self, project, item, responses):
        config = config_of(project)
        payload = item.payload or {}
        text = payload.get("text", "")
        tokens = payload.get("tokens") or token_offsets(text)
        order = [v["id"] for v in payload.get("variables") or []]
        agg = aggregate_spans(
            text,
            tokens,
            [r.get("spans") or [] for r in responses],
            variable_order=order,
            threshold=config.get("threshold"),
        )
        names = {v["id"]: v["text"] for v in payload.get("variables") or []}
        for s in agg["spans"]:
            s["variable_text"] = names.get(s["variable"]) if s["variable"] is not None else "Others"
        out = {"spans": agg["spans"], "n": agg["n"], "threshold": agg["threshold"]}
        if config["ask_schemes"]:
            answered = [r.get("schemes") or [] for r in responses if "schemes" in r]
            out["schemes"] = aggregate_schemes(answered, config["schemes"], threshold=config.get("threshold"))
        return out

    def export_row(self, project, item, responses):
        """The ``spans`` export row (:func:`annotation.task_types.span_grounding.export.export_row`: normalised spans, suggestion
        decisions) without its ``annotations``: the generic exports (the ``annotations`` release, the project
        export) add every response themselves, with its worker."""
        row = export_row(project, item, responses, self.aggregate(project, item, responses))
        row.pop("annotations", None)
        return row

    # --- agreement ----------------------------------------------------------------------------------
    def reliability_data(self, project, items_responses):
        return reliability_data(project, items_responses)
