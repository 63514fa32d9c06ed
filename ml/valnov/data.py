"""Training rows for the ``valnov`` kind: from the shared-task CSV / JSONL files and from a ``validity_novelty``
project, with the instance weights of Heinisch et al. 2022 (§3.1 Eq. 2, §4.1).

A row (plain JSON, so the registry can hash it)::

    {"topic", "premise", "conclusion",
     "validity": 1.0 | 0.0 | None,          # target; a shared-task 0 (tie / unknown) -> None: no validity loss
     "novelty": 1.0 | 0.0 | 0.5 | None,     # target; a novelty tie -> 0.5 (the paper's "degrees of novelty")
     "label_validity": 1 | -1 | 0, "label_novelty": 1 | -1 | 0,   # the labels as written
     "weight": w,                            # individual weight (see below)
     "dataset": "task-internal", "synthetic": False, "mutation": "", "line": n}

Columns read besides the seven shared-task ones (all optional): ``Instance-Weight`` (an individual weight, e.g.
from ``manage.py valnov export --with-weights`` or :mod:`.augment`), ``Synthetic`` (1 / true / yes), ``Mutation``,
``Dataset`` and ``split`` (``train`` / ``dev`` / ``test``).

Instance weights (:func:`effective_weights`, the trainer's ``weighting`` hyperparameter):

* ``uniform`` -- ``w_i = 1``;
* ``dataset`` -- one weight per dataset (``dataset_weights``; default ``task-internal: 3``, any other 1), times
  ``synthetic_factor`` for a synthetic row;
* ``individual`` -- the row's ``weight``: ``Instance-Weight`` when the file has it, else
  :func:`annotation.task_types.validity_novelty.weights.instance_weight` of the two confidence words (1 = no agreement ... 5 = full
  agreement). :mod:`.augment` writes a synthetic row's weight already scaled (source weight x its factor).

Splits: rows with a ``split`` go where it says (``test`` rows ride in the dev list tagged ``split: "test"``, the
convention of every trainer kind: the trainer never trains, selects or calibrates on them and reports them as the
version's test metrics); otherwise :func:`ml.splits.stable_split`
by topic (the shared task's dev split covers other debate topics than train), 20 % of the topics to dev.
Synthetic rows never go to dev (their source's topic might).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from annotation.models import Item
from annotation.task_types.validity_novelty.aggregation import target
from annotation.task_types.validity_novelty.csvio import read_file
from annotation.task_types.validity_novelty.results import export_records, responses_by_item
from annotation.task_types.validity_novelty.weights import instance_weight
from corpus.importers.base import ImportFailed
from ml.errors import TrainerError
from ml.splits import stable_split

from .score import CLASSES, class_of, gold_label

DEFAULT_DATASET = "task-internal"
DATASET_WEIGHTS = {DEFAULT_DATASET: 3.0}
WEIGHTINGS = ("uniform", "dataset", "individual")
WEIGHT_COLUMN, SYNTHETIC_COLUMN, MUTATION_COLUMN, DATASET_COLUMN = "Instance-Weight", "Synthetic", "Mutation", "Dataset"
SPLIT_COLUMNS = ("split", "Split")
DEV_FRACTION = 0.2
TRUE_WORDS = {"1", "true", "yes", "y"}


def _truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    return str(value or "").strip().lower() in TRUE_WORDS


def _float(value: Any, default: float | None = None) -> float | None:
    if value is None or value == "":
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def row_from_columns(columns: dict, *, line: int = 0, source: str = "") -> dict:
    """A training row from shared-task columns (``topic, Premise, Conclusion, Validity, ...``); labels as ints."""
    v, n = int(columns["Validity"]), int(columns["Novelty"])
    vc, nc = str(columns["Validity-Confidence"]), str(columns["Novelty-Confidence"])
    weight = _float(columns.get(WEIGHT_COLUMN))
    if weight is None:
        weight = instance_weight(vc, nc)
    if weight < 0:
        raise ValueError(f"{WEIGHT_COLUMN}: must be >= 0, got {weight}")
    split = next((str(columns[c]).strip().lower() for c in SPLIT_COLUMNS if columns.get(c) not in (None, "")), "")
    return {
        "topic": str(columns.get("topic") or ""),
        "premise": str(columns["Premise"]),
        "conclusion": str(columns["Conclusion"]),
        "validity": target("validity", v),
        "novelty": target("novelty", n),
        "label_validity": v,
        "label_novelty": n,
        "validity_confidence": vc,
        "novelty_confidence": nc,
        "weight": float(weight),
        "dataset": str(columns.get(DATASET_COLUMN) or DEFAULT_DATASET),
        "synthetic": _truthy(columns.get(SYNTHETIC_COLUMN)),
        "mutation": str(columns.get(MUTATION_COLUMN) or ""),
        "split": split,
        "line": int(line),
    }


def rows_from_table(table) -> list[dict]:
    """Rows of a :class:`annotation.task_types.validity_novelty.csvio.Table` (raises ``ImportFailed`` for a bad extra column)."""
    out = []
    for r in table.rows:
        try:
            out.append(row_from_columns(r.as_columns(), line=r.line))
        except ValueError as exc:
            raise ImportFailed("", r.line, str(exc)) from None
    return out


def read_rows(path) -> list[dict]:
    """All rows of a shared-task CSV / JSONL file; ``TrainerError("FILE:LINE: reason")`` for a bad file."""
    path = Path(path)
    if not path.is_file():
        raise TrainerError(f"{path}:0: no such file")
    try:
        return rows_from_table(read_file(path))
    except ImportFailed as exc:
        raise TrainerError(f"{path}:{exc.line}: {exc.reason}" if not exc.file else str(exc)) from None


def split_rows(rows: list[dict], *, dev_fraction: float = DEV_FRACTION) -> tuple[list[dict], list[dict]]:
    """(train, dev): by the rows' ``split`` when any row has one, else by topic hash (see the module docstring)."""
    if any(r.get("split") for r in rows):
        train = [r for r in rows if r.get("split") in ("", "train")]
        dev = [r for r in rows if r.get("split") in ("dev", "validation", "valid") and not r.get("synthetic")]
        test = [r for r in rows if r.get("split") == "test" and not r.get("synthetic")]
        return train, dev + test
    originals = [r for r in rows if not r.get("synthetic")]
    train, dev = stable_split(
        originals, key=lambda r: r.get("topic") or r.get("premise"), dev_fraction=dev_fraction, salt="argora-valnov-dev"
    )
    dev_topics = {r.get("topic") or r.get("premise") for r in dev}
    synthetic = [r for r in rows if r.get("synthetic") and (r.get("topic") or r.get("premise")) not in dev_topics]
    return train + synthetic, dev


def rows_from_file(path) -> tuple[list[dict], list[dict]]:
    """``TrainerSpec.rows_from_file``: (train, dev) of a shared-task CSV / JSONL file."""
    return split_rows(read_rows(path))


def rows_from_project(project) -> tuple[list[dict], list[dict], int]:
    """``TrainerSpec.rows_from_project``: the project's human labels -- the crowd aggregate of the items that have
    submitted responses (:func:`annotation.task_types.validity_novelty.results.export_records` with
    ``labels="crowd"``), never an imported reference -- with individual weights, split by topic. ``n_labels`` =
    items with crowd responses."""
    _, records, _ = export_records(project, labels="crowd", with_weights=True)
    items = list(
        Item.objects.filter(project=project, is_gold=False).order_by("position", "id").values_list("pk", flat=True)
    )
    if len(items) != len(records):  # crowd mode writes one record per non-gold item, in item order
        raise TrainerError(f"project: {project.slug!r}: {len(records)} crowd records for {len(items)} items")
    voted = set(responses_by_item(project))
    rows = [row_from_columns(rec, line=i) for i, (pk, rec) in enumerate(zip(items, records), 1) if pk in voted]
    train, dev = split_rows(rows)
    return train, dev, len(rows)


def effective_weights(
    rows: Iterable[dict],
    mode: str = "individual",
    *,
    dataset_weights: dict | None = None,
    synthetic_factor: float = 0.5,
) -> list[float]:
    """``w_i`` per row for a weighting mode (``uniform`` / ``dataset`` / ``individual``; module docstring)."""
    if mode not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {', '.join(WEIGHTINGS)}, got {mode!r}")
    table = dict(DATASET_WEIGHTS)
    table.update(dataset_weights or {})
    out = []
    for r in rows:
        if mode == "uniform":
            out.append(1.0)
        elif mode == "dataset":
            w = float(table.get(r.get("dataset") or DEFAULT_DATASET, 1.0))
            out.append(w * (float(synthetic_factor) if r.get("synthetic") else 1.0))
        else:
            out.append(float(r.get("weight", 1.0)))
    return out


def class_counts(rows: Iterable[dict]) -> dict:
    """How many rows per ValNov class (known labels), plus ``unknown``."""
    counts = dict.fromkeys(CLASSES, 0)
    counts["unknown"] = 0
    for r in rows:
        v, n = gold_label(r.get("validity")), gold_label(r.get("novelty"))
        if v is None or n is None:
            counts["unknown"] += 1
        else:
            counts[class_of(v, n)] += 1
    return counts
