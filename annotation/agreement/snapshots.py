"""Stored agreement figures: one :class:`annotation.models.AgreementSnapshot` per scope of a project table, and the
idempotent recompute the debounced ``annotation.recompute_agreement`` task runs (:mod:`.scheduling`)."""
from __future__ import annotations

from django.db import transaction

from annotation.models import AgreementSnapshot, Assignment, Project

from .table import get_project, project_table

SNAPSHOT_SCOPES_KEPT = 20


def store_snapshots(project_or_slug) -> list:
    """Compute :func:`project_table` and store one AgreementSnapshot per scope ("project", "topic:<name>",
    "crowd-vs-expert"); older snapshots beyond the last ``SNAPSHOT_SCOPES_KEPT`` per scope are dropped."""
    project = get_project(project_or_slug)
    table = project_table(project)
    rows = [AgreementSnapshot(project=project, scope="project", figures=table, n_units=table["n_units"],
                              n_coders=table["n_coders"], based_on=table["based_on"])]
    for t in table["topics"]:
        rows.append(AgreementSnapshot(project=project, scope=f"topic:{t['topic']}"[:200], figures=t,
                                      n_units=t["n_units"], n_coders=t["n_coders"], based_on=table["based_on"]))
    cve = table["crowd_vs_expert"]
    if cve:
        rows.append(AgreementSnapshot(project=project, scope="crowd-vs-expert", figures=cve,
                                      n_units=cve["between"]["n_units"], n_coders=cve["between"]["n_coders"],
                                      based_on=table["based_on"]))
    with transaction.atomic():
        created = AgreementSnapshot.objects.bulk_create(rows)
        for scope in {r.scope for r in rows}:
            old = list(AgreementSnapshot.objects.filter(project=project, scope=scope)
                       .order_by("-computed_at", "-id").values_list("pk", flat=True)[SNAPSHOT_SCOPES_KEPT:])
            if old:
                AgreementSnapshot.objects.filter(pk__in=old).delete()
    return created


def latest_snapshot(project, scope: str = "project"):
    return AgreementSnapshot.objects.filter(project=project, scope=scope).order_by("-computed_at", "-id").first()


def recompute(project_id: int, *, force: bool = False) -> dict:
    """The body of the ``annotation.recompute_agreement`` task (idempotent): store new snapshots unless the latest
    one already covers every submitted assignment (``force`` recomputes anyway)."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return {"project": project_id, "stored": 0, "reason": "no such project"}
    project.get_task_type().on_recompute(project, force=force)  # e.g. BWS pair scores, stored alongside
    done = Assignment.objects.filter(project=project, status__in=Assignment.DONE).count()
    last = latest_snapshot(project)
    if not force and last is not None and last.based_on == done:
        return {"project": project.slug, "stored": 0, "snapshot": last.pk, "based_on": done}
    created = store_snapshots(project)
    return {"project": project.slug, "stored": len(created), "snapshot": created[0].pk, "based_on": done}
