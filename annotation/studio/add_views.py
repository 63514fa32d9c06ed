"""Pages of "Add items" (``/studio/projects/<slug>/items/add/``): more items for a saved project -- a draft, an active
or a paused one; a closed project takes none.

The same steps as a new project's items (kept in the session, a draft per browser tab named by a token in the URL):
a source of the project's task type, its file or corpus selection, its options and the gold share (every row gold
too, when the project has items for the workers) -> the preview (``preview_import`` with the saved project) ->
confirm: a job (:func:`annotation.studio.services.run_addition`, all or nothing) that writes the new items, skips a
row already in the project and builds HITs for the new items only -> the job's page under the project. Everyone on
these pages needs the change role on the project (:mod:`annotation.access`).
"""

from __future__ import annotations

import secrets

from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from annotation import access
from annotation.models import HIT, Item, Project
from annotation.views import notice

from . import forms as studio_forms
from . import services as studio
from .new_views import attach_items_error, draft_input, import_job, items_context, items_draft
from .pages import studio_page

ADDITIONS_KEY = "studio:additions"
MAX_ADDITIONS = 10


def _drafts(request) -> dict:
    drafts = request.session.get(ADDITIONS_KEY)
    return drafts if isinstance(drafts, dict) else {}


def _save(request, token: str, draft: dict | None) -> None:
    drafts = _drafts(request)
    if draft is None:
        drafts.pop(token, None)
    else:
        drafts[token] = draft
    while len(drafts) > MAX_ADDITIONS:
        drafts.pop(next(iter(drafts)))
    request.session[ADDITIONS_KEY] = drafts


def _refused(request, project: Project):
    """The page for a project that takes no items now (closed), or None."""
    why = studio.addition_refused(project)
    if not why:
        return None
    return notice(
        request,
        "No items can be added",
        [why],
        status=400,
        link={"url": reverse("annotation:studio-project", args=[project.slug]), "text": project.name},
    )


@studio_page(access.CHANGE)
@require_http_methods(["GET", "POST"])
def add_items(request, project: Project):
    """The items step: a source, its file or selection, its options and the gold share."""
    refused = _refused(request, project)
    if refused is not None:
        return refused
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
        )
    form = studio_forms.ItemsForm(
        request.POST or None, request.FILES or None, sources=sources, gold_all=studio.has_worker_items(project)
    )
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
                adding_to=project,
            )
        except studio.SetupRefused as exc:
            attach_items_error(form, source, exc)
        else:
            token = secrets.token_urlsafe(9)
            _save(request, token, {"project": project.pk, "items": items_draft(source, upload, checked)})
            return redirect("annotation:studio-add-preview", slug=project.slug, token=token)
    items = Item.objects.filter(project=project, is_training=False)
    return render(
        request,
        "annotation/studio/items.html",
        items_context(
            form,
            project,
            sources,
            adding=True,
            have_items=items.filter(is_gold=False).count(),
            have_gold=items.filter(is_gold=True).count(),
            have_hits=HIT.objects.filter(project=project).count(),
        ),
        status=400 if form.errors else 200,
    )


@studio_page(access.CHANGE)
@require_http_methods(["GET", "POST"])
def add_preview(request, project: Project, token: str):
    """What the addition would make (nothing written); a POST confirms it and queues the job."""
    draft = _drafts(request).get(token)
    items_url = reverse("annotation:studio-add-items", args=[project.slug])
    if not isinstance(draft, dict) or draft.get("project") != project.pk or not isinstance(draft.get("items"), dict):
        return redirect(items_url)
    refused = _refused(request, project)
    if refused is not None:
        return refused
    try:
        data = draft_input(project, draft["items"], adding_to=project)
    except studio.SetupRefused as exc:
        return notice(
            request, "Add the items again", [str(exc)], status=400, link={"url": items_url, "text": "Add items"}
        )
    preview, problems = studio.preview_import(project, data)
    if request.method == "POST" and not problems:
        job = studio.start_import(
            studio.addition_spec(project, data, user=request.user), task_id=studio.addition_job_id(project)
        )
        _save(request, token, None)
        return redirect("annotation:studio-add-job", slug=project.slug, task_id=job)
    hits = -(-preview.items // project.items_per_hit) if preview is not None and project.items_per_hit else 0
    return render(
        request,
        "annotation/studio/preview.html",
        {
            "project": project,
            "task_type": project.get_task_type(),
            "source": data.source,
            "data": data,
            "preview": preview,
            "problems": problems,
            "hits": hits,
            "adding": True,
            "items_url": items_url,
        },
        status=400 if problems else 200,
    )


def _addition_job(project: Project, task_id) -> dict:
    """The job of an addition to ``project`` (an id made for another project, or no addition: a 404)."""
    if not studio.is_addition_job(project, task_id):
        raise Http404("not an addition to this project")
    return import_job(str(task_id))


@studio_page(access.CHANGE)
@require_GET
def add_job(request, project: Project, task_id):
    return render(
        request,
        "annotation/studio/job.html",
        {"job": _addition_job(project, task_id), "project": project, "adding": True},
    )


@studio_page(access.CHANGE)
@require_GET
def add_job_state(request, project: Project, task_id):
    return JsonResponse(_addition_job(project, task_id))
