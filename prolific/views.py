"""Prolific pages: the study link participants arrive on, the webhook endpoint, and the staff panel.

Thin views: who a participant is (:mod:`prolific.entry`), publishing (:mod:`prolific.publishing`), syncing
(:mod:`prolific.sync`, as a Celery job) and webhooks (:mod:`prolific.webhooks`) are services.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.db import transaction
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import access, identity, teams
from annotation import services as annotation_services
from annotation.models import Project
from annotation.views import expert_required, team_project
from argora.clientaddr import client_address
from argora.errors import FieldError

from . import entry, publishing, sync, webhooks
from .client import ProlificError
from .forms import StudySettingsForm
from .models import ProlificBonus, ProlificOperation, ProlificSession, ProlificStudy, ProlificSubmission
from .tasks import sync_project_task


# --- participants -----------------------------------------------------------------------------------
@require_GET
def start(request, slug: str):
    """``/prolific/<slug>/start/?PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..``: log this browser in as its (provisional)
    worker for the claimed PID and go to the work. Nothing in the URL is trusted until a sync confirms it."""
    project = get_object_or_404(Project, slug=slug)
    q = request.GET
    current = request.user if request.user.is_authenticated else identity.remembered_user(request)
    try:
        came = entry.enter(
            project,
            pid=q.get("PROLIFIC_PID", "").strip(),
            study_id=q.get("STUDY_ID", "").strip(),
            session_id=q.get("SESSION_ID", "").strip(),
            current_user=current,
            client=client_address(request),
        )
    except entry.EntryRefused as exc:
        return render(request, "prolific/notice.html", {"heading": exc.heading, "lines": exc.lines}, status=exc.status)
    if not request.user.is_authenticated or request.user.pk != came.user.pk:
        login(request, came.user, backend="django.contrib.auth.backends.ModelBackend")
    annotation_services.admit_worker(project, annotation_services.worker_for_user(came.user), via="prolific")
    response = redirect("annotation:work", slug=project.slug)
    identity.remember(response, came.user)
    return response


@csrf_exempt
@require_POST
def webhook(request):
    """Prolific's webhook deliveries; refused (403, nothing changed) without a valid, recent signature."""
    try:
        outcome = webhooks.receive(request.body, request.headers)
    except webhooks.WebhookRefused as exc:
        return JsonResponse({"detail": str(exc)}, status=403)
    except FieldError as exc:
        return JsonResponse({"errors": exc.as_dict()}, status=400)
    return JsonResponse({"detail": outcome})


# --- staff panel ------------------------------------------------------------------------------------
PANEL_ACTIONS = ("settings", "create", "publish", "pause", "start", "add_places", "sync", "wage_topups", "bonus")


def _panel(request, project, *, form=None, status=200):
    cfg = ProlificStudy.objects.filter(project=project).first()
    if form is None:
        form = (
            StudySettingsForm(instance=cfg)
            if cfg
            else StudySettingsForm(
                initial={
                    "name": project.name,
                    "estimated_minutes": max(1, round((project.time_estimate_seconds or 600) / 60)),
                }
            )
        )
    preview, preview_error = None, ""
    if cfg is not None:
        try:
            preview = publishing.cost_preview(project, ask_prolific=bool(settings.PROLIFIC_API_TOKEN))
        except FieldError as exc:
            preview_error = str(exc)
    operations = ProlificOperation.objects.filter(project=project)
    return render(
        request,
        "prolific/panel.html",
        {
            "project": project,
            "cfg": cfg,
            "form": form,
            "preview": preview,
            "preview_error": preview_error,
            "token_set": bool(settings.PROLIFIC_API_TOKEN),
            "entry_url": publishing.entry_url(project),
            "webhook_url": webhooks.webhook_url(),
            "webhook_secret_set": bool(settings.ARGORA_PROLIFIC_WEBHOOK_SECRET),
            "submissions": ProlificSubmission.objects.filter(project=project)
            .select_related("session")
            .prefetch_related("assignments")
            .order_by("-id")[:200],
            "sessions": ProlificSession.objects.filter(project=project).count(),
            "bonuses": ProlificBonus.objects.filter(project=project).select_related("submission").order_by("-id")[:100],
            "operations": operations[:50],
            "pending_ops": operations.exclude(status="done").count(),
            "cost": sync.cost_so_far(project),
            "floor": publishing.money(publishing.floor_cents()),
        },
        status=status,
    )


@expert_required
@require_http_methods(["GET", "POST"])
def panel(request, slug: str):
    project = team_project(request, slug, access.CHANGE if request.method == "POST" else access.VIEW)
    if request.method == "GET":
        return _panel(request, project)
    action = request.POST.get("action", "")
    if action not in PANEL_ACTIONS:
        messages.error(request, f"action: unknown action {action!r}")
        return redirect("prolific:panel", slug=slug)
    if action == "settings":
        # the form fills a copy in memory (fields left out of the POST keep their value); the service saves it
        form = StudySettingsForm(
            request.POST,
            instance=ProlificStudy.objects.filter(project=project).first() or ProlificStudy(project=project),
        )
        if not form.is_valid():
            return _panel(request, project, form=form, status=400)
        try:
            publishing.save_study_settings(project, {f: getattr(form.instance, f) for f in publishing.EDITABLE})
        except FieldError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.reason)
            return _panel(request, project, form=form, status=400)
        teams.record(project, request.user, "prolific.settings")
        messages.success(request, "study settings saved")
        return redirect("prolific:panel", slug=slug)
    if action != "sync" and not ProlificStudy.objects.filter(project=project).exists():
        messages.error(request, "prolific: save the study settings first")
        return redirect("prolific:panel", slug=slug)
    try:
        _act(request, project, action)
    except (FieldError, ProlificError) as exc:
        messages.error(request, str(exc))
    else:
        teams.record(project, request.user, f"prolific.{action}")
    return redirect("prolific:panel", slug=slug)


def _act(request, project, action):
    post = request.POST
    if action == "create":
        cfg = publishing.create_study(project)
        messages.success(request, f"draft study {cfg.study_id} created on Prolific")
    elif action == "publish":
        if post.get("confirm") != "yes":
            raise FieldError("confirm", "tick the box to accept the cost before publishing")
        cfg = publishing.publish(project)
        messages.success(request, f"study {cfg.study_id} published ({cfg.status})")
    elif action == "pause":
        messages.success(request, f"study paused ({publishing.pause(project).status})")
    elif action == "start":
        messages.success(request, f"study started again ({publishing.start(project).status})")
    elif action == "add_places":
        cfg = publishing.add_places(project, post.get("places", ""))
        messages.success(request, f"the study has {cfg.places} places now")
    elif action == "sync":
        publishing.settings_for(project)
        transaction.on_commit(lambda: sync_project_task.delay(project.pk))
        messages.success(request, "sync queued (see Jobs)")
    elif action == "wage_topups":
        n = len(sync.plan_wage_topups(project))
        messages.success(request, f"planned {n} wage top-up bonus(es); the next sync pays them")
    elif action == "bonus":
        bonus = sync.grant_bonus(
            project, post.get("submission", "").strip(), post.get("amount_cents", ""), post.get("reason", "")
        )
        messages.success(request, f"bonus of {publishing.money(bonus.amount_cents)} planned; the next sync pays it")
