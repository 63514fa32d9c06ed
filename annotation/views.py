"""HTML pages of the annotation framework: invite links, the HIT page, completion, staff progress.

Thin views: allocation, submission, codes and progress are calls into :mod:`annotation.services`.
The HIT page submits either as a plain form POST to itself (works without JavaScript) or, from
``hit.js``, as JSON to the API (``/api/assignments/<id>/submit/``); both end in ``submit_assignment``.
"""
from __future__ import annotations

import secrets
from functools import wraps

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from . import selectors, services
from .forms import HITSubmitForm, parse_item_responses
from .hit_page import hit_context, refused_submission
from .models import Assignment, Project, Worker

DONE_STATUSES = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED, Assignment.Status.REJECTED)


# --- helpers ------------------------------------------------------------------------------------
def is_expert(user) -> bool:
    """Experts (staff, superusers, the "experts" group) see projects and dashboards; crowdworkers do not."""
    return user.is_active and selectors.user_is_expert(user)


def expert_required(view):
    """Anonymous -> login page; a logged-in crowdworker -> 403 with a reason."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not is_expert(request.user):
            return notice(request, "Not available", ["This page is for the research team (staff) only."], status=403)
        return view(request, *args, **kwargs)

    return wrapper


def task_type_page(task_types: str | tuple[str, ...], what: str):
    """Decorator of a task type's staff page ``view(request, project, ...)`` routed with ``<slug:slug>``: experts only
    (:func:`expert_required`), and the project must be of ``task_types`` -- another project is a 404 saying so
    ("Not a <what>")."""

    def decorator(view):
        @wraps(view)
        @expert_required
        def wrapper(request, slug: str, *args, **kwargs):
            project = get_object_or_404(Project, slug=slug)
            wrong = selectors.wrong_task_type(project, task_types)
            if wrong:
                return notice(request, f"Not a {what}", [f"Project {wrong}."], status=404)
            return view(request, project, *args, **kwargs)

        return wrapper

    return decorator


def notice(request, heading: str, lines: list[str], *, status: int = 200, link: dict | None = None):
    return render(request, "annotation/notice.html", {"heading": heading, "lines": lines, "link": link}, status=status)


def _closed(request, project: Project):
    if project.status == Project.Status.DRAFT:
        return notice(request, "Not open yet", [f"{project.name} has not started yet. Please come back later."],
                      status=403)
    return notice(request, "This study is closed",
                  [f"{project.name} is closed and takes no more answers. Thank you for your interest."], status=410)


def _hits_done(project: Project, worker: Worker) -> int:
    return Assignment.objects.filter(project=project, worker=worker, status__in=DONE_STATUSES).count()


def _new_invite_user():
    user_model = get_user_model()
    while True:
        username = f"worker-{secrets.token_hex(5)}"
        if not user_model.objects.filter(username=username).exists():
            return user_model.objects.create_user(username=username, password=None)


# --- worker entry -------------------------------------------------------------------------------
@require_GET
def invite(request, token: str):
    """An invite link: create (or reuse, through the session) a local worker, log in, go to the work. A
    ``?PROLIFIC_PID=`` is recorded on the worker; it never logs anyone in."""
    project = get_object_or_404(Project, invite_token=token)
    if project.status != Project.Status.ACTIVE:
        return _closed(request, project)
    if request.user.is_authenticated:
        services.worker_for_user(request.user)
    else:
        # A new visitor gets a new account bound to this browser's session. A Prolific PID in the URL is recorded
        # (on the first worker that brings it) but is never a login: anyone can type someone else's PID.
        pid = (request.GET.get("PROLIFIC_PID") or "").strip()[:200]
        user = _new_invite_user()
        worker = services.worker_for_user(user, source=Worker.Source.PROLIFIC if pid else Worker.Source.INVITE)
        if pid and not Worker.objects.filter(source=Worker.Source.PROLIFIC, external_id=pid).exists():
            Worker.objects.filter(pk=worker.pk).update(external_id=pid)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return redirect("annotation:work", slug=project.slug)


@login_required
def my_projects(request):
    worker = services.worker_for_user(request.user)
    rows = []
    for project in Project.objects.filter(assignments__worker=worker).distinct():
        rows.append({"project": project, "submitted": _hits_done(project, worker),
                     "open": services.current_assignment(project, worker) is not None})
    return render(request, "annotation/my_projects.html", {"rows": rows})


# --- the HIT page -------------------------------------------------------------------------------
@login_required
@require_http_methods(["GET", "POST"])
def work(request, slug: str):
    project = get_object_or_404(Project, slug=slug)
    worker = services.worker_for_user(request.user)
    if request.method == "POST":
        return _submit(request, project, worker)
    if worker.blocked:
        return _blocked(request, project, worker)
    try:
        assignment = services.reserve_next_assignment(project, worker)
    except services.WorkerBlocked:
        return _blocked(request, project, worker)
    except services.ProjectNotActive:
        return _closed(request, project)
    except services.QuotaReached:
        assignment = None
    if assignment is None:
        return redirect(reverse("annotation:done", args=[project.slug]) + "?finished=1")
    return _render_hit(request, project, worker, assignment)


def _blocked(request, project: Project, worker: Worker):
    code = services.completion_code(project, worker) if _hits_done(project, worker) else ""
    return render(request, "annotation/blocked.html", {"project": project, "code": code}, status=403)


def _render_hit(request, project, worker, assignment, *, status=200, **answers):
    seen_key = f"annotation:instructions-seen:{project.pk}"
    show_instructions = not request.session.get(seen_key)
    request.session[seen_key] = True
    counts = selectors.worker_project_counts(project, worker)
    context = hit_context(project, services.assignment_items(assignment), assignment=assignment,
                          submit_url=reverse("api-annotation-submit", args=[assignment.pk]),
                          next_url=reverse("annotation:work", args=[project.slug]),
                          show_instructions=show_instructions, hits_done=counts["submitted"],
                          hits_available=counts["available"], max_hits=counts["max"], **answers)
    return render(request, "annotation/hit.html", context, status=status)


def _submit(request, project: Project, worker: Worker):
    form = HITSubmitForm(request.POST)
    if not form.is_valid():
        lines = [f"{field}: {' '.join(errs)}" for field, errs in form.errors.items()]
        assignment_id = form.cleaned_data.get("assignment")
        assignment = (Assignment.objects.filter(pk=assignment_id, project=project, worker=worker,
                                                status=Assignment.Status.RESERVED).first() if assignment_id else None)
        if assignment is None:
            return notice(request, "Could not submit", lines, status=400,
                          link={"url": reverse("annotation:work", args=[project.slug]), "text": "Back to the task"})
        item_ids = [item.pk for item in services.assignment_items(assignment)]
        values = parse_item_responses(request.POST, item_ids)
        return _render_hit(request, project, worker, assignment, values=values,
                           feedback=request.POST.get("feedback", ""),
                           feedback_error=" ".join(form.errors.get("feedback", [])),
                           general_errors=[line for line in lines if not line.startswith("feedback:")], status=400)
    assignment = Assignment.objects.filter(pk=form.cleaned_data["assignment"], project=project).first()
    if assignment is None:
        return notice(request, "No such HIT", ["This HIT does not exist in this project."], status=404)
    if assignment.worker_id != worker.pk:
        return notice(request, "Not your HIT", ["This HIT is held by another worker; you can only submit your own."],
                      status=403)
    item_ids = [item.pk for item in services.assignment_items(assignment)]
    responses = parse_item_responses(request.POST, item_ids)
    feedback = form.cleaned_data["feedback"]
    try:
        services.submit_assignment(assignment, worker, responses, feedback=feedback,
                                   client_seconds=form.cleaned_data["client_seconds"])
    except services.ValidationFailed as exc:
        return _render_hit(request, project, worker, assignment, values=responses, feedback=feedback, status=400,
                           **refused_submission(exc.errors, item_ids))
    except services.NotYourAssignment as exc:
        return notice(request, "Not your HIT", [str(exc)], status=403)
    except services.AssignmentNotOpen as exc:
        return notice(request, "This HIT is closed", [str(exc)], status=409,
                      link={"url": reverse("annotation:work", args=[project.slug]), "text": "Get a new HIT"})
    messages.success(request, "Thank you, your answers were saved.")
    return redirect("annotation:work", slug=project.slug)


@login_required
@require_GET
def done(request, slug: str):
    project = get_object_or_404(Project, slug=slug)
    worker = services.worker_for_user(request.user)
    hits_done = _hits_done(project, worker)
    code = services.completion_code(project, worker) if hits_done else ""
    return render(request, "annotation/done.html", {
        "project": project, "code": code, "hits_done": hits_done, "finished": bool(request.GET.get("finished")),
    })


@require_GET
def instructions(request, slug: str):
    project = get_object_or_404(Project, slug=slug)
    if project.status != Project.Status.ACTIVE and not is_expert(request.user):
        return _closed(request, project)
    return render(request, "annotation/instructions.html", {"project": project, "task_type": project.get_task_type()})


# --- staff --------------------------------------------------------------------------------------
@expert_required
@require_GET
def project_list(request):
    rows = []
    for project in Project.objects.all():
        progress = selectors.project_progress(project)
        rows.append({"project": project, "progress": progress,
                     "blocked": sum(1 for w in progress["workers"] if w["blocked"]),
                     "percent": round(100 * progress["done"] / progress["needed"]) if progress.get("needed") else 0})
    return render(request, "annotation/project_list.html", {"rows": rows})


@expert_required
@require_GET
def project_progress(request, slug: str):
    project = get_object_or_404(Project, slug=slug)
    progress = selectors.project_progress(project)
    invite_url = request.build_absolute_uri(reverse("annotation:invite", args=[project.invite_token]))
    percent = round(100 * progress["done"] / progress["needed"]) if progress.get("needed") else 0
    return render(request, "annotation/project_progress.html", {
        "project": project, "progress": progress, "percent": percent, "invite_url": invite_url,
        "task_type": project.get_task_type(),
    })
