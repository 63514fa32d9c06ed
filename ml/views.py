"""Staff pages of the model registry: metrics over versions, one version, activate / roll back.

URLs (``ml/urls.py``, mounted at ``/ml/``; namespace ``ml``)::

    /ml/models/                        every (kind, project): versions table + SVG line of the dev primary metric
                                       over versions (?kind=ranker&project=<slug> to filter; ?format=csv)
    /ml/models/<id>/                   one version: metrics, hyperparameters, data snapshot, error, artifact
    /ml/models/<id>/activate/          POST: make it the active version of its (kind, project)
    /ml/models/rollback/               POST kind=..&project=<slug or empty>: re-activate the previous version

Staff only (anonymous -> login, others -> 403), like the agreement dashboards.
"""
from __future__ import annotations

import csv
import io
import json
from functools import wraps

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.agreement import svg
from annotation.models import Project

from . import registry
from .models import ModelVersion


def staff_required(view):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.is_staff:
            return render(request, "ml/forbidden.html", status=403)
        return view(request, *args, **kwargs)

    return wrapper


def _fmt(value, digits: int = 4) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "—"


def metric_series(versions: list[ModelVersion]) -> dict:
    """Chart data of one (kind, project): x = version ids (ready ones, oldest first), y = dev primary metric."""
    ready = [v for v in versions if v.primary_metric is not None]
    ready.sort(key=lambda v: v.pk)
    values = [v.primary_metric for v in ready]
    active = [v.primary_metric if v.is_active else None for v in ready]
    return {"xs": [float(v.pk) for v in ready], "values": values, "active": active}


def groups(kind: str | None = None, project_slug: str | None = None) -> list[dict]:
    qs = ModelVersion.objects.select_related("project", "parent").order_by("kind", "project_id", "id")
    if kind:
        qs = qs.filter(kind=kind)
    if project_slug == "-":
        qs = qs.filter(project__isnull=True)
    elif project_slug:
        qs = qs.filter(project__slug=project_slug)
    out: dict[tuple, dict] = {}
    for v in qs:
        key = (v.kind, v.project_id)
        if key not in out:
            try:
                spec = registry.get_trainer(v.kind)
                metric, higher = spec.primary_metric, spec.higher_is_better
            except registry.TrainerError:
                metric, higher = (v.metrics or {}).get("primary_metric", "primary"), True
            out[key] = {"kind": v.kind, "project": v.project, "metric": metric, "higher_is_better": higher,
                        "versions": []}
        out[key]["versions"].append(v)
    result = []
    for n, g in enumerate(out.values()):
        series = metric_series(g["versions"])
        scope = g["project"].slug if g["project"] else "global"
        g["chart"] = svg.lines(f"chart-{g['kind']}-{scope}-{n}", series["xs"], [
            {"name": f"dev {g['metric']}", "values": series["values"]},
            {"name": "active", "values": series["active"]},
        ], title=f"{g['kind']} · {scope}: dev {g['metric']} by version", xlabel="version id",
            ylabel=g["metric"], lo=min([0.0] + [v for v in series["values"]]), hi=max([1.0] + series["values"]))
        g["scope"] = scope
        g["rows"] = [{"v": v, "primary": _fmt(v.primary_metric), "primary_raw": v.primary_metric}
                     for v in reversed(g["versions"])]
        result.append(g)
    return result


@staff_required
@require_GET
def model_list(request):
    kind = request.GET.get("kind") or None
    project = request.GET.get("project") or None
    data = groups(kind, project)
    if request.GET.get("format") == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(["id", "kind", "project", "status", "active", "primary_metric", "primary", "n_train", "n_dev",
                         "seed", "base_model", "data_snapshot", "data_hash", "parent", "created_at", "trained_at"])
        for g in data:
            for v in g["versions"]:
                writer.writerow([v.pk, v.kind, v.project.slug if v.project else "", v.status, int(v.is_active),
                                 g["metric"], "" if v.primary_metric is None else v.primary_metric, v.n_train, v.n_dev,
                                 v.seed, v.base_model, v.data_snapshot, v.data_hash, v.parent_id or "",
                                 v.created_at.isoformat(), v.trained_at.isoformat() if v.trained_at else ""])
        response = HttpResponse(buf.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="models.csv"'
        return response
    return render(request, "ml/models.html", {"groups": data, "kind": kind or "", "project": project or "",
                                              "kinds": registry.trainer_kinds()})


@staff_required
@require_GET
def model_detail(request, pk: int):
    version = get_object_or_404(ModelVersion.objects.select_related("project", "parent"), pk=pk)
    return render(request, "ml/model_detail.html", {
        "v": version, "metrics_json": json.dumps(version.metrics, indent=2, sort_keys=True),
        "hyperparameters_json": json.dumps(version.hyperparameters, indent=2, sort_keys=True),
        "request_json": json.dumps(version.request, indent=2, sort_keys=True)})


@staff_required
@require_POST
def model_activate(request, pk: int):
    version = get_object_or_404(ModelVersion, pk=pk)
    try:
        registry.activate(version)
        messages.success(request, f"Version {version.pk} is now the active {version.kind}.")
    except ValueError as exc:
        messages.error(request, str(exc))
        return render(request, "ml/model_detail.html", {"v": version, "error": str(exc),
                                                        "metrics_json": json.dumps(version.metrics, indent=2)},
                      status=400)
    return redirect("ml:model-detail", pk=version.pk)


@staff_required
@require_POST
def model_rollback(request):
    kind = request.POST.get("kind", "")
    slug = request.POST.get("project", "")
    project = get_object_or_404(Project, slug=slug) if slug and slug != "-" else None
    previous = registry.rollback(kind, project)
    if previous is None:
        messages.error(request, f"No earlier ready {kind} version to roll back to.")
    else:
        messages.success(request, f"Rolled back: version {previous.pk} is the active {kind} again.")
    return redirect("ml:models")
