"""Pair rows for the similarity trainers, from the BWS export / release files and from a BWS project.

Row (what every trainer of this package reads)::

    {"pair_id": "...", "topic": "...", "argument1": "...", "argument2": "...", "score": 0.75, "split": "train"}

``score`` is the BWS counting score in [0, 1] (:mod:`annotation.task_types.bws_similarity.export`); other keys of the export
(``best``, ``worst``, ``appearances``) are dropped. ``split`` is ``train`` / ``dev`` / ``test``.

Sources (:func:`read_pairs` tells the file's format by its extension: ``.csv``, ``.tsv``, else JSONL; the two
published formats are read by :mod:`annotation.task_types.bws_similarity.pairfiles`, the readers the studio's pair
file sources use too)
    * the **BWS Argument Similarity Corpus** as published (Thakur et al. 2021, AugSBERT §4.1;
      ``BWS_Argument_Similarity_Corpus.csv``): a CSV with the columns ``topic, argument1, argument2, score`` (``id``
      optional, kept as the pair id; ``score`` the BWS score in [0, 1]); a ``split`` (or ``set``) column, when
      present, gives each row's split (``val`` / ``validation`` count as ``dev``). :func:`read_bws_csv`;
    * the **UKP ASPECT** corpus (Reimers et al. 2019, ``UKP_ASPECT.tsv``): tab-separated ``topic, sentence_1,
      sentence_2, label`` with or without that header line (the split files ``make_splits.py`` writes have none).
      The label becomes the score by the paper's own binarisation (their ``train.py``: ``1 if label in ['SS', 'HS']
      else 0``): **HS** (high similarity) and **SS** (some similarity) -> 1.0, **NS** (no similarity) and **DTORCD**
      (different topic / can't decide) -> 0.0 -- the paper trains and evaluates on exactly that (a sigmoid score,
      accuracy at 0.5 and clustering), and a graded HS 1 / SS 0.5 scale would be a choice of ours the corpus does
      not make (its annotators chose categories, not distances). The label is kept in the row (``label``).
      :func:`read_aspect_tsv`;
    * the BWS JSONL export (``bws.jsonl`` of a ``bws`` release with ``split: none``, or any JSONL of such rows;
      ``argument 1`` / ``argument_1`` / ``sentence1`` are accepted for ``argument1``): rows carrying ``split`` keep
      it, otherwise the file is cut in-topic (:func:`annotation.task_types.bws_similarity.export.in_topic`, seed 0: each topic's pairs in
      the paper's 2471 / 478 / 451 proportions);
    * a folder with ``train`` and ``dev`` (+ ``test``) files of one of these formats (``train.jsonl`` ... of a ``bws``
      release; ``train.csv`` ... of the BWS corpus; ``train.tsv`` ... of a UKP ASPECT fold, e.g.
      ``splits/0/`` of ``make_splits.py``): cross-topic or in-topic, as the files were cut;
    * a ``bws_similarity`` project (:func:`rows_from_project`, the retrain loop): its scored pairs, cut
      cross-topic when the project's ``config["splits"]`` names the topics, else in-topic with its ``seed``.

The registry hands a trainer only ``(rows_train, rows_dev)``; the **test rows travel in the dev list** tagged
``split: "test"`` (:func:`rows_from_file`) and every trainer of this package separates them again
(:func:`split_eval`): the dev primary metric is computed on the ``dev`` rows only, the ``test`` rows give Table 5's
test metrics. Nothing is ever trained on a ``dev`` or ``test`` row.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from pathlib import Path

from annotation.task_types.bws_similarity import export as bws_export
from annotation.task_types.bws_similarity import pairfiles
from annotation.task_types.bws_similarity.project import export_rows
from corpus.importers.base import ImportFailed
from ml.data import read_jsonl_objects
from ml.errors import TrainerError, TrainerFileError

SPLITS = ("train", "dev", "test")
SETTINGS = ("in-topic", "cross-topic")


def _error(message: str) -> Exception:
    return TrainerError(message)


def pair_row(obj: dict, *, where: str = "row") -> dict:
    """A validated pair row from one JSON object (``TrainerError("<where>: reason")`` when it is not one;
    :func:`annotation.task_types.bws_similarity.pairfiles.check_pair`)."""
    try:
        return pairfiles.check_pair(obj)
    except pairfiles.PairInvalid as exc:
        raise _error(f"{where}: {exc}") from None


# --- the published corpora --------------------------------------------------------------------------------

BWS_COLUMNS = pairfiles.BWS_COLUMNS
SPLIT_ALIASES = pairfiles.SPLIT_ALIASES
ASPECT_COLUMNS = pairfiles.ASPECT_COLUMNS
ASPECT_SCORES = pairfiles.ASPECT_SCORES  # the paper's binarisation (see the module docstring for why)
FORMATS = {".csv": "BWS Argument Similarity Corpus CSV", ".tsv": "UKP ASPECT TSV", ".jsonl": "BWS JSONL export"}
DATA_FORMATS = (
    "BWS Argument Similarity Corpus CSV (id, topic, argument1, argument2, score[, split]), UKP ASPECT TSV "
    "(topic, sentence_1, sentence_2, label: HS/SS -> 1, NS/DTORCD -> 0), the BWS JSONL export, or a "
    "folder with train + dev (+ test) files of one of them"
)


def _file_error(exc: ImportFailed) -> TrainerFileError:
    return TrainerFileError(exc.file, exc.line, exc.reason)


def _read(reader, path) -> list[dict]:
    try:
        rows = reader(Path(path))
    except ImportFailed as exc:
        raise _file_error(exc) from None
    for row in rows:
        row.pop("line", None)
    return rows


def read_bws_csv(path) -> list[dict]:
    """Pair rows of a BWS Argument Similarity Corpus CSV (see the module docstring; the reader is the studio's,
    :func:`annotation.task_types.bws_similarity.pairfiles.read_bws_csv`); ``file:line`` errors."""
    return _read(pairfiles.read_bws_csv, path)


def read_aspect_tsv(path) -> list[dict]:
    """Pair rows of a UKP ASPECT TSV (or one of its split files; the reader is the studio's,
    :func:`annotation.task_types.bws_similarity.pairfiles.read_aspect_tsv`); ``file:line`` errors."""
    return _read(pairfiles.read_aspect_tsv, path)


def read_pairs(path) -> list[dict]:
    """Validated pair rows of one file: a BWS corpus ``.csv`` (:func:`read_bws_csv`), a UKP ASPECT ``.tsv``
    (:func:`read_aspect_tsv`), else the BWS JSONL export (``FILE:LINE: reason`` errors; a missing pair id becomes
    ``L<line>``)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return read_bws_csv(path)
    if suffix == ".tsv":
        return read_aspect_tsv(path)
    rows = []
    for number, obj in read_jsonl_objects(path):
        row = pair_row(obj, where=f"{path}:{number}")
        if not row["pair_id"]:
            row["pair_id"] = f"L{number}"
        rows.append(row)
    return rows


# --- splits ----------------------------------------------------------------------------------------


def default_cross_topic(topics: Iterable[str], *, seed: int = 0) -> dict[str, list[str]]:
    """The paper's 5 / 1 / 2 topic proportions for any number (>= 3) of topics, topics drawn with ``seed``."""
    topics = sorted(set(topics))
    if len(topics) < 3:
        raise _error(f"data: a cross-topic split needs >= 3 topics (train, dev, test), got {len(topics)}")
    random.Random(f"cross-topic:{seed}").shuffle(topics)
    n = len(topics)
    n_test = max(1, round(n * 2 / 8))
    n_dev = max(1, round(n / 8))
    return {
        "test": sorted(topics[:n_test]),
        "dev": sorted(topics[n_test : n_test + n_dev]),
        "train": sorted(topics[n_test + n_dev :]),
    }


def split_rows(
    rows: Sequence[dict], setting: str = "in-topic", *, seed: int = 0, topics: dict | None = None
) -> dict[str, list[dict]]:
    """``{"train", "dev", "test"}`` rows (tagged with ``split``) of one setting: ``in-topic`` (every topic cut
    2471 / 478 / 451, seeded; :func:`annotation.task_types.bws_similarity.export.in_topic`) or ``cross-topic`` (``topics`` =
    ``{"train": [...], "dev": [...], "test": [...]}``, else :func:`default_cross_topic`)."""
    rows = [{k: v for k, v in r.items() if k != "split"} for r in rows]
    if setting == "in-topic":
        parts = bws_export.in_topic(rows, seed=seed)
    elif setting == "cross-topic":
        topics = topics or default_cross_topic([r["topic"] for r in rows], seed=seed)
        try:
            parts = bws_export.cross_topic(rows, topics)
        except ValueError as exc:
            raise _error(f"data: {exc}") from None
    else:
        raise _error(f"setting: {setting!r} is not one of {', '.join(SETTINGS)}")
    return {part: [dict(r, split=part) for r in parts[part]] for part in SPLITS}


def setting_of(train: Sequence[dict], test: Sequence[dict]) -> str:
    """``cross-topic`` when no test topic was trained on, else ``in-topic``."""
    seen = {r.get("topic", "") for r in train}
    return "cross-topic" if test and not seen & {r.get("topic", "") for r in test} else "in-topic"


def load_splits(path) -> dict[str, list[dict]]:
    """The train / dev / test rows of a file or a release folder (see the module docstring)."""
    path = Path(path)
    if path.is_dir():
        for ext in FORMATS:
            files = {part: path / f"{part}{ext}" for part in SPLITS}
            if files["train"].exists() and files["dev"].exists():
                return {
                    part: [dict(r, split=part) for r in read_pairs(f)] if f.exists() else []
                    for part, f in files.items()
                }
        if (path / "bws.jsonl").exists():
            return load_splits(path / "bws.jsonl")
        raise _error(
            f"{path}:0: a data folder must hold train and dev files (train.jsonl + dev.jsonl, train.csv + "
            f"dev.csv or train.tsv + dev.tsv; test optional) or bws.jsonl"
        )
    if not path.exists():
        raise _error(f"{path}:0: no such file")
    rows = read_pairs(path)
    if any("split" in r for r in rows):
        parts = {part: [r for r in rows if r.get("split", "train") == part] for part in SPLITS}
        for r in parts["train"]:
            r["split"] = "train"
        if parts["train"] and parts["dev"]:
            return parts
    return split_rows(rows, "in-topic")


def rows_from_file(path) -> tuple[list[dict], list[dict]]:
    """``TrainerSpec.rows_from_file``: (train rows, dev rows + test rows tagged ``split: "test"``)."""
    parts = load_splits(path)
    if not parts["train"]:
        raise _error(f"{path}:0: no training rows")
    return parts["train"], parts["dev"] + parts["test"]


def split_eval(rows_dev: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """(dev rows, test rows) of what the registry passed as dev rows. Rows without ``split`` count as dev."""
    dev = [r for r in rows_dev if r.get("split", "dev") != "test"]
    test = [r for r in rows_dev if r.get("split") == "test"]
    return dev, test


def rows_from_project(project) -> tuple[list[dict], list[dict], int]:
    """``TrainerSpec.rows_from_project``: the scored pairs of a ``bws_similarity`` project, cut cross-topic when
    ``config["splits"]`` names the topics (else in-topic with ``config["seed"]``). ``n_labels`` = scored pairs."""
    if project.task_type != "bws_similarity":
        raise _error(f"project: {project.slug!r} is a {project.task_type!r} project, not 'bws_similarity'")
    config = project.config or {}
    rows = [pair_row(r, where=f"project {project.slug} pair {r.get('pair_id')}") for r in export_rows(project)]
    if not rows:
        return [], [], 0
    splits = config.get("splits")
    if splits:
        parts = split_rows(rows, "cross-topic", topics=splits)
    else:
        parts = split_rows(rows, "in-topic", seed=int(config.get("seed", 0) or 0))
    return parts["train"], parts["dev"] + parts["test"], len(rows)


def sentences(rows: Iterable[dict]) -> list[tuple[str, str]]:
    """Unique ``(topic, sentence)`` of the rows, in order of appearance."""
    out: dict[tuple[str, str], None] = {}
    for r in rows:
        out.setdefault((r.get("topic", ""), r["argument1"]), None)
        out.setdefault((r.get("topic", ""), r["argument2"]), None)
    return list(out)


def pair_key(a: str, b: str) -> tuple[str, str]:
    """Unordered pair key."""
    return (a, b) if a <= b else (b, a)
