"""Pages of the study studio (``/studio/``): Researchers set up, run and watch a study from the browser. This module:
the list of projects and one project's pages (settings, phases, status, late answers, blocked workers, the team);
the guard every page shares and the other pages' modules: :mod:`.pages`.

Thin views: every write is a call into :mod:`annotation.studio.services` (or :mod:`annotation.services` through it).
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.db.models import Count
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import access, phases, providers, selectors, services, teams
from annotation.hit_page import duration_text
from annotation.models import Assignment, GoldItem, Project, Worker
from annotation.views import notice
from argora.errors import FieldError
from argora.html import markdown_html

from . import forms as studio_forms
from . import links
from . import services as studio
from .pages import studio_page, task_type_of

FEEDBACK_SHOWN = 200


# --- the list --------------------------------------------------------------------------------------------------
@studio_page()
@require_GET
def index(request):
    rows = []
    for project in access.projects(request.user):
        progress = selectors.project_progress(project)
        tt = task_type_of(project)
        rows.append({"project": project, "progress": progress, "task_type": tt, "links": links.project_links(project)})
    return render(
        request, "annotation/studio/index.html", {"rows": rows, "can_add": access.may_create_projects(request.user)}
    )


# --- one project -----------------------------------------------------------------------------------------------
def _feedback(project: Project) -> list[dict]:
    rows = []
    done = (
        Assignment.objects.filter(project=project)
        .exclude(feedback="")
        .select_related("worker", "worker__user")
        .order_by("-submitted_at", "-id")[:FEEDBACK_SHOWN]
    )
    for assignment in done:
        hit_items = assignment.hit.hit_items.select_related("item").order_by("position")
        rows.append(
            {
                "assignment": assignment,
                "worker": str(assignment.worker),
                "items": [
                    {"id": hi.item_id, "text": studio.item_summary(project, hi.item.payload)} for hi in hit_items
                ],
            }
        )
    return rows


LATE_SHOWN = 50


def _late(project: Project) -> list[dict]:
    """Assignments whose answers came after the reservation's deadline (counted nowhere until accepted)."""
    late = (
        Assignment.objects.filter(project=project, status=Assignment.Status.LATE)
        .select_related("worker", "worker__user")
        .annotate(n=Count("responses"))
        .order_by("-submitted_at", "-id")
    )
    return [
        {
            "assignment": a,
            "worker": str(a.worker),
            "n": a.n,
            "late_by": duration_text(max(0, int((a.submitted_at - a.expires_at).total_seconds())))
            if a.submitted_at
            else "",
        }
        for a in late[:LATE_SHOWN]
    ]


@studio_page(access.VIEW)
@require_GET
def project_page(request, project: Project):
    progress = selectors.project_progress(project)
    can_change = access.can(request.user, project, access.CHANGE)
    blocked = (
        Worker.objects.filter(assignments__project=project, blocked=True)
        .distinct()
        .select_related("user")
        .order_by("blocked_at", "id")
    )
    invite_url = request.build_absolute_uri(reverse("annotation:invite", args=[project.invite_token]))
    return render(
        request,
        "annotation/studio/project.html",
        {
            "project": project,
            "task_type": task_type_of(project),
            "progress": progress,
            "invite_url": invite_url,
            "links": links.project_links(project),
            "feedback": _feedback(project),
            "blocked": blocked,
            "late": _late(project),
            "can_accept": can_change,
            "transitions": [(s, Project.Status(s).label) for s in studio.allowed_statuses(project)],
            "origin": (project.engine or {}).get(studio.IMPORT_KEY),
            "additions": (project.engine or {}).get(studio.ADDITIONS_KEY) or [],
            "phases": selectors.phase_config(project),
            "phase_counts": selectors.phase_counts(project),
            "can_change": can_change,
            "can_unblock": can_change,
            "audit": teams.audit_log(project, limit=10),
            "role": access.role_of(request.user, project),
            "retraining": providers.retrain_status.get(project),
        },
    )


@studio_page(access.CHANGE)
@require_http_methods(["GET", "POST"])
def project_settings(request, project: Project):
    markdown_source = (project.engine or {}).get(studio.GUIDELINES_KEY)
    initial = {key: getattr(project, key) for key in studio.SETTINGS_FIELDS}
    initial["guidelines"] = markdown_source if isinstance(markdown_source, str) else project.guidelines
    initial.update(studio_forms.SettingsForm.item_order_initial(project))
    form = studio_forms.SettingsForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        values = {key: form.cleaned_data[key] for key in studio.SETTINGS_FIELDS}
        before = {key: getattr(project, key) for key in studio.SETTINGS_FIELDS}
        try:
            studio.update_settings(project, values, guidelines_markdown=form.cleaned_data["guidelines"])
            order = services.set_item_order(project, form.item_order_value)
            teams.record(
                project,
                request.user,
                "settings",
                {
                    **teams.changes(before, {key: getattr(project, key) for key in studio.SETTINGS_FIELDS}),
                    "item_order": order["mode"],
                },
            )
        except studio.SetupRefused as exc:
            studio_forms.attach(form, exc)
        except services.ProjectInvalid as exc:
            form.add_error("item_order", exc.reason)
        else:
            messages.success(
                request,
                "Settings saved." if order["mode"] == "random" else f"Settings saved. Item order: {order['note']}.",
            )
            if project.gold_rate > 0 and not project.items.filter(is_gold=True, is_training=False).exists():
                messages.warning(request, "The gold rate is above 0 but the project has no gold items yet.")
            return redirect("annotation:studio-project", slug=project.slug)
    hits = project.hits.count()
    return render(
        request,
        "annotation/studio/settings.html",
        {
            "project": project,
            "form": form,
            "hits": hits,
            "task_type": task_type_of(project),
            "guidelines_html": markdown_html(form["guidelines"].value() or ""),
        },
        status=400 if form.errors else 200,
    )


@studio_page(access.CHANGE)
@require_http_methods(["GET", "POST"])
def project_phases(request, project: Project):
    """The study's phases: consent, instructions, training items and qualification, screened-out message, survey
    (``annotation.phases.configure``)."""
    cfg = selectors.phase_config(project)
    golds = list(
        GoldItem.objects.filter(item__project=project).select_related("item").order_by("item__position", "item_id")
    )
    initial = (
        {key: getattr(cfg, key) for key in phases.CONFIG_FIELDS}
        if cfg is not None
        else {"pass_threshold": 0.8, "window": 0, "max_attempts": 2}
    )
    initial["survey_questions"] = (
        json.dumps(initial.get("survey_questions") or [], indent=2, ensure_ascii=False)
        if initial.get("survey_questions")
        else ""
    )
    initial["training_items"] = [str(g.item_id) for g in golds if g.item.is_training]
    form = studio_forms.PhasesForm(request.POST or None, initial=initial, golds=golds)
    if request.method == "POST" and form.is_valid():
        try:
            phases.configure(
                project, form.values(), training_items=form.training_ids(), explanations=form.explanations()
            )
        except phases.PhaseRefused as exc:
            form.attach(exc)
        else:
            teams.record(project, request.user, "phases", {"fields": sorted(form.values())})
            messages.success(request, "Study phases saved.")
            return redirect(reverse("annotation:studio-project", args=[project.slug]) + "#phases")
    tt = task_type_of(project)
    rows = [
        {
            **row,
            "text": studio.item_summary(project, row["gold"].item.payload),
            "expected": tt.answer_text(row["gold"].expected) if tt else str(row["gold"].expected),
        }
        for row in form.gold_rows()
    ]
    return render(
        request,
        "annotation/studio/phases.html",
        {
            "project": project,
            "form": form,
            "gold_rows": rows,
            "task_type": tt,
            "survey_example": studio_forms.SURVEY_EXAMPLE,
        },
        status=400 if form.errors else 200,
    )


@studio_page()
@require_POST
def guidelines_preview(request):
    """The guidelines' Markdown rendered as the HIT page will show it (sanitised), for the live preview."""
    text = request.POST.get("guidelines", "")
    if len(text) > 100_000:
        return JsonResponse({"errors": {"guidelines": "at most 100,000 characters"}}, status=400)
    return JsonResponse({"html": markdown_html(text)})


@studio_page(access.CHANGE)
@require_http_methods(["GET", "POST"])
def project_status(request, project: Project, status: str):
    if status not in Project.Status.values:
        raise Http404("no such status")
    error = ""
    if request.method == "POST":
        before = project.status
        try:
            studio.change_status(project, status)
        except FieldError as exc:  # the transition, or set_project_status's own checks (no HITs yet)
            error = exc.reason
        else:
            teams.record(project, request.user, "status", {"status": [before, project.status]})
            messages.success(request, f"{project.name} is {project.get_status_display().lower()} now.")
            return redirect("annotation:studio-project", slug=project.slug)
    elif status not in studio.allowed_statuses(project):
        error = (
            f"A {project.get_status_display().lower()} project cannot become {Project.Status(status).label.lower()}."
        )
    return render(
        request,
        "annotation/studio/status.html",
        {
            "project": project,
            "status": status,
            "label": Project.Status(status).label,
            "error": error,
            "hits": project.hits.count(),
            "reserved": project.assignments.filter(status=Assignment.Status.RESERVED).count(),
        },
        status=400 if error else 200,
    )


@studio_page(access.CHANGE)
@require_POST
def accept_late(request, project: Project, assignment_id: int):
    """Count a late assignment's answers after all (``services.accept_late_assignment``)."""
    assignment = get_object_or_404(Assignment, pk=assignment_id, project=project)
    try:
        services.accept_late_assignment(assignment)
    except services.AssignmentNotOpen as exc:
        messages.error(request, str(exc))
    else:
        teams.record(
            project, request.user, "late.accept", {"assignment": assignment.pk, "worker": str(assignment.worker)}
        )
        messages.success(request, f"The late answers of {assignment.worker} count now.")
    return redirect(reverse("annotation:studio-project", args=[project.slug]) + "#late")


@studio_page(access.CHANGE)
@require_POST
def unblock(request, project: Project, worker_id: int):
    worker = get_object_or_404(Worker, pk=worker_id)
    try:
        studio.unblock(project, worker)
    except studio.SetupRefused as exc:
        messages.error(request, str(exc))
    else:
        teams.record(project, request.user, "worker.unblock", {"worker": str(worker)})
        messages.success(request, f"{worker} may work again.")
    return redirect(reverse("annotation:studio-project", args=[project.slug]) + "#blocked")


# --- the team and the audit log (annotation.teams) ---------------------------------------------------------------
@studio_page(access.VIEW)
@require_http_methods(["GET", "POST"])
def project_team(request, project: Project):
    """The project's team (members and roles; owners change it) and its audit log."""
    error, typed = "", ""
    if request.method == "POST":
        if not access.can(request.user, project, access.MANAGE):
            return notice(
                request,
                "Not allowed",
                [str(access.NotAllowed(project, access.MANAGE, access.role_of(request.user, project)))],
                status=403,
            )
        op, typed = request.POST.get("op", ""), request.POST.get("user", "")
        try:
            if op in ("add", "set"):
                teams.add_member(project, typed, request.POST.get("role", ""), by=request.user)
            elif op == "remove":
                member = access.members(project).filter(user__username=typed).first()
                if member is None:
                    raise teams.TeamRefused("user", f"{typed!r} is not in this team")
                teams.remove_member(member, by=request.user)
            else:
                raise teams.TeamRefused("op", "one of add, set, remove")
        except teams.TeamRefused as exc:
            error = str(exc)
        else:
            messages.success(request, "Team saved.")
            return redirect("annotation:studio-team", slug=project.slug)
    return render(
        request,
        "annotation/studio/team.html",
        {
            "project": project,
            "members": access.members(project),
            "roles": access.Role.choices,
            "can_manage": access.can(request.user, project, access.MANAGE),
            "audit": teams.audit_log(project),
            "error": error,
            "typed_user": typed,
        },
        status=400 if error else 200,
    )
