"""Signals of the annotation engine.

``assignment_submitted``: sent once per stored submission, after its transaction commits (never for an
idempotent retry, never for a rejected or rolled-back one), with ``sender=Assignment`` and
``assignment=<the submitted Assignment>``. Receivers (the agreement dashboards, for instance) run in the
request that submitted, so they must be quick: enqueue a Celery task for anything slow.
"""

from django.dispatch import Signal

assignment_submitted = Signal()
