"""Release kinds of the annotation app (found by ``corpus.releases.get_exporter``, which imports this module).

``annotations``: any project of any task type, one row per item with the task type's ``export_row``, its aggregate
and every counted response per worker (``annotations.jsonl``); for projects with study phases, one row per
participant with their consent, training, qualification and survey (``participants.jsonl``). Config::

    {"projects": ["stance-pilot"],   # slugs (or "project": "stance-pilot"); any task type
     "include_gold": false}          # also export the gold (control) items

The task types' own release kinds (``aspects``, ``bws``, ``spans``...) live in their packages' ``release`` modules,
imported at the end of this one.
"""

from __future__ import annotations

import json

from corpus.releases import CardContext, register_exporter

from . import selectors, task_types
from .models import Item, Participation, Project, StudyPhases
from .releases import check_keys, config_projects

ANNOTATIONS_FILE = "annotations.jsonl"
PARTICIPANTS_FILE = "participants.jsonl"
# keys the release sets on every row; a task type's export_row may carry "aggregate" (the same value)
RESERVED_KEYS = ("project", "task_type", "is_gold", "annotations")


def prepare_annotations(config: dict) -> dict:
    check_keys(config, ("project", "projects", "include_gold"))
    slugs = config_projects(config)
    flag = config.get("include_gold", False)
    if not isinstance(flag, bool):
        raise ValueError("config.include_gold: true or false")
    return {"projects": slugs, "include_gold": flag}


def annotation_rows(config: dict):
    """One row per item: ``{**task_type.export_row(...), "project", "task_type", "aggregate", "annotations"}``.

    ``annotations`` lists every counted response (submitted or approved assignments; MTurk assignments that no
    sync has confirmed are left out) as ``{"worker", "assignment", "status", "response"}`` ordered by worker;
    the ``responses`` handed to ``export_row`` / ``aggregate`` are the same, in the same order. Projects in the
    order given, items by position.
    """
    for slug in config["projects"]:
        project = Project.objects.get(slug=slug)
        tt = project.get_task_type()
        include_gold = config.get("include_gold", False)
        per_item = selectors.item_annotations(project, include_gold=include_gold)
        items = Item.objects.filter(project=project, is_training=False)  # training items are in participants.jsonl
        if not include_gold:
            items = items.filter(is_gold=False)
        for item in items.order_by("position", "id"):
            records = per_item.get(item.pk, [])
            responses = [r["response"] for r in records]
            row = dict(tt.export_row(project, item, responses))
            clash = [key for key in RESERVED_KEYS if key in row]
            if clash:
                raise ValueError(
                    f"task type {tt.name!r}: export_row uses the key(s) {', '.join(clash)} that the "
                    f"annotations release sets itself"
                )
            row.setdefault("item_id", item.pk)
            row.update(
                {
                    "project": slug,
                    "task_type": tt.name,
                    "is_gold": item.is_gold,
                    "aggregate": tt.aggregate(project, item, responses),
                    "annotations": records,
                }
            )
            yield row


def has_phases(config: dict) -> bool:
    """Some project of the release has study phases (configured, or records of workers who went through them)."""
    slugs = config["projects"]
    return (
        StudyPhases.objects.filter(project__slug__in=slugs).exists()
        or Participation.objects.filter(project__slug__in=slugs).exists()
    )


def participant_rows(config: dict):
    """One row per participant of each project's study phases (:func:`annotation.selectors.participant_records`),
    with ``project``; projects in the order given, workers by id. Platform ids not confirmed yet are left out."""
    for slug in config["projects"]:
        project = Project.objects.get(slug=slug)
        for record in selectors.participant_records(project):
            yield {"project": slug, **record}


def annotations_card(ctx: CardContext) -> list[tuple[str, str]]:
    fmt = (
        f"JSONL ({ANNOTATIONS_FILE}), one row per item: the task type's own export row (e.g. item_id, text, "
        "labels, label, share, n for sentence_label), plus project, task_type, is_gold, aggregate (the task "
        "type's aggregate of the responses: majority label, counts, scores...) and annotations: every response "
        "of a submitted or approved assignment as {worker, assignment, status, response}, ordered by worker. "
        "Workers are Argora's worker ids (no MTurk WorkerId, Prolific PID or user name). MTurk assignments that "
        "no sync has confirmed yet are not included. Rows: projects in the configured order, items by position. "
        "Training items of the study phases are not items of the release (see participants.jsonl)."
    )
    sections = [("Format", fmt)]
    if any(f["name"] == PARTICIPANTS_FILE for f in ctx.files):
        sections.append(
            (
                "Participants (study phases)",
                (
                    f"JSONL ({PARTICIPANTS_FILE}), one row per worker who entered a project's study phases: project, worker "
                    "(the same Argora worker id as in annotations), consent_at and consent_version (the first 16 hex digits "
                    "of the sha256 of the consent text agreed to), instructions_opened_at, training (attempts: per finished "
                    "attempt its right/counted answers and score on the counted window; score: the last finished attempt's; "
                    "answers: every training answer with item_id, attempt, answer, correct, score, answered_at), outcome "
                    "(qualified, screened_out or null) with qualified_at / screened_out_at, survey ({question name: answer}; a "
                    "Likert answer is its point on the scale, 1 = the first label) and survey_at. Times are ISO 8601 UTC. "
                    "Workers of MTurk claims that no sync has confirmed are not included. In the Counts above, participant "
                    "rows are those with no task_type (—)."
                ),
            )
        )
        for slug in ctx.config["projects"]:
            cfg = StudyPhases.objects.filter(project__slug=slug).first()
            if cfg is not None and cfg.survey_questions:
                sections.append(
                    (
                        f"Survey questions of {slug}",
                        "```json\n" + json.dumps(cfg.survey_questions, indent=2, ensure_ascii=False) + "\n```",
                    )
                )
    return sections


def count_annotations(config: dict) -> int:
    items = Item.objects.filter(project__slug__in=config["projects"], is_training=False)
    n = (items if config.get("include_gold") else items.filter(is_gold=False)).count()
    return (
        n
        + Participation.objects.filter(project__slug__in=config["projects"])
        .exclude(worker__claimed_external_id__gt="")
        .count()
    )


@register_exporter(
    "annotations",
    prepare=prepare_annotations,
    count=count_annotations,
    card=annotations_card,
    count_by=("project", "task_type"),
    description="Every item of one or more annotation projects (any task type) with its aggregate "
    "and the responses per worker.",
)
def export_annotations(config: dict):
    yield ANNOTATIONS_FILE, annotation_rows(config)
    if has_phases(config):
        yield PARTICIPANTS_FILE, participant_rows(config)


# each task type's own release kinds (annotation/task_types/<name>/release.py)
task_types.package_modules("release")
