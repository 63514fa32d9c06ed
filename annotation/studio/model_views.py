"""The studio's pages of a project's model annotators (:mod:`annotation.model_annotators`): the list, a new registry
or LLM annotator, an LLM annotator's prompt versions, a run, counting its answers in results, its failures.

Thin views: every write is a call into :mod:`annotation.model_annotators`; each change is in the team's audit log.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import access, teams
from annotation import model_annotators as ma
from annotation.models import Item, ModelAnnotator, Project
from argora.errors import FieldError

from . import forms as studio_forms
from . import services as studio
from .pages import studio_page, task_type_of


def _annotator(project: Project, annotator_id: int) -> ModelAnnotator:
    """The project's annotator named in the URL (another project's id is a 404, never a foreign row)."""
    return get_object_or_404(ModelAnnotator, pk=annotator_id, project=project)


def _placeholders(project: Project) -> list[str]:
    """The ``$names`` a prompt of ``project`` may use (from its first item; none before it has items)."""
    sample = Item.objects.filter(project=project, is_gold=False).order_by("position", "id").first()
    if sample is None or task_type_of(project) is None:
        return []
    return sorted(ma.prompt_context(project, sample))


def _models_page(request, project: Project, *, error: str = "", status: int = 200):
    rows = []
    for annotator in ModelAnnotator.objects.filter(project=project).order_by("id"):
        rows.append(
            {
                "a": annotator,
                "s": ma.summary(annotator),
                "job_url": reverse("job-detail", args=[annotator.task_id]) if annotator.task_id else "",
            }
        )
    return render(
        request,
        "annotation/studio/models.html",
        {
            "project": project,
            "rows": rows,
            "error": error,
            "agreement_url": reverse("annotation:agreement", args=[project.slug]) + "#models",
            "can_change": access.can(request.user, project, access.CHANGE),
        },
        status=status,
    )


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
        default_model=settings.ARGORA_LLM_MODEL,
        default_base_url=settings.ARGORA_LLM_BASE_URL,
    )
    registry_form = studio_forms.RegistryAnnotatorForm(
        request.POST if kind == ModelAnnotator.Kind.REGISTRY else None, catalogue=catalogue
    )
    error = ""
    if request.method == "POST":
        form = {ModelAnnotator.Kind.LLM: llm_form, ModelAnnotator.Kind.REGISTRY: registry_form}.get(kind)
        if form is None:
            error = f"kind: one of {', '.join(ModelAnnotator.Kind.values)}"
        elif form.is_valid():
            try:
                annotator = ma.create_annotator(
                    project,
                    name=form.cleaned_data["name"],
                    kind=kind,
                    options=form.options(),
                    prompt_template=form.cleaned_data.get("prompt_template"),
                    user=request.user,
                )
            except FieldError as exc:
                studio_forms.attach(form, exc)
            else:
                teams.record(
                    project,
                    request.user,
                    "model.add",
                    {"annotator": annotator.name, "kind": kind, "model": ma.model_id(annotator)},
                )
                messages.success(
                    request,
                    f"Model annotator {annotator.name} added ({ma.model_id(annotator)}). "
                    f"Its answers are kept apart until you count them in results.",
                )
                return redirect(reverse("annotation:studio-models", args=[project.slug]) + f"#annotator-{annotator.pk}")
    failed = bool(error or llm_form.errors or registry_form.errors)
    return render(
        request,
        "annotation/studio/models_new.html",
        {
            "project": project,
            "llm_form": llm_form,
            "registry_form": registry_form,
            "catalogue": catalogue,
            "kind": kind,
            "error": error,
            "placeholders": _placeholders(project),
        },
        status=400 if failed else 200,
    )


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
                teams.record(
                    project,
                    request.user,
                    "model.prompt",
                    {"annotator": annotator.name, "version": annotator.prompt_version},
                )
            messages.success(
                request,
                f"Prompt v{annotator.prompt_version} saved; the next run asks with it."
                if annotator.prompt_version != before
                else f"No change: the prompt is still v{annotator.prompt_version}.",
            )
            return redirect("annotation:studio-model-prompt", slug=project.slug, annotator_id=annotator.pk)
    return render(
        request,
        "annotation/studio/models_prompt.html",
        {
            "project": project,
            "annotator": annotator,
            "form": form,
            "placeholders": _placeholders(project),
            "versions": annotator.prompt_versions.select_related("created_by").order_by("-version"),
        },
        status=400 if form.errors else 200,
    )


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
    messages.success(
        request, f"The answers of {annotator.name} {'count in results now' if value == '1' else 'are kept apart now'}."
    )
    return redirect(reverse("annotation:studio-models", args=[project.slug]) + f"#annotator-{annotator.pk}")


@studio_page(access.VIEW)
@require_GET
def model_failures(request, project: Project, annotator_id: int):
    """The annotator's failed attempts, newest first, with the reply as it came."""
    annotator = _annotator(project, annotator_id)
    rows = [{"f": f, "item": studio.item_summary(project, f.item.payload)} for f in ma.failures(annotator)]
    return render(
        request,
        "annotation/studio/models_failures.html",
        {"project": project, "annotator": annotator, "rows": rows, "summary": ma.summary(annotator)},
    )
