"""The annotation engine's models: projects, items, HITs, assignments, responses, workers and gold, one module per
concern (projects, work, annotators, phases, agreement, team), all re-exported here so that
``from annotation.models import X`` and the migrations (``annotation.models.new_invite_token``, ...) read the same
names as when this was one module. Same app label (``annotation``), same tables.

Invariants live in the models as constraints; the state changes (allocation, submission, expiry) live in
:mod:`annotation.services` and run in transactions with row locks.

One counter on :class:`HIT` is denormalised on purpose, so that "give me the next HIT" is one indexed
row lock and not a count over assignments: ``taken`` = assignments that hold a slot (reserved + submitted
+ approved); never above the project's R (checked with ``taken < R`` in the same UPDATE that increments
it). Submission does not touch the HIT row, so submitting never blocks allocation.
"""

from __future__ import annotations

from .agreement import Adjudication, AgreementItemRow, AgreementSnapshot
from .annotators import ModelAnnotator, ModelAnswer, ModelAnswerFailure, ModelPromptVersion
from .phases import (
    SURVEY_KINDS,
    SURVEY_MAX_QUESTIONS,
    SURVEY_TEXT_MAX,
    Participation,
    StudyPhases,
    TrainingAnswer,
    clean_survey_questions,
)
from .projects import (
    ENGINE_KEYS,
    HIT,
    GoldItem,
    HITItem,
    Item,
    Project,
    new_completion_code,
    new_invite_token,
    validate_task_type,
)
from .team import Admission, AuditEntry, ProjectMember
from .work import Assignment, AssignmentDraft, GoldRecord, Response, Worker, WorkerProjectCode

__all__ = [
    "ENGINE_KEYS",
    "HIT",
    "SURVEY_KINDS",
    "SURVEY_MAX_QUESTIONS",
    "SURVEY_TEXT_MAX",
    "Adjudication",
    "Admission",
    "AgreementItemRow",
    "AgreementSnapshot",
    "Assignment",
    "AssignmentDraft",
    "AuditEntry",
    "GoldItem",
    "GoldRecord",
    "HITItem",
    "Item",
    "ModelAnnotator",
    "ModelAnswer",
    "ModelAnswerFailure",
    "ModelPromptVersion",
    "Participation",
    "Project",
    "ProjectMember",
    "Response",
    "StudyPhases",
    "TrainingAnswer",
    "Worker",
    "WorkerProjectCode",
    "clean_survey_questions",
    "new_completion_code",
    "new_invite_token",
    "validate_task_type",
]
