"""Staff pages of rating projects (pairwise_preference, likert_debate): the results tables with an SVG chart, and
CSV downloads (the tables; one row per response in system terms). Thin views over :mod:`annotation.task_types.ratings.results`."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.agreement.minimums import MIN_COMPARISONS, MIN_LIKERT_RATINGS, MIN_UNITS
from annotation.task_types.likert_debate import likert as likert_mod
from annotation.views import task_type_page
from argora.spreadsheet import csv_response

from . import LIKERT, PAIRWISE, TASK_TYPES
from . import results as ratings


@task_type_page(TASK_TYPES, "rating project")
@require_GET
def results(request, project):
    res = ratings.project_results(project)
    context = {
        "project": project,
        "res": res,
        "chart": ratings.chart(res),
        "is_pairwise": project.task_type == PAIRWISE,
        "is_likert": project.task_type == LIKERT,
        "min_units": MIN_UNITS,
        "min_comparisons": MIN_COMPARISONS,
        "min_likert": MIN_LIKERT_RATINGS,
    }
    if project.task_type == PAIRWISE:
        fl = {f["system"]: f["fluency"] for f in res["agreement"]["fluency_by_system"]}
        context["systems"] = [{**row, "fluency_agreement": fl.get(row["system"])} for row in res["systems"]]
        context["agreement"] = [
            ("Persuasiveness", "winning system or tie, per pair", res["agreement"]["persuasiveness"]),
            ("Fluency", "fluent or not, per argument", res["agreement"]["fluency"]),
        ]
    else:
        context["rows"] = [
            {
                **row,
                "alpha": res["alpha"][row["criterion"]],
                "cells": [{**cell, "mark": ratings.cell_mark(cell)} for cell in row["cells"]],
            }
            for row in res["table"]["rows"]
        ]
        context["scale_words"] = likert_mod.SCALE_WORDS
    return render(request, "task_types/ratings/results.html", context)


def _csv(project, rows, name):
    return csv_response(f"{project.slug}-{name}.csv", rows)


@task_type_page(TASK_TYPES, "rating project")
@require_GET
def summary_csv(request, project):
    return _csv(project, ratings.summary_rows(ratings.project_results(project)), "results")


@task_type_page(TASK_TYPES, "rating project")
@require_GET
def responses_csv(request, project):
    return _csv(project, ratings.response_rows(project), "responses")
