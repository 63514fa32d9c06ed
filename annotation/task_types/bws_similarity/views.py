"""Staff pages of BWS projects: split-half reliability (like AugSBERT Table 3) and the pair scores; CSV download.

Thin views over :mod:`annotation.task_types.bws_similarity.project`. The report page shows the stored scores
(:func:`~annotation.task_types.bws_similarity.project.latest_scores`, refreshed by the debounced recompute after submissions; stored on
the first view when there are none) with their time of computation; ``?splits=N&seed=S`` (overriding the
project's ``n_splits`` / ``seed``) compute a report now, which is not stored. The CSV is computed afresh.
"""
from __future__ import annotations


from django.shortcuts import render
from django.views.decorators.http import require_GET

from argora.spreadsheet import csv_response
from annotation.views import notice, task_type_page

from . import project as bws


def _params(request):
    out = {}
    for key, name, lo, hi in (("splits", "n_splits", 1, 1000), ("seed", "seed", 0, 2 ** 32 - 1)):
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
    return render(request, "task_types/bws_similarity/report.html", {
        "project": project, "report": report, "sampling": (project.config or {}).get("sampling") or {},
        "split_half": report["split_half"], "n_pairs_sampled": len((project.config or {}).get("pairs") or {}),
        "snapshot": snapshot, "submitted_now": bws.submitted_assignments(project),
    })


@task_type_page(bws.TASK_TYPE, "BWS project")
@require_GET
def bws_scores_csv(request, project):
    header = ["pair_id", "topic", "argument1", "argument2", "score", "best", "worst", "appearances"]
    return csv_response(f"{project.slug}-bws-scores.csv", [header] + [
        [row["pair_id"], row["topic"], row["argument1"], row["argument2"], f"{row['score']:.6f}", row["best"],
         row["worst"], row["appearances"]] for row in bws.export_rows(project)])
