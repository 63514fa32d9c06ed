"""``aspect``: choose the aspects of an argument from ranked candidates (Arg-CTRL §3.1 Step 3, App. A).

Item payload (built by :meth:`Aspect.build_items` / :func:`build_payload`)::

    {"sentence_id": 12 | null, "text": "...", "topic": "nuclear energy",
     "stance": "pro" | "con" | "none" | "unknown",   # unknown: the source gave none (App. F null; never shown)
     "candidates": [{"id": "18:5", "begin": 18, "length": 5, "text": "clean", "score": 0.73}, ...],
                          # first list: the ranker's top-k (config top_k, default 10), best first
     "more": [{"id": "0:7", "begin": 0, "length": 7, "text": "Nuclear"}, ...],
                          # second list: every other filtered 1-4-gram, in sentence order (begin, length)
     "tokens": [[0, 7], [8, 14], ...],   # [begin, end) character offsets of every token (corpus.tokens.tokenize),
                          # what free spans snap to (config free_spans)
     "check": {"a": 3, "b": 4, "question": "3 + 4"},   # arithmetic asked with either checkbox
     "ranker": "baseline",
     "instruction": "Select 'kill birds' as the aspect of this sentence."   # optional, shown above the sentence
     "reference": {...}        # optional: aspects imported with the sentence (App. F), never shown
     "adjudicated": {...}}     # optional: an expert's final answer (see annotation.task_types.aspect.aggregation)

Response (JSON API, or the no-JS form ``item-<id>-aspects[]``, ``item-<id>-no_aspect``, ...)::

    {"aspects": ["18:5", ...],   # candidate ids "begin:length"; [18, 5] or {"begin": 18, "length": 5} also work
     "no_aspect": false,         # "The sentence contains no aspects"
     "not_in_lists": false,      # "The sentence contains aspects, but they are not in any of the lists"
     "check": "7"}               # digits: a + b; required when either checkbox is ticked

Refusals (HTTP 400 naming the field): unknown field; nothing chosen; a span outside the sentence, not among
the offered candidates (either list), or overlapping another chosen span (``aspects``); "no aspect" together
with aspects or with "not in lists" (``no_aspect``); a missing or wrong sum (``check``).

Free spans (``config["free_spans"] = true``; Arg-CTRL §3.1 Step 1, the experts' preliminary study with free
token-level spans): besides the offered candidates, any span of one or more whole tokens is accepted, of any
length (the study had aspects longer than 4 tokens): its begin must be a token's begin and its end a token's
end (:func:`corpus.tokens.tokenize`, the payload's ``tokens``). A span that cuts a token, covers
only whitespace, lies outside the sentence or overlaps another is refused (``aspects``) as in normal mode. In
normal mode a span that was not offered is refused.

Cleaned response (what is stored)::

    {"aspects": [{"begin": 18, "length": 5, "text": "clean", "list": "ranked" | "more" | "free"}, ...],  # by begin
     "no_aspect": false, "not_in_lists": false}

``"list": "free"`` marks a free span that was in neither list (an offered span keeps its list). Aggregation,
the App. F export and the unitized (alpha_u) data take spans as ``begin``/``length`` only, so free spans go
through them like any other.

Gold: ``GoldItem.expected = {"aspects": [{"begin", "length", "text"}], "no_aspect": false}``. Gold items are
the quality checks of App. A ("some HITs include easy-to-answer quality control questions. These will ask you to
select specific words as aspect(s)"): a gold item shows an instruction above its sentence, e.g. "Select 'kill
birds' as the aspect of this sentence." (:func:`gold_instruction`). It is stored as ``payload["instruction"]``
when gold is imported (``aspects import --as-gold``); a gold item added without one (``services.add_items(...,
gold=...)``, the admin) gets it from its ``GoldItem.expected`` when the page is drawn. ``payload["instruction"] =
""`` or ``config["gold_instructions"] = false`` turn it off (hidden gold).

First-list size (:func:`top_k_for`): ``top_k`` (default 10) for a sentence whose topic the ranker was trained on,
``top_k_cross_topic`` (default 15) for one it was not -- the paper's 10 in-topic and 15 cross-topic candidates,
chosen to keep recall@k >= 80% (§3.1 Step 2c). A trained ranker knows its training topics (its ModelVersion
records them, ``metrics["info"]["train_topics"]``): an item's topic that is not among them (case-insensitive)
is cross-topic. The baseline ranker (and a trained one that recorded no topics) has no training topics: then
``config["study"]`` decides for every item: ``"cross-topic"`` -> ``top_k_cross_topic``, ``"in-topic"`` (the
default) -> ``top_k``.

Config: ``top_k`` / ``top_k_cross_topic`` / ``study`` (above), ``threshold`` (votes needed to accept a span;
default a strict majority of R), ``ranker`` (a name from annotation.task_types.aspect.rankers), ``free_spans`` (default
false: see above; the page then lets the annotator select words in the sentence with the mouse or the keyboard;
the no-JS form stays candidate-only), ``gold_instructions`` (default true: see Gold).
"""

from __future__ import annotations

import itertools
import json

from annotation.task_types.aspect import unitized
from annotation.task_types.aspect.aggregation import adjudicate, final_answer
from annotation.task_types.aspect.appf import UNKNOWN, appf_row
from annotation.task_types.aspect.candidates import parse_span, span_id, tokenize
from annotation.task_types.aspect.items import (
    DEFAULT_TOP_K,
    DEFAULT_TOP_K_CROSS_TOPIC,
    STUDIES,
    build_payload,
    item_instruction,
    top_k_for,
)
from annotation.task_types.aspect.rankers import get_active_ranker, ranker_names
from corpus.tokens import token_offsets

from .. import register
from ..base import ResponseInvalid, TaskType

RESPONSE_FIELDS = {"aspects", "no_aspect", "not_in_lists", "check"}
_TRUE = {"1", "true", "on", "yes"}
_FALSE = {"", "0", "false", "off", "no"}


def free_spans(project) -> bool:
    """Whether the project lets annotators mark any token span (``config["free_spans"]``)."""
    return (getattr(project, "config", None) or {}).get("free_spans") is True


def token_span_error(text: str, begin: int, length: int) -> str | None:
    """Why ``text[begin:begin + length]`` is not a span of whole tokens (``None`` when it is one)."""
    tokens = tokenize(text)
    starts = {t.begin: i for i, t in enumerate(tokens)}
    ends = {t.end: i for i, t in enumerate(tokens)}
    end = begin + length
    if begin not in starts and end not in ends:
        return "neither starts nor ends on a word boundary"
    if begin not in starts:
        return "does not start at the beginning of a word"
    if end not in ends:
        return "does not end at the end of a word"
    if ends[end] < starts[begin]:  # cannot happen for length > 0, kept for safety
        return "covers no word"
    return None


def _flag(data: dict, name: str) -> bool:
    value = data.get(name, False)
    if isinstance(value, list):  # a no-JS form may repeat a checkbox
        value = value[-1] if value else False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ResponseInvalid(name, "expected true or false")


@register
class Aspect(TaskType):
    name = "aspect"
    label = "Aspects (ranked candidates)"
    release_kinds = ("aspects",)  # release.py
    template = "task_types/aspect/hit.html"
    script = "task_types/aspect/hit.js"
    stylesheet = "task_types/aspect/hit.css"
    guidelines_template = "task_types/aspect/guidelines.html"
    adjudication_template = "task_types/aspect/adjudicate.html"
    builds_from_sentences = True
    retrain_kinds = ("ranker",)  # the retrain loop trains a ranker from the project's final answers
    config_keys = {
        "top_k": "size of the first candidate list for a topic the ranker was trained on (default 10)",
        "top_k_cross_topic": "size of the first candidate list for a topic the ranker was not trained on (default 15)",
        "study": "in-topic or cross-topic: the first list's size when the ranker knows no training topics "
        "(default in-topic)",
        "threshold": "votes a span needs to be accepted (default null: a strict majority of R)",
        "ranker": "the candidate ranker when no trained one is active (default baseline)",
        "free_spans": "true: any span of whole words is accepted besides the candidates (default false)",
        "gold_instructions": "false: gold items show no 'Select ... as the aspect' instruction (default true)",
    }
    keys_help = (
        ("type, <kbd>↑</kbd> <kbd>↓</kbd>, <kbd>Enter</kbd>/<kbd>Tab</kbd>", "filter the candidates, move, pick"),
        ("<kbd>Backspace</kbd>", "in an empty field removes the last chosen aspect"),
        ("<kbd>Alt</kbd>+<kbd>M</kbd>", "show the second list (aspect not in the first list)"),
    )

    # --- set-up ---------------------------------------------------------------------------------
    def clean_config(self, config):
        config = dict(config or {})
        top_k = config.get("top_k", DEFAULT_TOP_K)
        if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
            raise ResponseInvalid("top_k", "a whole number >= 1")
        config["top_k"] = top_k
        cross = config.get("top_k_cross_topic", DEFAULT_TOP_K_CROSS_TOPIC)
        if not isinstance(cross, int) or isinstance(cross, bool) or cross < 1:
            raise ResponseInvalid("top_k_cross_topic", "a whole number >= 1")
        config["top_k_cross_topic"] = cross
        if "study" in config and config["study"] not in STUDIES:
            raise ResponseInvalid("study", f"one of {', '.join(STUDIES)}")
        if "gold_instructions" in config and not isinstance(config["gold_instructions"], bool):
            raise ResponseInvalid("gold_instructions", "true or false")
        threshold = config.get("threshold")
        if threshold is not None and (not isinstance(threshold, int) or isinstance(threshold, bool) or threshold < 1):
            raise ResponseInvalid("threshold", "a whole number of votes >= 1 (or null for a majority of R)")
        ranker = config.get("ranker", "baseline")
        if ranker not in ranker_names():
            raise ResponseInvalid("ranker", f"unknown ranker {ranker!r} (known: {', '.join(ranker_names())})")
        config["ranker"] = ranker
        if "free_spans" in config and not isinstance(config["free_spans"], bool):
            raise ResponseInvalid("free_spans", "true or false")
        return config

    def build_items(self, project, rows):
        ranker = get_active_ranker(project)
        items = []
        for sentence in rows:
            topic = getattr(sentence, "topic", None)
            topic = str(topic) if topic else ""
            stance = sentence.stance
            if stance == "none" and (sentence.metadata or {}).get("stance") == UNKNOWN:
                stance = UNKNOWN  # stored as "none" by the corpus, which has no unknown stance (appf.UNKNOWN_METADATA)
            items.append(
                build_payload(
                    sentence.text,
                    topic,
                    stance=stance,
                    sentence_id=sentence.pk,
                    ranker=ranker,
                    top_k=top_k_for(project.config, ranker, topic),
                )
            )
        return items

    def item_links(self, payload):
        links = {}
        sentence_id = payload.get("sentence_id")
        if isinstance(sentence_id, int):
            links["sentence_id"] = sentence_id
        reference = payload.get("reference")
        if isinstance(reference, dict) and reference.get("hash"):
            links["external_key"] = f"appf:{reference['hash']}"[:200]
        elif isinstance(sentence_id, int):
            links["external_key"] = f"sentence:{sentence_id}"
        return links

    def item_context(self, project, item):
        payload = item.payload or {}
        text = payload.get("text", "")
        free = free_spans(project)
        return {
            "item": item,
            "payload": payload,
            "text": text,
            "topic": payload.get("topic", ""),
            "candidates": payload.get("candidates", []),
            "more": payload.get("more", []),
            "check_question": (payload.get("check") or {}).get("question", ""),
            "instruction": item_instruction(project, item),
            # free mode: the page snaps selections to these (the server's own tokens, also for items
            # built before the payload carried "tokens")
            "free_spans": free,
            "tokens_json": json.dumps(token_offsets(text)) if free else "",
            # the offered ids: an answer's other aspects are free spans (hidden inputs, restored by its hit.js)
            "candidate_ids": [c["id"] for c in payload.get("candidates", []) + payload.get("more", [])],
        }

    def worker_payload(self, project, item, assignment=None):
        payload = super().worker_payload(project, item, assignment=assignment)
        payload.pop("instruction", None)  # "" (none) is not sent; a gold item's phrased one is
        instruction = item_instruction(project, item)
        if instruction:
            payload["instruction"] = instruction
        return payload

    # --- responses ------------------------------------------------------------------------------
    def validate_response(self, project, item, data, *, assignment=None):
        if not isinstance(data, dict):
            raise ResponseInvalid("aspects", 'expected an object {"aspects": [...], "no_aspect": false, ...}')
        extra = set(data) - RESPONSE_FIELDS
        if extra:
            raise ResponseInvalid(sorted(extra)[0], "unknown field")
        payload = item.payload or {}
        text = payload.get("text", "")
        offered = {c["id"]: "ranked" for c in payload.get("candidates", [])}
        for c in payload.get("more", []):
            offered.setdefault(c["id"], "more")
        free = free_spans(project)
        lists: dict[tuple[int, int], str] = {}

        raw = data.get("aspects", [])
        if raw is None or raw == "":
            raw = []
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list):
            raise ResponseInvalid("aspects", "expected a list of candidate ids")
        spans: list[tuple[int, int]] = []
        for value in raw:
            span = parse_span(value)
            if span is None:
                raise ResponseInvalid("aspects", f"{value!r} is not a candidate id (begin:length)")
            begin, length = span
            if begin < 0 or length <= 0 or begin + length > len(text):
                raise ResponseInvalid(
                    "aspects", f"{span_id(begin, length)} is outside the sentence ({len(text)} characters)"
                )
            if span_id(begin, length) in offered:
                lists[span] = offered[span_id(begin, length)]
            elif free:
                why = token_span_error(text, begin, length)
                if why:
                    raise ResponseInvalid(
                        "aspects",
                        f"{text[begin : begin + length]!r} ({span_id(begin, length)}) "
                        f"{why}: a free span must cover whole words",
                    )
                lists[span] = "free"
            else:
                raise ResponseInvalid(
                    "aspects",
                    f"{text[begin : begin + length]!r} ({span_id(begin, length)}) was not offered as a candidate",
                )
            spans.append(span)
        spans.sort()
        for (b1, l1), (b2, l2) in itertools.pairwise(spans):
            if b2 < b1 + l1:
                raise ResponseInvalid(
                    "aspects", f"aspects must not overlap: {text[b1 : b1 + l1]!r} and {text[b2 : b2 + l2]!r}"
                )
        no_aspect = _flag(data, "no_aspect")
        not_in_lists = _flag(data, "not_in_lists")
        if no_aspect and spans:
            raise ResponseInvalid("no_aspect", "you ticked 'no aspect' but also chose aspects")
        if no_aspect and not_in_lists:
            raise ResponseInvalid("no_aspect", "tick either 'no aspect' or 'not in the lists', not both")
        if not spans and not no_aspect and not not_in_lists:
            raise ResponseInvalid("aspects", "choose at least one aspect, or tick one of the checkboxes")
        # The sum is asked with either checkbox. An expected answer being set up for a gold item (an item not
        # saved yet, see services.add_items) is not a worker's answer and is not asked.
        if (no_aspect or not_in_lists) and item.pk is not None:
            check = payload.get("check") or {}
            answer = data.get("check")
            if isinstance(answer, int) and not isinstance(answer, bool):
                answer = str(answer)
            if not isinstance(answer, str) or not answer.strip():
                raise ResponseInvalid("check", "solve the sum (digits only)")
            if not answer.strip().isdigit():
                raise ResponseInvalid("check", "digits only")
            if "a" in check and "b" in check and int(answer.strip()) != int(check["a"]) + int(check["b"]):
                raise ResponseInvalid("check", "the sum is not right")
        return {
            "aspects": [{"begin": b, "length": l, "text": text[b : b + l], "list": lists[(b, l)]} for b, l in spans],
            "no_aspect": no_aspect,
            "not_in_lists": not_in_lists,
        }

    def score_gold(self, project, gold, data):
        """F1 of the chosen spans against the expected spans (exact match; with ``tolerance > 0`` any overlap
        counts); "no aspect" expected -> 1.0 only for a "no aspect" answer."""
        expected = gold.expected or {}
        want = {(int(a["begin"]), int(a["length"])) for a in expected.get("aspects") or []}
        got = {(int(a["begin"]), int(a["length"])) for a in data.get("aspects") or []}
        if expected.get("no_aspect") or not want:
            return 1.0 if data.get("no_aspect") or (not got and not data.get("not_in_lists")) else 0.0
        if not got:
            return 0.0

        def hit(span, pool):
            if gold.tolerance > 0:
                return any(span[0] < b + l and b < span[0] + span[1] for b, l in pool)
            return span in pool

        precision = sum(hit(s, want) for s in got) / len(got)
        recall = sum(hit(s, got) for s in want) / len(want)
        return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)

    def aggregate(self, project, item, responses):
        return final_answer(project, item, responses)

    def export_row(self, project, item, responses):
        """The item's App. F row; an item App. F has no row for (unresolved, or not an argument) gets its final
        answer as it stands, so that every item is in the ``annotations`` release."""
        answer = final_answer(project, item, responses)
        row = appf_row(item, answer)
        if row is None:
            payload = item.payload or {}
            row = {
                "item_id": item.pk,
                "sentence": payload.get("text", ""),
                "topic": payload.get("topic", ""),
                "stance": payload.get("stance", ""),
                "aspects": answer["aspects"],
                "no_aspect": answer["no_aspect"],
                "resolved": answer["resolved"],
            }
        return row

    def answer_text(self, answer):
        if not isinstance(answer, dict) or "aspects" not in answer:
            return super().answer_text(answer)
        if answer.get("no_aspect"):
            return "no aspect"
        return (
            ", ".join(
                str(a.get("text") or f"{a.get('begin')}:{a.get('length')}") if isinstance(a, dict) else str(a)
                for a in answer["aspects"] or []
            )
            or "—"
        )

    def aggregate_text(self, aggregate):
        """``aspects: kill birds, noise (threshold 2 of 3 votes)``, ``no aspect``, ``unresolved: ...`` (crowd vote);
        an adjudicated / gold / imported answer says where it came from."""
        if not isinstance(aggregate, dict):
            return ""
        aspects = ", ".join(
            str(a.get("text", a)) if isinstance(a, dict) else str(a) for a in aggregate.get("aspects") or []
        )
        source = aggregate.get("source", "crowd")
        if source == "crowd" and aggregate.get("threshold") is not None:
            votes = f"(threshold {aggregate['threshold']} of {aggregate.get('n', 0)} votes)"
            if not aggregate.get("resolved"):
                return f"unresolved: no span reached the threshold {votes}"
            return f"no aspect {votes}" if aggregate.get("no_aspect") else f"aspects: {aspects} {votes}"
        if source == "none":
            return ""
        return f"{source}: {'no aspect' if aggregate.get('no_aspect') else aspects}"

    # --- agreement and adjudication -----------------------------------------------------------
    def reliability_data(self, project, records):
        return unitized.reliability_data(project, records)

    def adjudication_form(self, project, item_row):
        """The spans any response chose, as checkboxes."""
        spans = {}
        for r in item_row["responses"]:
            for a in r["data"].get("aspects") or []:
                if isinstance(a, dict):
                    spans[f"{a['begin']}:{a['length']}"] = a.get("text") or f"{a['begin']}:{a['length']}"
        return {"spans": sorted(spans.items(), key=lambda kv: tuple(map(int, kv[0].split(":"))))}

    def parse_adjudication(self, project, post):
        return {"aspects": post.getlist("aspects"), "no_aspect": bool(post.get("no_aspect"))}

    def adjudicate(self, project, item, answer, *, expert):
        """``{"aspects": ["b:l", ...], "no_aspect": bool}``, also stored in ``item.payload["adjudicated"]``
        (:func:`annotation.task_types.aspect.aggregation.adjudicate`) so that exports use it."""
        decided = adjudicate(
            item,
            answer.get("aspects") or [],
            no_aspect=bool(answer.get("no_aspect")),
            by=expert.get_username() if expert else "",
        )
        if not decided["aspects"] and not decided["no_aspect"]:
            raise ResponseInvalid("aspects", "choose aspects or tick 'no aspect'")
        return {"aspects": decided["aspects"], "no_aspect": decided["no_aspect"]}
