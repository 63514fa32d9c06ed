"""The dashboards' pages: the index of every project, a project's agreement page, its lowest-agreement items with
adjudication, the recompute button and the CSV downloads (the URLs are in the package's docstring).

Each page reads the latest stored snapshot (:func:`_snapshot`: computed in the request for a small project,
enqueued for a large one, which answers "computing" meanwhile); :mod:`.figures` shapes what is shown and
:mod:`.tables` the CSV tables. Staff / experts only (:func:`annotation.views.expert_required`).
"""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from .. import access, services
from ..agreement.alttest import DEFAULT_EPSILON, MIN_HUMANS
from ..agreement.minimums import MIN_ITEM_RESPONSES, MIN_UNITS, MIN_WORKER_UNITS, mark
from ..agreement.scheduling import schedule_first_snapshot, schedule_recompute
from ..agreement.snapshots import item_page, latest_snapshot, latest_snapshots, store_snapshots
from ..models import Adjudication, AgreementSnapshot, Assignment, Item, Project, Response
from ..views import expert_required, team_project
from .figures import charts, figure_rows, item_row, model_sections, num, worker_row
from .tables import CSV_TABLES, csv_table_response, item_counts, raw, table_csv, with_items, with_overlap

SYNC_MAX_RESPONSES = 2000  # first view of a project without a snapshot: compute in the request up to this size
COMPUTING_RETRY_SECONDS = 5
LOWEST_SHOWN = 5  # items listed on the agreement page


# --- helpers ------------------------------------------------------------------------------------
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
        resp = HttpResponse(
            "The agreement figures of this project are being computed; try again in a few seconds.\n",
            status=503,
            content_type="text/plain; charset=utf-8",
        )
        resp["Retry-After"] = str(COMPUTING_RETRY_SECONDS)
        return resp
    return render(
        request,
        "annotation/dashboard/computing.html",
        {"project": project, "retry": COMPUTING_RETRY_SECONDS, "results_page": results_page(project)},
    )


def results_page(project: Project) -> dict | None:
    """``{"url", "text"}`` of the task type's own results page, or None."""
    entry = project.get_task_type().results_page
    if entry is None:
        return None
    return {"url": reverse(entry[0], args=[project.slug]), "text": entry[1]}


def _submitted(project: Project) -> int:
    return Assignment.objects.filter(project=project, status__in=Assignment.DONE).count()


def _current_adjudications(project: Project, item_ids=None) -> dict[int, dict]:
    """The latest adjudication of each item of the project (``item_ids``: of those items only)."""
    answer_text = project.get_task_type().answer_text
    out: dict[int, dict] = {}
    qs = Adjudication.objects.filter(item__project=project)
    if item_ids is not None:
        qs = qs.filter(item_id__in=item_ids)
    for a in qs.select_related("expert").order_by("item_id", "created_at", "id"):
        out[a.item_id] = {
            "answer": a.answer,
            "text": answer_text(a.answer),
            "note": a.note,
            "by": a.expert.get_username() if a.expert else "",
            "at": a.created_at,
        }
    return out


def _epsilon(given: str | None) -> float:
    """The alt-test's cost-benefit margin from ``?epsilon=`` (default: the paper's, 0.2)."""
    if given in (None, ""):
        return DEFAULT_EPSILON
    try:
        value = float(given)
    except ValueError:
        raise ValueError(f"a number from 0 to below 1, got {given!r}") from None
    if not 0 <= value < 1:
        raise ValueError(f"a number from 0 to below 1, got {given!r}")
    return value


def _positive(given: str | None, default: int, most: int) -> int:
    try:
        return max(1, min(most, int(given or default)))
    except ValueError:
        return default


# --- pages --------------------------------------------------------------------------------------
@expert_required
@require_GET
def dashboards(request):
    done = (
        Assignment.objects.filter(project=OuterRef("pk"), status__in=Assignment.DONE)
        .order_by()
        .values("project")
        .annotate(n=Count("pk"))
        .values("n")
    )
    adjudicated = (
        Adjudication.objects.filter(item__project=OuterRef("pk"))
        .order_by()
        .values("item__project")
        .annotate(n=Count("item", distinct=True))
        .values("n")
    )
    projects = list(
        access.projects(request.user)
        .annotate(
            n_submitted=Coalesce(Subquery(done, output_field=IntegerField()), 0),
            n_adjudicated=Coalesce(Subquery(adjudicated, output_field=IntegerField()), 0),
        )
        .order_by("pk")
    )
    snaps = latest_snapshots(projects)
    rows = []
    for project in projects:
        snap = snaps.get(project.pk)
        submitted = project.n_submitted
        f = snap.summary if snap else {}
        rows.append(
            {
                "project": project,
                "snap": snap,
                "submitted": submitted,
                "results_page": results_page(project),
                "stale": snap is not None and snap.based_on != submitted,
                "summary": f,
                "alpha": num(f.get("alpha")),
                "alpha_raw": raw(f.get("alpha")),
                "level": f.get("level", ""),
                "percent_agreement": num(f.get("percent_agreement")),
                "kappa": num(f.get("kappa")),
                "n_units": f.get("n_units", ""),
                "n_coders": f.get("n_coders", ""),
                "mark": mark(f.get("n_units"), MIN_UNITS, "pairable units")
                if snap and not f.get("unsupported")
                else None,
                "adjudicated": project.n_adjudicated,
            }
        )
    if request.GET.get("format") == "csv":
        header = [
            "project",
            "task_type",
            "status",
            "submitted_assignments",
            "level",
            "alpha",
            "percent_agreement",
            "kappa",
            "n_units",
            "n_coders",
            "computed_at",
            "based_on",
        ]
        out = []
        for r in rows:
            f = r["summary"]
            out.append(
                [
                    r["project"].slug,
                    r["project"].task_type,
                    r["project"].status,
                    r["submitted"],
                    f.get("level"),
                    f.get("alpha"),
                    f.get("percent_agreement"),
                    f.get("kappa"),
                    f.get("n_units"),
                    f.get("n_coders"),
                    r["snap"].computed_at.isoformat() if r["snap"] else "",
                    r["snap"].based_on if r["snap"] else "",
                ]
            )
        return csv_table_response("dashboards.csv", header, out)
    return render(request, "annotation/dashboard/index.html", {"rows": rows, "min_units": MIN_UNITS})


@expert_required
@require_GET
def agreement(request, slug: str):
    project = team_project(request, slug, access.VIEW)
    snap = _snapshot(project)
    if snap is None:
        return _computing(request, project, csv=request.GET.get("format") == "csv")
    table = snap.figures
    if request.GET.get("format") == "csv":
        header, rows = table_csv(table, "summary", snap)
        return csv_table_response(f"{project.slug}-summary.csv", header, rows)
    try:
        epsilon = _epsilon(request.GET.get("epsilon"))
    except ValueError as exc:
        return HttpResponse(f"epsilon: {exc}\n", status=400, content_type="text/plain; charset=utf-8")
    submitted = _submitted(project)
    workers = sorted(map(with_overlap, table.get("workers", [])), key=lambda w: w["coder"])
    n_items, n_without = item_counts(table)
    lowest = item_page(snap, limit=LOWEST_SHOWN, with_agreement=True, responses=False)
    figures = figure_rows(table)
    return render(
        request,
        "annotation/dashboard/agreement.html",
        {
            "project": project,
            "snap": snap,
            "table": table,
            "figures": figures,
            "overall": figures[0],
            "charts": charts(table),
            "workers": [worker_row(w) for w in workers],
            "submitted": submitted,
            "stale": snap.based_on != submitted,
            "new_since": max(0, submitted - snap.based_on),
            "csv_tables": CSV_TABLES,
            "unitized": table.get("level") == "unitized",
            "lowest": [item_row(it, table) for it in lowest],
            "n_items": n_items,
            "n_items_without": n_without,
            "no_item_agreement": bool(table.get("unsupported")),
            "results_page": results_page(project),
            "cve": table.get("crowd_vs_expert"),
            "minimums": {"units": MIN_UNITS, "item_responses": MIN_ITEM_RESPONSES, "worker_units": MIN_WORKER_UNITS},
            "models": model_sections(project, table, epsilon),
            "epsilon": epsilon,
            "min_humans": MIN_HUMANS,
        },
    )


@expert_required
@require_POST
def agreement_recompute(request, slug: str):
    project = team_project(request, slug, access.CHANGE)
    schedule_recompute(project.pk, force=True)
    messages.success(
        request, "Recomputation queued: the figures update when the worker has finished (reload this page)."
    )
    return redirect("annotation:agreement", slug=project.slug)


@expert_required
@require_GET
def agreement_items(request, slug: str):
    return _items_page(request, team_project(request, slug))


def _items_page(request, project: Project, *, error: dict | None = None, status: int = 200):
    """One page of the snapshot's items, lowest agreement first (``?page=`` from 1, ``?limit=`` up to 1,000 a
    page): rows ``rank >= (page - 1) * limit`` on the rows' index, however many items the project has."""
    snap = _snapshot(project)
    if snap is None:
        return _computing(request, project, csv=request.GET.get("format") == "csv")
    table = snap.figures
    tt = project.get_task_type()
    if request.GET.get("format") == "csv":
        header, rows = table_csv(with_items(snap), "items", snap, _current_adjudications(project), tt.answer_text)
        return csv_table_response(f"{project.slug}-items.csv", header, rows)
    limit = _positive(request.GET.get("limit"), 50, 1000)
    total, _ = item_counts(table)
    pages = max(1, -(-total // limit))
    page = min(_positive(request.GET.get("page"), 1, pages), pages)
    items = item_page(snap, start=(page - 1) * limit, limit=limit)
    adjudications = _current_adjudications(project, [it["item_id"] for it in items])
    names = {w["coder"]: w["name"] for w in table.get("workers", [])}
    rows = []
    for it in items:
        rows.append(
            {
                **item_row(it, table),
                "answers": [
                    {
                        "who": names.get(r["coder"], r["coder"]),
                        "expert": r["is_expert"],
                        "text": tt.answer_text(r["data"]),
                    }
                    for r in it["responses"]
                ],
                "adjudication": adjudications.get(it["item_id"]),
                "form": tt.adjudication_form(project, it),
                "form_template": tt.adjudication_template,
                "error": (error or {}).get(it["item_id"]),
            }
        )
    n_adjudicated = Adjudication.objects.filter(item__project=project).values("item").distinct().count()
    return render(
        request,
        "annotation/dashboard/items.html",
        {
            "project": project,
            "snap": snap,
            "rows": rows,
            "total": total,
            "limit": limit,
            "page": page,
            "pages": pages,
            "first_rank": (page - 1) * limit + 1 if rows else 0,
            "last_rank": (page - 1) * limit + len(rows),
            "previous_page": page - 1 if page > 1 else None,
            "next_page": page + 1 if page < pages else None,
            "n_adjudicated": n_adjudicated,
            "min_item_responses": MIN_ITEM_RESPONSES,
        },
        status=status,
    )


@expert_required
@require_POST
def adjudicate(request, slug: str, item_id: int):
    project = team_project(request, slug, access.CHANGE)
    item = get_object_or_404(Item, pk=item_id, project=project)
    answer = project.get_task_type().parse_adjudication(project, request.POST)
    try:
        services.adjudicate_item(item, answer, expert=request.user, note=request.POST.get("note", "")[:2000])
    except services.AdjudicationRefused as exc:
        return _items_page(request, project, error={item.pk: f"{exc.field}: {exc.reason}"}, status=400)
    messages.success(request, f"Item {item.pk}: final answer recorded.")
    page = _positive(request.GET.get("page"), 1, 10**9)
    limit = _positive(request.GET.get("limit"), 50, 1000)
    back = f"?page={page}&limit={limit}" if request.GET.get("page") else ""
    return redirect(reverse("annotation:agreement-items", args=[project.slug]) + f"{back}#item-{item.pk}")


@expert_required
@require_GET
def agreement_csv(request, slug: str, table: str):
    project = team_project(request, slug, access.VIEW)
    if table not in CSV_TABLES:
        raise Http404(f"no table {table!r}")
    snap = _snapshot(project)
    if snap is None:
        return _computing(request, project, csv=True)
    header, rows = table_csv(
        with_items(snap) if table == "items" else snap.figures,
        table,
        snap,
        _current_adjudications(project),
        project.get_task_type().answer_text,
    )
    return csv_table_response(f"{project.slug}-{table}.csv", header, rows)
