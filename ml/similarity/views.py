"""Staff page: AugSBERT Table 5 from the registry -- results per model / sampling strategy side by side.

URL (``ml/similarity/urls.py``, included in ``ml/urls.py`` under ``similarity/``; namespace ``ml``)::

    /ml/similarity/                  Table 5 (test Spearman x 100, mean ± std over seeds, in-topic | cross-topic,
                                     Jaccard baseline), the same on dev, and every version with its strategy, k,
                                     silver set size and scores. ?project=<slug or ->  ?data=<data snapshot>
                                     ?format=json (the tables as JSON)

Read-only: the numbers are ``ModelVersion.metrics`` of the ``crossencoder`` / ``biencoder`` / ``augsbert`` kinds.
"""

from __future__ import annotations

from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ml.models import ModelVersion
from ml.views import staff_required

from .evaluation import model_label, table

KINDS = ("crossencoder", "biencoder", "augsbert")


def versions(project: str | None = None, data: str | None = None):
    qs = (
        ModelVersion.objects.filter(
            kind__in=KINDS, status__in=[ModelVersion.Status.READY, ModelVersion.Status.ARCHIVED]
        )
        .select_related("project")
        .order_by("id")
    )
    if project == "-":
        qs = qs.filter(project__isnull=True)
    elif project:
        qs = qs.filter(project__slug=project)
    if data:
        qs = qs.filter(data_snapshot=data)
    return list(qs)


def _num(value):
    return f"{value:.2f}" if isinstance(value, (int, float)) else "—"


def version_rows(vs) -> list[dict]:
    out = []
    for v in vs:
        m = v.metrics or {}
        info = m.get("info") or {}
        dev, test = m.get("dev") or {}, m.get("test") or {}
        out.append(
            {
                "v": v,
                "model": model_label(v.kind, info),
                "setting": info.get("setting", ""),
                "strategy": info.get("strategy", ""),
                "k": info.get("k", ""),
                "seed": info.get("seed", v.seed),
                "n_gold": info.get("n_gold", v.n_train),
                "n_silver": info.get("n_silver", ""),
                "dev": _num(dev.get("spearman")),
                "test": _num(test.get("spearman")),
                "jaccard": _num(test.get("jaccard_spearman", dev.get("jaccard_spearman"))),
            }
        )
    return out


def _rendered(t: dict) -> dict:
    rows = []
    for row in t["rows"]:
        cells = []
        for s in t["settings"]:
            c = row["cells"].get(s) or {}
            cells.append(
                {
                    "setting": s,
                    "mean": c.get("mean"),
                    "std": c.get("std"),
                    "n": c.get("n", 0),
                    "text": "—" if c.get("mean") is None else f"{c['mean']:.2f} ± {c['std']:.2f}",
                }
            )
        rows.append({"model": row["model"], "cells": cells})
    best = {}
    for i, s in enumerate(t["settings"]):
        aug = [
            r["cells"][i]["mean"]
            for r in rows
            if r["model"].startswith("AugSBERT") and r["cells"][i]["mean"] is not None
        ]
        best[s] = max(aug) if aug else None
    for r in rows:
        for c in r["cells"]:
            c["best"] = r["model"].startswith("AugSBERT") and c["mean"] is not None and c["mean"] == best[c["setting"]]
    return {"settings": t["settings"], "rows": rows}


@staff_required(researchers=True)
@require_GET
def results(request):
    project = request.GET.get("project") or None
    data = request.GET.get("data") or None
    vs = versions(project, data)
    test_table, dev_table = table(vs, part="test"), table(vs, part="dev")
    if request.GET.get("format") == "json":
        return JsonResponse(
            {
                "test": test_table,
                "dev": dev_table,
                "versions": [
                    {
                        "id": v.pk,
                        "kind": v.kind,
                        "project": v.project.slug if v.project else None,
                        "seed": v.seed,
                        "data_snapshot": v.data_snapshot,
                        "hyperparameters": v.hyperparameters,
                        "metrics": v.metrics,
                    }
                    for v in vs
                ],
            }
        )
    snapshots = sorted(set(ModelVersion.objects.filter(kind__in=KINDS).values_list("data_snapshot", flat=True)))
    return render(
        request,
        "ml/similarity/results.html",
        {
            "test": _rendered(test_table),
            "dev": _rendered(dev_table),
            "rows": version_rows(reversed(vs)),
            "project": project or "",
            "data": data or "",
            "snapshots": snapshots,
        },
    )
