"""Studio services, running a project: its settings, its status (draft -> active <-> paused -> closed) and
unblocking a worker (re-exported by :mod:`annotation.studio.services`).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from annotation import services
from annotation.models import HIT, Project, Worker
from argora.html import markdown_html

from .setup import GUIDELINES_KEY, SETTINGS_FIELDS, TRANSITIONS, SetupRefused


# --- running the project ---------------------------------------------------------------------------------------
def update_settings(project: Project, values: dict, *, guidelines_markdown: str | None = None) -> Project:
    """Change the project's settings (``values``: any of :data:`SETTINGS_FIELDS`) and its guidelines (Markdown,
    stored as sanitised HTML and as its source in ``engine["guidelines_markdown"]``). A change that would break
    running work is refused naming the field: items per HIT once HITs exist, fewer responses per item (R) than a HIT
    already has. Everything is checked before anything is written."""
    values = {key: value for key, value in values.items() if key in SETTINGS_FIELDS}
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        hits = HIT.objects.filter(project=locked)
        if "items_per_hit" in values and values["items_per_hit"] != locked.items_per_hit and hits.exists():
            raise SetupRefused(
                "items_per_hit",
                f"{hits.count()} HIT(s) are built with {locked.items_per_hit} item(s) "
                f"each; the number cannot change now (make a new project instead)",
            )
        if "assignments_per_item" in values:
            taken = hits.aggregate(most=Max("taken"))["most"] or 0
            if values["assignments_per_item"] is not None and values["assignments_per_item"] < taken:
                raise SetupRefused(
                    "assignments_per_item",
                    f"a HIT already has {taken} worker(s) (answering or done); R cannot go below {taken}",
                )
        for key, value in values.items():
            setattr(locked, key, value)
        engine = dict(locked.engine or {})
        if guidelines_markdown is not None:
            if len(guidelines_markdown) > 100_000:
                raise SetupRefused("guidelines", "at most 100,000 characters")
            locked.guidelines = markdown_html(guidelines_markdown)
            engine[GUIDELINES_KEY] = guidelines_markdown
        locked.engine = engine
        try:
            locked.full_clean(exclude=["slug", "invite_token", "created_by", "task_type"], validate_unique=False)
        except ValidationError as exc:
            field, messages = next(iter(exc.message_dict.items()))
            raise SetupRefused(field if field != "__all__" else "settings", " ".join(messages)) from None
        Project.objects.filter(pk=locked.pk).update(
            engine=engine, guidelines=locked.guidelines, **{key: getattr(locked, key) for key in values}
        )
    project.refresh_from_db()
    return project


def allowed_statuses(project: Project) -> tuple[str, ...]:
    return tuple(TRANSITIONS.get(project.status, ()))


def change_status(project: Project, status: str) -> Project:
    """Move the project along draft -> active <-> paused -> closed (:func:`annotation.services.set_project_status`,
    which refuses to activate a project without HITs)."""
    if status not in Project.Status.values:
        raise SetupRefused("status", f"must be one of {', '.join(Project.Status.values)}")
    if status not in allowed_statuses(project):
        current = project.get_status_display().lower()
        choices = ", ".join(allowed_statuses(project)) or "nothing: a closed project stays closed"
        raise SetupRefused("status", f"a {current} project cannot become {status} (it can become: {choices})")
    return services.set_project_status(project, status)


def unblock(project: Project, worker: Worker) -> Worker:
    """Let a blocked worker of the project work again (:func:`annotation.services.unblock_worker`)."""
    if not worker.assignments.filter(project=project).exists():
        raise SetupRefused("worker", "this worker has no HIT in this project")
    return services.unblock_worker(worker)
