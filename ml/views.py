"""Staff pages of the model registry: metrics over versions, one version, activate / roll back.

URLs (``ml/urls.py``, mounted at ``/ml/``; namespace ``ml``)::

    /ml/models/                        every (kind, project): versions table + SVG line of the dev primary metric
                                       over versions (?kind=ranker&project=<slug> to filter; ?format=csv); per
                                       version the dev primary metric, the same metric on the test rows, each
                                       beside the kind's baseline (``majority_...``, ``jaccard_...``), on the
                                       kind's scale (0-1, x100: labelled). Versions whose run died are swept to
                                       "interrupted" first (:func:`ml.versions.sweep_interrupted`)
    /ml/models/<id>/                   one version: metrics table (dev / test, 3 decimals), the primary metric over
                                       the versions of its (kind, project), the training loss, hyperparameters,
                                       data snapshot, error, artifact
    /ml/models/<id>/activate/          POST: make it the active version of its (kind, project)
    /ml/models/rollback/               POST kind=..&project=<slug or empty>: re-activate the previous version
                                       (offered only where :func:`ml.registry.rollback_target` names one)

Staff only (anonymous -> login, others -> 403), like the agreement dashboards.
"""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.db.models import Q
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation import access, teams
from annotation.agreement import svg
from argora import readable
from argora.spreadsheet import csv_response

from . import errors, registry
from .metrics import baseline_of, is_baseline, scale_of
from .models import ModelVersion
from .versions import status_of, sweep_interrupted


def staff_required(view=None, *, researchers: bool = False):
    """Anonymous -> login; a user of no project team (:func:`annotation.access.is_team_user`) -> 403. ``researchers``:
    only users who may make projects (the Researcher role) and superusers: pages of models that belong to no
    project (generation runs, the similarity results)."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            allowed = access.may_create_projects(request.user) if researchers else access.is_team_user(request.user)
            if not allowed:
                return render(request, "ml/forbidden.html", status=403)
            return view(request, *args, **kwargs)

        return wrapper

    return decorator(view) if view is not None else decorator


def visible_versions(user):
    """The model versions ``user`` may see: those of the projects they may see, and models of no project."""
    return ModelVersion.objects.filter(Q(project__isnull=True) | Q(project_id__in=access.project_ids(user)))


def _may_change(user, project) -> bool:
    """Activate / roll back: ``change`` on the model's project; a model of no project: the Researcher role."""
    return access.can(user, project, access.CHANGE) if project is not None else access.may_create_projects(user)


LIST_METRICS = 3  # metric columns on the list page (the primary metric first); the version page shows them all
COUNTS = {"n_dev", "n_test", "n_train", "n_pairs", "n_rows"}  # row counts: their own columns, not metrics


def _fmt(value) -> str:
    return readable.number(value) if isinstance(value, (int, float)) else "—"


def _numbers(metrics, prefix: str = "") -> dict[str, float]:
    """The numeric leaves of a metrics dict, nested keys joined with " · " (booleans and lists left out)."""
    out: dict[str, float] = {}
    for key, value in (metrics or {}).items() if isinstance(metrics, dict) else ():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_numbers(value, f"{name} · "))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = value
    return out


SCALE_TEXT = {"0-1": "0–1", "x100": "×100", "count": "count", "raw": ""}


def scale_text(name: str) -> str:
    return SCALE_TEXT[scale_of(name)]


def _beside(metrics: dict, name: str) -> dict:
    """``{"text", "value", "baseline_text", "baseline", "baseline_name"}`` of metric ``name`` in ``metrics``."""
    value = (metrics or {}).get(name)
    value = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    found = baseline_of(name, metrics or {}) if name else None
    return {
        "text": _fmt(value),
        "value": value,
        "baseline": found[1] if found else None,
        "baseline_text": _fmt(found[1]) if found else "—",
        "baseline_name": readable.words(found[0]) if found else "",
    }


def _label(name: str) -> str:
    return " · ".join(
        readable.label(part) if n == 0 else readable.words(part) for n, part in enumerate(name.split(" · "))
    )


def metric_table(version: ModelVersion) -> dict:
    """Every number of a version's dev (and test) metrics: ``{"columns": ["dev", "test"?], "rows": [{"name",
    "label", "cells": [{"text", "value"}]}]}``, the primary metric first."""
    metrics = version.metrics or {}
    columns = [c for c in ("dev", "test") if isinstance(metrics.get(c), dict) and metrics[c]]
    values = {c: _numbers(metrics[c]) for c in columns}
    names = list(dict.fromkeys(n for c in columns for n in values[c]))
    primary = metrics.get("primary_metric")
    names.sort(key=lambda n: (n != primary, n in COUNTS))
    return {
        "columns": columns,
        "rows": [
            {
                "name": n,
                "label": _label(n),
                "primary": n == primary,
                "scale": scale_text(n.split(" · ")[-1]),
                "cells": [{"text": _fmt(values[c].get(n)), "value": values[c].get(n)} for c in columns],
            }
            for n in names
        ],
    }


def loss_chart(version: ModelVersion):
    """The training loss per step from ``metrics.info.history`` (``[{"step", "loss"}]``), or None."""
    history = ((version.metrics or {}).get("info") or {}).get("history")
    if not isinstance(history, list):
        return None
    points = [
        (h["step"], h["loss"])
        for h in history
        if isinstance(h, dict) and isinstance(h.get("step"), (int, float)) and isinstance(h.get("loss"), (int, float))
    ]
    if len(points) < 2:
        return None
    if len(points) > 200:  # thin out long runs: the shape is what matters
        points = points[:: len(points) // 200 + 1] + [points[-1]]
    losses = [p[1] for p in points]
    return svg.lines(
        f"chart-loss-{version.pk}",
        [float(p[0]) for p in points],
        [{"name": "training loss", "values": losses}],
        title="Training loss by step",
        xlabel="step",
        ylabel="loss",
        lo=min(0.0, min(losses)),
        hi=max(losses),
    )


def metric_series(versions: list[ModelVersion], highlight: ModelVersion | None = None) -> dict:
    """Chart data of one (kind, project): x = version ids (ready ones, oldest first), y = dev primary metric;
    ``marked`` holds the value of ``highlight`` (default: the active version) only."""
    ready = [v for v in versions if v.primary_metric is not None]
    ready.sort(key=lambda v: v.pk)
    marked = [v.primary_metric if (v.pk == highlight.pk if highlight else v.is_active) else None for v in ready]
    return {"xs": [float(v.pk) for v in ready], "values": [v.primary_metric for v in ready], "marked": marked}


def _spec_metric(kind: str, versions) -> tuple[str, bool]:
    try:
        spec = registry.get_trainer(kind)
        return spec.primary_metric, spec.higher_is_better
    except errors.TrainerError:
        return next(
            ((v.metrics or {}).get("primary_metric") for v in versions if (v.metrics or {}).get("primary_metric")),
            "primary",
        ), True


def versions_chart(svg_id: str, kind: str, scope: str, metric: str, versions, *, highlight=None):
    """The dev primary metric over the versions of one (kind, project); the active version (or ``highlight``)
    is the second series."""
    series = metric_series(versions, highlight)
    return svg.lines(
        svg_id,
        series["xs"],
        [
            {"name": f"dev {readable.words(metric)}", "values": series["values"]},
            {"name": f"version #{highlight.pk}" if highlight else "active", "values": series["marked"]},
        ],
        title=f"{kind} · {scope}: dev {readable.words(metric)} by version",
        xlabel="version id",
        ylabel=readable.label(metric),
        lo=min([0.0] + series["values"]),
        hi=max([1.0] + series["values"]),
    )


def groups(kind: str | None = None, project_slug: str | None = None, *, user=None) -> list[dict]:
    qs = (
        (visible_versions(user) if user is not None else ModelVersion.objects.all())
        .select_related("project", "parent")
        .order_by("kind", "project_id", "id")
    )
    if kind:
        qs = qs.filter(kind=kind)
    if project_slug == "-":
        qs = qs.filter(project__isnull=True)
    elif project_slug:
        qs = qs.filter(project__slug=project_slug)
    out: dict[tuple, dict] = {}
    for v in qs:
        out.setdefault((v.kind, v.project_id), {"kind": v.kind, "project": v.project, "versions": []})
        out[(v.kind, v.project_id)]["versions"].append(v)
    result = []
    for n, g in enumerate(out.values()):
        g["metric"], g["higher_is_better"] = _spec_metric(g["kind"], g["versions"])
        g["metric_words"] = readable.words(g["metric"])
        scope = g["project"].slug if g["project"] else "global"
        g["scope"] = scope
        g["chart"] = versions_chart(f"chart-{g['kind']}-{scope}-{n}", g["kind"], scope, g["metric"], g["versions"])
        numbers = {v.pk: _numbers((v.metrics or {}).get("dev")) for v in g["versions"]}
        seen = [
            name
            for v in reversed(g["versions"])
            for name in numbers[v.pk]
            if name != g["metric"] and name not in COUNTS and not is_baseline(name, numbers[v.pk])
        ]
        others = sorted(dict.fromkeys(seen), key=lambda name: (-seen.count(name), name))
        names = [g["metric"]] + others[: LIST_METRICS - 1]
        g["columns"] = [{"name": name, "label": _label(name), "scale": scale_text(name)} for name in names]
        g["scale"] = scale_text(g["metric"])
        for v in g["versions"]:
            numbers[v.pk][g["metric"]] = v.primary_metric  # the registry's primary value, as the retrain loop reads it
        g["rows"] = [
            {
                "v": v,
                "status": status_of(v),
                "cells": [{"text": _fmt(numbers[v.pk].get(name)), "value": numbers[v.pk].get(name)} for name in names],
                "dev": _beside((v.metrics or {}).get("dev") or {}, g["metric"]),
                "test": _beside((v.metrics or {}).get("test") or {}, g["metric"]),
                "n_test": (v.metrics or {}).get("n_test", ((v.metrics or {}).get("test") or {}).get("n")),
            }
            for v in reversed(g["versions"])
        ]
        g["has_test"] = any(r["test"]["value"] is not None for r in g["rows"])
        # the baseline's name goes in the column heading (one per group, the newest version's), not in every cell
        g["dev_baseline_name"] = next((r["dev"]["baseline_name"] for r in g["rows"] if r["dev"]["baseline_name"]), "")
        g["test_baseline_name"] = next(
            (r["test"]["baseline_name"] for r in g["rows"] if r["test"]["baseline_name"]), ""
        )
        g["active"] = next((v for v in g["versions"] if v.is_active), None)
        # "Roll back" only where there is an active version and an earlier one to go back to
        g["rollback_to"] = registry.rollback_target(g["kind"], g["project"]) if g["active"] is not None else None
        result.append(g)
    return result


def _csv(value) -> str:
    return "" if value is None else str(value)


@staff_required
@require_GET
def model_list(request):
    kind = request.GET.get("kind") or None
    project = request.GET.get("project") or None
    sweep_interrupted()  # a run killed outright shows as interrupted, not "training" for ever
    data = groups(kind, project, user=request.user)
    if request.GET.get("format") == "csv":
        rows = [
            [
                "id",
                "kind",
                "project",
                "status",
                "active",
                "primary_metric",
                "primary",
                "primary_baseline",
                "test_primary",
                "test_primary_baseline",
                "scale",
                "n_train",
                "n_dev",
                "n_test",
                "seed",
                "base_model",
                "data_snapshot",
                "data_hash",
                "parent",
                "created_at",
                "trained_at",
            ]
        ]
        for g in data:
            for r in reversed(g["rows"]):  # oldest first
                v = r["v"]
                rows.append(
                    [
                        v.pk,
                        v.kind,
                        v.project.slug if v.project else "",
                        r["status"],
                        int(v.is_active),
                        g["metric"],
                        "" if v.primary_metric is None else v.primary_metric,
                        _csv(r["dev"]["baseline"]),
                        _csv(r["test"]["value"]),
                        _csv(r["test"]["baseline"]),
                        scale_of(g["metric"]),
                        v.n_train,
                        v.n_dev,
                        _csv(r["n_test"]),
                        v.seed,
                        v.base_model,
                        v.data_snapshot,
                        v.data_hash,
                        v.parent_id or "",
                        v.created_at.isoformat(),
                        v.trained_at.isoformat() if v.trained_at else "",
                    ]
                )
        return csv_response("models.csv", rows)  # every cell safe to open in a spreadsheet
    return render(
        request,
        "ml/models.html",
        {"groups": data, "kind": kind or "", "project": project or "", "kinds": registry.trainer_kinds()},
    )


def _detail_context(version: ModelVersion, **extra) -> dict:
    siblings = list(ModelVersion.objects.filter(kind=version.kind, project=version.project).order_by("id"))
    metric, higher = _spec_metric(version.kind, siblings)
    scope = version.project.slug if version.project else "global"
    info = (version.metrics or {}).get("info")
    return {
        "v": version,
        "status": status_of(version),
        "metric": metric,
        "metric_words": readable.words(metric),
        "higher_is_better": higher,
        "primary_text": _fmt(version.primary_metric),
        "metrics": metric_table(version),
        "versions_chart": versions_chart(
            f"chart-versions-{version.pk}", version.kind, scope, metric, siblings, highlight=version
        )
        if len(siblings) > 1
        else None,
        "loss_chart": loss_chart(version),
        "info": readable.summary(info, skip=("history", "hyperparameters")) if isinstance(info, dict) else [],
        "hyperparameters": readable.summary(version.hyperparameters or {}),
        "training_request": readable.summary(version.request or {}),
        "rollback_to": registry.rollback_target(version.kind, version.project) if version.is_active else None,
        "n_versions": len(siblings),
        **extra,
    }


@staff_required
@require_GET
def model_detail(request, pk: int):
    version = get_object_or_404(visible_versions(request.user).select_related("project", "parent"), pk=pk)
    return render(request, "ml/model_detail.html", _detail_context(version))


@staff_required
@require_POST
def model_activate(request, pk: int):
    version = get_object_or_404(visible_versions(request.user).select_related("project", "parent"), pk=pk)
    if not _may_change(request.user, version.project):
        return render(request, "ml/forbidden.html", status=403)
    try:
        registry.activate(version)
        teams.record(version.project, request.user, "model.activate", {"kind": version.kind, "version": version.pk})
        messages.success(request, f"Version {version.pk} is now the active {version.kind}.")
    except ValueError as exc:
        messages.error(request, str(exc))
        return render(request, "ml/model_detail.html", _detail_context(version, error=str(exc)), status=400)
    return redirect("ml:model-detail", pk=version.pk)


@staff_required
@require_POST
def model_rollback(request):
    kind = request.POST.get("kind", "")
    slug = request.POST.get("project", "")
    project = get_object_or_404(access.projects(request.user), slug=slug) if slug and slug != "-" else None
    if not _may_change(request.user, project):
        return render(request, "ml/forbidden.html", status=403)
    previous = registry.rollback(kind, project)
    if previous is not None:
        teams.record(project, request.user, "model.rollback", {"kind": kind, "version": previous.pk})
    if previous is None:
        messages.error(request, f"No earlier ready {kind} version to roll back to.")
    else:
        messages.success(request, f"Rolled back: version {previous.pk} is the active {kind} again.")
    return redirect("ml:models")
