"""The published argument-pair corpora, read row by row: one reader per format, for the studio's pair-file sources
(:mod:`.sources`) and for the similarity trainers (:mod:`ml.similarity.data` reads its ``.csv`` / ``.tsv`` files
through these functions and turns their errors into trainer errors).

* The **BWS Argument Similarity Corpus** as published (Thakur et al. 2021, AugSBERT §4.1;
  ``BWS_Argument_Similarity_Corpus.csv``): a CSV with the columns ``topic, argument1, argument2, score`` (``id``
  optional, kept as the pair id, else ``L<line>``; ``score`` the BWS score in [0, 1]); a ``split`` (or ``set``)
  column, when present, gives each row's split (``val`` / ``validation`` count as ``dev``). :func:`read_bws_csv`.
* The **UKP ASPECT** corpus (Reimers et al. 2019, ``UKP_ASPECT.tsv``): tab-separated ``topic, sentence_1,
  sentence_2, label`` with or without that header line (the split files ``make_splits.py`` writes have none), cells
  split on tabs as the corpus's own reader does (a sentence may start with a quote: no CSV quoting). The label becomes
  the score by the paper's own binarisation (their ``train.py``: ``1 if label in ['SS', 'HS'] else 0``): **HS** and
  **SS** -> 1.0, **NS** and **DTORCD** (different topic / can't decide) -> 0.0; the label is kept in the row
  (``label``). :func:`read_aspect_tsv`.

Row (both readers)::

    {"pair_id": "...", "topic": "...", "argument1": "...", "argument2": "...", "score": 0.75, "line": 2
     [, "split": "train"] [, "label": "HS"]}

A bad row raises :class:`corpus.importers.ImportFailed` (``file:line: reason``); nothing is half-read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from corpus.importers.base import ImportFailed
from corpus.importers.fields import csv_rows
from corpus.importers.readers import iter_lines

SPLITS = ("train", "dev", "test")
A1 = ("argument1", "argument 1", "argument_1", "sentence1", "text1", "a")
A2 = ("argument2", "argument 2", "argument_2", "sentence2", "text2", "b")
BWS_COLUMNS = ("topic", "argument1", "argument2", "score")
SPLIT_ALIASES = {"train": "train", "dev": "dev", "val": "dev", "validation": "dev", "test": "test"}
ASPECT_COLUMNS = ("topic", "sentence_1", "sentence_2", "label")
# UKP ASPECT label -> score: the paper's binarisation (see the module docstring).
ASPECT_SCORES = {"HS": 1.0, "SS": 1.0, "NS": 0.0, "DTORCD": 0.0}


class PairInvalid(ValueError):
    """A pair row that breaks the rules; ``str()`` is the reason (the caller says where)."""


def _first(obj: dict, names: Sequence[str]):
    for name in names:
        if name in obj:
            return obj[name]
    return None


def check_pair(obj: dict) -> dict:
    """A validated pair row ``{"pair_id", "topic", "argument1", "argument2", "score"[, "split"]}`` from one object
    (``argument 1`` / ``argument_1`` / ``sentence1`` ... are read as ``argument1``); :class:`PairInvalid` says
    why not."""
    a, b = _first(obj, A1), _first(obj, A2)
    if not isinstance(a, str) or not a.strip() or not isinstance(b, str) or not b.strip():
        raise PairInvalid("a pair row needs non-empty argument1 and argument2 (the BWS export's keys)")
    if "score" not in obj:
        raise PairInvalid("missing key score")
    try:
        score = float(obj["score"])
    except (TypeError, ValueError):
        raise PairInvalid(f"score must be a number, got {obj['score']!r}") from None
    if not 0.0 <= score <= 1.0:
        raise PairInvalid(f"score {score} is outside [0, 1]")
    row = {
        "pair_id": str(obj.get("pair_id", obj.get("id", ""))),
        "topic": str(obj.get("topic") or ""),
        "argument1": a.strip(),
        "argument2": b.strip(),
        "score": score,
    }
    split = obj.get("split")
    if split is not None:
        if split not in SPLITS:
            raise PairInvalid(f"split {split!r} is not one of train, dev, test")
        row["split"] = split
    return row


def read_bws_csv(path) -> list[dict]:
    """Pair rows of a BWS Argument Similarity Corpus CSV (see the module docstring); ``file:line`` errors."""
    path = Path(path)
    rows = []
    for line, cells in csv_rows(path, iter_lines(path), "excel", BWS_COLUMNS, ("id", "split", "set")):
        obj = {k: v.strip() for k, v in cells.items()}
        split = obj.pop("split", "") or obj.pop("set", "")
        obj.pop("set", None)
        if split:
            if split.lower() not in SPLIT_ALIASES:
                raise ImportFailed(path, line, f"split {split!r} is not one of train, dev, test")
            obj["split"] = SPLIT_ALIASES[split.lower()]
        if not obj.get("topic"):
            raise ImportFailed(path, line, "topic is empty")
        try:
            row = check_pair(obj)
        except PairInvalid as exc:
            raise ImportFailed(path, line, str(exc)) from None
        row["pair_id"] = row["pair_id"] or f"L{line}"
        row["line"] = line
        rows.append(row)
    if not rows:
        raise ImportFailed(path, 0, "no rows: the file has a header only")
    return rows


def read_aspect_tsv(path) -> list[dict]:
    """Pair rows of a UKP ASPECT TSV (or one of its split files); ``file:line`` errors."""
    path = Path(path)
    rows = []
    for line, text in enumerate(iter_lines(path), start=1):
        text = text.rstrip("\n")
        if not text.strip():
            continue
        cells = [c.strip() for c in text.split("\t")]
        if line == 1 and tuple(c.lower() for c in cells) == ASPECT_COLUMNS:
            continue  # the header of UKP_ASPECT.tsv
        if len(cells) != 4:
            raise ImportFailed(
                path,
                line,
                f"expected 4 tab-separated columns (topic, sentence_1, sentence_2, label), found {len(cells)}",
            )
        topic, a, b, label = cells
        if label not in ASPECT_SCORES:
            raise ImportFailed(path, line, f"label {label!r} is not one of {', '.join(ASPECT_SCORES)}")
        if not topic:
            raise ImportFailed(path, line, "topic is empty")
        try:
            row = check_pair(
                {"topic": topic, "argument1": a, "argument2": b, "score": ASPECT_SCORES[label], "pair_id": f"L{line}"}
            )
        except PairInvalid as exc:
            raise ImportFailed(path, line, str(exc)) from None
        row["label"] = label
        row["line"] = line
        rows.append(row)
    if not rows:
        raise ImportFailed(path, 0, "no rows: the file is empty")
    return rows
