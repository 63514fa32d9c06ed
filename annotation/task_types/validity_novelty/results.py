"""ValNov projects: import a shared-task file into items (or gold items), export labels in the same layout, and the
figures of the staff results page. Plain functions; the CLI (``manage.py valnov``) and the views call them.

Import (all-or-nothing): every row is read and checked first (:mod:`.csvio`); then, in one transaction, one item per
row is created -- premise, conclusion and topic in ``Item.payload``, the row's labels as ``payload["reference"]`` (the
reference / gold labels, never shown to workers), its other columns as ``payload["extra"]`` -- the file's header is
merged into ``project.config["columns"]`` (so the export writes the same columns in the same order) and the new
non-gold items are put into HITs. ``gold_rows`` (0-based row indexes, e.g. a studio gold share; ``valnov import
--as-gold``: every row) makes those rows gold items whose expected answer is the row's labels (1 -> yes, -1 -> no; a 0
dimension is not scored). Re-importing a file adds nothing: an item's key is a hash
of topic, premise and conclusion plus the occurrence number within the file.

Export: one row per item, in import order. Labels per item (``labels=``):

* ``"auto"`` (default) -- the crowd aggregate where a non-gold item has a complete panel of responses (at least
  :func:`~annotation.task_types.validity_novelty.aggregation.expected_votes`: the project's R, and at least 3), else
  the imported labels; an item with fewer responses keeps its imported labels (an incomplete crowd aggregate never
  replaces them) and is exported with its guaranteed crowd labels only when it has no imported labels; items with
  neither are left out (all counted in the summary);
* ``"crowd"`` -- the crowd aggregate of every non-gold item (no or too few responses: the guaranteed labels, mostly
  0 / defeasible);
* ``"reference"`` -- the imported labels only.

A crowd aggregate is written as its labels (1 / -1 / 0) and, per dimension, the confidence word derived from the
votes (:mod:`.aggregation`: unanimous = very confident; majority + only "don't know" against = confident; majority with
an opposite vote = majority; no majority = defeasible; an incomplete panel: the lowest word any completion could give,
so one vote is never "very confident"). ``with_weights`` appends an ``Instance-Weight`` column
(:mod:`.weights`).
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from typing import Any

from django.db import transaction

from annotation import services
from annotation.agreement.minimums import MIN_ITEMS, MIN_UNITS, mark
from annotation.agreement.records import build_matrix, load_responses
from annotation.agreement.table import figures
from annotation.models import Assignment, Item, Project, Response
from annotation.selectors import project_of_type, unverified_q
from corpus.importers.base import ImportFailed

from . import TASK_TYPE
from .aggregation import (
    CHOICE_OF_LABEL,
    DIMENSIONS,
    LABELS,
    aggregate_responses,
    expected_votes,
)
from .confidence import CONFIDENCE_WORDS
from .csvio import (
    CONCLUSION,
    NOVELTY,
    NOVELTY_CONF,
    PREMISE,
    TOPIC,
    VALIDITY,
    VALIDITY_CONF,
    Row,
    Table,
    merge_columns,
    read_file,
    write_csv,
    write_jsonl,
)
from .weights import instance_weight, weight_distribution

LABEL_MODES = ("auto", "crowd", "reference")
WEIGHT_COLUMN = "Instance-Weight"


class ValNovError(ValueError):
    """A project-level problem a person can act on (wrong task type, unknown project)."""


# --- projects -------------------------------------------------------------------------------------
def get_project(slug: str, *, create: bool = False, **settings):
    def make():
        return services.create_project(
            name=slug, slug=slug, task_type=TASK_TYPE, **{"assignments_per_item": 3, **settings}
        )

    return project_of_type(slug, TASK_TYPE, error=ValNovError, create=make if create else None)


# --- import ---------------------------------------------------------------------------------------
def row_key(row: Row, occurrence: int = 1) -> str:
    digest = hashlib.sha1("\x00".join((row.topic, row.premise, row.conclusion)).encode("utf-8")).hexdigest()[:20]
    return f"valnov:{digest}#{occurrence}"


def reference_of(row: Row) -> dict:
    return {
        "validity": row.validity,
        "validity_confidence": row.validity_confidence,
        "novelty": row.novelty,
        "novelty_confidence": row.novelty_confidence,
    }


def payload_of(row: Row, key: str) -> dict:
    return {
        "topic": row.topic,
        "premise": row.premise,
        "conclusion": row.conclusion,
        "key": key,
        "reference": reference_of(row),
        "extra": dict(row.extra),
    }


def expected_of(row: Row) -> dict:
    """The gold answer of a row: its decided dimensions (label 0 = tie / unknown is not scored)."""
    return {
        dim: CHOICE_OF_LABEL[label]
        for dim, label in (("validity", row.validity), ("novelty", row.novelty))
        if label in CHOICE_OF_LABEL
    }


def import_table(project, table: Table, *, gold_rows=()) -> dict:
    """Items, and gold items for the rows whose 0-based index is in ``gold_rows``, for the rows of ``table``, in one
    transaction. Returns ``{"created", "skipped", "gold", "hits"}`` (``created`` counts the gold items too); rows
    whose key the project already has are skipped. HITs are built when some row is no gold item."""
    gold_rows = set(gold_rows)
    occurrences: Counter = Counter()
    keyed = []
    for n, row in enumerate(table.rows):
        base = row_key(row, 0).rsplit("#", 1)[0]
        occurrences[base] += 1
        keyed.append((n, row, f"{base}#{occurrences[base]}"))
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        have = set(
            Item.objects.filter(project=locked, external_key__in=[k for _, _, k in keyed]).values_list(
                "external_key", flat=True
            )
        )
        new = [(n, row, key) for n, row, key in keyed if key not in have]
        config = dict(locked.config or {})
        config["columns"] = merge_columns(config.get("columns") or [], table.columns)
        Project.objects.filter(pk=locked.pk).update(config=config)
        project.config = config
        gold = [
            {"payload": payload_of(row, key), "expected": expected_of(row)} for n, row, key in new if n in gold_rows
        ]
        services.add_items(locked, [payload_of(row, key) for n, row, key in new if n not in gold_rows], gold=gold)
        hits = services.build_hits(locked) if len(gold_rows) < len(keyed) else 0
    return {"created": len(new), "skipped": len(keyed) - len(new), "gold": len(gold), "hits": hits}


def import_file(project, path, *, fmt: str | None = None, as_gold: bool = False) -> dict:
    """Read ``path`` (all-or-nothing; :class:`ImportFailed` ``file:line: reason``), then :func:`import_table`
    (``as_gold``: every row a gold item)."""
    table = read_file(path, fmt)
    return import_table(project, table, gold_rows=range(len(table.rows)) if as_gold else ())


# --- responses and aggregates ------------------------------------------------------------------------
def responses_by_item(project) -> dict[int, list[dict]]:
    """Submitted / approved responses per item id, in submission order."""
    out: dict[int, list[dict]] = defaultdict(list)
    rows = (
        Response.objects.filter(assignment__project=project, assignment__status__in=Assignment.DONE)
        .exclude(unverified_q("assignment__"))
        .order_by("assignment__submitted_at", "assignment_id", "id")
        .values_list("item_id", "data")
    )
    for item_id, data in rows:
        out[item_id].append(data or {})
    return out


def _reference_labels(payload: dict) -> dict | None:
    ref = payload.get("reference")
    if not isinstance(ref, dict):
        return None
    try:
        labels = {
            "validity": int(ref["validity"]),
            "validity_confidence": str(ref["validity_confidence"]),
            "novelty": int(ref["novelty"]),
            "novelty_confidence": str(ref["novelty_confidence"]),
        }
    except (KeyError, TypeError, ValueError):
        return None
    if (
        labels["validity"] not in LABELS
        or labels["novelty"] not in LABELS
        or not {labels["validity_confidence"], labels["novelty_confidence"]} <= set(CONFIDENCE_WORDS)
    ):
        return None
    return labels


def _crowd_labels(agg: dict) -> dict:
    return {
        "validity": agg["validity"]["label"],
        "validity_confidence": agg["validity"]["confidence"],
        "novelty": agg["novelty"]["label"],
        "novelty_confidence": agg["novelty"]["confidence"],
    }


# --- export ----------------------------------------------------------------------------------------
def export_records(project, *, labels: str = "auto", with_weights: bool = False) -> tuple[list[str], list[dict], dict]:
    """``(columns, records, summary)``: the shared-task columns (the imported header, merged) and one record per
    exported item (labels as ints). ``summary``: ``{"rows", "crowd", "reference", "left_out", "incomplete",
    "kept_reference"}`` (``incomplete``: crowd rows from items with fewer responses than a complete panel;
    ``kept_reference``: items with too few responses exported with their imported labels)."""
    if labels not in LABEL_MODES:
        raise ValNovError(f"labels must be one of {', '.join(LABEL_MODES)}, got {labels!r}")
    columns = merge_columns((project.config or {}).get("columns") or [])
    if with_weights and WEIGHT_COLUMN not in columns:
        columns.append(WEIGHT_COLUMN)
    votes = responses_by_item(project) if labels != "reference" else {}
    expected = expected_votes(project)
    records = []
    summary = {"rows": 0, "crowd": 0, "reference": 0, "left_out": 0, "incomplete": 0, "kept_reference": 0}
    for item in Item.objects.filter(project=project).order_by("position", "id"):
        payload = item.payload or {}
        chosen, source = None, None
        agg = (
            aggregate_responses(votes.get(item.pk, []), expected=expected)
            if labels != "reference" and not item.is_gold
            else None
        )
        if labels == "crowd" and agg is not None:
            chosen, source = _crowd_labels(agg), "crowd"
        elif labels == "auto" and agg is not None and votes.get(item.pk):
            reference = _reference_labels(payload)
            if agg["complete"] or reference is None:
                chosen, source = _crowd_labels(agg), "crowd"
            else:  # too few responses: the imported labels stay
                chosen, source = reference, "reference"
                summary["kept_reference"] += 1
        elif labels in ("auto", "reference"):
            chosen = _reference_labels(payload)
            source = "reference" if chosen else None
        if chosen is None:
            summary["left_out"] += 1
            continue
        record: dict[str, Any] = {
            TOPIC: payload.get("topic", ""),
            PREMISE: payload.get("premise", ""),
            CONCLUSION: payload.get("conclusion", ""),
            VALIDITY: chosen["validity"],
            VALIDITY_CONF: chosen["validity_confidence"],
            NOVELTY: chosen["novelty"],
            NOVELTY_CONF: chosen["novelty_confidence"],
        }
        for name, value in (payload.get("extra") or {}).items():
            record.setdefault(name, value)
        if with_weights:
            record[WEIGHT_COLUMN] = instance_weight(chosen["validity_confidence"], chosen["novelty_confidence"])
        records.append(record)
        summary["rows"] += 1
        summary[source] += 1
        if source == "crowd" and not agg["complete"]:
            summary["incomplete"] += 1
    return columns, records, summary


def export(project, fh, *, fmt: str = "csv", labels: str = "auto", with_weights: bool = False) -> dict:
    """Write the export to the open text file ``fh`` (``newline=""`` for CSV); returns the summary."""
    columns, records, summary = export_records(project, labels=labels, with_weights=with_weights)
    if fmt == "csv":
        write_csv(fh, columns, records)
    elif fmt == "jsonl":
        write_jsonl(fh, columns, records)
    else:
        raise ValNovError(f"format must be csv or jsonl, got {fmt!r}")
    return summary


# --- the results page ---------------------------------------------------------------------------------
def _distribution(rows: list[dict]) -> dict:
    out = {}
    for dim in DIMENSIONS:
        labels = Counter(r[dim] for r in rows)
        conf = Counter(r[f"{dim}_confidence"] for r in rows)
        total = len(rows)
        out[dim] = {
            "labels": [
                {"label": lab, "count": labels.get(lab, 0), "share": labels.get(lab, 0) / total if total else 0.0}
                for lab in LABELS
            ],
            "confidence": [{"word": w, "count": conf.get(w, 0)} for w in CONFIDENCE_WORDS],
        }
    pairs = Counter((r["validity"], r["novelty"]) for r in rows)
    out["pairs"] = [{"validity": v, "novelty": n, "count": pairs.get((v, n), 0)} for v in (1, -1) for n in (1, -1)]
    out["n"] = len(rows)
    return out


def agreement(project, records: list[dict] | None = None) -> dict:
    """Per dimension: Krippendorff's alpha (nominal; "don't know" is a category), Fleiss' kappa (over the items with
    the most common number of ratings), percent agreement, units and coders -- via :mod:`annotation.agreement`."""
    records = load_responses(project) if records is None else records
    out = {}
    for dim in DIMENSIONS:
        cells, unit_item = {}, {}
        for r in records:
            value = (r.get("data") or {}).get(dim)
            if value in (None, ""):
                continue
            cells[(r["coder"], r["item_id"])] = str(value)
            unit_item[r["item_id"]] = r["item_id"]
        out[dim] = figures(build_matrix(cells, unit_item, "nominal"), bootstrap=0)
    return out


def project_results(project) -> dict:
    """Everything the staff results page shows (see :mod:`annotation.task_types.validity_novelty.views`). Crowd
    distributions, weights and crowd-vs-imported count only items with a complete panel (``n_incomplete`` items
    with fewer responses are counted apart); every figure carries its n and a "too few ratings" mark
    (:mod:`annotation.agreement.minimums`)."""
    votes = responses_by_item(project)
    expected = expected_votes(project)
    items = list(Item.objects.filter(project=project).order_by("position", "id").values("pk", "is_gold", "payload"))
    crowd, reference, matches = [], [], {dim: [0, 0] for dim in DIMENSIONS}
    n_incomplete = 0
    for item in items:
        ref = _reference_labels(item["payload"] or {})
        if ref is not None:
            reference.append(ref)
        if not item["is_gold"] and votes.get(item["pk"]):
            agg = aggregate_responses(votes[item["pk"]], expected=expected)
            if not agg["complete"]:
                n_incomplete += 1
                continue
            labels = _crowd_labels(agg)
            labels["weight"] = agg["weight"]
            labels["n"] = agg["n"]
            crowd.append(labels)
            if ref is not None:
                for dim in DIMENSIONS:
                    matches[dim][0] += int(labels[dim] == ref[dim])
                    matches[dim][1] += 1
    ref_weights = [instance_weight(r["validity_confidence"], r["novelty_confidence"]) for r in reference]
    crowd_weights = [r["weight"] for r in crowd]
    agreement_figures = agreement(project)
    for fig in agreement_figures.values():
        fig["mark"] = mark(fig["n_units"], MIN_UNITS, "items rated by 2+ annotators")
    return {
        "n_items": sum(1 for i in items if not i["is_gold"]),
        "n_gold": sum(1 for i in items if i["is_gold"]),
        "n_annotated": len(crowd),
        "n_incomplete": n_incomplete,
        "expected": expected,
        "n_responses": sum(len(v) for v in votes.values()),
        "r": project.assignments_per_item,
        "crowd": _distribution(crowd),
        "crowd_mark": mark(len(crowd), MIN_ITEMS, "items with a complete panel"),
        "reference": _distribution(reference) if reference else None,
        "agreement": agreement_figures,
        "weights": {
            "crowd": weight_distribution(crowd_weights),
            "reference": weight_distribution(ref_weights),
            "crowd_mean": sum(crowd_weights) / len(crowd_weights) if crowd_weights else None,
            "reference_mean": sum(ref_weights) / len(ref_weights) if ref_weights else None,
            "crowd_n": len(crowd_weights),
            "reference_n": len(ref_weights),
            "crowd_mark": mark(len(crowd_weights), MIN_ITEMS, "items with a complete panel"),
        },
        "crowd_vs_reference": {
            dim: {
                "agree": a,
                "n": n,
                "share": a / n if n else None,
                "mark": mark(n, MIN_ITEMS, "items with crowd and imported labels"),
            }
            for dim, (a, n) in matches.items()
        },
    }


__all__ = [
    "LABEL_MODES",
    "ImportFailed",
    "ValNovError",
    "agreement",
    "export",
    "export_records",
    "get_project",
    "import_file",
    "import_table",
    "project_results",
    "responses_by_item",
    "row_key",
]
