"""Pair rows for the similarity trainers, from the BWS export / release files and from a BWS project.

Row (what every trainer of this package reads)::

    {"pair_id": "...", "topic": "...", "argument1": "...", "argument2": "...", "score": 0.75, "split": "train"}

``score`` is the BWS counting score in [0, 1] (:mod:`annotation.task_types.bws_similarity.export`); other keys of the export
(``best``, ``worst``, ``appearances``) are dropped. ``split`` is ``train`` / ``dev`` / ``test``.

Sources
    * the BWS JSONL export (``bws.jsonl`` of a ``bws`` release with ``split: none``, or any JSONL of such rows;
      ``argument 1`` / ``argument_1`` / ``sentence1`` are accepted for ``argument1``): rows carrying ``split`` keep
      it, otherwise the file is cut in-topic (:func:`annotation.task_types.bws_similarity.export.in_topic`, seed 0: each topic's pairs in
      the paper's 2471 / 478 / 451 proportions);
    * a ``bws`` release folder with ``train.jsonl``, ``dev.jsonl`` (+ ``test.jsonl``): cross-topic or in-topic, as
      the release was cut;
    * a ``bws_similarity`` project (:func:`rows_from_project`, the retrain loop): its scored pairs, cut
      cross-topic when the project's ``config["splits"]`` names the topics, else in-topic with its ``seed``.

The registry hands a trainer only ``(rows_train, rows_dev)``; the **test rows travel in the dev list** tagged
``split: "test"`` (:func:`rows_from_file`) and every trainer of this package separates them again
(:func:`split_eval`): the dev primary metric is computed on the ``dev`` rows only, the ``test`` rows give Table 5's
test metrics. Nothing is ever trained on a ``dev`` or ``test`` row.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Iterable, Sequence

from annotation.task_types.bws_similarity import export as bws_export
from annotation.task_types.bws_similarity.project import export_rows
from ml.data import read_jsonl_objects
from ml.registry import TrainerError

SPLITS = ("train", "dev", "test")
SETTINGS = ("in-topic", "cross-topic")
_A1 = ("argument1", "argument 1", "argument_1", "sentence1", "text1", "a")
_A2 = ("argument2", "argument 2", "argument_2", "sentence2", "text2", "b")


def _error(message: str) -> Exception:
    return TrainerError(message)


def _first(obj: dict, names: Sequence[str]):
    for name in names:
        if name in obj:
            return obj[name]
    return None


def pair_row(obj: dict, *, where: str = "row") -> dict:
    """A validated pair row from one JSON object (``TrainerError("<where>: reason")`` when it is not one)."""
    a, b = _first(obj, _A1), _first(obj, _A2)
    if not isinstance(a, str) or not a.strip() or not isinstance(b, str) or not b.strip():
        raise _error(f"{where}: a pair row needs non-empty argument1 and argument2 (the BWS export's keys)")
    if "score" not in obj:
        raise _error(f"{where}: missing key score")
    try:
        score = float(obj["score"])
    except (TypeError, ValueError):
        raise _error(f"{where}: score must be a number, got {obj['score']!r}") from None
    if not 0.0 <= score <= 1.0:
        raise _error(f"{where}: score {score} is outside [0, 1]")
    row = {"pair_id": str(obj.get("pair_id", obj.get("id", ""))), "topic": str(obj.get("topic") or ""),
           "argument1": a.strip(), "argument2": b.strip(), "score": score}
    split = obj.get("split")
    if split is not None:
        if split not in SPLITS:
            raise _error(f"{where}: split {split!r} is not one of train, dev, test")
        row["split"] = split
    return row


def read_pairs(path) -> list[dict]:
    """Validated pair rows of one JSONL file (``FILE:LINE: reason`` errors; a missing pair id becomes ``L<line>``)."""
    path = Path(path)
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
    return {"test": sorted(topics[:n_test]), "dev": sorted(topics[n_test:n_test + n_dev]),
            "train": sorted(topics[n_test + n_dev:])}


def split_rows(rows: Sequence[dict], setting: str = "in-topic", *, seed: int = 0,
               topics: dict | None = None) -> dict[str, list[dict]]:
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
        files = {part: path / f"{part}.jsonl" for part in SPLITS}
        if not files["train"].exists() or not files["dev"].exists():
            if (path / "bws.jsonl").exists():
                return load_splits(path / "bws.jsonl")
            raise _error(f"{path}:0: a data folder must hold train.jsonl and dev.jsonl (or bws.jsonl)")
        return {part: [dict(r, split=part) for r in read_pairs(f)] if f.exists() else []
                for part, f in files.items()}
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
