"""Staff pages of BWS projects: split-half reliability (like AugSBERT Table 3) and the pair scores; CSV download.

Thin views over :mod:`annotation.task_types.bws_similarity.project`. The report page shows the stored scores
(:func:`~annotation.task_types.bws_similarity.project.latest_scores`, refreshed by the debounced recompute after submissions; stored on
the first view when there are none) with their time of computation; ``?splits=N&seed=S`` (overriding the
project's ``n_splits`` / ``seed``) compute a report now, which is not stored. The CSV is computed afresh.

Every figure states its n (pairs behind a split-half rho, judgements that showed a pair) and is marked "too few
ratings" below :data:`~annotation.agreement.minimums.MIN_SPLIT_HALF_PAIRS` /
:data:`~annotation.agreement.minimums.MIN_BWS_APPEARANCES`.
"""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.agreement.minimums import MIN_BWS_APPEARANCES, MIN_SPLIT_HALF_PAIRS, mark
from annotation.views import notice, task_type_page
from argora.spreadsheet import csv_response

from . import project as bws


def _params(request):
    out = {}
    for key, name, lo, hi in (("splits", "n_splits", 1, 1000), ("seed", "seed", 0, 2**32 - 1)):
        raw = request.GET.get(key)
        if raw in (None, ""):
            continue
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"{key}: a whole number, got {raw!r}") from None
        if not lo <= value <= hi:
            raise ValueError(f"{key}: between {lo} and {hi}")
        out[name] = value
    return out


def with_marks(report: dict) -> dict:
    """The report with a "too few ratings" mark on every split-half row and every pair score."""
    report = dict(report)
    sh = report.get("split_half")
    if sh:
        sh = dict(sh)
        sh["topics"] = {
            t: {**r, "mark": mark(r.get("n_pairs"), MIN_SPLIT_HALF_PAIRS, "pairs scored in both halves")}
            for t, r in (sh.get("topics") or {}).items()
        }
        sh["all"] = {
            **sh["all"],
            "mark": mark(sh["all"].get("n_pairs"), MIN_SPLIT_HALF_PAIRS, "pairs scored in both halves"),
        }
        report["split_half"] = sh
    report["rows"] = [
        {**row, "mark": mark(row.get("appearances"), MIN_BWS_APPEARANCES, "judgements that showed the pair")}
        for row in report.get("rows") or []
    ]
    return report


@task_type_page(bws.TASK_TYPE, "BWS project")
@require_GET
def bws_report(request, project):
    try:
        params = _params(request)
    except ValueError as exc:
        return notice(request, "Bad parameter", [str(exc)], status=400)
    snapshot = None
    if params:
        report = bws.report(project, **params)
    else:
        snapshot = bws.latest_scores(project) or bws.store_scores(project)
        report = dict(snapshot.figures, rows=bws.stored_rows(snapshot, project))
    report = with_marks(report)
    return render(
        request,
        "task_types/bws_similarity/report.html",
        {
            "project": project,
            "report": report,
            "min_pairs": MIN_SPLIT_HALF_PAIRS,
            "min_appearances": MIN_BWS_APPEARANCES,
            "n_few": sum(1 for row in report["rows"] if row["mark"]["too_few"]),
            "sampling": (project.config or {}).get("sampling") or {},
            "split_half": report["split_half"],
            "n_pairs_sampled": len((project.config or {}).get("pairs") or {}),
            "snapshot": snapshot,
            "submitted_now": bws.submitted_assignments(project),
        },
    )


@task_type_page(bws.TASK_TYPE, "BWS project")
@require_GET
def bws_scores_csv(request, project):
    header = ["pair_id", "topic", "argument1", "argument2", "score", "best", "worst", "appearances"]
    return csv_response(
        f"{project.slug}-bws-scores.csv",
        [header]
        + [
            [
                row["pair_id"],
                row["topic"],
                row["argument1"],
                row["argument2"],
                f"{row['score']:.6f}",
                row["best"],
                row["worst"],
                row["appearances"],
            ]
            for row in bws.export_rows(project)
        ],
    )
