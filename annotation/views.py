"""HTML pages of the annotation framework: invite links, the HIT page, completion, staff progress.

Thin views: allocation, submission, codes and progress are calls into :mod:`annotation.services`.
The HIT page submits either as a plain form POST to itself (works without JavaScript) or, from
``hit.js``, as JSON to the API (``/api/assignments/<id>/submit/``); both end in ``submit_assignment``.
"""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from argora.clientaddr import client_address

from . import access, identity, phases, selectors, services
from .forms import HITSubmitForm, parse_item_responses
from .hit_page import hit_context, refused_submission
from .models import Assignment, Project, Worker
from .studio import links as project_pages

# HITs a worker did (a completion code is due), counted or not: late answers were work too
DONE_STATUSES = selectors.WORKED_STATUSES


# --- helpers ------------------------------------------------------------------------------------
def is_expert(user) -> bool:
    """May open the staff side at all (:func:`annotation.access.is_team_user`: a superuser, a user who may make
    projects, or a member of some project's team); crowdworkers may not."""
    return access.is_team_user(user)


def expert_required(view):
    """Anonymous -> login page; a logged-in user in no team (a crowdworker) -> 403 with a reason."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not is_expert(request.user):
            return notice(request, "Not available", ["This page is for the research team (staff) only."], status=403)
        return view(request, *args, **kwargs)

    return wrapper


def team_project(request, slug: str, action: str = access.VIEW) -> Project:
    """The project ``slug`` if the request's user may ``action`` it (:mod:`annotation.access`): a 404 for a user
    outside its team (as for a project that does not exist), a 403 naming the role for a member without it."""
    try:
        return access.visible_project(request.user, slug, action)
    except Project.DoesNotExist:
        raise Http404("no such project") from None
    except access.NotAllowed as exc:
        raise PermissionDenied(str(exc)) from None


def task_type_page(task_types: str | tuple[str, ...], what: str, action: str = access.VIEW):
    """Decorator of a task type's staff page ``view(request, project, ...)`` routed with ``<slug:slug>``: experts only
    (:func:`expert_required`), the user may ``action`` the project (:func:`team_project`), and the project must be
    of ``task_types`` -- another project is a 404 saying so ("Not a <what>")."""

    def decorator(view):
        @wraps(view)
        @expert_required
        def wrapper(request, slug: str, *args, **kwargs):
            project = team_project(request, slug, action)
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
        return notice(
            request, "Not open yet", [f"{project.name} has not started yet. Please come back later."], status=403
        )
    if project.status == Project.Status.PAUSED:
        return notice(
            request,
            "Paused",
            [f"{project.name} is paused for a while and hands out no new tasks. Please come back later."],
            status=503,
        )
    return notice(
        request,
        "This study is closed",
        [f"{project.name} is closed and takes no more answers. Thank you for your interest."],
        status=410,
    )


def _hits_done(project: Project, worker: Worker) -> int:
    return selectors.hits_worked(project, worker)


def _phase_page(project: Project, step: str, *, finished: bool = False):
    """The redirect to the study phase page ``step`` (annotation.phase_views)."""
    url = reverse("annotation:study-step", args=[project.slug, step])
    return redirect(url + ("?finished=1" if finished else ""))


# --- worker entry -------------------------------------------------------------------------------
@require_GET
def invite(request, token: str):
    """An invite link: log in this browser's worker (the session's, else the one the browser's cookie names, else a
    new passwordless one: :mod:`annotation.identity`) and go to the work. A ``?PROLIFIC_PID=`` is recorded on a new
    worker; it never logs anyone in."""
    project = get_object_or_404(Project, invite_token=token)
    if project.status != Project.Status.ACTIVE:
        return _closed(request, project)
    if request.user.is_authenticated:
        services.worker_for_user(request.user)
    else:
        user = identity.remembered_user(request)
        if user is None:
            user, _worker = identity.new_invite_worker(pid=(request.GET.get("PROLIFIC_PID") or "").strip()[:200])
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    services.admit_worker(project, services.worker_for_user(request.user), via="invite")
    response = redirect("annotation:work", slug=project.slug)
    identity.remember(response, request.user)
    return response


@require_http_methods(["GET", "POST"])
def recover(request):
    """A worker types their recovery code (shown with their completion code) to be themselves in this browser."""
    error = ""
    if request.method == "POST":
        try:
            user = identity.user_for_recovery_code(request.POST.get("code", ""), address=client_address(request))
        except identity.TooManyAttempts as exc:
            return render(request, "annotation/recover.html", {"error": str(exc)}, status=429)
        if user is not None:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            response = redirect("annotation:my-projects")
            identity.remember(response, user)
            messages.success(request, "Welcome back: this browser is you again.")
            return response
        error = "code: not a recovery code we know. Check it and try again (it looks like W123-ABCD-EFGH-JKLM)."
    return render(
        request,
        "annotation/recover.html",
        {"error": error, "code": request.POST.get("code", "")},
        status=400 if error else 200,
    )


@login_required
def my_projects(request):
    worker = services.worker_for_user(request.user)
    rows = []
    for project in Project.objects.filter(Q(assignments__worker=worker) | Q(participations__worker=worker)).distinct():
        rows.append(
            {
                "project": project,
                "submitted": _hits_done(project, worker),
                "open": services.current_assignment(project, worker) is not None,
            }
        )
    return render(request, "annotation/my_projects.html", {"rows": rows})


# --- the HIT page -------------------------------------------------------------------------------
@login_required
@require_http_methods(["GET", "POST"])
def work(request, slug: str):
    project = get_object_or_404(Project, slug=slug)
    worker = services.worker_for_user(request.user)
    if not access.worker_admitted(project, worker):
        return _not_admitted(request, project)
    if request.method == "POST":
        return _submit(request, project, worker)
    if worker.blocked:
        return _blocked(request, project, worker)
    if project.status == Project.Status.ACTIVE:  # consent, instructions, training come before any HIT
        step = phases.next_step(project, worker)
        if step != phases.WORK:
            return _phase_page(project, step)
    unsent = selectors.unsent_assignment(project, worker)
    if unsent is not None:  # a reservation that ended with answers on the page: back to it (submit late or extend)
        return _render_hit(request, project, worker, unsent)
    try:
        assignment = services.reserve_next_assignment(project, worker)
    except services.WorkerBlocked:
        return _blocked(request, project, worker)
    except services.ProjectNotActive:
        return _closed(request, project)
    except services.QuotaReached:
        assignment = None
    except services.PhasesPending as exc:  # the phases changed since the check above
        return _phase_page(project, exc.step)
    if assignment is None:
        return redirect(reverse("annotation:done", args=[project.slug]) + "?finished=1")
    return _render_hit(request, project, worker, assignment)


def _not_admitted(request, project: Project):
    return notice(
        request,
        "Not invited",
        [f"{project.name} takes workers through its own invite link only: open the link you were given for it."],
        status=403,
    )


def _blocked(request, project: Project, worker: Worker):
    code = services.completion_code(project, worker) if _hits_done(project, worker) else ""
    return render(request, "annotation/blocked.html", {"project": project, "code": code}, status=403)


def _render_hit(request, project, worker, assignment, *, status=200, **answers):
    seen_key = f"annotation:instructions-seen:{project.pk}"
    show_instructions = not request.session.get(seen_key)
    request.session[seen_key] = True
    counts = selectors.worker_project_counts(project, worker)
    if "values" not in answers:  # the answers saved as the worker gave them (a reload, another tab)
        answers["values"], answers["feedback"] = services.draft_values(assignment)
        answers["restored"] = bool(answers["values"] or answers["feedback"])
    context = hit_context(
        project,
        services.assignment_items(assignment),
        assignment=assignment,
        submit_url=reverse("api-annotation-submit", args=[assignment.pk]),
        next_url=reverse("annotation:work", args=[project.slug]),
        draft_url=reverse("api-annotation-draft", args=[assignment.pk]),
        extend_url=reverse("api-annotation-extend", args=[assignment.pk]),
        stop_url=reverse("annotation:stop", args=[project.slug]),
        show_instructions=show_instructions,
        hits_done=counts["submitted"],
        hits_available=counts["available"],
        max_hits=counts["max"],
        **answers,
    )
    return render(request, "annotation/hit.html", context, status=status)


def _submit(request, project: Project, worker: Worker):
    form = HITSubmitForm(request.POST)
    if not form.is_valid():
        lines = [f"{field}: {' '.join(errs)}" for field, errs in form.errors.items()]
        assignment_id = form.cleaned_data.get("assignment")
        assignment = (
            Assignment.objects.filter(
                pk=assignment_id, project=project, worker=worker, status=Assignment.Status.RESERVED
            ).first()
            if assignment_id
            else None
        )
        if assignment is None:
            return notice(
                request,
                "Could not submit",
                lines,
                status=400,
                link={"url": reverse("annotation:work", args=[project.slug]), "text": "Back to the task"},
            )
        item_ids = [item.pk for item in services.assignment_items(assignment)]
        values = parse_item_responses(request.POST, item_ids)
        return _render_hit(
            request,
            project,
            worker,
            assignment,
            values=values,
            feedback=request.POST.get("feedback", ""),
            feedback_error=" ".join(form.errors.get("feedback", [])),
            general_errors=[line for line in lines if not line.startswith("feedback:")],
            status=400,
        )
    assignment = Assignment.objects.filter(pk=form.cleaned_data["assignment"], project=project).first()
    if assignment is None:
        return notice(request, "No such HIT", ["This HIT does not exist in this project."], status=404)
    if assignment.worker_id != worker.pk:
        return notice(
            request, "Not your HIT", ["This HIT is held by another worker; you can only submit your own."], status=403
        )
    item_ids = [item.pk for item in services.assignment_items(assignment)]
    responses = parse_item_responses(request.POST, item_ids)
    feedback = form.cleaned_data["feedback"]
    try:
        done = services.submit_assignment(
            assignment, worker, responses, feedback=feedback, client_seconds=form.cleaned_data["client_seconds"]
        )
    except services.ValidationFailed as exc:
        return _render_hit(
            request,
            project,
            worker,
            assignment,
            values=responses,
            feedback=feedback,
            status=400,
            **refused_submission(exc.errors, item_ids),
        )
    except services.NotYourAssignment as exc:
        return notice(request, "Not your HIT", [str(exc)], status=403)
    except services.AssignmentNotOpen as exc:
        return notice(
            request,
            "This HIT is closed",
            [str(exc)],
            status=409,
            link={"url": reverse("annotation:work", args=[project.slug]), "text": "Get a new HIT"},
        )
    if done.status == Assignment.Status.LATE:
        return notice(
            request,
            "Your answers were kept as late answers",
            [LATE_TEXT],
            link={"url": reverse("annotation:work", args=[project.slug]), "text": "Get the next HIT"},
        )
    messages.success(request, "Thank you, your answers were saved.")
    return redirect("annotation:work", slug=project.slug)


LATE_TEXT = (
    "Your reservation of this HIT had ended before the answers arrived, so another worker may have its place "
    "now. Your answers are stored as late answers: the research team can still count them."
)


@login_required
@require_POST
def stop(request, slug: str):
    """ "Stop and get my completion code": the worker's reservation ends now (its place goes back to the pool at
    once), then the completion page."""
    project = get_object_or_404(Project, slug=slug)
    worker = services.worker_for_user(request.user)
    assignment = services.current_assignment(project, worker) or selectors.unsent_assignment(project, worker)
    if assignment is not None:
        services.release_reservation(assignment, worker)  # its answers and draft are dropped: the worker said so
    return redirect("annotation:done", slug=project.slug)


@login_required
@require_GET
def done(request, slug: str):
    project = get_object_or_404(Project, slug=slug)
    worker = services.worker_for_user(request.user)
    hits_done = _hits_done(project, worker)
    finished = bool(request.GET.get("finished"))
    step = phases.next_step(project, worker, finished=True, hits_done=hits_done)
    if step in (phases.SURVEY, phases.SCREENED_OUT):  # the exit survey comes before the code; or screened out
        return _phase_page(project, step, finished=finished)
    code = services.completion_code(project, worker) if hits_done else ""
    # a recruitment platform (Prolific) may want the worker back with its own code: sent there, that code shown
    back = selectors.completion_return(project, worker, "completed") if code else None
    back_to = back["url"] if back else None
    code = back["code"] if back else code
    return render(
        request,
        "annotation/done.html",
        {
            "project": project,
            "code": code,
            "hits_done": hits_done,
            "finished": finished,
            "back_to": back_to,
            "recovery_code": identity.recovery_code(worker) if hits_done else "",
            "waiting": selectors.hits_held_by_others(project, worker) if finished else None,
        },
    )


@require_GET
def instructions(request, slug: str):
    project = get_object_or_404(Project, slug=slug)
    if project.status != Project.Status.ACTIVE and not access.can(request.user, project):
        return _closed(request, project)
    return render(request, "annotation/instructions.html", {"project": project, "task_type": project.get_task_type()})


# --- staff --------------------------------------------------------------------------------------
@expert_required
@require_GET
def project_list(request):
    rows = []
    for project in access.projects(request.user):
        progress = selectors.project_progress(project)
        rows.append(
            {
                "project": project,
                "progress": progress,
                "blocked": sum(1 for w in progress["workers"] if w["blocked"]),
                "percent": round(100 * progress["done"] / progress["needed"]) if progress.get("needed") else 0,
                "links": [link for link in project_pages.project_links(project) if link["id"] != "progress"],
            }
        )
    return render(request, "annotation/project_list.html", {"rows": rows})


@expert_required
@require_GET
def project_progress(request, slug: str):
    project = team_project(request, slug)
    progress = selectors.project_progress(project)
    invite_url = request.build_absolute_uri(reverse("annotation:invite", args=[project.invite_token]))
    percent = round(100 * progress["done"] / progress["needed"]) if progress.get("needed") else 0
    try:
        task_type = project.get_task_type()
    except KeyError:  # a row written before task types were checked on save: say so instead of failing
        task_type = None
    return render(
        request,
        "annotation/project_progress.html",
        {
            "project": project,
            "progress": progress,
            "percent": percent,
            "invite_url": invite_url,
            "task_type": task_type,
            "links": [link for link in project_pages.project_links(project) if link["id"] != "progress"],
        },
    )
