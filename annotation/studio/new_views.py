"""A new project in the studio, in steps kept in the session (a draft per browser tab, named by a token in the URL):
set-up -> items -> preview -> import (a Celery job) -> the project's page (:mod:`.views`). The items step's helpers
and the job's state serve "Add items" too (:mod:`.add_views`).

Thin views: every write is a call into :mod:`annotation.studio.services`.
"""

from __future__ import annotations

import json
import secrets

from django.contrib import messages
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django_celery_results.models import TaskResult

from annotation import access
from annotation.models import Project
from annotation.task_types import all_task_types
from annotation.views import notice
from argora import jobs

from . import forms as studio_forms
from . import services as studio
from .pages import studio_page

IMPORT_TASK = "annotation.studio_import"
DRAFTS_KEY = "studio:drafts"
MAX_DRAFTS = 10


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
    return studio.check_setup(
        name=setup["name"], task_type=setup["task_type"], config=setup["config"], values=setup["settings"]
    )


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
        _save_draft(
            request,
            token,
            {
                "setup": {
                    "name": project.name,
                    "task_type": project.task_type,
                    "config": project.config,
                    "settings": {key: getattr(project, key) for key in studio.SETUP_FIELDS},
                }
            },
        )
        return redirect("annotation:studio-new-items", token=token)
    task_types = []
    for tt in all_task_types():
        sources = studio.sources_for(tt)
        task_types.append(
            {
                "tt": tt,
                "defaults": _config_text(studio.default_config(tt)),
                "settings": {
                    key: tt.project_defaults.get(key, Project._meta.get_field(key).default)
                    for key in studio.SETUP_FIELDS
                },
                "sources": sources,
            }
        )
    return render(
        request,
        "annotation/studio/new.html",
        {
            "form": form,
            "task_types": task_types,
            "step": 1,
            "defaults_json": {t["tt"].name: {"config": t["defaults"], **t["settings"]} for t in task_types},
        },
        status=400 if form.errors else 200,
    )


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
        return notice(
            request,
            "No way to make these items here",
            [
                f"{tt.label} says nowhere where its items come from (its package has no sources module).",
                tt.items_howto or "Use the task type's own command.",
            ],
            status=400,
            link={"url": reverse("annotation:studio-new"), "text": "Choose another task type"},
        )
    form = studio_forms.ItemsForm(request.POST or None, request.FILES or None, sources=sources)
    if request.method == "POST" and form.is_valid():
        source = form.chosen()
        data = form.cleaned_data
        try:
            upload = studio.store_upload(data["file"], source) if source.is_upload else None
            checked = studio.source_input(
                source,
                upload=upload,
                topics=[t.pk for t in data["topics"]],
                limit=data["limit"],
                options=form.options(),
                gold=form.gold(),
            )
        except studio.SetupRefused as exc:
            attach_items_error(form, source, exc)
        else:
            draft["items"] = items_draft(source, upload, checked)
            _save_draft(request, token, draft)
            return redirect("annotation:studio-new-preview", token=token)
    return render(
        request,
        "annotation/studio/items.html",
        items_context(form, project, sources, token=token),
        status=400 if form.errors else 200,
    )


def attach_items_error(form, source, exc: studio.SetupRefused) -> None:
    """A refusal of the items step as an error of its field (a source option's field is named after the source)."""
    if exc.field in {o.name for o in source.options}:
        form.add_error(studio_forms.option_field_name(source, exc.field), exc.reason)
    else:
        studio_forms.attach(form, exc)


def items_draft(source, upload: dict | None, checked) -> dict:
    """What the session keeps of a checked items step (the preview and the confirm read it again)."""
    return {
        "source": source.name,
        "upload": upload,
        "topics": [t.pk for t in checked.topics],
        "limit": checked.limit,
        "options": checked.options,
        "gold": checked.gold.as_dict(),
    }


def draft_input(project: Project, items: dict, *, adding_to: Project | None = None):
    """The source input of a kept items step, checked again (:class:`studio.SetupRefused`)."""
    source = studio.source_named(project.get_task_type(), items["source"])
    return studio.source_input(
        source,
        upload=items.get("upload"),
        topics=items.get("topics") or [],
        limit=items.get("limit"),
        options=items.get("options"),
        gold=items.get("gold"),
        adding_to=adding_to,
    )


def items_context(form, project: Project, sources, **extra) -> dict:
    """What the items page (a new project's step 2, or "Add items") shows."""
    return {
        "form": form,
        "project": project,
        "task_type": project.get_task_type(),
        "step": 2,
        "sources": [
            {"source": s, "fields": [form[studio_forms.option_field_name(s, o.name)] for o in s.options]}
            for s in sources
        ],
        "gold_sources": form.gold_sources(),
        "max_mb": studio.MAX_UPLOAD_BYTES // 1024 // 1024,
        **extra,
    }


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
    return render(
        request,
        "annotation/studio/preview.html",
        {
            "project": project,
            "task_type": project.get_task_type(),
            "source": source,
            "data": data,
            "preview": preview,
            "problems": problems,
            "token": token,
            "hits": hits,
            "step": 3,
            "items_url": reverse("annotation:studio-new-items", args=[token]),
        },
        status=400 if problems else 200,
    )


# --- the import job --------------------------------------------------------------------------------------------
RELEASE_TASK = "corpus.build_release"  # the Release step (release_views.py)
STUDIO_JOBS = {IMPORT_TASK: "import", RELEASE_TASK: "release"}  # task name -> the job page's kind


def import_job(task_id: str, kind: str = "import") -> dict:
    """The job's state, if it is a studio import or release (a job not started yet has no row: it is shown as
    waiting, as the ``kind`` the page that started it named)."""
    row = TaskResult.objects.filter(task_id=task_id).only("task_name").first()
    if row is not None and row.task_name not in (None, "", *STUDIO_JOBS):
        raise Http404("not a studio job")
    kind = STUDIO_JOBS.get(row.task_name if row is not None else None) or (
        kind if kind in ("import", "release") else "import"
    )
    state = jobs.job_state(task_id)
    message = state.get("error_line") or ""
    if message.startswith("StudioImportFailed: "):
        message = message[len("StudioImportFailed: ") :]
    return {
        "id": task_id,
        "state": state["state"],
        "badge": state.get("badge"),
        "percent": state.get("percent"),
        "progress_text": state.get("progress_text") or "",
        "result": state.get("result"),
        "link": state.get("link"),
        "error": message,
        "kind": kind,
    }


def _studio_job(request, task_id) -> dict | None:
    """The job (``?for=release``: started by the Release step); None for an import job the user may not see (the
    Researcher role makes projects; a release job: any team's member, the id is the random one its page links to)."""
    found = import_job(str(task_id), request.GET.get("for", "import"))
    return found if found["kind"] == "release" or access.may_create_projects(request.user) else None


@studio_page()
@require_GET
def job(request, task_id):
    found = _studio_job(request, task_id)
    if found is None:
        return notice(
            request, "Not allowed", ["To create projects you need the permission annotation.add_project."], status=403
        )
    return render(request, "annotation/studio/job.html", {"job": found, "step": 4})


@studio_page()
@require_GET
def job_state(request, task_id):
    found = _studio_job(request, task_id)
    return JsonResponse(found) if found is not None else JsonResponse({"detail": "not allowed"}, status=403)
