"""Expert dashboards: per-project agreement, the lowest-agreement drill-down with adjudication, CSV downloads.

Thin views over :mod:`annotation.agreement` (:mod:`~annotation.agreement.table`, :mod:`~annotation.agreement.snapshots`,
:mod:`~annotation.agreement.scheduling`) and :func:`annotation.services.adjudicate_item`: the figures come from the latest stored
:class:`~annotation.models.AgreementSnapshot`: ``/dashboards/`` reads only each project's summary (two queries for
any number of projects), the agreement page the snapshot's figures without items plus one page of its item rows,
and the items page one page of rows (``?page=``, ``?limit=``; the CSV downloads read them all). When a project has
none yet, a small project (at most
:data:`SYNC_MAX_RESPONSES` = 2,000 responses, tens of milliseconds) is computed and stored in the request; a larger
one enqueues ``annotation.recompute_agreement`` after commit (once per :data:`FIRST_VIEW_LOCK_SECONDS`) and the pages
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


from django.contrib import messages
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from argora.spreadsheet import csv_response

from . import access, model_annotators, services
from .agreement import svg
from .agreement.alttest import DEFAULT_EPSILON, MIN_HUMANS
from .agreement.minimums import MIN_ITEM_RESPONSES, MIN_UNITS, MIN_WORKER_UNITS, mark
from .agreement.scheduling import schedule_first_snapshot, schedule_recompute
from .agreement.snapshots import item_page, item_rows, latest_snapshot, latest_snapshots, store_snapshots
from .models import Adjudication, AgreementSnapshot, Assignment, Item, Project, Response
from .views import expert_required, team_project

CSV_TABLES = ("summary", "topics", "workers", "items", "over_time")
SYNC_MAX_RESPONSES = 2000        # first view of a project without a snapshot: compute in the request up to this size
COMPUTING_RETRY_SECONDS = 5
LOWEST_SHOWN = 5                 # items listed on the agreement page


# --- helpers ------------------------------------------------------------------------------------
def _num(v, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


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


def _current_adjudications(project: Project, item_ids=None) -> dict[int, dict]:
    """The latest adjudication of each item of the project (``item_ids``: of those items only)."""
    answer_text = project.get_task_type().answer_text
    out: dict[int, dict] = {}
    qs = Adjudication.objects.filter(item__project=project)
    if item_ids is not None:
        qs = qs.filter(item_id__in=item_ids)
    for a in qs.select_related("expert").order_by("item_id", "created_at", "id"):
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
                  "gold_accuracy", "gold_n", "competence", "overlap_n", "competence_reason"]
        rows = [[w.get(h) for h in header] for w in map(_with_overlap, table.get("workers", []))]
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


def _with_overlap(w: dict) -> dict:
    """A worker row of any snapshot, with ``overlap_n`` and the competence it allows: snapshots stored before the
    overlap was kept get it from ``loo_n`` (the same count), and a competence without overlap is dropped."""
    overlap = w.get("overlap_n", w.get("loo_n", 0)) or 0
    out = {**w, "overlap_n": overlap}
    if not overlap:
        out["competence"] = None
        out["competence_reason"] = "no overlap with other workers"
    return out


def _item_reason(it: dict, table: dict) -> str:
    """Why an item has no agreement figure."""
    if it["agreement"] is not None:
        return ""
    if table.get("unsupported"):
        return "no per-item agreement for this task type"
    if it["n"] < 2:
        return f"only {it['n']} response" + ("" if it["n"] == 1 else "s")
    return "undefined (no two responses share a unit)"


def _item_counts(table: dict) -> tuple[int, int]:
    """(answered items, items without an agreement figure): counted from ``items`` when the table has them (a
    fresh project table), else the counts stored with the snapshot's figures."""
    if "items" in table:
        items = table["items"]
        return len(items), sum(1 for it in items if it["agreement"] is None)
    return table.get("n_items", 0), table.get("n_items_without", 0)


def _with_items(snap: AgreementSnapshot) -> dict:
    """The snapshot's figures with every item row (lowest agreement first): for the CSV downloads only."""
    return {**snap.figures, "items": [r.as_dict() for r in item_rows(snap).iterator(chunk_size=2000)]}


def _lowest_first(items: list[dict]) -> list[dict]:
    return sorted(items, key=lambda it: (it["agreement"] is None, it["agreement"] if it["agreement"] is not None
                                         else 0, it["position"], it["item_id"]))


def charts(table: dict) -> dict:
    """The four charts, each with its n (``*_n``) and a "too few ratings" mark (``*_mark``); points and bars that
    rest on fewer ratings than their minimum are drawn hollow / pale and say so in their tooltip."""
    hist = table.get("item_agreement_histogram") or {"bins": [k / 10 for k in range(11)], "counts": [0] * 10}
    n_items, n_without = _item_counts(table)
    n_hist = n_items - n_without
    workers = [_with_overlap(w) for w in table.get("workers", [])]
    y_key, y_label = worker_y_axis(table)
    y_n = "gold_n" if y_key == "gold_accuracy" else "overlap_n"
    points = [{"x": w["loo_agreement"], "y": w.get(y_key), "label": w["name"], "highlight": w["is_expert"],
               "weak": min(w.get("loo_n") or 0, w.get(y_n) or 0) < MIN_WORKER_UNITS,
               "note": f' (LOO n = {w.get("loo_n") or 0}, {y_label} n = {w.get(y_n) or 0})'} for w in workers]
    plotted = [p for p in points if p["x"] is not None and p["y"] is not None]
    ot = table.get("over_time", [])
    level = table.get("level", "nominal")
    topic_rows = [{"label": t["topic"], "value": t["alpha"], "weak": t["n_units"] < MIN_UNITS,
                   "note": f' ({t["n_units"]} units, {t["n_coders"]} coders)'} for t in table.get("topics", [])]
    alpha_name = "alpha_u" if level == "unitized" else "alpha"
    weak_time = [(p.get("n_units") or 0) < MIN_UNITS for p in ot]
    last_units = ot[-1].get("n_units", 0) if ot else 0
    return {
        "histogram": svg.histogram("chart-histogram", hist["counts"], hist["bins"],
                                   title=f"Per-item agreement (share of agreeing pairs), n = {_count(n_hist, 'item')}",
                                   xlabel="agreement of the item's responses"),
        "histogram_n": n_hist, "histogram_left_out": n_without,
        "histogram_mark": mark(n_hist, MIN_UNITS, "items with 2+ responses"),
        "workers": svg.scatter("chart-workers", points,
                               title=f"Workers: LOO vs {y_label}, n = {_count(len(plotted), 'worker')}",
                               xlabel="agreement with the others' majority (LOO)", ylabel=y_label),
        "workers_y": y_label,
        "workers_weak": sum(1 for p in plotted if p["weak"]),
        "time": svg.lines("chart-time", [p["assignments"] for p in ot],
                          [{"name": "alpha (cumulative)", "values": [p["alpha"] for p in ot], "weak": weak_time},
                           {"name": "% agreement (cumul.)", "values": [p["percent_agreement"] for p in ot],
                            "weak": weak_time}],
                          title=f"Agreement over submission order, n = {_count(last_units, 'unit')} at the end",
                          xlabel="assignments submitted", ylabel="coefficient",
                          notes=[f' ({p.get("n_units") or 0} units)' for p in ot]),
        "time_n": last_units, "time_mark": mark(last_units, MIN_UNITS, "pairable units"),
        "time_weak": sum(weak_time),
        "topics": svg.bars("chart-topics", topic_rows, xlabel=alpha_name,
                           title=f"Per-topic {alpha_name}, n = {_count(len(topic_rows), 'topic')}"),
        "topics_weak": sum(1 for r in topic_rows if r["weak"]),
        "n_workers_plotted": len(plotted),
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
        fleiss_n = f.get("fleiss_n_units") or 0
        rows.append({"scope": scope, "slug": scope.replace(":", "-").replace(" ", "-"), "level": f.get("level"),
                     "alpha": _num(f.get("alpha")), "alpha_raw": _raw(f.get("alpha")),
                     "ci": f"[{_num(ci['low'])}, {_num(ci['high'])}]" if ci else "—",
                     "percent_agreement": _num(f.get("percent_agreement")),
                     "percent_agreement_raw": _raw(f.get("percent_agreement")),
                     "kappa": _num(f.get("kappa")), "kappa_raw": _raw(f.get("kappa")),
                     "fleiss_kappa": _num(f.get("fleiss_kappa")), "fleiss_kappa_raw": _raw(f.get("fleiss_kappa")),
                     "n_units": f.get("n_units"), "n_coders": f.get("n_coders"),
                     "mark": None if f.get("unsupported") else mark(f.get("n_units"), MIN_UNITS, "pairable units"),
                     "fleiss_n_units": fleiss_n,
                     "fleiss_mark": mark(fleiss_n, MIN_UNITS, "units with the most common number of ratings"),
                     "reasons": f.get("reasons") or {}})
    return rows


# --- pages --------------------------------------------------------------------------------------
@expert_required
@require_GET
def dashboards(request):
    done = (Assignment.objects.filter(project=OuterRef("pk"), status__in=Assignment.DONE).order_by()
            .values("project").annotate(n=Count("pk")).values("n"))
    adjudicated = (Adjudication.objects.filter(item__project=OuterRef("pk")).order_by()
                   .values("item__project").annotate(n=Count("item", distinct=True)).values("n"))
    projects = list(access.projects(request.user).annotate(
        n_submitted=Coalesce(Subquery(done, output_field=IntegerField()), 0),
        n_adjudicated=Coalesce(Subquery(adjudicated, output_field=IntegerField()), 0)).order_by("pk"))
    snaps = latest_snapshots(projects)
    rows = []
    for project in projects:
        snap = snaps.get(project.pk)
        submitted = project.n_submitted
        f = snap.summary if snap else {}
        rows.append({"project": project, "snap": snap, "submitted": submitted, "results_page": results_page(project),
                     "stale": snap is not None and snap.based_on != submitted, "summary": f,
                     "alpha": _num(f.get("alpha")), "alpha_raw": _raw(f.get("alpha")), "level": f.get("level", ""),
                     "percent_agreement": _num(f.get("percent_agreement")), "kappa": _num(f.get("kappa")),
                     "n_units": f.get("n_units", ""), "n_coders": f.get("n_coders", ""),
                     "mark": mark(f.get("n_units"), MIN_UNITS, "pairable units") if snap and not f.get("unsupported")
                     else None,
                     "adjudicated": project.n_adjudicated})
    if request.GET.get("format") == "csv":
        header = ["project", "task_type", "status", "submitted_assignments", "level", "alpha", "percent_agreement",
                  "kappa", "n_units", "n_coders", "computed_at", "based_on"]
        out = []
        for r in rows:
            f = r["summary"]
            out.append([r["project"].slug, r["project"].task_type, r["project"].status, r["submitted"],
                        f.get("level"), f.get("alpha"), f.get("percent_agreement"), f.get("kappa"),
                        f.get("n_units"), f.get("n_coders"),
                        r["snap"].computed_at.isoformat() if r["snap"] else "",
                        r["snap"].based_on if r["snap"] else ""])
        return _csv_response("dashboards.csv", header, out)
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
        return _csv_response(f"{project.slug}-summary.csv", header, rows)
    try:
        epsilon = _epsilon(request.GET.get("epsilon"))
    except ValueError as exc:
        return HttpResponse(f"epsilon: {exc}\n", status=400, content_type="text/plain; charset=utf-8")
    submitted = _submitted(project)
    workers = sorted(map(_with_overlap, table.get("workers", [])), key=lambda w: w["coder"])
    n_items, n_without = _item_counts(table)
    lowest = item_page(snap, limit=LOWEST_SHOWN, with_agreement=True, responses=False)
    figures = _figure_rows(table)
    return render(request, "annotation/dashboard/agreement.html", {
        "project": project, "snap": snap, "table": table, "figures": figures,
        "overall": figures[0], "charts": charts(table),
        "workers": [_worker_row(w) for w in workers],
        "submitted": submitted, "stale": snap.based_on != submitted, "new_since": max(0, submitted - snap.based_on),
        "csv_tables": CSV_TABLES, "unitized": table.get("level") == "unitized",
        "lowest": [_item_row(it, table) for it in lowest],
        "n_items": n_items, "n_items_without": n_without,
        "no_item_agreement": bool(table.get("unsupported")),
        "results_page": results_page(project), "cve": table.get("crowd_vs_expert"),
        "minimums": {"units": MIN_UNITS, "item_responses": MIN_ITEM_RESPONSES, "worker_units": MIN_WORKER_UNITS},
        "models": _model_sections(project, table, epsilon), "epsilon": epsilon, "min_humans": MIN_HUMANS,
    })


def _epsilon(raw: str | None) -> float:
    """The alt-test's cost-benefit margin from ``?epsilon=`` (default: the paper's, 0.2)."""
    if raw in (None, ""):
        return DEFAULT_EPSILON
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"a number from 0 to below 1, got {raw!r}") from None
    if not 0 <= value < 1:
        raise ValueError(f"a number from 0 to below 1, got {raw!r}")
    return value


def _model_sections(project: Project, table: dict, epsilon: float) -> list[dict]:
    """One section per model annotator (:func:`annotation.model_annotators.report`), figures as shown."""
    names = {w["coder"]: w["name"] for w in table.get("workers", [])}
    out = []
    for rep in model_annotators.report(project, epsilon=epsilon):
        alt = rep.get("alt_test") or {}
        verdict = {True: "passed: it may replace a human", False: "not passed: keep the humans",
                   None: "no verdict"}[alt.get("passed")] if alt else "no verdict"
        out.append({**rep, "slug": f"model-{rep['annotator']}",
                    "without_text": {k: _num(v) for k, v in (rep.get("without") or {}).items()
                                     if k in ("alpha", "kappa")},
                    "with_text": {k: _num(v) for k, v in (rep.get("with") or {}).items() if k in ("alpha", "kappa")},
                    "humans": [{**h, "name": names.get(h["coder"], h["coder"]), "accuracy_text": _num(h["accuracy"]),
                                "kappa_text": _num(h["kappa"])} for h in rep.get("per_human", [])],
                    "majority_text": {"accuracy": _num((rep.get("majority") or {}).get("accuracy")),
                                      "kappa": _num((rep.get("majority") or {}).get("kappa"))},
                    "alt": alt, "verdict": verdict, "passed": alt.get("passed") if alt else None,
                    "winning_rate": _num(alt.get("winning_rate")),
                    "advantage_probability": _num(alt.get("advantage_probability"))})
    return out


def _worker_row(w: dict) -> dict:
    """A worker's figures as shown: each value with its n and the "too few ratings" mark."""
    comp = ("n/a (no overlap)" if not w["overlap_n"] else _num(w["competence"]))
    return {**w, "loo": _num(w["loo_agreement"]), "gold": _num(w["gold_accuracy"]), "comp": comp,
            "loo_mark": mark(w.get("loo_n"), MIN_WORKER_UNITS, "units shared with other workers")
            if w["loo_agreement"] is not None else None,
            "gold_mark": mark(w.get("gold_n"), MIN_WORKER_UNITS, "gold items")
            if w["gold_accuracy"] is not None else None,
            "comp_mark": mark(w["overlap_n"], MIN_WORKER_UNITS, "units shared with other workers")
            if w["competence"] is not None else None}


def _item_row(it: dict, table: dict) -> dict:
    """An item as the lists show it: agreement (or why there is none), n responses, the mark."""
    return {**it, "agreement_text": _num(it["agreement"]), "reason": _item_reason(it, table),
            "mark": mark(it["n"], MIN_ITEM_RESPONSES, "responses") if it["agreement"] is not None else None}


@expert_required
@require_POST
def agreement_recompute(request, slug: str):
    project = team_project(request, slug, access.CHANGE)
    schedule_recompute(project.pk, force=True)
    messages.success(request, "Recomputation queued: the figures update when the worker has finished "
                              "(reload this page).")
    return redirect("annotation:agreement", slug=project.slug)


@expert_required
@require_GET
def agreement_items(request, slug: str):
    return _items_page(request, team_project(request, slug))


def _positive(raw: str | None, default: int, most: int) -> int:
    try:
        return max(1, min(most, int(raw or default)))
    except ValueError:
        return default


def _items_page(request, project: Project, *, error: dict | None = None, status: int = 200):
    """One page of the snapshot's items, lowest agreement first (``?page=`` from 1, ``?limit=`` up to 1,000 a
    page): rows ``rank >= (page - 1) * limit`` on the rows' index, however many items the project has."""
    snap = _snapshot(project)
    if snap is None:
        return _computing(request, project, csv=request.GET.get("format") == "csv")
    table = snap.figures
    tt = project.get_task_type()
    if request.GET.get("format") == "csv":
        header, rows = table_csv(_with_items(snap), "items", snap, _current_adjudications(project), tt.answer_text)
        return _csv_response(f"{project.slug}-items.csv", header, rows)
    limit = _positive(request.GET.get("limit"), 50, 1000)
    total, _ = _item_counts(table)
    pages = max(1, -(-total // limit))
    page = min(_positive(request.GET.get("page"), 1, pages), pages)
    items = item_page(snap, start=(page - 1) * limit, limit=limit)
    adjudications = _current_adjudications(project, [it["item_id"] for it in items])
    names = {w["coder"]: w["name"] for w in table.get("workers", [])}
    rows = []
    for it in items:
        rows.append({**_item_row(it, table),
                     "answers": [{"who": names.get(r["coder"], r["coder"]), "expert": r["is_expert"],
                                  "text": tt.answer_text(r["data"])} for r in it["responses"]],
                     "adjudication": adjudications.get(it["item_id"]), "form": tt.adjudication_form(project, it),
                     "form_template": tt.adjudication_template,
                     "error": (error or {}).get(it["item_id"])})
    n_adjudicated = (Adjudication.objects.filter(item__project=project).values("item").distinct().count())
    return render(request, "annotation/dashboard/items.html", {
        "project": project, "snap": snap, "rows": rows, "total": total, "limit": limit,
        "page": page, "pages": pages, "first_rank": (page - 1) * limit + 1 if rows else 0,
        "last_rank": (page - 1) * limit + len(rows),
        "previous_page": page - 1 if page > 1 else None, "next_page": page + 1 if page < pages else None,
        "n_adjudicated": n_adjudicated, "min_item_responses": MIN_ITEM_RESPONSES,
    }, status=status)


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
    header, rows = table_csv(_with_items(snap) if table == "items" else snap.figures, table, snap,
                             _current_adjudications(project),
                             project.get_task_type().answer_text)
    return _csv_response(f"{project.slug}-{table}.csv", header, rows)

