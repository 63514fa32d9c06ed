"""Signal receivers of the annotation app (imported once from ``AnnotationConfig.ready``).

* ``assignment_submitted`` -> a debounced ``annotation.recompute_agreement`` for the assignment's project
  (at most one enqueued per ``annotation.agreement.scheduling.DEBOUNCE_SECONDS`` per project).
"""
from __future__ import annotations

import logging

from django.dispatch import receiver

from .agreement.scheduling import schedule_recompute
from .signals import assignment_submitted

log = logging.getLogger(__name__)


@receiver(assignment_submitted, dispatch_uid="annotation.receivers.recompute_agreement_on_submit")
def recompute_agreement_on_submit(sender, assignment=None, **kwargs):
    if assignment is None:
        return

    try:
        schedule_recompute(assignment.project_id)
    except Exception:  # noqa: BLE001 - a dashboard refresh must never fail a worker's submission
        log.exception("could not schedule the agreement recompute of project %s", assignment.project_id)
