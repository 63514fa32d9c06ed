"""Training rows for the ML trainers: shared readers (App. F JSONL, a project's labels) and splits.

Aspect ranker rows (Arg-CTRL §3.1 Step 2a), one per 1-4-gram of a sentence (unfiltered)::

    {"sentence": "...", "candidate": "background checks", "score": 1.0, "begin": 18, "length": 17,
     "topic": "gun control", "aspects": [[18, 17]]}

``score`` = #aspect tokens in the n-gram / n (:func:`annotation.task_types.aspect.labels.label_rows`); ``aspects`` (the
sentence's gold spans ``[begin, length]``, the same list on every row of the sentence) is what recall@k is
computed against (:mod:`ml.metrics`). Rows without ``aspects`` (label rows written elsewhere) still work: the gold
spans are then the maximal runs of aspect tokens (1-grams with score 1), see :func:`group_sentences`.

Readers
    :func:`ranker_rows_from_file` (the ``ranker`` / ``span_ranker`` kinds' ``rows_from_file``, what ``manage.py
    train ranker|span_ranker --data FILE`` uses): an App. F JSONL file (validated, ``file:line`` errors) or a JSONL
    of label rows, split by sentence into (train, dev). :func:`ranker_rows_from_project` (the retrain loop): the
    project's *human* labels (:func:`human_aspect_rows`: adjudicated > gold > crowd vote; an item whose final
    answer is only its imported reference, or a model annotator's, is no label), split by a stable hash of the
    sentence so a growing project keeps its dev sentences. :func:`human_span_rows`: the same for a
    ``span_grounding`` project (the ``argspan`` kinds, ``seq2seq``).

Splits
    :func:`split_by_sentence` (seeded, every n-gram of a sentence on one side), :func:`leave_one_topic_out`.

(Other engineers may APPEND readers for their kinds below the ranker section.)
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from annotation.models import Item
from annotation.selectors import counted_responses
from annotation.task_types.aspect.aggregation import final_answer
from annotation.task_types.aspect.appf import appf_row, is_argument, parse_appf, parse_pos
from annotation.task_types.aspect.candidates import Candidate
from annotation.task_types.aspect.labels import label_rows
from annotation.task_types.span_grounding.export import clean_filters, export_row, filter_reason, normalisation_by_item
from argora.jsonl import read_jsonl
from corpus.importers.base import ImportFailed
from corpus.tokens import tokenize
from ml.errors import TrainerError, TrainerFileError
from ml.splits import stable_split

LABEL_KEYS = ("sentence", "candidate", "score", "begin", "length")


# --- ranker rows -----------------------------------------------------------------------------------


def ranker_rows(sentence: str, spans: Iterable[Sequence[int]], *, topic: str = "") -> list[dict]:
    """§3.1 Step 2a rows of one sentence, each carrying the gold ``aspects``."""
    spans = sorted((int(b), int(l)) for b, l in spans)
    rows = label_rows(sentence, spans, topic=topic)
    for row in rows:
        row["aspects"] = [[b, l] for b, l in spans]
    return rows


def appf_ranker_rows(path) -> list[dict]:
    """Ranker rows of every sentence of an App. F file (validated; ``TrainerError("file:line: reason")``)."""
    try:
        parsed = parse_appf(path)
    except ImportFailed as exc:
        raise TrainerError(str(exc)) from None
    rows: list[dict] = []
    for r in parsed:
        rows.extend(ranker_rows(r.sentence, r.spans, topic=r.topic))
    return rows


def read_jsonl_objects(path: Path) -> list[tuple[int, dict]]:
    """``(line number, object)`` of every non-blank line of a JSONL file (:func:`argora.jsonl.read_jsonl`); a
    :class:`~ml.errors.TrainerError` ``"file:line: reason"`` when it cannot be read, a line is not a JSON object,
    or there is none."""
    return list(read_jsonl(path, error=TrainerFileError, require_rows=True))


def _check_label_row(path, number: int, row: dict) -> dict:
    missing = [k for k in LABEL_KEYS if k not in row]
    if missing:
        raise TrainerError(
            f"{path}:{number}: missing key(s) {', '.join(missing)} (neither an App. F row nor a ranker label row)"
        )
    try:
        begin, length, score = int(row["begin"]), int(row["length"]), float(row["score"])
    except (TypeError, ValueError):
        raise TrainerError(f"{path}:{number}: begin/length must be integers and score a number") from None
    sentence = row["sentence"]
    if not isinstance(sentence, str) or begin < 0 or length <= 0 or begin + length > len(sentence):
        raise TrainerError(f"{path}:{number}: candidate span ({begin},{length}) is outside the sentence")
    if not 0.0 <= score <= 1.0:
        raise TrainerError(f"{path}:{number}: score {score} is outside [0, 1]")
    return dict(row, begin=begin, length=length, score=score, topic=str(row.get("topic") or ""))


def read_ranker_rows(path) -> list[dict]:
    """Ranker rows from an App. F JSONL file or a JSONL of label rows (``sentence, candidate, score, begin,
    length`` [+ ``topic``, ``aspects``, ``split``])."""
    path = Path(path)
    lines = read_jsonl_objects(path)
    if "aspect_pos" in lines[0][1]:
        return appf_ranker_rows(path)
    return [_check_label_row(path, number, row) for number, row in lines]


def sentence_key(row: dict) -> tuple[str, str]:
    return (str(row.get("topic") or ""), row["sentence"])


def split_by_sentence(
    rows: Sequence[dict], *, dev_fraction: float = 0.2, seed: int = 13
) -> tuple[list[dict], list[dict]]:
    """Seeded random split of the sentences (every row of a sentence on one side); both sides non-empty when
    there are >= 2 sentences and ``dev_fraction > 0``. Row order within each side is kept."""
    keys = list(dict.fromkeys(sentence_key(r) for r in rows))
    order = keys[:]
    random.Random(seed).shuffle(order)
    n_dev = int(round(len(keys) * dev_fraction))
    if dev_fraction > 0 and len(keys) >= 2:
        n_dev = min(max(n_dev, 1), len(keys) - 1)
    dev_keys = set(order[:n_dev])
    return ([r for r in rows if sentence_key(r) not in dev_keys], [r for r in rows if sentence_key(r) in dev_keys])


def ranker_rows_from_file(path, *, dev_fraction: float = 0.2, seed: int = 13) -> tuple[list[dict], list[dict]]:
    """(train, dev) ranker rows of a file (see :func:`read_ranker_rows`). Rows carrying ``split`` (``train`` /
    ``dev``; ``test`` is left out) keep it; otherwise a seeded split by sentence (:func:`split_by_sentence`)."""
    rows = read_ranker_rows(path)
    if any("split" in r for r in rows):
        train = [r for r in rows if r.get("split", "train") == "train"]
        dev = [r for r in rows if r.get("split") == "dev"]
        if train and dev:
            return train, dev
    return split_by_sentence(rows, dev_fraction=dev_fraction, seed=seed)


# the final-answer sources that are human labels (annotation.task_types.aspect.aggregation.final_answer); "reference"
# (the imported answer of the item) and "none" are not
HUMAN_SOURCES = ("adjudicated", "gold", "crowd")


def human_aspect_rows(project) -> list[dict]:
    """App. F rows (:func:`annotation.task_types.aspect.appf.appf_row`) of the argument items of an ``aspect``
    project whose final answer is a human label -- an expert's adjudication, a gold item's expected answer, or the
    vote of submitted crowd responses (confirmed workers, no model annotator) -- sorted by hash. Items whose only
    answer is the imported reference are left out: the retrain loop trains on the project's labelled data, never
    on a whole imported corpus by accident."""
    items = list(
        Item.objects.filter(project=project, is_training=False).select_related("gold").order_by("position", "id")
    )
    by_item: dict[int, list[dict]] = {}
    for item_id, data in (
        counted_responses(project, include_gold=True, include_models=False)
        .order_by("id")
        .values_list("item_id", "data")
    ):
        by_item.setdefault(item_id, []).append(data)
    rows = []
    for item in items:
        if not is_argument(item):
            continue
        answer = final_answer(project, item, by_item.get(item.pk, []))
        if answer.get("source") not in HUMAN_SOURCES:
            continue
        row = appf_row(item, answer)
        if row is not None:
            rows.append(row)
    rows.sort(key=lambda r: r["hash"])
    return rows


def ranker_rows_from_project(project) -> tuple[list[dict], list[dict], int]:
    """(train, dev, n_labels) from the project's human labels (:func:`human_aspect_rows`); dev = the sentences whose
    stable hash falls in the dev fifth (:func:`ml.splits.stable_split`), so successive versions share their dev
    sentences. ``n_labels`` = sentences with a human final answer (a "no aspect" answer gives all-zero rows:
    negatives)."""
    answers = human_aspect_rows(project)
    rows: list[dict] = []
    for answer in answers:
        spans = [parse_pos(p) for p in answer["aspect_pos"]]
        rows.extend(ranker_rows(answer["sentence"], spans, topic=answer["topic"]))
    train, dev = stable_split(rows, key=lambda r: [r.get("topic") or "", r["sentence"]])
    return train, dev, len(answers)


def human_span_rows(project, *, filters=None) -> Iterator[dict]:
    """Span export rows (:func:`annotation.task_types.span_grounding.export.export_row`) of a ``span_grounding``
    project's non-gold items from their human responses only (confirmed workers; no model annotator, even one
    included in the results; an item with none is left out), in item order, optionally ArgU §3.2.4-filtered."""
    filters = clean_filters(filters)
    task_type = project.get_task_type()
    responses: dict[int, list[dict]] = {}
    for item_id, data in (
        counted_responses(project, include_models=False).order_by("item_id", "id").values_list("item_id", "data")
    ):
        responses.setdefault(item_id, []).append(data)
    items = list(Item.objects.filter(project=project, is_gold=False, pk__in=list(responses)).order_by("position", "id"))
    mapping = normalisation_by_item([i.pk for i in items])
    for item in items:
        got = responses[item.pk]
        row = export_row(project, item, got, task_type.aggregate(project, item, got), mapping=mapping.get(item.pk, {}))
        if filters is None or filter_reason(row, filters) is None:
            yield row


def leave_one_topic_out(
    rows: Sequence[dict], topics: Iterable[str] | None = None
) -> Iterator[tuple[str, list[dict], list[dict]]]:
    """``(held-out topic, train rows of the other topics, rows of the topic)`` for each topic (sorted)."""
    all_topics = sorted({str(r.get("topic") or "") for r in rows})
    for topic in sorted(topics) if topics is not None else all_topics:
        yield (
            topic,
            [r for r in rows if str(r.get("topic") or "") != topic],
            [r for r in rows if str(r.get("topic") or "") == topic],
        )


# --- rows grouped per sentence (what rankers score and metrics read) -------------------------------


@dataclass
class SentenceRows:
    """The candidate rows of one sentence: ``spans[i] = (begin, length)``, ``texts[i]``, ``scores[i]`` (the Step 2a
    targets), ``n_tokens[i]``; ``gold`` = the gold aspect spans."""

    sentence: str
    topic: str
    spans: list[tuple[int, int]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    n_tokens: list[int] = field(default_factory=list)
    gold: list[tuple[int, int]] = field(default_factory=list)

    def candidates(self):
        """The rows as :class:`annotation.task_types.aspect.candidates.Candidate` objects (what a Ranker scores)."""
        return [Candidate(b, l, t, n) for (b, l), t, n in zip(self.spans, self.texts, self.n_tokens)]


def _gold_from_unigrams(sentence: str, unigram_scores: dict[tuple[int, int], float]) -> list[tuple[int, int]]:
    """Maximal runs of consecutive aspect tokens (1-grams scoring 1)."""
    out: list[tuple[int, int]] = []
    run: list = []
    for tok in tokenize(sentence) + [None]:
        if tok is not None and unigram_scores.get((tok.begin, tok.end - tok.begin), 0.0) >= 1.0:
            run.append(tok)
            continue
        if run:
            out.append((run[0].begin, run[-1].end - run[0].begin))
            run = []
    return out


def group_sentences(rows: Iterable[dict]) -> list[SentenceRows]:
    """Rows grouped by (topic, sentence), in order of first appearance; duplicate spans are kept once."""
    groups: dict[tuple[str, str], SentenceRows] = {}
    seen: dict[tuple[str, str], set] = {}
    explicit: dict[tuple[str, str], bool] = {}
    for row in rows:
        key = sentence_key(row)
        group = groups.get(key)
        if group is None:
            group = groups[key] = SentenceRows(sentence=row["sentence"], topic=key[0])
            seen[key] = set()
            explicit[key] = False
        span = (int(row["begin"]), int(row["length"]))
        if "aspects" in row and not explicit[key]:
            group.gold = sorted((int(b), int(l)) for b, l in row["aspects"])
            explicit[key] = True
        if span in seen[key]:
            continue
        seen[key].add(span)
        text = row.get("candidate") or row["sentence"][span[0] : span[0] + span[1]]
        group.spans.append(span)
        group.texts.append(text)
        group.scores.append(float(row.get("score", 0.0)))
        group.n_tokens.append(len(tokenize(text)) or 1)
    for key, group in groups.items():
        if not explicit[key]:
            unigrams = {s: sc for s, sc, n in zip(group.spans, group.scores, group.n_tokens) if n == 1}
            group.gold = _gold_from_unigrams(group.sentence, unigrams)
    return list(groups.values())


# --- synthetic App. F-like data with a planted signal (tests, bench) -------------------------------

SYNTH_TOPICS = (
    "abortion",
    "cloning",
    "death penalty",
    "gun control",
    "marijuana legalization",
    "minimum wage",
    "nuclear energy",
    "school uniforms",
)
SYNTH_ASPECTS = (
    "cost",
    "safety",
    "risk",
    "public health",
    "black market",
    "background checks",
    "deterrent",
    "human rights",
    "tax revenue",
    "crime rate",
    "pollution",
    "freedom of choice",
    "economic growth",
    "medical research",
    "self defense",
    "unemployment",
    "bullying",
    "innocent people",
)
SYNTH_FILLERS = (
    "people",
    "government",
    "country",
    "students",
    "policy",
    "issue",
    "debate",
    "society",
    "law",
    "state",
    "years",
    "children",
    "system",
    "experts",
    "families",
    "community",
    "reports",
    "voters",
)
_OPENERS = (
    "Many {f} argue that the {a}",
    "The {f} says the {a}",
    "Critics of the {f} claim that the {a}",
    "Supporters believe that the {a}",
    "It is clear to the {f} that the {a}",
    "Recent {f} show that the {a}",
)
_MIDDLES = (
    " matters more than the {f}",
    " is linked to the {f}",
    " changes how the {f} sees the {a}",
    " depends on the {f} and the {a}",
    " outweighs every {f}",
    " affects the {f} of the {f2}",
)
_CLOSERS = (" in the {t} debate.", " when it comes to {t}.", ".", " for {t} in our {f}.")


def synthetic_appf(n: int, *, seed: int = 13, topics: Sequence[str] = SYNTH_TOPICS) -> list[dict]:
    """``n`` App. F-shaped rows (``hash, aspect_pos, aspect_pos_string, stance, topic, sentence``) whose aspects
    are the phrases of :data:`SYNTH_ASPECTS` (the planted signal) among recurring filler nouns; about one
    sentence in ten has no aspect. Deterministic for a seed."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        topic = topics[i % len(topics)]
        no_aspect = rng.random() < 0.1
        parts: list[tuple[str, bool]] = []

        def fill(template: str, parts=parts, no_aspect=no_aspect, topic=topic) -> None:
            pos = 0
            while pos < len(template):
                j = template.find("{", pos)
                if j < 0:
                    parts.append((template[pos:], False))
                    break
                parts.append((template[pos:j], False))
                k = template.index("}", j)
                slot = template[j + 1 : k]
                if slot == "a":
                    parts.append((rng.choice(SYNTH_FILLERS) if no_aspect else rng.choice(SYNTH_ASPECTS), not no_aspect))
                elif slot == "t":
                    parts.append((topic, False))
                else:
                    parts.append((rng.choice(SYNTH_FILLERS), False))
                pos = k + 1

        fill(rng.choice(_OPENERS))
        fill(rng.choice(_MIDDLES))
        fill(rng.choice(_CLOSERS))
        sentence, spans = "", []
        for text, is_aspect in parts:
            if is_aspect:
                spans.append((len(sentence), len(text)))
            sentence += text
        spans = sorted(set(spans))
        out.append(
            {
                "hash": f"synth-{seed}-{i}",
                "sentence": sentence,
                "topic": topic,
                "stance": "Argument_for" if rng.random() < 0.5 else "Argument_against",
                "aspect_pos": [f"({b},{l})" for b, l in spans],
                "aspect_pos_string": [sentence[b : b + l] for b, l in spans],
            }
        )
    return out


def synthetic_ranker_rows(n: int, *, seed: int = 13, topics: Sequence[str] = SYNTH_TOPICS) -> list[dict]:
    """Ranker rows (:func:`ranker_rows`) of :func:`synthetic_appf` sentences."""
    rows: list[dict] = []
    for row in synthetic_appf(n, seed=seed, topics=topics):
        spans = [tuple(int(x) for x in p.strip("()").split(",")) for p in row["aspect_pos"]]
        rows.extend(ranker_rows(row["sentence"], spans, topic=row["topic"]))
    return rows
