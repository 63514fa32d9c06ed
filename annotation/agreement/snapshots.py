"""Stored agreement figures: one :class:`annotation.models.AgreementSnapshot` per scope of a project table, its
answered items as :class:`annotation.models.AgreementItemRow` rows, and the idempotent recompute the debounced
``annotation.recompute_agreement`` task runs (:mod:`.scheduling`).

A snapshot has three sizes, so that no page reads more than it shows: ``summary`` (the numbers ``/dashboards/``
lists: :func:`latest_snapshots` reads it for every project in one query, ``figures`` left out), ``figures`` (the
project table without its ``items``: topics, workers, charts, crowd vs expert -- what the agreement page needs; it
grows with workers and topics, not with items) and the per-item rows (scope ``"project"`` only), written in batches
of :data:`ROW_BATCH` and read a page at a time (:func:`item_page`) in ``rank`` order, lowest agreement first.
"""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import OuterRef, Subquery

from annotation.models import AgreementItemRow, AgreementSnapshot, Assignment, Item, Project

from .table import get_project, iter_item_rows, project_table

SNAPSHOT_SCOPES_KEPT = 20  # snapshots kept per scope (older ones are dropped)
ITEM_ROWS_KEPT = 2  # project snapshots that keep their per-item rows (a page open on the previous one works)
ROW_BATCH = 2000  # item rows per INSERT


def summary_of(figures: dict) -> dict:
    """The dashboards' numbers of one scope's figures (crowd vs expert: those between the two groups)."""
    f = figures.get("between") or figures
    return {k: f[k] for k in AgreementSnapshot.SUMMARY_KEYS if k in f}


def lowest_first_key(row: dict):
    """Lowest agreement first, items without a figure last; ties by position, then id (the rows' ``rank``)."""
    a = row["agreement"]
    return (a is None, a if a is not None else 0, row.get("position", 0), row["item_id"])


def store_snapshots(project_or_slug) -> list:
    """Compute the project table and store one AgreementSnapshot per scope ("project", "topic:<name>",
    "crowd-vs-expert") plus the project scope's item rows, all in one transaction; older snapshots beyond the last
    ``SNAPSHOT_SCOPES_KEPT`` per scope are dropped, and the item rows of project snapshots older than the last
    ``ITEM_ROWS_KEPT``. The items are completed and written :data:`ROW_BATCH` at a time (never all as objects)."""
    project = get_project(project_or_slug)
    table = project_table(project, item_rows=False)
    bare = table.pop("items")
    positions = dict(Item.objects.filter(project=project).values_list("pk", "position"))
    ranked = sorted(
        (
            {"item_id": r["item_id"], "agreement": r["agreement"], "position": positions.get(r["item_id"], 0)}
            for r in bare
        ),
        key=lowest_first_key,
    )
    rank = {r["item_id"]: k for k, r in enumerate(ranked)}
    del ranked, positions
    table["n_items"] = len(bare)
    table["n_items_without"] = sum(1 for r in bare if r["agreement"] is None)
    based_on = table["based_on"]
    rows = []
    for t in table["topics"]:
        rows.append(
            AgreementSnapshot(
                project=project,
                scope=f"topic:{t['topic']}"[:200],
                figures=t,
                summary=summary_of(t),
                n_units=t["n_units"],
                n_coders=t["n_coders"],
                based_on=based_on,
            )
        )
    cve = table["crowd_vs_expert"]
    if cve:
        rows.append(
            AgreementSnapshot(
                project=project,
                scope="crowd-vs-expert",
                figures=cve,
                summary=summary_of(cve),
                n_units=cve["between"]["n_units"],
                n_coders=cve["between"]["n_coders"],
                based_on=based_on,
            )
        )
    with transaction.atomic():
        main = AgreementSnapshot.objects.create(
            project=project,
            scope="project",
            figures=table,
            summary=summary_of(table),
            n_items=len(bare),
            n_units=table["n_units"],
            n_coders=table["n_coders"],
            based_on=based_on,
        )
        _write_item_rows(main.pk, rank, iter_item_rows(project, bare))
        created = [main] + [AgreementSnapshot.objects.create(**_fields(r)) for r in rows]
        for scope in {r.scope for r in created}:
            kept = (
                AgreementSnapshot.objects.filter(project=project, scope=scope)
                .order_by("-computed_at", "-id")
                .values_list("pk", flat=True)
            )
            old = list(kept[SNAPSHOT_SCOPES_KEPT:])
            if old:
                AgreementSnapshot.objects.filter(pk__in=old).delete()
            if scope == "project":
                AgreementItemRow.objects.filter(snapshot__in=list(kept[ITEM_ROWS_KEPT:SNAPSHOT_SCOPES_KEPT])).delete()
    return created


_ROW_FIELDS = (
    "snapshot",
    "rank",
    "item",
    "position",
    "topic",
    "text",
    "n",
    "agreement",
    "majority",
    "responses",
    "adjudication",
)


def _write_item_rows(snapshot_id: int, rank: dict, rows) -> None:
    """INSERT the item rows ``ROW_BATCH`` at a time with one prepared statement (``executemany``): the values go
    through each field's ``get_db_prep_save`` (JSON as the backend wants it), without a model instance per row --
    ``bulk_create`` spent most of its time building and compiling those."""
    meta = AgreementItemRow._meta
    fields = [meta.get_field(f) for f in _ROW_FIELDS]
    qn = connection.ops.quote_name
    sql = (
        f"INSERT INTO {qn(meta.db_table)} ({', '.join(qn(f.column) for f in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))})"
    )
    responses, adjudication = meta.get_field("responses"), meta.get_field("adjudication")
    batch: list[tuple] = []
    with connection.cursor() as cursor:
        for it in rows:
            adj = it["adjudication"]
            batch.append(
                (
                    snapshot_id,
                    rank[it["item_id"]],
                    it["item_id"],
                    it["position"],
                    it["topic"],
                    it["text"],
                    it["n"],
                    it["agreement"],
                    it["majority"] or "",
                    responses.get_db_prep_save(it["responses"], connection),
                    None if adj is None else adjudication.get_db_prep_save(adj, connection),
                )
            )
            if len(batch) >= ROW_BATCH:
                cursor.executemany(sql, batch)
                batch = []
        if batch:
            cursor.executemany(sql, batch)


def _fields(snap: AgreementSnapshot) -> dict:
    return {f: getattr(snap, f) for f in ("project", "scope", "figures", "summary", "n_units", "n_coders", "based_on")}


def latest_snapshot(project, scope: str = "project", *, figures: bool = True):
    """The newest snapshot of ``scope`` (``figures=False``: without reading its figures -- summary and counts)."""
    qs = AgreementSnapshot.objects.filter(project=project, scope=scope).order_by("-computed_at", "-id")
    return (qs if figures else qs.defer("figures")).first()


def latest_snapshots(projects, scope: str = "project") -> dict[int, AgreementSnapshot]:
    """``{project id: newest snapshot of scope}`` for many projects in one query, without their figures."""
    newest = (
        AgreementSnapshot.objects.filter(project=OuterRef("project"), scope=scope)
        .order_by("-computed_at", "-id")
        .values("pk")[:1]
    )
    qs = AgreementSnapshot.objects.filter(project__in=projects, scope=scope, pk=Subquery(newest)).defer("figures")
    return {s.project_id: s for s in qs}


def item_rows(snap: AgreementSnapshot):
    """The snapshot's item rows, lowest agreement first (a queryset: slice it, or ``.iterator()`` it)."""
    return AgreementItemRow.objects.filter(snapshot=snap).order_by("rank")


def item_page(
    snap: AgreementSnapshot, *, start: int = 0, limit: int = 50, with_agreement: bool = False, responses: bool = True
) -> list:
    """One page of item rows from rank ``start`` (an index range, no OFFSET), as the project table's item dicts
    (``responses=False``: without reading the rows' responses and adjudication, which the dicts then lack)."""
    qs = item_rows(snap).filter(rank__gte=start)
    if with_agreement:
        qs = qs.filter(agreement__isnull=False)
    if not responses:
        qs = qs.defer("responses", "adjudication")
    return [r.as_dict() for r in qs[:limit]]


def recompute(project_id: int, *, force: bool = False) -> dict:
    """The body of the ``annotation.recompute_agreement`` task (idempotent): store new snapshots unless the latest
    one already covers every submitted assignment (``force`` recomputes anyway)."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return {"project": project_id, "stored": 0, "reason": "no such project"}
    project.get_task_type().on_recompute(project, force=force)  # e.g. BWS pair scores, stored alongside
    done = Assignment.objects.filter(project=project, status__in=Assignment.DONE).count()
    last = latest_snapshot(project, figures=False)
    if not force and last is not None and last.based_on == done:
        return {"project": project.slug, "stored": 0, "snapshot": last.pk, "based_on": done}
    created = store_snapshots(project)
    return {"project": project.slug, "stored": len(created), "snapshot": created[0].pk, "based_on": done}
