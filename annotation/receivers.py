"""Signal receivers of the annotation app (imported once from ``AnnotationConfig.ready``).

* ``assignment_submitted`` -> a debounced ``annotation.recompute_agreement`` for the assignment's project
  (at most one enqueued per ``annotation.agreement.scheduling.DEBOUNCE_SECONDS`` per project), and, when the project
  orders its items by what the answers so far say (``engine["item_order"]`` not random), a debounced
  ``annotation.reorder_hits`` (at most one per :data:`REORDER_SECONDS` per project).
* ``corpus.signals.release_published`` -> a ``release.publish`` line in the audit log of each project the release
  exports (``annotation.teams``), by the release's creator.
"""

from __future__ import annotations

import logging

from django.dispatch import receiver

from argora.debounce import enqueue_once
from corpus.signals import release_published

from . import access, selectors, teams
from .agreement.scheduling import schedule_recompute
from .models import Project
from .signals import assignment_submitted
from .tasks import reorder_hits

log = logging.getLogger(__name__)
REORDER_SECONDS = 30


@receiver(assignment_submitted, dispatch_uid="annotation.receivers.recompute_agreement_on_submit")
def recompute_agreement_on_submit(sender, assignment=None, **kwargs):
    if assignment is None:
        return

    try:
        schedule_recompute(assignment.project_id)
    except Exception:  # noqa: BLE001 - a dashboard refresh must never fail a worker's submission
        log.exception("could not schedule the agreement recompute of project %s", assignment.project_id)


@receiver(assignment_submitted, dispatch_uid="annotation.receivers.reorder_hits_on_submit")
def reorder_hits_on_submit(sender, assignment=None, **kwargs):
    if assignment is None or selectors.item_order(assignment.project)["mode"] == "random":
        return
    try:
        enqueue_once(
            f"argora:reorder-hits:{assignment.project_id}",
            reorder_hits,
            window=REORDER_SECONDS,
            args=(assignment.project_id,),
            countdown=REORDER_SECONDS // 2,
        )
    except Exception:  # noqa: BLE001 - re-ranking must never fail a worker's submission
        log.exception("could not schedule the re-ranking of project %s", assignment.project_id)


@receiver(release_published, dispatch_uid="annotation.receivers.audit_release")
def audit_release(sender, release=None, **kwargs):
    slugs = access.release_projects(release.config)
    for project in Project.objects.filter(slug__in=slugs):
        teams.record(
            project,
            release.creator,
            "release.publish",
            {"release": f"{release.name} {release.version}", "kind": release.kind},
        )
