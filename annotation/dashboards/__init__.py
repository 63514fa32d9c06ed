"""Expert dashboards: per-project agreement, the lowest-agreement drill-down with adjudication, CSV downloads.

Thin views over :mod:`annotation.agreement` (:mod:`~annotation.agreement.table`,
:mod:`~annotation.agreement.snapshots`, :mod:`~annotation.agreement.scheduling`) and
:func:`annotation.services.adjudicate_item`: the figures come from the latest stored
:class:`~annotation.models.AgreementSnapshot`: ``/dashboards/`` reads only each project's summary (two queries for
any number of projects), the agreement page the snapshot's figures without items plus one page of its item rows,
and the items page one page of rows (``?page=``, ``?limit=``; the CSV downloads read them all). When a project has
none yet, a small project (at most :data:`.views.SYNC_MAX_RESPONSES` = 2,000 responses, tens of milliseconds) is
computed and stored in the request; a larger one enqueues ``annotation.recompute_agreement`` after commit (once per
:data:`~annotation.agreement.scheduling.FIRST_VIEW_SECONDS`) and the pages
say "computing" (CSV downloads answer 503 with ``Retry-After``) until the worker has stored it. "Recompute now"
enqueues the task after commit; charts are server-side SVG (:mod:`annotation.agreement.svg`). Task types with a
results page of their own (``TaskType.results_page``: BWS split-half, ValNov, ratings) are linked from the index and
the agreement page. The adjudication form of an item is the task type's (``TaskType.adjudication_template``).
Staff / experts only: anonymous -> login, crowdworkers -> 403.

Honest figures: every figure states its n (pairable units and coders for a coefficient, responses for an item's
agreement, units / gold items / overlapping units for a worker's figures, items or units per chart) and carries the
mark "too few ratings" below the minimums of :mod:`annotation.agreement.minimums`. A figure that cannot be estimated
says why instead of showing a number: an item with one response has no agreement, a worker who shares no unit with
another worker has no Dawid-Skene competence ("n/a (no overlap)").

One module per concern: :mod:`.views` (the pages and the snapshot they read), :mod:`.figures` (the figures as
shown: formatted, with their n and marks; the charts; the model annotators' sections), :mod:`.tables` (the CSV
tables and the row readings both share); the pages and the names other modules use are re-exported here, not the
tunables (``SYNC_MAX_RESPONSES``, ``COMPUTING_RETRY_SECONDS``): those are read, and patched, in :mod:`.views`.

URLs (``annotation/dashboard_urls.py``)::

    /dashboards/                                     every project: latest figures (?format=csv)
    /projects/<slug>/agreement/                      summary, charts, model annotators (?epsilon=: the alt-test's
                                                     margin; ?format=csv: the summary table)
    /projects/<slug>/agreement/recompute/            POST: enqueue a recompute
    /projects/<slug>/agreement/items/                lowest agreement first, responses, adjudication (?page=, ?limit=,
                                                     ?format=csv)
    /projects/<slug>/agreement/items/<id>/adjudicate/  POST: an expert's final answer
    /projects/<slug>/agreement/<table>.csv           summary | topics | workers | items | over_time
"""

from __future__ import annotations

from .figures import charts, worker_y_axis
from .tables import CSV_TABLES, table_csv
from .views import adjudicate, agreement, agreement_csv, agreement_items, agreement_recompute, dashboards, results_page

__all__ = [
    "CSV_TABLES",
    "adjudicate",
    "agreement",
    "agreement_csv",
    "agreement_items",
    "agreement_recompute",
    "charts",
    "dashboards",
    "results_page",
    "table_csv",
    "worker_y_axis",
]
