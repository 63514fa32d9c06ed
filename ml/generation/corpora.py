"""Training corpora for the argument generators: aspect-control documents, debate paths, ArgU inputs.

Everything here is a plain function over plain rows (dicts) so it runs the same from the CLI
(``manage.py gencorpus``), a release (:mod:`ml.generation.exporters`), a Celery task or a notebook. The
database readers (:func:`gold_aspect_rows`, :func:`tree_nodes`, :func:`span_rows`) are thin adapters.

1. Aspect control (Arg-CTRL §4, "Training Document Generation")
------------------------------------------------------------------
Input rows ``{"topic", "stance", "sentence", "aspects": [str]}`` (also accepted: App. F rows with
``aspect_pos_string`` and ``Argument_for``/``Argument_against``; ``text`` for ``sentence``). Gold rows come from
aspect projects' final answers (:func:`gold_aspect_rows`, via :func:`annotation.task_types.aspect.appf.project_rows`);
silver rows from any iterable of the same shape (the silver tagger's output).

:func:`build_aspect_documents` does, in this order:

- rows whose stance is not pro/con (e.g. an App. F row with ``"stance": null``, a sentence whose stance its
  source did not give: never guessed) or that have no aspect are skipped (counted);
- every (argument, aspect) pair goes to the group ``(topic, stance, aspect_stem(aspect))``. The stem key is the
  Porter stem of every lower-cased word of the aspect ("costs" and "cost" -> "cost"; "nuclear wastes" -> "nuclear
  wast"), so aspects with the same stem are merged into one document. An argument with several aspects is in
  several documents; within one document an argument (whitespace-normalised text) appears once;
- the document's aspect (the one written in the control code) is the group's most frequent surface form
  (lower-cased), ties -> shorter, then alphabetical;
- documents with fewer than ``min_args`` (15) arguments are dropped; documents with more than ``max_args``
  (1,500) keep a seeded random sample of ``max_args`` of them (input order kept);
- per (topic, stance) at most ``max_per_topic_stance`` (100,000) arguments go into documents (counted as
  document lines, the paper's "1.6M training sentences"): documents are visited in a seeded random order and
  taken whole while they fit; the first one that does not fit is cut (seeded sample) to the remaining budget if
  that is still >= ``min_args``, else skipped; later smaller documents may still fit.

The control code is ``"<topic> <PRO|CON> <aspect>"`` (:func:`control_code`), e.g. ``"nuclear energy CON waste"``.
:func:`chunk_document` makes the training sequences: the control code's tokens prepended to every block of
``block_size`` (256) document tokens (Arg-CTRL §5.1).

2. Debate paths (debate-trees §2.2, Table 2)
--------------------------------------------
A debate tree's node stances are relative to the parent ("Pro" supports the parent, "Con" refutes it); the root
(the thesis) has none. A *path* is a chain ``n_0, n_1, ..., n_k`` where each ``n_{i+1}`` is a child of ``n_i``
and, by default (``anchor="root"``), ``n_0`` is the tree's root: a root-to-descendant chain. A pair cuts the path
in two non-empty parts, prompt ``n_0..n_{j-1}`` and response ``n_j..n_k`` (every ``1 <= j <= k``, every
descendant ``n_k``). Writing each node's stance as a symbol (the root's missing stance fills the first
``[Pro Con]`` position, which accepts any stance), the pair belongs to a strategy when the prompt's symbols
fully match its prompt regex and the response's symbols fully match its response regex (:data:`GRAMMAR`, Table 2
verbatim):

============== ================================ =================
strategy       prompt                           response
============== ================================ =================
supportive     ``[Pro Con][Pro]*``              ``[Pro]+``
contradicting  ``[Pro Con][Pro]*``              ``[Con][Pro]*``
complex        ``[Pro Con][Pro]*``              ``[Pro Con][Pro]*``
multi-turn     ``[Pro Con][Pro]*([Con][Pro]*)*`` ``[Con][Pro]*``
============== ================================ =================

So a supportive prompt is the thesis and a chain of its supporters, and the response continues that chain with
supporters only; a contradicting response starts with a node refuting the prompt's last node (plus its own
supporters); complex is the union of the two; a multi-turn prompt may switch speaker at every Con node (each
speaker always disagrees with the opponent's last statement) and the response is the next speaker's turn.
``anchor="any"`` lets a path start at any node (its own stance then fills the free first position): every
descending sub-chain of the tree. Multi-thesis discussions (Kialo discussions whose root is a question and whose
children are unlabelled positions, and unlabelled nodes deeper down) are not in the paper, which describes one
thesis per tree: here every unlabelled node is a thesis (:func:`thesis_nodes`): ``anchor="root"`` paths start at
each thesis rather than at the question (the question is not an argument, and the Pro/Con below a position are
relative to that position), and no path runs through a thesis from above. Texts: the prompt's nodes are split into turns before each Con node after the
first (supportive / contradicting / complex prompts are one turn); nodes of a turn are joined with ``node_sep``
(" ") and turns with ``turn_sep`` (" <turn> "); the response is one turn.

Splits are by debate (:func:`assign_splits`): the trees' content hashes are sorted, shuffled with
``random.Random(seed)`` and cut 90 / 5 / 5 (dev and test sizes rounded, train the rest), so every pair of a
debate is in the same split.

3. ArgU inputs (ArgU §4.1)
--------------------------
From span-grounding export rows (:mod:`annotation.task_types.span_grounding.export`: ``text``, ``topic``, ``stance``, ``scheme`` /
``schemes``, ``variables`` [{id, text}], ``spans`` [[begin, end, variable_id | null]]). The input variables are
the distinct KB variables grounded in the argument (1 to ``max_variables`` = 4, else the row is skipped),
shuffled with ``random.Random(f"{seed}:{key}")`` (key: argument id, else item id, else the text: independent of
row order) and tagged ``<VAR_0>``..``<VAR_3>`` in that order. :func:`argu_input` returns::

    {"encoder_input": "<topic> <VAR_0> <var text> <VAR_1> <var text>",     # I_1
     "variables": [{"tag", "id", "text"}], "stance_code": "<pro>", "scheme_code": "<from_consequence>" | None,
     "argument": "...", "template": "... <VAR_1> ... <VAR_0> ...",           # grounded spans -> tags
     "mono_target": "<pro> <from_consequence> <argument> {argument}",          # ArgU-Mono decoder sequence
     "dual_target": "<pro> <from_consequence> <pattern> {template} <argument> {argument}",   # ArgU-Dual
     "topic", "stance", "scheme", "argument_id", "item_id"}

Spans grounded to "Others" (variable null) stay text in the template. The scheme is the most voted of the
aggregated ``schemes`` (ties: listed order), else the imported ``scheme``; "Goal from Means" becomes "Means for
Goal" (ArgU §3.1.3) unless ``merge_goal_from_means=False``; codes follow
:func:`annotation.task_types.span_grounding.schemes.control_code`. :func:`special_tokens` lists the 13 tokens to add to a tokenizer (Table 6).
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from annotation.models import Project
from annotation.task_types.aspect import appf
from annotation.task_types.span_grounding.export import project_rows
from annotation.task_types.span_grounding.schemes import MERGED, WALTON_SCHEMES
from annotation.task_types.span_grounding.schemes import (
    control_code as scheme_control_code,
)
from argora.errors import FileLineError
from argora.jsonl import read_jsonl as read_jsonl_lines
from argora.progress import Progress, null_progress
from corpus.models import DebateNode, DebateTree
from ml.models import SilverLabel
from ml.silver import filter_label

# --- shared text helpers ------------------------------------------------------------------------------

_WORD = re.compile(r"\w+(?:['’]\w+)*", re.UNICODE)
_STANCES = {
    "pro": "pro",
    "con": "con",
    "argument_for": "pro",
    "argument_against": "con",
    "for": "pro",
    "against": "con",
    "support": "pro",
    "attack": "con",
}
STANCE_CODES = {"pro": "PRO", "con": "CON"}


class RowError(ValueError):
    """A row that cannot be used; ``str()`` is the reason (callers add ``file:line``)."""


class RowFileError(FileLineError, RowError):
    """A line of a file that is not a JSON object (``file:line: reason``)."""


def normalise_stance(value: Any) -> str | None:
    """``pro`` / ``con`` for the stance spellings in use (pro, PRO, Argument_for, against...), else None."""
    if not isinstance(value, str):
        return None
    return _STANCES.get(value.strip().lower().replace(" ", "_"))


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters/digits, inner apostrophes kept)."""
    return [w.lower() for w in _WORD.findall(text or "")]


@lru_cache(maxsize=1)
def _porter():
    from nltk.stem import PorterStemmer

    return PorterStemmer()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Porter stem of one lower-cased word (no data download needed)."""
    return _porter().stem(word.lower())


def aspect_stem(aspect: str) -> str:
    """The merge key of an aspect: the Porter stems of its words, space-joined (``"Costs"`` -> ``"cost"``)."""
    return " ".join(stem(w) for w in words(aspect))


def _norm_space(text: str) -> str:
    return " ".join((text or "").split())


def control_code(topic: str, stance: str, aspect: str) -> str:
    """Arg-CTRL control code ``"<topic> <PRO|CON> <aspect>"``."""
    code = normalise_stance(stance)
    if code is None:
        raise RowError(f"stance {stance!r} is not pro or con")
    return f"{_norm_space(topic)} {STANCE_CODES[code]} {_norm_space(aspect)}"


# ======================================================================================================
# 1. Aspect-control training documents (Arg-CTRL §4)
# ======================================================================================================

DEFAULT_MIN_ARGS = 15
DEFAULT_MAX_ARGS = 1500
DEFAULT_MAX_PER_TOPIC_STANCE = 100_000


def normalise_aspect_row(row: dict) -> dict:
    """``{"topic", "stance" (pro/con), "sentence", "aspects": [str]}`` from a silver row or an App. F row.

    Raises :class:`RowError` (the reason) for a row that is not an object or lacks topic / sentence / aspects.
    A stance that is not pro/con is returned as ``None`` (the caller skips it).
    """
    if not isinstance(row, dict):
        raise RowError(f"expected a JSON object, got {type(row).__name__}")
    topic = row.get("topic")
    sentence = row.get("sentence", row.get("text"))
    aspects = row.get("aspects", row.get("aspect_pos_string"))
    if not isinstance(topic, str) or not topic.strip():
        raise RowError('"topic" must be a non-empty string')
    if not isinstance(sentence, str) or not sentence.strip():
        raise RowError('"sentence" must be a non-empty string')
    if aspects is None:
        raise RowError('missing "aspects" (a list of strings; App. F rows: "aspect_pos_string")')
    if isinstance(aspects, str):
        aspects = [aspects]
    if not isinstance(aspects, list) or not all(isinstance(a, str) for a in aspects):
        raise RowError('"aspects" must be a list of strings')
    return {
        "topic": _norm_space(topic),
        "stance": normalise_stance(row.get("stance")),
        "sentence": _norm_space(sentence),
        "aspects": [_norm_space(a) for a in aspects if a.strip()],
    }


def gold_aspect_rows(projects: Iterable) -> Iterator[dict]:
    """Gold aspect rows of ``aspect`` projects (objects or slugs): each resolved item's final answer
    (adjudicated > gold > crowd vote > imported reference) as an App. F row, normalised."""
    for project in projects:
        if isinstance(project, str):
            project = Project.objects.get(slug=project)
        for row in appf.project_rows(project):
            yield normalise_aspect_row(row)


def silver_aspect_rows(
    aspect_run, stance_run=None, *, dropped: Counter | None = None, chunk_size: int = 2000
) -> Iterator[dict]:
    """Aspect rows from silver runs (Arg-CTRL §4's chain): one row per sentence labelled by either run.

    - stance: the sentence's own stance when it is pro / con (gold, crowd or imported labels win), else the
      ``argument`` run's predicted stance (``SilverLabel.stance``); a predicted ``none`` is counted as
      ``not_argument``, a sentence with neither as ``no_stance_label``, and both are left out;
    - aspects: the texts of the ``tagger`` run's spans for the sentence, after the run's own ``min_confidence``
      filter (:func:`ml.silver.filter_label`); a sentence the tagger did not label, or labelled without spans,
      is yielded with no aspects (:func:`build_aspect_documents` counts it as ``no_aspect``).

    Streams in sentence-id order, ``chunk_size`` labels at a time. Without ``stance_run`` only sentences with
    their own pro / con stance are used."""
    dropped = dropped if dropped is not None else Counter()
    opts = dict(aspect_run.options or {})

    def aspects_of(spans) -> list[str]:
        kept, _schemes, _keep = filter_label(aspect_run, spans or [], {}, {}, opts)
        return [str(sp.get("text") or "") for sp in kept if str(sp.get("text") or "").strip()]

    def row(sentence, stance, spans) -> dict:
        return {"topic": sentence.topic.name, "stance": stance, "sentence": sentence.text, "aspects": aspects_of(spans)}

    def own(sentence) -> str | None:
        return sentence.stance if sentence.stance in ("pro", "con") else None

    if stance_run is not None:
        labels = SilverLabel.objects.filter(run=stance_run).select_related("sentence__topic").order_by("sentence_id")
        chunk: list = []

        def flush(chunk):
            spans = dict(
                SilverLabel.objects.filter(
                    run=aspect_run, sentence_id__in=[lab.sentence_id for lab in chunk]
                ).values_list("sentence_id", "spans")
            )
            for lab in chunk:
                stance = own(lab.sentence) or (lab.stance if lab.stance in ("pro", "con") else None)
                if stance is None:
                    dropped["not_argument" if lab.stance == "none" else "no_stance_label"] += 1
                    continue
                yield row(lab.sentence, stance, spans.get(lab.sentence_id))

        for label in labels.iterator(chunk_size=chunk_size):
            chunk.append(label)
            if len(chunk) >= chunk_size:
                yield from flush(chunk)
                chunk = []
        if chunk:
            yield from flush(chunk)
    rest = SilverLabel.objects.filter(run=aspect_run).select_related("sentence__topic").order_by("sentence_id")
    if stance_run is not None:  # sentences the argument run did not label (e.g. ones with a stance of their own)
        rest = rest.exclude(sentence_id__in=SilverLabel.objects.filter(run=stance_run).values("sentence_id"))
    for label in rest.iterator(chunk_size=chunk_size):
        stance = own(label.sentence)
        if stance is None:
            dropped["no_stance_label"] += 1
            continue
        yield row(label.sentence, stance, label.spans)


@dataclass
class AspectDocument:
    """One training document: every argument of one control code."""

    topic: str
    stance: str  # pro / con
    aspect: str  # the surface form written in the control code
    stem: str  # the merge key (aspect_stem)
    arguments: list[str]
    aspects: list[str] = field(default_factory=list)  # all merged surface forms, sorted
    source: str = "gold"

    @property
    def control_code(self) -> str:
        return control_code(self.topic, self.stance, self.aspect)

    def text(self, sep: str = "\n") -> str:
        return sep.join(self.arguments)

    def as_row(self) -> dict:
        return {
            "control_code": self.control_code,
            "topic": self.topic,
            "stance": self.stance,
            "aspect": self.aspect,
            "stem": self.stem,
            "aspects": list(self.aspects),
            "n_arguments": len(self.arguments),
            "arguments": list(self.arguments),
            "source": self.source,
        }


@dataclass
class AspectDocs:
    documents: list[AspectDocument]
    stats: dict


def _check_bounds(min_args: int, max_args: int, max_per_topic_stance: int) -> None:
    for name, value in (("min_args", min_args), ("max_args", max_args), ("max_per_topic_stance", max_per_topic_stance)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name}: expected a whole number >= 1, got {value!r}")
    if min_args > max_args:
        raise ValueError(f"min_args: {min_args} is more than max_args {max_args}")


def _sample_keep_order(items: list, k: int, rng: random.Random) -> list:
    if len(items) <= k:
        return list(items)
    chosen = sorted(rng.sample(range(len(items)), k))
    return [items[i] for i in chosen]


def _display_aspect(forms: Counter) -> str:
    return sorted(forms.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))[0][0]


def build_aspect_documents(
    rows: Iterable[dict],
    *,
    min_args: int = DEFAULT_MIN_ARGS,
    max_args: int = DEFAULT_MAX_ARGS,
    max_per_topic_stance: int = DEFAULT_MAX_PER_TOPIC_STANCE,
    seed: int = 13,
    source: str = "gold",
    progress: Progress = null_progress,
    dropped_rows: Counter | None = None,
) -> AspectDocs:
    """Arg-CTRL §4 training documents from aspect rows (see the module docstring for every rule).

    ``rows``: dicts accepted by :func:`normalise_aspect_row` (a bad row raises :class:`RowError`).
    Returns :class:`AspectDocs`: documents sorted by (topic, stance, stem) and ``stats`` = ``{"rows",
    "skipped_stance", "skipped_no_aspect", "groups", "dropped_small", "truncated", "capped",
    "documents", "arguments", "per_topic_stance": {"topic|stance": n}, "dropped": {...}}``.

    ``dropped`` says what each filter took away, in the order they apply: ``no_stance`` and ``no_aspect``
    (rows), then ``too_small``, ``max_args`` and ``cap`` (arguments -- distinct (topic, stance, sentence) -- that
    are in no document any more after that step: all their groups were under ``min_args``, sampled away from an
    over-long document, or cut by the per-topic-stance cap). ``dropped_rows`` (the caller's counter, e.g.
    :func:`silver_aspect_rows`' ``not_argument`` / ``no_stance_label``) is merged in first.
    """
    _check_bounds(min_args, max_args, max_per_topic_stance)
    groups: dict[tuple[str, str, str], dict] = {}
    stats = Counter()
    n = 0
    for raw in rows:
        n += 1
        row = normalise_aspect_row(raw)
        if row["stance"] is None:
            stats["skipped_stance"] += 1
            continue
        keyed = [(aspect_stem(a), a.lower()) for a in row["aspects"]]
        keyed = [(k, a) for k, a in keyed if k]
        if not keyed:
            stats["skipped_no_aspect"] += 1
            continue
        for key, surface in keyed:
            group = groups.setdefault(
                (row["topic"], row["stance"], key), {"arguments": [], "seen": set(), "forms": Counter()}
            )
            if row["sentence"] not in group["seen"]:
                group["seen"].add(row["sentence"])
                group["arguments"].append(row["sentence"])
                group["forms"][surface] += 1
            elif surface not in group["forms"]:
                group["forms"][surface] += 1
        if n % 1000 == 0:
            progress(n, None, "grouping arguments")

    candidates = {(t, st, a) for (t, st, _k), g in groups.items() for a in g["arguments"]}
    after_small: set = set()
    after_max: set = set()
    by_ts: dict[tuple[str, str], list[AspectDocument]] = defaultdict(list)
    for (topic, stance, key), group in sorted(groups.items()):
        arguments = group["arguments"]
        if len(arguments) < min_args:
            stats["dropped_small"] += 1
            continue
        after_small.update((topic, stance, a) for a in arguments)
        if len(arguments) > max_args:
            stats["truncated"] += 1
            arguments = _sample_keep_order(arguments, max_args, random.Random(f"{seed}:{topic}:{stance}:{key}"))
        after_max.update((topic, stance, a) for a in arguments)
        by_ts[(topic, stance)].append(
            AspectDocument(
                topic=topic,
                stance=stance,
                aspect=_display_aspect(group["forms"]),
                stem=key,
                arguments=arguments,
                aspects=sorted(group["forms"]),
                source=source,
            )
        )

    documents: list[AspectDocument] = []
    per_ts: dict[str, int] = {}
    for (topic, stance), docs in sorted(by_ts.items()):
        order = list(docs)
        rng = random.Random(f"{seed}:{topic}:{stance}")
        rng.shuffle(order)
        budget = max_per_topic_stance
        kept = []
        for doc in order:
            if len(doc.arguments) <= budget:
                kept.append(doc)
                budget -= len(doc.arguments)
            elif budget >= min_args:
                doc.arguments = _sample_keep_order(doc.arguments, budget, rng)
                stats["capped"] += 1
                kept.append(doc)
                budget = 0
            else:
                stats["capped"] += 1
        per_ts[f"{topic}|{stance}"] = max_per_topic_stance - budget
        documents.extend(sorted(kept, key=lambda d: d.stem))
    documents.sort(key=lambda d: (d.topic, d.stance, d.stem))
    final = {(d.topic, d.stance, a) for d in documents for a in d.arguments}
    dropped = Counter(dropped_rows or {})
    dropped.update(
        {
            "no_stance": stats["skipped_stance"],
            "no_aspect": stats["skipped_no_aspect"],
            "too_small": len(candidates - after_small),
            "max_args": len(after_small - after_max),
            "cap": len(after_max - final),
        }
    )
    progress(n, n, "documents built")
    out = {
        "dropped": dict(dropped),
        "rows": n,
        "skipped_stance": stats["skipped_stance"],
        "skipped_no_aspect": stats["skipped_no_aspect"],
        "groups": len(groups),
        "dropped_small": stats["dropped_small"],
        "truncated": stats["truncated"],
        "capped": stats["capped"],
        "documents": len(documents),
        "arguments": sum(len(d.arguments) for d in documents),
        "per_topic_stance": per_ts,
    }
    return AspectDocs(documents, out)


def chunk_document(
    document: AspectDocument, tokenizer, *, block_size: int = 256, sep: str = "\n", code_suffix: str = ""
) -> list[list[int]]:
    """Arg-CTRL §5.1 training sequences: the document's text tokenised and cut into blocks of ``block_size``
    tokens, each prefixed with the control code's tokens (``control_code + code_suffix``; §5.2 suggests a period
    or colon after the code at inference). ``tokenizer.encode(text, add_special_tokens=False)`` is used."""
    if block_size < 1:
        raise ValueError("block_size: expected a whole number >= 1")
    code_ids = list(tokenizer.encode(document.control_code + code_suffix, add_special_tokens=False))
    ids = list(tokenizer.encode(document.text(sep), add_special_tokens=False))
    return [code_ids + ids[i : i + block_size] for i in range(0, len(ids), block_size)]


# ======================================================================================================
# 2. Debate paths (debate-trees §2.2, Table 2)
# ======================================================================================================

STRATEGIES = ("supportive", "contradicting", "complex", "multi-turn")
# Table 2, verbatim: (prompt, response).
GRAMMAR = {
    "supportive": ("[Pro Con][Pro]*", "[Pro]+"),
    "contradicting": ("[Pro Con][Pro]*", "[Con][Pro]*"),
    "complex": ("[Pro Con][Pro]*", "[Pro Con][Pro]*"),
    "multi-turn": ("[Pro Con][Pro]*([Con][Pro]*)*", "[Con][Pro]*"),
}
ROOT_SYMBOL = "R"  # the root's (missing) stance; only "[Pro Con]" (any stance) accepts it
_SYMBOL = {"pro": "P", "con": "C"}
DEFAULT_FRACTIONS = {"train": 0.9, "dev": 0.05, "test": 0.05}
SPLITS = ("train", "dev", "test")
NODE_SEP = " "
TURN_SEP = " <turn> "


def _compile(table_regex: str) -> re.Pattern:
    pattern = table_regex.replace("[Pro Con]", "[PC" + ROOT_SYMBOL + "]").replace("[Pro]", "P").replace("[Con]", "C")
    return re.compile(pattern)


_COMPILED = {name: (_compile(p), _compile(r)) for name, (p, r) in GRAMMAR.items()}


@dataclass(frozen=True)
class Node:
    """A debate node as plain data: ``stance`` relative to the parent (``pro``/``con``; ``none`` for the root)."""

    path: str
    parent: str | None
    stance: str
    text: str

    @property
    def symbol(self) -> str:
        return _SYMBOL.get(self.stance, ROOT_SYMBOL)  # the root and every other thesis (no Pro/Con label)

    @property
    def is_thesis(self) -> bool:
        return self.stance not in _SYMBOL


@dataclass(frozen=True)
class DebatePair:
    strategy: str
    prompt: tuple[Node, ...]
    response: tuple[Node, ...]

    def prompt_turns(self) -> list[list[Node]]:
        """The prompt's nodes split into turns before each Con node after the first."""
        turns: list[list[Node]] = []
        for i, node in enumerate(self.prompt):
            if i == 0 or node.stance == "con":
                turns.append([node])
            else:
                turns[-1].append(node)
        return turns

    def prompt_text(self, node_sep: str = NODE_SEP, turn_sep: str = TURN_SEP) -> str:
        return turn_sep.join(node_sep.join(n.text for n in turn) for turn in self.prompt_turns())

    def response_text(self, node_sep: str = NODE_SEP) -> str:
        return node_sep.join(n.text for n in self.response)

    @property
    def key(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``((prompt node paths), (response node paths))``."""
        return tuple(n.path for n in self.prompt), tuple(n.path for n in self.response)


def _check_strategy(strategy: str) -> None:
    if strategy not in GRAMMAR:
        raise ValueError(f"strategy: {strategy!r} is not one of {', '.join(STRATEGIES)}")


def debate_pairs(
    nodes: Iterable[Node],
    strategy: str,
    *,
    anchor: str = "root",
    max_prompt_nodes: int | None = None,
    max_response_nodes: int | None = None,
) -> Iterator[DebatePair]:
    """Every (prompt, response) pair of one tree for ``strategy`` (module docstring, section 2).

    ``nodes``: the tree's :class:`Node` s (one root: ``parent`` None). Pairs come depth-first in node-path order,
    per path end by growing prompt. ``max_prompt_nodes`` / ``max_response_nodes`` optionally bound the parts.
    """
    _check_strategy(strategy)
    if anchor not in ("root", "any"):
        raise ValueError(f"anchor: {anchor!r} is not root or any")
    prompt_re, response_re = _COMPILED[strategy]
    nodes = list(nodes)
    children: dict[str | None, list[Node]] = defaultdict(list)
    for node in nodes:
        children[node.parent].append(node)
    for kids in children.values():
        kids.sort(key=lambda n: _path_key(n.path))
    roots = children.get(None, [])
    if anchor == "root":
        starts = thesis_nodes(nodes, children)
    else:
        starts = []
        stack = list(reversed(roots))
        while stack:  # pre-order
            node = stack.pop()
            starts.append(node)
            stack.extend(reversed(children.get(node.path, [])))

    for start in starts:
        # Depth-first over the chains start..e; for each e try every cut.
        stack: list[tuple[Node, tuple[Node, ...]]] = [(start, ())]
        while stack:
            node, before = stack.pop()
            chain = before + (node,)
            symbols = "".join(n.symbol for n in chain)
            for j in range(1, len(chain)):
                if max_prompt_nodes is not None and j > max_prompt_nodes:
                    break
                if max_response_nodes is not None and len(chain) - j > max_response_nodes:
                    continue
                if prompt_re.fullmatch(symbols[:j]) and response_re.fullmatch(symbols[j:]):
                    yield DebatePair(strategy, chain[:j], chain[j:])
            for child in reversed(children.get(node.path, [])):
                if not child.is_thesis:  # a thesis below starts paths of its own
                    stack.append((child, chain))


def thesis_nodes(nodes: list[Node], children: dict | None = None) -> list[Node]:
    """Where ``anchor="root"`` paths start, in path order: the root of a single-thesis debate; in a multi-thesis
    discussion (the root's children carry no Pro/Con label: positions answering the root's question) each of
    those theses instead of the question; and any deeper unlabelled node (a thesis of its own). Pro/Con below a
    thesis are relative to it, so a path never runs through one from above."""
    if children is None:
        children = defaultdict(list)
        for node in nodes:
            children[node.parent].append(node)
    out = []
    for node in sorted(nodes, key=lambda n: _path_key(n.path)):
        if not node.is_thesis:
            continue
        if node.parent is None and any(child.is_thesis for child in children.get(node.path, [])):
            continue  # the question of a multi-thesis discussion
        out.append(node)
    return out


def _path_key(path: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in str(path).split("."))


def assign_splits(keys: Iterable[str], *, seed: int = 13, fractions: dict | None = None) -> dict[str, str]:
    """``{key: "train" | "dev" | "test"}``: keys sorted, shuffled with ``random.Random(seed)``, cut by
    ``fractions`` (default 90/5/5; dev and test sizes rounded, train takes the rest)."""
    fractions = clean_fractions(fractions)
    keys = sorted(set(keys))
    random.Random(seed).shuffle(keys)
    n = len(keys)
    n_dev = round(n * fractions["dev"])
    n_test = round(n * fractions["test"])
    n_train = max(n - n_dev - n_test, 0)
    out = {}
    for i, key in enumerate(keys):
        out[key] = "train" if i < n_train else "dev" if i < n_train + n_dev else "test"
    return out


def clean_fractions(fractions) -> dict[str, float]:
    """``{"train", "dev", "test"}`` shares summing to 1 (also accepts a 3-sequence or "0.9,0.05,0.05")."""
    if fractions is None:
        return dict(DEFAULT_FRACTIONS)
    if isinstance(fractions, str):
        try:
            fractions = [float(x) for x in fractions.split(",")]
        except ValueError:
            raise ValueError(f"fractions: {fractions!r} is not three numbers train,dev,test") from None
    if isinstance(fractions, (list, tuple)):
        if len(fractions) != 3:
            raise ValueError(f"fractions: expected three numbers train,dev,test, got {fractions!r}")
        fractions = dict(zip(SPLITS, fractions))
    if not isinstance(fractions, dict) or set(fractions) != set(SPLITS):
        raise ValueError(f"fractions: give train, dev and test, got {fractions!r}")
    out = {}
    for part in SPLITS:
        value = fractions[part]
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
            raise ValueError(f"fractions.{part}: expected a share between 0 and 1, got {value!r}")
        out[part] = float(value)
    if abs(sum(out.values()) - 1.0) > 1e-6:
        raise ValueError(f"fractions: train+dev+test must be 1, got {sum(out.values()):g}")
    return out


def tree_nodes(tree) -> list[Node]:
    """The :class:`Node` s of a :class:`corpus.models.DebateTree` (one query)."""
    rows = DebateNode.objects.filter(tree=tree).values_list("id", "parent_id", "path", "stance", "text")
    paths = {pk: path for pk, _, path, _, _ in rows}
    return [
        Node(path=path, parent=paths.get(parent_id) if parent_id else None, stance=stance, text=text)
        for _, parent_id, path, stance, text in rows
    ]


def debate_trees(trees=None, topics: Sequence[str] | None = None):
    """The selected trees (ids, objects, a queryset or None = all), optionally only those of ``topics``."""
    qs = DebateTree.objects.select_related("topic").order_by("id")
    if trees is not None:
        ids = [getattr(t, "pk", t) for t in trees]
        qs = qs.filter(pk__in=ids)
    if topics:
        qs = qs.filter(topic__name__in=list(topics))
    return qs


def pair_row(pair: DebatePair, tree, split: str | None, *, node_sep: str = NODE_SEP, turn_sep: str = TURN_SEP) -> dict:
    prompt_paths, response_paths = pair.key
    return {
        "strategy": pair.strategy,
        "tree_id": getattr(tree, "pk", None),
        "tree_hash": getattr(tree, "content_hash", None),
        "debate": getattr(tree, "title", ""),
        "topic": tree.topic.name if getattr(tree, "topic", None) is not None else None,
        "split": split,
        "prompt": pair.prompt_text(node_sep, turn_sep),
        "response": pair.response_text(node_sep),
        "prompt_paths": list(prompt_paths),
        "response_paths": list(response_paths),
        "prompt_turns": len(pair.prompt_turns()),
    }


def debate_path_rows(
    trees=None,
    *,
    strategies: Sequence[str] = STRATEGIES,
    topics: Sequence[str] | None = None,
    seed: int = 13,
    fractions=None,
    splits: Sequence[str] | None = None,
    anchor: str = "root",
    node_sep: str = NODE_SEP,
    turn_sep: str = TURN_SEP,
    max_prompt_nodes: int | None = None,
    max_response_nodes: int | None = None,
    progress: Progress = null_progress,
) -> Iterator[dict]:
    """JSONL rows of every pair of the selected imported trees for each strategy, with the debate's split.

    Row: ``{"strategy", "tree_id", "tree_hash", "debate", "topic", "split", "prompt", "response",
    "prompt_paths", "response_paths", "prompt_turns"}``. The split is over the *selected* trees (by content
    hash, :func:`assign_splits`); ``splits`` keeps only those splits. Rows come tree by tree, strategies in the
    given order.
    """
    for s in strategies:
        _check_strategy(s)
    selected = list(debate_trees(trees, topics))
    where = assign_splits([t.content_hash for t in selected], seed=seed, fractions=fractions)
    total = len(selected)
    for i, tree in enumerate(selected, start=1):
        split = where[tree.content_hash]
        if splits is not None and split not in splits:
            continue
        nodes = tree_nodes(tree)
        for strategy in strategies:
            for pair in debate_pairs(
                nodes, strategy, anchor=anchor, max_prompt_nodes=max_prompt_nodes, max_response_nodes=max_response_nodes
            ):
                yield pair_row(pair, tree, split, node_sep=node_sep, turn_sep=turn_sep)
        progress(i, total, "extracting debate paths")


# ======================================================================================================
# 3. ArgU inputs (ArgU §4.1)
# ======================================================================================================

VAR_TAGS = ("<VAR_0>", "<VAR_1>", "<VAR_2>", "<VAR_3>")
PATTERN_BOS = "<pattern>"
ARGUMENT_BOS = "<argument>"
STANCE_TOKENS = {"pro": "<pro>", "con": "<con>"}


def scheme_code(name: str | None) -> str | None:
    return scheme_control_code(name) if name else None


def special_tokens(schemes: Sequence[str] | None = None, *, merge_goal_from_means: bool = True) -> list[str]:
    """ArgU Table 6's special tokens: scheme codes, stance codes, ``<VAR_0..3>``, ``<pattern>``, ``<argument>``."""
    names = list(schemes) if schemes is not None else list(WALTON_SCHEMES)
    if merge_goal_from_means:
        names = [MERGED.get(n, n) for n in names]
    codes = list(dict.fromkeys(scheme_code(n) for n in names))
    return codes + list(STANCE_TOKENS.values()) + list(VAR_TAGS) + [PATTERN_BOS, ARGUMENT_BOS]


def row_scheme(row: dict, *, merge_goal_from_means: bool = True) -> str | None:
    """The generator's single scheme for a span export row (most voted aggregated scheme, else imported)."""
    name = None
    schemes = row.get("schemes")
    if isinstance(schemes, list) and schemes:
        votes = row.get("scheme_votes") or {}
        name = sorted(enumerate(schemes), key=lambda iv: (-int(votes.get(iv[1], 0) or 0), iv[0]))[0][1]
    elif isinstance(row.get("scheme"), str) and row["scheme"].strip():
        name = row["scheme"].strip()
    if name and merge_goal_from_means:
        name = MERGED.get(name, name)
    return name


def argu_template(text: str, spans: Iterable[Sequence], tags: dict) -> str:
    """``text`` with every span ``[begin, end, variable]`` whose variable has a tag replaced by that tag.

    Spans are applied in begin order; a span overlapping an earlier replaced one is ignored; spans of
    "Others" (variable None) or of untagged variables stay text.
    """
    out, cursor = [], 0
    for begin, end, variable in sorted((int(s[0]), int(s[1]), s[2]) for s in spans):
        if variable is None or variable not in tags or begin < cursor or end <= begin:
            continue
        out.append(text[cursor:begin])
        out.append(tags[variable])
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


def argu_input(
    row: dict,
    *,
    seed: int = 13,
    max_variables: int = 4,
    min_variables: int = 1,
    merge_goal_from_means: bool = True,
    require_scheme: bool = False,
) -> dict:
    """The ArgU-Mono / ArgU-Dual training example of one span export row (module docstring, section 3).

    Raises :class:`RowError` with the reason when the row cannot be used (stance not pro/con, fewer than
    ``min_variables`` or more than ``max_variables`` grounded variables, no scheme with ``require_scheme``).
    """
    if not 1 <= max_variables <= len(VAR_TAGS):
        raise ValueError(f"max_variables: between 1 and {len(VAR_TAGS)} (tags <VAR_0>..<VAR_3>)")
    if not isinstance(row, dict):
        raise RowError(f"expected a JSON object, got {type(row).__name__}")
    text = row.get("argument") or row.get("text")
    if not isinstance(text, str) or not text.strip():
        raise RowError('"text" must be a non-empty string')
    topic = row.get("topic")
    if not isinstance(topic, str) or not topic.strip():
        raise RowError('"topic" must be a non-empty string')
    stance = normalise_stance(row.get("stance"))
    if stance is None:
        raise RowError(f"stance {row.get('stance')!r} is not pro or con")
    spans = row.get("spans") or []
    if not isinstance(spans, list) or not all(isinstance(s, (list, tuple)) and len(s) == 3 for s in spans):
        raise RowError('"spans" must be a list of [begin, end, variable | null]')
    names = {}
    for v in row.get("variables") or []:
        if isinstance(v, dict) and "id" in v:
            names[v["id"]] = v.get("text", "")
    grounded: list = []
    for begin, end, variable in sorted((int(s[0]), int(s[1]), s[2]) for s in spans):
        if variable is not None and variable not in grounded:
            if variable not in names:
                raise RowError(
                    f"span [{begin}, {end}] is grounded to variable {variable!r}, which is not among "
                    f"the row's variables"
                )
            grounded.append(variable)
    if not min_variables <= len(grounded) <= max_variables:
        raise RowError(f"{len(grounded)} grounded variables, not {min_variables}-{max_variables}")
    scheme = row_scheme(row, merge_goal_from_means=merge_goal_from_means)
    if require_scheme and not scheme:
        raise RowError("no argument scheme")

    key = row.get("argument_id") or row.get("item_id") or text
    order = list(grounded)
    random.Random(f"{seed}:{key}").shuffle(order)
    tags = {variable: VAR_TAGS[i] for i, variable in enumerate(order)}
    variables = [{"tag": tags[v], "id": v, "text": _norm_space(names[v])} for v in order]
    encoder_input = " ".join([_norm_space(topic)] + [f"{v['tag']} {v['text']}" for v in variables])
    template = argu_template(text, spans, tags)
    codes = [STANCE_TOKENS[stance]] + ([scheme_code(scheme)] if scheme else [])
    prefix = " ".join(codes)
    return {
        "topic": _norm_space(topic),
        "stance": stance,
        "scheme": scheme,
        "argument_id": row.get("argument_id"),
        "item_id": row.get("item_id"),
        "encoder_input": encoder_input,
        "variables": variables,
        "stance_code": STANCE_TOKENS[stance],
        "scheme_code": scheme_code(scheme),
        "control_codes": codes,
        "argument": text,
        "template": template,
        "mono_target": f"{prefix} {ARGUMENT_BOS} {text}",
        "dual_target": f"{prefix} {PATTERN_BOS} {template} {ARGUMENT_BOS} {text}",
    }


def argu_inputs(
    rows: Iterable[dict],
    *,
    seed: int = 13,
    max_variables: int = 4,
    min_variables: int = 1,
    merge_goal_from_means: bool = True,
    require_scheme: bool = False,
    skipped: Counter | None = None,
    progress: Progress = null_progress,
) -> Iterator[dict]:
    """:func:`argu_input` over ``rows``, skipping unusable ones (reasons counted into ``skipped`` if given)."""
    for n, row in enumerate(rows, 1):
        try:
            yield argu_input(
                row,
                seed=seed,
                max_variables=max_variables,
                min_variables=min_variables,
                merge_goal_from_means=merge_goal_from_means,
                require_scheme=require_scheme,
            )
        except RowError as exc:
            if skipped is not None:
                reason = re.sub(r"\d+ grounded", "N grounded", str(exc))
                reason = re.sub(r"span \[.*", "span grounded to an unknown variable", reason)
                skipped[reason] += 1
        if n % 1000 == 0:
            progress(n, None, "formatting ArgU inputs")


def span_rows(projects: Iterable, *, filters=None) -> Iterator[dict]:
    """Span export rows of ``span_grounding`` projects (objects or slugs), optionally ArgU §3.2.4-filtered."""
    for project in projects:
        if isinstance(project, str):
            project = Project.objects.get(slug=project)
        yield from project_rows(project, filters=filters)


# --- files ------------------------------------------------------------------------------------------------


def read_jsonl(path) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` of a JSONL file (:func:`argora.jsonl.read_jsonl`); :class:`RowError`
    ``"FILE:LINE: reason"`` on a line that is not a JSON object."""
    return read_jsonl_lines(path, error=RowFileError)


def aspect_rows_from_file(path) -> Iterator[dict]:
    """Normalised aspect rows of a JSONL file (silver rows or App. F); ``RowError("FILE:LINE: reason")``."""
    for number, obj in read_jsonl(path):
        try:
            yield normalise_aspect_row(obj)
        except RowError as exc:
            raise RowError(f"{path}:{number}: {exc}") from None
