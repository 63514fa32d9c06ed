"""Staff pages of validity / novelty projects: label distribution per dimension, agreement (Krippendorff's alpha and
Fleiss' kappa per dimension), the instance-weight distribution, and the shared-task CSV download.

Thin views over :mod:`annotation.task_types.validity_novelty.results` (computed on request). The download is for a
spreadsheet (:mod:`argora.spreadsheet`: a cell that starts like a formula is written with a leading ``'``);
``manage.py valnov export`` writes the shared-task file exactly.
"""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.agreement.minimums import MIN_UNITS
from annotation.views import notice, task_type_page
from argora.spreadsheet import csv_response

from . import TASK_TYPE
from . import results as valnov
from .csvio import csv_rows
from .weights import CONFIDENCE_POINTS


@task_type_page(TASK_TYPE, "validity / novelty project")
@require_GET
def valnov_results(request, project):
    res = valnov.project_results(project)
    peak = max([w["count"] for w in res["weights"]["crowd"] + res["weights"]["reference"]] + [1])
    return render(
        request,
        "task_types/validity_novelty/results.html",
        {
            "project": project,
            "res": res,
            "peak": peak,
            "points": CONFIDENCE_POINTS,
            "min_units": MIN_UNITS,
            "dims": [
                {
                    "name": dim,
                    "title": title,
                    "crowd": res["crowd"][dim],
                    "crowd_n": res["crowd"]["n"],
                    "reference": res["reference"][dim] if res["reference"] else None,
                    "reference_n": res["reference"]["n"] if res["reference"] else 0,
                    "agreement": res["agreement"][dim],
                    "vs": res["crowd_vs_reference"][dim],
                }
                for dim, title in (("validity", "Validity"), ("novelty", "Novelty"))
            ],
        },
    )


@task_type_page(TASK_TYPE, "validity / novelty project")
@require_GET
def valnov_export_csv(request, project):
    labels = request.GET.get("labels", "auto")
    if labels not in valnov.LABEL_MODES:
        return notice(request, "Bad parameter", [f"labels: one of {', '.join(valnov.LABEL_MODES)}"], status=400)
    columns, records, _summary = valnov.export_records(
        project, labels=labels, with_weights=request.GET.get("weights") == "1"
    )
    return csv_response(f"{project.slug}-valnov.csv", csv_rows(columns, records))
