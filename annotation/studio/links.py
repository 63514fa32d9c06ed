"""The pages of one project, as links (the studio, the staff project list and progress pages): its studio page,
progress, the agreement dashboard and its item list, and the task type's own results page
(``TaskType.results_page``), and the panels of the recruitment platforms installed (``providers.platform_pages``)."""

from __future__ import annotations

from django.urls import reverse

from annotation import providers
from annotation.models import Project
from annotation.task_types import get_task_type


def results_page(project: Project) -> dict | None:
    """``{"id", "text", "url"}`` of the task type's own results page; None when it has none (or the task type is not
    installed)."""
    try:
        entry = get_task_type(project.task_type).results_page
    except KeyError:
        return None
    if entry is None:
        return None
    return {"id": "results", "text": entry[1], "url": reverse(entry[0], args=[project.slug])}


def project_links(project: Project, *, studio: bool = True) -> list[dict]:
    """``[{"id", "text", "url"}]``: every page of the project a researcher reads."""
    out = []
    if studio:
        out.append({"id": "studio", "text": "Studio", "url": reverse("annotation:studio-project", args=[project.slug])})
    out += [
        {"id": "progress", "text": "Progress", "url": reverse("annotation:project-progress", args=[project.slug])},
        {"id": "agreement", "text": "Agreement", "url": reverse("annotation:agreement", args=[project.slug])},
        {
            "id": "agreement-items",
            "text": "Items by agreement",
            "url": reverse("annotation:agreement-items", args=[project.slug]),
        },
    ]
    results = results_page(project)
    if results is not None:
        out.append(results)
    out += [
        {"id": page["id"], "text": page["text"], "url": reverse(page["url_name"], args=[project.slug])}
        for page in providers.platform_pages
    ]  # the recruitment platforms' panels (MTurk, Prolific)
    return out
