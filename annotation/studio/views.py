"""Pages of the study studio (``/studio/``): Researchers set up, run and watch a study from the browser.

Thin views: every write is a call into :mod:`annotation.studio.services` (or :mod:`annotation.services` through it).
Who may do what is said by Django permissions, which the Researcher group (:data:`argora.roles.RESEARCHER_GROUP`) has
and a superuser has anyway: ``annotation.view_project`` to see the studio, ``annotation.add_project`` to make a
project, ``annotation.change_project`` to change its settings and status, ``annotation.change_worker`` to unblock a
worker. An anonymous visitor is sent to the login page; a logged-in user without the permission gets a 403 page that
says which permission is missing.

A new project is made in steps kept in the session (a draft per browser tab, named by a token in the URL): set-up ->
items -> preview -> import (a Celery job) -> the project's page.
"""
from __future__ import annotations

import json
import secrets
from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.db.models import Count
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_celery_results.models import TaskResult

from annotation import model_annotators as ma
from annotation import access, phases, providers, selectors, services, teams
from annotation.hit_page import duration_text
from annotation.models import (
    Assignment,
    GoldItem,
    Item,
    ModelAnnotator,
    Project,
    Worker,
)
from annotation.task_types import all_task_types, get_task_type
from annotation.views import notice, team_project
from argora import jobs
from argora.errors import FieldError
from argora.html import markdown_html
from argora.roles import RESEARCHER_GROUP

from . import forms as studio_forms
from . import links
from . import services as studio

IMPORT_TASK = "annotation.studio_import"
DRAFTS_KEY = "studio:drafts"
MAX_DRAFTS = 10
FEEDBACK_SHOWN = 200


def studio_page(action: str | None = None, *, create: bool = False):
    """Anonymous -> the login page. ``create``: the user must be allowed to make projects (the Researcher role:
    ``annotation.add_project``), else a 403 saying so. ``action`` (a view routed with ``<slug:slug>``): the view gets
    the project instead of the slug, if the user may ``action`` it (:mod:`annotation.access`: a 404 outside its team,
    a 403 naming the role needed). Neither: any user of the staff side (a member of some team)."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if create and not access.may_create_projects(request.user):
                return notice(request, "Not allowed", [
                    "To create projects you need the permission annotation.add_project.",
                    f"The {RESEARCHER_GROUP} role has it: ask an administrator to add your account to the "
                    f"{RESEARCHER_GROUP} group, or a project's owner to add you to its team."], status=403)
            if not access.is_team_user(request.user):
                return notice(request, "Not allowed", [
                    "The studio is for research teams: ask a project's owner to add you to its team, or an "
                    f"administrator to add your account to the {RESEARCHER_GROUP} group."], status=403)
            if action is not None:
                kwargs["project"] = team_project(request, kwargs.pop("slug"), action)
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def _task_type(project: Project):
    try:
        return get_task_type(project.task_type)
    except KeyError:
        return None


# --- the list --------------------------------------------------------------------------------------------------
@studio_page()
@require_GET
def index(request):
    rows = []
    for project in access.projects(request.user):
        progress = selectors.project_progress(project)
        tt = _task_type(project)
        rows.append({"project": project, "progress": progress, "task_type": tt,
                     "links": links.project_links(project)})
    return render(request, "annotation/studio/index.html", {
        "rows": rows, "can_add": access.may_create_projects(request.user)})


# --- a new project, in steps -----------------------------------------------------------------------------------
def _drafts(request) -> dict:
    drafts = request.session.get(DRAFTS_KEY)
    return drafts if isinstance(drafts, dict) else {}


def _save_draft(request, token: str, draft: dict) -> None:
    drafts = _drafts(request)
    drafts[token] = draft
    while len(drafts) > MAX_DRAFTS:
        drafts.pop(next(iter(drafts)))
    request.session[DRAFTS_KEY] = drafts


def _draft(request, token: str) -> dict | None:
    draft = _drafts(request).get(token)
    return draft if isinstance(draft, dict) and isinstance(draft.get("setup"), dict) else None


def _setup_project(draft: dict) -> Project:
    setup = draft["setup"]
    return studio.check_setup(name=setup["name"], task_type=setup["task_type"], config=setup["config"],
                              values=setup["settings"])


def _lost(request):
    messages.error(request, "That set-up is no longer in this browser's session; please start again.")
    return redirect("annotation:studio-new")


def _config_text(config: dict) -> str:
    """A config as JSON to read and edit: one key a line, each value on its line."""
    if not config:
        return "{}"
    lines = [f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}" for key, value in config.items()]
    return "{\n" + ",\n".join(lines) + "\n}"


@studio_page(create=True)
@require_http_methods(["GET", "POST"])
def new_project(request):
    form = studio_forms.NewProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        project = form.project
        token = secrets.token_urlsafe(9)
        _save_draft(request, token, {"setup": {
            "name": project.name, "task_type": project.task_type, "config": project.config,
            "settings": {key: getattr(project, key) for key in studio.SETUP_FIELDS}}})
        return redirect("annotation:studio-new-items", token=token)
    task_types = []
    for tt in all_task_types():
        sources = studio.sources_for(tt)
        task_types.append({"tt": tt, "defaults": _config_text(studio.default_config(tt)),
                           "settings": {key: tt.project_defaults.get(key, Project._meta.get_field(key).default)
                                        for key in studio.SETUP_FIELDS},
                           "sources": sources})
    return render(request, "annotation/studio/new.html", {
        "form": form, "task_types": task_types, "step": 1,
        "defaults_json": {t["tt"].name: {"config": t["defaults"], **t["settings"]} for t in task_types}},
        status=400 if form.errors else 200)


@studio_page(create=True)
@require_http_methods(["GET", "POST"])
def new_items(request, token: str):
    draft = _draft(request, token)
    if draft is None:
        return _lost(request)
    try:
        project = _setup_project(draft)
    except studio.SetupRefused:
        return _lost(request)
    tt = project.get_task_type()
    sources = studio.sources_for(tt)
    if not sources:
        return notice(request, "No way to make these items here",
                      [f"{tt.label} says nowhere where its items come from (its package has no sources module).",
                       tt.items_howto or "Use the task type's own command."], status=400,
                      link={"url": reverse("annotation:studio-new"), "text": "Choose another task type"})
    form = studio_forms.ItemsForm(request.POST or None, request.FILES or None, sources=sources)
    if request.method == "POST" and form.is_valid():
        source = form.chosen()
        data = form.cleaned_data
        try:
            upload = studio.store_upload(data["file"], source) if source.is_upload else None
            checked = studio.source_input(source, upload=upload, topics=[t.pk for t in data["topics"]],
                                          limit=data["limit"], options=form.options(), gold=form.gold())
        except studio.SetupRefused as exc:
            attach_items_error(form, source, exc)
        else:
            draft["items"] = items_draft(source, upload, checked)
            _save_draft(request, token, draft)
            return redirect("annotation:studio-new-preview", token=token)
    return render(request, "annotation/studio/items.html", items_context(form, project, sources, token=token),
                  status=400 if form.errors else 200)


def attach_items_error(form, source, exc: studio.SetupRefused) -> None:
    """A refusal of the items step as an error of its field (a source option's field is named after the source)."""
    if exc.field in {o.name for o in source.options}:
        form.add_error(studio_forms.option_field_name(source, exc.field), exc.reason)
    else:
        studio_forms.attach(form, exc)


def items_draft(source, upload: dict | None, checked) -> dict:
    """What the session keeps of a checked items step (the preview and the confirm read it again)."""
    return {"source": source.name, "upload": upload, "topics": [t.pk for t in checked.topics],
            "limit": checked.limit, "options": checked.options, "gold": checked.gold.as_dict()}


def draft_input(project: Project, items: dict, *, adding_to: Project | None = None):
    """The source input of a kept items step, checked again (:class:`studio.SetupRefused`)."""
    source = studio.source_named(project.get_task_type(), items["source"])
    return studio.source_input(source, upload=items.get("upload"), topics=items.get("topics") or [],
                               limit=items.get("limit"), options=items.get("options"), gold=items.get("gold"),
                               adding_to=adding_to)


def items_context(form, project: Project, sources, **extra) -> dict:
    """What the items page (a new project's step 2, or "Add items") shows."""
    return {"form": form, "project": project, "task_type": project.get_task_type(), "step": 2,
            "sources": [{"source": s, "fields": [form[studio_forms.option_field_name(s, o.name)]
                                                 for o in s.options]} for s in sources],
            "gold_sources": form.gold_sources(), "max_mb": studio.MAX_UPLOAD_BYTES // 1024 // 1024, **extra}


@studio_page(create=True)
@require_http_methods(["GET", "POST"])
def new_preview(request, token: str):
    draft = _draft(request, token)
    if draft is None or not isinstance(draft.get("items"), dict):
        return _lost(request)
    items = draft["items"]
    try:
        project = _setup_project(draft)
        data = draft_input(project, items)
        source = data.source
    except studio.SetupRefused as exc:
        messages.error(request, str(exc))
        return redirect("annotation:studio-new-items", token=token)
    preview, problems = studio.preview_import(project, data)
    if request.method == "POST" and not problems:
        job = studio.start_import(studio.import_spec(project, data, user=request.user))
        drafts = _drafts(request)
        drafts.pop(token, None)
        request.session[DRAFTS_KEY] = drafts
        return redirect("annotation:studio-job", task_id=job)
    hits = -(-preview.items // project.items_per_hit) if preview is not None and project.items_per_hit else 0
    return render(request, "annotation/studio/preview.html", {
        "project": project, "task_type": project.get_task_type(), "source": source, "data": data,
        "preview": preview, "problems": problems, "token": token, "hits": hits, "step": 3,
        "items_url": reverse("annotation:studio-new-items", args=[token])},
        status=400 if problems else 200)


# --- the import job --------------------------------------------------------------------------------------------
RELEASE_TASK = "corpus.build_release"  # the Release step (release_views.py)
STUDIO_JOBS = {IMPORT_TASK: "import", RELEASE_TASK: "release"}  # task name -> the job page's kind


def _import_job(task_id: str, kind: str = "import") -> dict:
    """The job's state, if it is a studio import or release (a job not started yet has no row: it is shown as
    waiting, as the ``kind`` the page that started it named)."""
    row = TaskResult.objects.filter(task_id=task_id).only("task_name").first()
    if row is not None and row.task_name not in (None, "", *STUDIO_JOBS):
        raise Http404("not a studio job")
    kind = STUDIO_JOBS.get(row.task_name if row is not None else None) or (kind if kind in ("import", "release")
                                                                           else "import")
    state = jobs.job_state(task_id)
    message = state.get("error_line") or ""
    if message.startswith("StudioImportFailed: "):
        message = message[len("StudioImportFailed: "):]
    return {"id": task_id, "state": state["state"], "badge": state.get("badge"), "percent": state.get("percent"),
            "progress_text": state.get("progress_text") or "", "result": state.get("result"),
            "link": state.get("link"), "error": message, "kind": kind}


def _studio_job(request, task_id) -> dict | None:
    """The job (``?for=release``: started by the Release step); None for an import job the user may not see (the
    Researcher role makes projects; a release job: any team's member, the id is the random one its page links to)."""
    found = _import_job(str(task_id), request.GET.get("for", "import"))
    return found if found["kind"] == "release" or access.may_create_projects(request.user) else None


@studio_page()
@require_GET
def job(request, task_id):
    found = _studio_job(request, task_id)
    if found is None:
        return notice(request, "Not allowed", ["To create projects you need the permission annotation.add_project."],
                      status=403)
    return render(request, "annotation/studio/job.html", {"job": found, "step": 4})


@studio_page()
@require_GET
def job_state(request, task_id):
    found = _studio_job(request, task_id)
    return JsonResponse(found) if found is not None else JsonResponse({"detail": "not allowed"}, status=403)


# --- one project -----------------------------------------------------------------------------------------------
def _feedback(project: Project) -> list[dict]:
    rows = []
    done = (Assignment.objects.filter(project=project).exclude(feedback="")
            .select_related("worker", "worker__user").order_by("-submitted_at", "-id")[:FEEDBACK_SHOWN])
    for assignment in done:
        hit_items = assignment.hit.hit_items.select_related("item").order_by("position")
        rows.append({"assignment": assignment, "worker": str(assignment.worker),
                     "items": [{"id": hi.item_id, "text": studio.item_summary(project, hi.item.payload)}
                               for hi in hit_items]})
    return rows


LATE_SHOWN = 50


def _late(project: Project) -> list[dict]:
    """Assignments whose answers came after the reservation's deadline (counted nowhere until accepted)."""
    late = (Assignment.objects.filter(project=project, status=Assignment.Status.LATE)
            .select_related("worker", "worker__user").annotate(n=Count("responses")).order_by("-submitted_at", "-id"))
    return [{"assignment": a, "worker": str(a.worker), "n": a.n,
             "late_by": duration_text(max(0, int((a.submitted_at - a.expires_at).total_seconds())))
             if a.submitted_at else ""} for a in late[:LATE_SHOWN]]


@studio_page(access.VIEW)
@require_GET
def project_page(request, project: Project):
    progress = selectors.project_progress(project)
    can_change = access.can(request.user, project, access.CHANGE)
    blocked = (Worker.objects.filter(assignments__project=project, blocked=True).distinct()
               .select_related("user").order_by("blocked_at", "id"))
    invite_url = request.build_absolute_uri(reverse("annotation:invite", args=[project.invite_token]))
    return render(request, "annotation/studio/project.html", {
        "project": project, "task_type": _task_type(project), "progress": progress, "invite_url": invite_url,
        "links": links.project_links(project), "feedback": _feedback(project), "blocked": blocked,
        "late": _late(project), "can_accept": can_change,
        "transitions": [(s, Project.Status(s).label) for s in studio.allowed_statuses(project)],
        "origin": (project.config or {}).get(studio.IMPORT_KEY),
        "additions": (project.config or {}).get(studio.ADDITIONS_KEY) or [],
        "phases": selectors.phase_config(project), "phase_counts": selectors.phase_counts(project),
        "can_change": can_change, "can_unblock": can_change,
        "audit": teams.audit_log(project, limit=10), "role": access.role_of(request.user, project),
        "retraining": providers.retrain_status.get(project)})


@studio_page(access.CHANGE)
@require_http_methods(["GET", "POST"])
def project_settings(request, project: Project):
    markdown_source = (project.config or {}).get(studio.GUIDELINES_KEY)
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
            teams.record(project, request.user, "settings", {
                **teams.changes(before, {key: getattr(project, key) for key in studio.SETTINGS_FIELDS}),
                "item_order": order["mode"]})
        except studio.SetupRefused as exc:
            studio_forms.attach(form, exc)
        except services.ProjectInvalid as exc:
            form.add_error("item_order", exc.reason)
        else:
            messages.success(request, "Settings saved." if order["mode"] == "random"
                             else f"Settings saved. Item order: {order['note']}.")
            if project.gold_rate > 0 and not project.items.filter(is_gold=True, is_training=False).exists():
                messages.warning(request, "The gold rate is above 0 but the project has no gold items yet.")
            return redirect("annotation:studio-project", slug=project.slug)
    hits = project.hits.count()
    return render(request, "annotation/studio/settings.html", {
        "project": project, "form": form, "hits": hits, "task_type": _task_type(project),
        "guidelines_html": markdown_html(form["guidelines"].value() or "")},
        status=400 if form.errors else 200)


@studio_page(access.CHANGE)
@require_http_methods(["GET", "POST"])
def project_phases(request, project: Project):
    """The study's phases: consent, instructions, training items and qualification, screened-out message, survey
    (``annotation.phases.configure``)."""
    cfg = selectors.phase_config(project)
    golds = list(GoldItem.objects.filter(item__project=project).select_related("item")
                 .order_by("item__position", "item_id"))
    initial = {key: getattr(cfg, key) for key in phases.CONFIG_FIELDS} if cfg is not None else {
        "pass_threshold": 0.8, "window": 0, "max_attempts": 2}
    initial["survey_questions"] = json.dumps(initial.get("survey_questions") or [], indent=2, ensure_ascii=False) \
        if initial.get("survey_questions") else ""
    initial["training_items"] = [str(g.item_id) for g in golds if g.item.is_training]
    form = studio_forms.PhasesForm(request.POST or None, initial=initial, golds=golds)
    if request.method == "POST" and form.is_valid():
        try:
            phases.configure(project, form.values(), training_items=form.training_ids(),
                             explanations=form.explanations())
        except phases.PhaseRefused as exc:
            form.attach(exc)
        else:
            teams.record(project, request.user, "phases", {"fields": sorted(form.values())})
            messages.success(request, "Study phases saved.")
            return redirect(reverse("annotation:studio-project", args=[project.slug]) + "#phases")
    tt = _task_type(project)
    rows = [{**row, "text": studio.item_summary(project, row["gold"].item.payload),
             "expected": tt.answer_text(row["gold"].expected) if tt else str(row["gold"].expected)}
            for row in form.gold_rows()]
    return render(request, "annotation/studio/phases.html", {
        "project": project, "form": form, "gold_rows": rows, "task_type": tt,
        "survey_example": studio_forms.SURVEY_EXAMPLE}, status=400 if form.errors else 200)


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
        error = (f"A {project.get_status_display().lower()} project cannot become "
                 f"{Project.Status(status).label.lower()}.")
    return render(request, "annotation/studio/status.html", {
        "project": project, "status": status, "label": Project.Status(status).label, "error": error,
        "hits": project.hits.count(), "reserved": project.assignments.filter(
            status=Assignment.Status.RESERVED).count()}, status=400 if error else 200)


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
        teams.record(project, request.user, "late.accept", {"assignment": assignment.pk,
                                                            "worker": str(assignment.worker)})
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


# --- model annotators (annotation.model_annotators) --------------------------------------------------------------
def _annotator(project: Project, annotator_id: int) -> ModelAnnotator:
    """The project's annotator named in the URL (another project's id is a 404, never a foreign row)."""
    return get_object_or_404(ModelAnnotator, pk=annotator_id, project=project)


def _placeholders(project: Project) -> list[str]:
    """The ``$names`` a prompt of ``project`` may use (from its first item; none before it has items)."""
    sample = Item.objects.filter(project=project, is_gold=False).order_by("position", "id").first()
    if sample is None or _task_type(project) is None:
        return []
    return sorted(ma.prompt_context(project, sample))


def _models_page(request, project: Project, *, error: str = "", status: int = 200):
    rows = []
    for annotator in ModelAnnotator.objects.filter(project=project).order_by("id"):
        rows.append({"a": annotator, "s": ma.summary(annotator),
                     "job_url": reverse("job-detail", args=[annotator.task_id]) if annotator.task_id else ""})
    return render(request, "annotation/studio/models.html", {
        "project": project, "rows": rows, "error": error,
        "agreement_url": reverse("annotation:agreement", args=[project.slug]) + "#models",
        "can_change": access.can(request.user, project, access.CHANGE)}, status=status)


@studio_page(access.VIEW)
@require_GET
def project_models(request, project: Project):
    """The project's model annotators: counts, kept apart or counted, the last run's job, and what to do next."""
    return _models_page(request, project)


@studio_page(access.CHANGE)
@require_http_methods(["GET", "POST"])
def model_new(request, project: Project):
    """Add a registry annotator (a ready model of ``catalogue``) or an LLM annotator (``kind`` says which form)."""
    kind = request.POST.get("kind", "") if request.method == "POST" else ""
    catalogue = ma.catalogue(project)
    llm_form = studio_forms.LLMAnnotatorForm(
        request.POST if kind == ModelAnnotator.Kind.LLM else None,
        initial={"prompt_template": ma.default_prompt(project)},
        default_model=settings.ARGORA_LLM_MODEL, default_base_url=settings.ARGORA_LLM_BASE_URL)
    registry_form = studio_forms.RegistryAnnotatorForm(
        request.POST if kind == ModelAnnotator.Kind.REGISTRY else None, catalogue=catalogue)
    error = ""
    if request.method == "POST":
        form = {ModelAnnotator.Kind.LLM: llm_form, ModelAnnotator.Kind.REGISTRY: registry_form}.get(kind)
        if form is None:
            error = f"kind: one of {', '.join(ModelAnnotator.Kind.values)}"
        elif form.is_valid():
            try:
                annotator = ma.create_annotator(
                    project, name=form.cleaned_data["name"], kind=kind, options=form.options(),
                    prompt_template=form.cleaned_data.get("prompt_template"), user=request.user)
            except FieldError as exc:
                studio_forms.attach(form, exc)
            else:
                teams.record(project, request.user, "model.add", {"annotator": annotator.name, "kind": kind,
                                                                  "model": ma.model_id(annotator)})
                messages.success(request, f"Model annotator {annotator.name} added ({ma.model_id(annotator)}). "
                                          f"Its answers are kept apart until you count them in results.")
                return redirect(reverse("annotation:studio-models", args=[project.slug]) + f"#annotator-{annotator.pk}")
    failed = bool(error or llm_form.errors or registry_form.errors)
    return render(request, "annotation/studio/models_new.html", {
        "project": project, "llm_form": llm_form, "registry_form": registry_form, "catalogue": catalogue,
        "kind": kind, "error": error, "placeholders": _placeholders(project)}, status=400 if failed else 200)


@studio_page(access.CHANGE)
@require_http_methods(["GET", "POST"])
def model_prompt(request, project: Project, annotator_id: int):
    """An LLM annotator's prompt: every save that changes it is a new version; the versions below."""
    annotator = _annotator(project, annotator_id)
    if annotator.kind != ModelAnnotator.Kind.LLM:
        raise Http404("only an LLM annotator has a prompt")
    form = studio_forms.PromptForm(request.POST or None, initial={"prompt_template": annotator.prompt_template})
    if request.method == "POST" and form.is_valid():
        before = annotator.prompt_version
        try:
            annotator = ma.update_prompt(annotator, form.cleaned_data["prompt_template"], user=request.user)
        except FieldError as exc:
            studio_forms.attach(form, exc)
        else:
            if annotator.prompt_version != before:
                teams.record(project, request.user, "model.prompt", {"annotator": annotator.name,
                                                                     "version": annotator.prompt_version})
            messages.success(request, f"Prompt v{annotator.prompt_version} saved; the next run asks with it."
                             if annotator.prompt_version != before else
                             f"No change: the prompt is still v{annotator.prompt_version}.")
            return redirect("annotation:studio-model-prompt", slug=project.slug, annotator_id=annotator.pk)
    return render(request, "annotation/studio/models_prompt.html", {
        "project": project, "annotator": annotator, "form": form, "placeholders": _placeholders(project),
        "versions": annotator.prompt_versions.select_related("created_by").order_by("-version")},
        status=400 if form.errors else 200)


@studio_page(access.CHANGE)
@require_POST
def model_run(request, project: Project, annotator_id: int):
    """Queue a run (``start_run``) and show its job."""
    annotator = _annotator(project, annotator_id)
    try:
        task_id = ma.start_run(annotator)
    except FieldError as exc:
        return _models_page(request, project, error=str(exc), status=400)
    teams.record(project, request.user, "model.run", {"annotator": annotator.name, "job": str(task_id)})
    return redirect("job-detail", task_id=task_id)


@studio_page(access.CHANGE)
@require_POST
def model_include(request, project: Project, annotator_id: int):
    """Count the annotator's answers in results (``include=1``) or keep them apart (``include=0``)."""
    annotator = _annotator(project, annotator_id)
    value = request.POST.get("include", "")
    if value not in ("0", "1"):
        return _models_page(request, project, error="include: 1 (count in results) or 0 (keep apart)", status=400)
    ma.set_included(annotator, value == "1")
    teams.record(project, request.user, "model.include", {"annotator": annotator.name, "include": value == "1"})
    messages.success(request, f"The answers of {annotator.name} "
                              f"{'count in results now' if value == '1' else 'are kept apart now'}.")
    return redirect(reverse("annotation:studio-models", args=[project.slug]) + f"#annotator-{annotator.pk}")


@studio_page(access.VIEW)
@require_GET
def model_failures(request, project: Project, annotator_id: int):
    """The annotator's failed attempts, newest first, with the reply as it came."""
    annotator = _annotator(project, annotator_id)
    rows = [{"f": f, "item": studio.item_summary(project, f.item.payload)} for f in ma.failures(annotator)]
    return render(request, "annotation/studio/models_failures.html", {
        "project": project, "annotator": annotator, "rows": rows, "summary": ma.summary(annotator)})


# --- the team and the audit log (annotation.teams) ---------------------------------------------------------------
@studio_page(access.VIEW)
@require_http_methods(["GET", "POST"])
def project_team(request, project: Project):
    """The project's team (members and roles; owners change it) and its audit log."""
    error, typed = "", ""
    if request.method == "POST":
        if not access.can(request.user, project, access.MANAGE):
            return notice(request, "Not allowed", [str(access.NotAllowed(project, access.MANAGE,
                                                                          access.role_of(request.user, project)))],
                          status=403)
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
    return render(request, "annotation/studio/team.html", {
        "project": project, "members": access.members(project), "roles": access.Role.choices,
        "can_manage": access.can(request.user, project, access.MANAGE), "audit": teams.audit_log(project),
        "error": error, "typed_user": typed}, status=400 if error else 200)
