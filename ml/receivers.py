"""Signal receivers of the ML app (connected in ``MlConfig.ready``).

* ``annotation.signals.assignment_submitted`` -> :func:`ml.loop.schedule_maybe_retrain`: a debounced
  ``ml.tasks.maybe_retrain(project_id)`` after commit, only for projects that retrain some kind
  (``engine["retrain_kinds"]``, else the ``retrain_kinds`` its task type declares) with ``retrain_every`` > 0.
"""

from __future__ import annotations

import logging

from django.dispatch import receiver

from annotation.signals import assignment_submitted

from .loop import retrain_every, retrain_kinds, schedule_maybe_retrain

log = logging.getLogger(__name__)


@receiver(assignment_submitted, dispatch_uid="ml.receivers.retrain_on_submit")
def retrain_on_submit(sender, assignment=None, **kwargs):
    if assignment is None:
        return
    try:
        project = assignment.project
        if not retrain_kinds(project) or retrain_every(project) <= 0:
            return
        schedule_maybe_retrain(project.pk)
    except Exception:  # noqa: BLE001 - retraining must never fail a worker's submission
        log.exception("could not schedule the retrain check of project %s", getattr(assignment, "project_id", None))
