"""Studio services, step 1: the studio's limits and config keys, its errors, a task type's sources and the
project's set-up checked without writing anything (re-exported by :mod:`annotation.studio.services`).
"""

from __future__ import annotations

from dataclasses import replace
from types import ModuleType
from typing import Any

from django.core.exceptions import ValidationError

from annotation.models import Project
from annotation.task_types import get_task_type, sources_of
from annotation.task_types.base import ResponseInvalid, Source, TaskType
from argora.errors import FieldError

from .. import sentences

UPLOAD_DIR = "studio-uploads"
UPLOAD_KEEP_SECONDS = 2 * 24 * 3600  # uploads never confirmed are removed after this long
MAX_PROBLEMS = 20  # problems listed for a bad file
SCAN_ROWS = 500  # rows of a bad file checked one by one for more problems
SETUP_FIELDS = ("assignments_per_item", "items_per_hit", "gold_rate")
SETTINGS_FIELDS = (
    "assignments_per_item",
    "items_per_hit",
    "gold_rate",
    "reward_cents",
    "time_estimate_seconds",
    "reservation_timeout_seconds",
    "gold_min_items",
    "gold_min_accuracy",
    "max_hits_per_worker",
)
# the status a project may move to from each status (the studio's buttons)
TRANSITIONS = {
    Project.Status.DRAFT: (Project.Status.ACTIVE,),
    Project.Status.ACTIVE: (Project.Status.PAUSED, Project.Status.CLOSED),
    Project.Status.PAUSED: (Project.Status.ACTIVE, Project.Status.CLOSED),
    Project.Status.CLOSED: (),
}
GUIDELINES_KEY = "guidelines_markdown"  # project.engine key of the guidelines' Markdown source
IMPORT_KEY = "studio_import"  # project.engine key: where the items came from (job, source, file)
ADDITIONS_KEY = "studio_additions"  # project.engine key: the items added since (job, source, file, summary)
ADDITIONS_KEPT = 100  # additions listed in the project's engine keys (the audit log keeps every one)


class SetupRefused(FieldError):
    """A set-up or settings change the studio refuses (``field: reason``)."""


class StudioImportFailed(Exception):
    """An import that wrote nothing; the message is what the person reads (``file:line: reason``)."""


# --- task types and their sources -----------------------------------------------------------------------------
def sources_module(tt: TaskType) -> ModuleType | None:
    """The task type's ``sources`` module; a sentence-built task type without one gets the corpus sources."""
    return sources_of(tt.name) or (sentences if tt.builds_from_sentences else None)


def sources_for(tt: TaskType) -> tuple[Source, ...]:
    """The task type's sources. The corpus sources (:mod:`.sentences`) take gold answers from the sentences' corpus
    stance, which only a task type with ``gold_from_sentence`` reads as an answer: for the others they offer no gold
    share (their ``gold_label`` is cleared)."""
    module = sources_module(tt)
    found = tuple(getattr(module, "SOURCES", ())) if module is not None else ()
    if type(tt).gold_from_sentence is TaskType.gold_from_sentence:
        found = tuple(replace(s, gold_label="") if s in sentences.SOURCES else s for s in found)
    return found


def source_named(tt: TaskType, name: str) -> Source:
    for source in sources_for(tt):
        if source.name == name:
            return source
    known = ", ".join(s.name for s in sources_for(tt)) or "none: this task type has no sources module"
    raise SetupRefused("source", f"{tt.label} items cannot come from {name!r} (known: {known})")


def default_config(tt: TaskType) -> dict:
    """The task type's config with its defaults filled in (what the new-project form shows), without the empty
    containers a task type keeps for itself (e.g. sampled pairs)."""
    try:
        config = tt.checked_config({})
    except ResponseInvalid:
        return {}
    return {k: v for k, v in config.items() if v not in ({}, [])}


def item_summary(project: Project, payload: dict) -> str:
    """One line naming an item (the studio's feedback list): the task type's ``sources.summary``, else its text."""
    try:
        module = sources_module(project.get_task_type())
    except KeyError:  # a project row of a task type that is not installed
        module = None
    fn = getattr(module, "summary", None)
    if fn is not None:
        return fn(payload or {})
    for key in ("text", "sentence", "conclusion", "topic"):
        if isinstance((payload or {}).get(key), str):
            return payload[key]
    return ""


# --- step 1: the project's set-up ----------------------------------------------------------------------------
def check_setup(*, name: str, task_type: str, config: Any, values: dict) -> Project:
    """An unsaved project for the set-up, checked as ``services.create_project`` checks it; raises
    :class:`SetupRefused` (``name``, ``task_type``, ``config.<key>``, a setting's name). Writes nothing."""
    if not (name or "").strip():
        raise SetupRefused("name", "give the project a name")
    try:
        tt = get_task_type(task_type)
    except KeyError as exc:
        raise SetupRefused("task_type", str(exc.args[0])) from None
    if config is not None and not isinstance(config, dict):
        raise SetupRefused("config", "expected a JSON object {key: value}")
    try:
        config = tt.checked_config(config)
    except ResponseInvalid as exc:
        raise SetupRefused(f"config.{exc.field}", exc.reason) from None
    fields = {**tt.project_defaults, **{key: value for key, value in values.items() if value is not None}}
    project = Project(name=name.strip(), slug="studio-check", task_type=tt.name, config=config, **fields)
    try:
        project.full_clean(exclude=["slug", "invite_token", "created_by"], validate_unique=False)
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise SetupRefused(field if field != "__all__" else "settings", " ".join(messages)) from None
    return project
