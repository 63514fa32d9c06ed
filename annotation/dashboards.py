"""Expert dashboards: per-project agreement, the lowest-agreement drill-down with adjudication, CSV downloads.

Thin views over :mod:`annotation.agreement` (:mod:`~annotation.agreement.table`, :mod:`~annotation.agreement.snapshots`,
:mod:`~annotation.agreement.scheduling`) and :func:`annotation.services.adjudicate_item`: the figures come from the latest stored
:class:`~annotation.models.AgreementSnapshot`. When a project has none yet, a small project (at most
:data:`SYNC_MAX_RESPONSES` = 2,000 responses, tens of milliseconds) is computed and stored in the request; a larger
one enqueues ``annotation.recompute_agreement`` after commit (once per :data:`FIRST_VIEW_LOCK_SECONDS`) and the pages
say "computing" (CSV downloads answer 503 with ``Retry-After``) until the worker has stored it. "Recompute now"
enqueues the task after commit; charts are server-side SVG (:mod:`annotation.agreement.svg`). Task types with a
results page of their own (``TaskType.results_page``: BWS split-half, ValNov, ratings) are linked from the index and
the agreement page. The adjudication form of an item is the task type's (``TaskType.adjudication_template``).
Staff / experts only: anonymous -> login, crowdworkers -> 403.

URLs (``annotation/dashboard_urls.py``)::

    /dashboards/                                     every project: latest figures (?format=csv)
    /projects/<slug>/agreement/                      summary, charts (?format=csv: the summary table)
    /projects/<slug>/agreement/recompute/            POST: enqueue a recompute
    /projects/<slug>/agreement/items/                lowest agreement first, responses, adjudication (?format=csv)
    /projects/<slug>/agreement/items/<id>/adjudicate/  POST: an expert's final answer
    /projects/<slug>/agreement/<table>.csv           summary | topics | workers | items | over_time
"""
from __future__ import annotations


from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from argora.spreadsheet import csv_response

from . import services
from .agreement import svg
from .agreement.scheduling import schedule_first_snapshot, schedule_recompute
from .agreement.snapshots import latest_snapshot, store_snapshots
from .models import Adjudication, AgreementSnapshot, Assignment, Item, Project, Response
from .views import expert_required

CSV_TABLES = ("summary", "topics", "workers", "items", "over_time")
SYNC_MAX_RESPONSES = 2000        # first view of a project without a snapshot: compute in the request up to this size
COMPUTING_RETRY_SECONDS = 5


# --- helpers ------------------------------------------------------------------------------------
def _num(v, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _raw(v) -> str:
    return "" if v is None else repr(v) if isinstance(v, float) else str(v)


def _snapshot(project: Project) -> AgreementSnapshot | None:
    """The latest snapshot; without one, compute it now (small project) or enqueue it and return None."""
    snap = latest_snapshot(project)
    if snap is not None:
        return snap
    n = Response.objects.filter(assignment__project=project, assignment__status__in=Assignment.DONE).count()
    if n <= SYNC_MAX_RESPONSES:
        store_snapshots(project)
        return latest_snapshot(project)
    schedule_first_snapshot(project.pk)
    return None


def _computing(request, project: Project, *, csv: bool = False):
    """The answer while the first snapshot is being computed by a worker."""
    if csv:
        resp = HttpResponse("The agreement figures of this project are being computed; try again in a few seconds.\n",
                            status=503, content_type="text/plain; charset=utf-8")
        resp["Retry-After"] = str(COMPUTING_RETRY_SECONDS)
        return resp
    return render(request, "annotation/dashboard/computing.html", {
        "project": project, "retry": COMPUTING_RETRY_SECONDS, "results_page": results_page(project)})


def results_page(project: Project) -> dict | None:
    """``{"url", "text"}`` of the task type's own results page, or None."""
    entry = project.get_task_type().results_page
    if entry is None:
        return None
    return {"url": reverse(entry[0], args=[project.slug]), "text": entry[1]}


def _submitted(project: Project) -> int:
    return Assignment.objects.filter(project=project, status__in=Assignment.DONE).count()


def _current_adjudications(project: Project) -> dict[int, dict]:
    answer_text = project.get_task_type().answer_text
    out: dict[int, dict] = {}
    for a in (Adjudication.objects.filter(item__project=project).select_related("expert")
              .order_by("item_id", "created_at", "id")):
        out[a.item_id] = {"answer": a.answer, "text": answer_text(a.answer), "note": a.note,
                          "by": a.expert.get_username() if a.expert else "", "at": a.created_at}
    return out


def _csv_response(filename: str, header: list[str], rows: list[list]) -> HttpResponse:
    return csv_response(filename, [header] + [[_raw(v) for v in row] for row in rows])


FIGURE_COLUMNS = ["level", "alpha", "alpha_ci_low", "alpha_ci_high", "percent_agreement", "kappa", "fleiss_kappa",
                  "n_units", "n_coders"]


def _figure_row(f: dict) -> list:
    ci = f.get("alpha_ci") or {}
    return [f.get("level"), f.get("alpha"), ci.get("low"), ci.get("high"), f.get("percent_agreement"),
            f.get("kappa"), f.get("fleiss_kappa"), f.get("n_units"), f.get("n_coders")]


def _summary_scopes(table: dict) -> list[tuple[str, dict]]:
    scopes = [("project", table)] + [(f"topic:{t['topic']}", t) for t in table.get("topics", [])]
    cve = table.get("crowd_vs_expert")
    if cve:
        scopes += [("crowd", cve["crowd"]), ("expert", cve["expert"]), ("crowd-vs-expert", cve["between"])]
    return scopes


def table_csv(table: dict, name: str, snap: AgreementSnapshot | None = None, adjudications=None,
              answer_text=str):
    """(header, rows) of one CSV table of a project table (``answer_text``: the task type's reading of an answer)."""
    if name == "summary":
        header = ["scope"] + FIGURE_COLUMNS + ["computed_at", "based_on"]
        rows = [[scope] + _figure_row(f) + [snap.computed_at.isoformat() if snap else "", table.get("based_on")]
                for scope, f in _summary_scopes(table)]
    elif name == "topics":
        header = ["topic"] + FIGURE_COLUMNS
        rows = [[t["topic"]] + _figure_row(t) for t in table.get("topics", [])]
    elif name == "workers":
        header = ["coder", "worker_id", "name", "is_expert", "n_responses", "loo_agreement", "loo_n",
                  "gold_accuracy", "gold_n", "competence"]
        rows = [[w[h] for h in header] for w in table.get("workers", [])]
    elif name == "items":
        adjudications = adjudications or {}
        header = ["item_id", "position", "topic", "text", "n", "agreement", "majority", "responses",
                  "adjudicated", "adjudicated_by", "adjudicated_at"]
        rows = []
        for it in _lowest_first(table.get("items", [])):
            adj = adjudications.get(it["item_id"])
            rows.append([it["item_id"], it["position"], it["topic"], it["text"], it["n"], it["agreement"],
                         it["majority"], "; ".join(f'{r["coder"]}={answer_text(r["data"])}'
                                                   for r in it["responses"]),
                         adj["text"] if adj else "", adj["by"] if adj else "",
                         adj["at"].isoformat() if adj else ""])
    elif name == "over_time":
        header = ["assignments", "alpha", "percent_agreement", "n_units", "reason"]
        rows = [[p.get(h, "") for h in header] for p in table.get("over_time", [])]
    else:
        raise Http404(f"no table {name!r}; tables: {', '.join(CSV_TABLES)}")
    return header, rows


def _lowest_first(items: list[dict]) -> list[dict]:
    return sorted(items, key=lambda it: (it["agreement"] is None, it["agreement"] if it["agreement"] is not None
                                         else 0, it["position"], it["item_id"]))


def charts(table: dict) -> dict:
    hist = table.get("item_agreement_histogram") or {"bins": [k / 10 for k in range(11)], "counts": [0] * 10}
    workers = table.get("workers", [])
    y_key, y_label = worker_y_axis(table)
    points = [{"x": w["loo_agreement"], "y": w.get(y_key), "label": w["name"], "highlight": w["is_expert"]}
              for w in workers]
    ot = table.get("over_time", [])
    level = table.get("level", "nominal")
    topic_rows = [{"label": t["topic"], "value": t["alpha"],
                   "note": f' ({t["n_units"]} units, {t["n_coders"]} coders)'} for t in table.get("topics", [])]
    alpha_name = "alpha_u" if level == "unitized" else "alpha"
    return {
        "histogram": svg.histogram("chart-histogram", hist["counts"], hist["bins"],
                                   title="Per-item agreement (share of agreeing pairs)",
                                   xlabel="agreement of the item's responses"),
        "workers": svg.scatter("chart-workers", points, title=f"Workers: leave-one-out agreement vs {y_label}",
                               xlabel="agreement with the others' majority (LOO)", ylabel=y_label),
        "workers_y": y_label,
        "time": svg.lines("chart-time", [p["assignments"] for p in ot],
                          [{"name": "alpha (cumulative)", "values": [p["alpha"] for p in ot]},
                           {"name": "% agreement (cumul.)", "values": [p["percent_agreement"] for p in ot]}],
                          title="Agreement over submission order", xlabel="assignments submitted",
                          ylabel="coefficient"),
        "topics": svg.bars("chart-topics", topic_rows, title=f"Per-topic {alpha_name}", xlabel=alpha_name),
        "n_workers_plotted": sum(1 for p in points if p["x"] is not None and p["y"] is not None),
    }


def worker_y_axis(table: dict) -> tuple[str, str]:
    """The worker scatter's y: gold accuracy when the project has gold answers, else Dawid-Skene competence."""
    if any(w.get("gold_n") for w in table.get("workers", [])):
        return "gold_accuracy", "gold accuracy"
    return "competence", "Dawid-Skene competence"


def _figure_rows(table: dict) -> list[dict]:
    rows = []
    for scope, f in _summary_scopes(table):
        ci = f.get("alpha_ci")
        rows.append({"scope": scope, "slug": scope.replace(":", "-").replace(" ", "-"), "level": f.get("level"),
                     "alpha": _num(f.get("alpha")), "alpha_raw": _raw(f.get("alpha")),
                     "ci": f"[{_num(ci['low'])}, {_num(ci['high'])}]" if ci else "—",
                     "percent_agreement": _num(f.get("percent_agreement")),
                     "percent_agreement_raw": _raw(f.get("percent_agreement")),
                     "kappa": _num(f.get("kappa")), "kappa_raw": _raw(f.get("kappa")),
                     "fleiss_kappa": _num(f.get("fleiss_kappa")), "fleiss_kappa_raw": _raw(f.get("fleiss_kappa")),
                     "n_units": f.get("n_units"), "n_coders": f.get("n_coders"),
                     "reasons": f.get("reasons") or {}})
    return rows


# --- pages --------------------------------------------------------------------------------------
@expert_required
@require_GET
def dashboards(request):
    rows = []
    for project in Project.objects.all():
        snap = latest_snapshot(project)
        submitted = _submitted(project)
        f = snap.figures if snap else {}
        rows.append({"project": project, "snap": snap, "submitted": submitted, "results_page": results_page(project),
                     "stale": snap is not None and snap.based_on != submitted,
                     "alpha": _num(f.get("alpha")), "alpha_raw": _raw(f.get("alpha")), "level": f.get("level", ""),
                     "percent_agreement": _num(f.get("percent_agreement")), "kappa": _num(f.get("kappa")),
                     "n_units": f.get("n_units", ""), "n_coders": f.get("n_coders", ""),
                     "adjudicated": Adjudication.objects.filter(item__project=project).values("item").distinct()
                     .count()})
    if request.GET.get("format") == "csv":
        header = ["project", "task_type", "status", "submitted_assignments", "level", "alpha", "percent_agreement",
                  "kappa", "n_units", "n_coders", "computed_at", "based_on"]
        out = []
        for r in rows:
            f = r["snap"].figures if r["snap"] else {}
            out.append([r["project"].slug, r["project"].task_type, r["project"].status, r["submitted"],
                        f.get("level"), f.get("alpha"), f.get("percent_agreement"), f.get("kappa"),
                        f.get("n_units"), f.get("n_coders"),
                        r["snap"].computed_at.isoformat() if r["snap"] else "",
                        r["snap"].based_on if r["snap"] else ""])
        return _csv_response("dashboards.csv", header, out)
    return render(request, "annotation/dashboard/index.html", {"rows": rows})


@expert_required
@require_GET
def agreement(request, slug: str):
    project = get_object_or_404(Project, slug=slug)
    snap = _snapshot(project)
    if snap is None:
        return _computing(request, project, csv=request.GET.get("format") == "csv")
    table = snap.figures
    if request.GET.get("format") == "csv":
        header, rows = table_csv(table, "summary", snap)
        return _csv_response(f"{project.slug}-summary.csv", header, rows)
    submitted = _submitted(project)
    workers = sorted(table.get("workers", []), key=lambda w: w["coder"])
    return render(request, "annotation/dashboard/agreement.html", {
        "project": project, "snap": snap, "table": table, "figures": _figure_rows(table),
        "overall": _figure_rows(table)[0], "charts": charts(table),
        "workers": [{**w, "loo": _num(w["loo_agreement"]), "gold": _num(w["gold_accuracy"]),
                     "comp": _num(w["competence"])} for w in workers],
        "submitted": submitted, "stale": snap.based_on != submitted, "new_since": max(0, submitted - snap.based_on),
        "csv_tables": CSV_TABLES, "unitized": table.get("level") == "unitized",
        "lowest": _lowest_first(table.get("items", []))[:5], "results_page": results_page(project),
        "cve": table.get("crowd_vs_expert"),
    })


@expert_required
@require_POST
def agreement_recompute(request, slug: str):
    project = get_object_or_404(Project, slug=slug)
    schedule_recompute(project.pk, force=True)
    messages.success(request, "Recomputation queued: the figures update when the worker has finished "
                              "(reload this page).")
    return redirect("annotation:agreement", slug=project.slug)


@expert_required
@require_GET
def agreement_items(request, slug: str):
    return _items_page(request, get_object_or_404(Project, slug=slug))


def _items_page(request, project: Project, *, error: dict | None = None, status: int = 200):
    snap = _snapshot(project)
    if snap is None:
        return _computing(request, project, csv=request.GET.get("format") == "csv")
    table = snap.figures
    adjudications = _current_adjudications(project)
    if request.GET.get("format") == "csv":
        header, rows = table_csv(table, "items", snap, adjudications, project.get_task_type().answer_text)
        return _csv_response(f"{project.slug}-items.csv", header, rows)
    try:
        limit = max(1, min(1000, int(request.GET.get("limit", 50))))
    except ValueError:
        limit = 50
    items = _lowest_first(table.get("items", []))
    names = {w["coder"]: w["name"] for w in table.get("workers", [])}
    tt = project.get_task_type()
    rows = []
    for it in items[:limit]:
        rows.append({**it, "agreement_text": _num(it["agreement"]),
                     "answers": [{"who": names.get(r["coder"], r["coder"]), "expert": r["is_expert"],
                                  "text": tt.answer_text(r["data"])} for r in it["responses"]],
                     "adjudication": adjudications.get(it["item_id"]), "form": tt.adjudication_form(project, it),
                     "form_template": tt.adjudication_template,
                     "error": (error or {}).get(it["item_id"])})
    return render(request, "annotation/dashboard/items.html", {
        "project": project, "snap": snap, "rows": rows, "total": len(items), "limit": limit,
        "n_adjudicated": len(adjudications),
    }, status=status)


@expert_required
@require_POST
def adjudicate(request, slug: str, item_id: int):
    project = get_object_or_404(Project, slug=slug)
    item = get_object_or_404(Item, pk=item_id, project=project)
    answer = project.get_task_type().parse_adjudication(project, request.POST)
    try:
        services.adjudicate_item(item, answer, expert=request.user, note=request.POST.get("note", "")[:2000])
    except services.AdjudicationRefused as exc:
        return _items_page(request, project, error={item.pk: f"{exc.field}: {exc.reason}"}, status=400)
    messages.success(request, f"Item {item.pk}: final answer recorded.")
    return redirect(reverse("annotation:agreement-items", args=[project.slug]) + f"#item-{item.pk}")


@expert_required
@require_GET
def agreement_csv(request, slug: str, table: str):
    project = get_object_or_404(Project, slug=slug)
    if table not in CSV_TABLES:
        raise Http404(f"no table {table!r}")
    snap = _snapshot(project)
    if snap is None:
        return _computing(request, project, csv=True)
    header, rows = table_csv(snap.figures, table, snap, _current_adjudications(project),
                             project.get_task_type().answer_text)
    return _csv_response(f"{project.slug}-{table}.csv", header, rows)

