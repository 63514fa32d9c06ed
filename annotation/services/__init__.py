"""Write side of the annotation engine: the state changes of its work (projects, items, HITs, workers, assignments,
answers), one module per concern; callers import from the package (``from annotation import services``). The other
writers are the service modules README "Layout" lists (study phases, identity, teams, model annotators, the studio,
...), each for its own concern; ``scripts/check_layout.py`` reports a write anywhere else.

- :mod:`~annotation.services.errors`: the exceptions, each with the HTTP status a view answers it with;
- :mod:`~annotation.services.workers`: workers (a user, a platform id, an unconfirmed claim), blocks, admissions,
  completion codes;
- :mod:`~annotation.services.projects`: projects, their settings and status, items and gold items, HITs built;
- :mod:`~annotation.services.ordering`: the order in which items enter work (the open HITs' positions);
- :mod:`~annotation.services.items`: the items of a HIT and of an assignment, read in one statement;
- :mod:`~annotation.services.allocation`: reserving the next HIT; expiring, releasing and extending reservations;
- :mod:`~annotation.services.claims`: a slot of a HIT a platform named (MTurk), claims and their confirmation;
- :mod:`~annotation.services.drafts`: answers saved as the worker gives them;
- :mod:`~annotation.services.submission`: submitting answers (with the next HIT), late answers;
- :mod:`~annotation.services.gold`: scoring gold answers, blocking a worker below the minimum accuracy;
- :mod:`~annotation.services.review`: staff review and removal of assignments, experts' adjudication.

The study phases (consent, training, survey) change in :mod:`annotation.phases`, which calls this package (never
the other way round).
"""

from __future__ import annotations

from .allocation import (
    MAX_HOLD_TIMEOUTS,
    SKIP_LOCKED_RETRY_DELAYS,
    current_assignment,
    expire_reservations,
    extend_reservation,
    release_reservation,
    reserve_next_assignment,
)
from .claims import UNCONFIRMED_ADDRESS_KEY, confirm_assignment, merge_claim, reserve_hit, reserve_hit_for_claim
from .drafts import DRAFT_MAX_BYTES, DRAFT_REVISION_MAX, draft_values, save_draft
from .errors import (
    AdjudicationRefused,
    AllocationError,
    AssignmentNotOpen,
    HITAlreadyDone,
    HITFull,
    NotYourAssignment,
    PhasesPending,
    ProjectInvalid,
    ProjectNotActive,
    QuotaReached,
    SlotTaken,
    SubmissionError,
    TooManyUnconfirmed,
    ValidationFailed,
    WorkerBlocked,
)
from .items import assignment_items
from .ordering import ITEM_ORDER_MARK, reorder_hits
from .projects import (
    PROJECT_SETTINGS,
    add_items,
    add_items_from_rows,
    build_hits,
    clean_retrain_number,
    create_project,
    gold_from_sentences,
    regenerate_invite_token,
    set_item_order,
    set_project_status,
)
from .review import adjudicate_item, do_release_assignment, set_assignment_status
from .submission import (
    accept_late_assignment,
    submission_key,
    submit_and_reserve_next,
    submit_assignment,
    submittable_assignment,
)
from .workers import (
    admit_worker,
    block_worker,
    completion_code,
    confirmed_worker,
    provisional_worker,
    unblock_worker,
    worker_for_external_id,
    worker_for_user,
)

__all__ = [
    "DRAFT_MAX_BYTES",
    "DRAFT_REVISION_MAX",
    "ITEM_ORDER_MARK",
    "MAX_HOLD_TIMEOUTS",
    "PROJECT_SETTINGS",
    "SKIP_LOCKED_RETRY_DELAYS",
    "UNCONFIRMED_ADDRESS_KEY",
    "AdjudicationRefused",
    "AllocationError",
    "AssignmentNotOpen",
    "HITAlreadyDone",
    "HITFull",
    "NotYourAssignment",
    "PhasesPending",
    "ProjectInvalid",
    "ProjectNotActive",
    "QuotaReached",
    "SlotTaken",
    "SubmissionError",
    "TooManyUnconfirmed",
    "ValidationFailed",
    "WorkerBlocked",
    "accept_late_assignment",
    "add_items",
    "add_items_from_rows",
    "adjudicate_item",
    "admit_worker",
    "assignment_items",
    "block_worker",
    "build_hits",
    "clean_retrain_number",
    "completion_code",
    "confirm_assignment",
    "confirmed_worker",
    "create_project",
    "current_assignment",
    "do_release_assignment",
    "draft_values",
    "expire_reservations",
    "extend_reservation",
    "gold_from_sentences",
    "merge_claim",
    "provisional_worker",
    "regenerate_invite_token",
    "release_reservation",
    "reorder_hits",
    "reserve_hit",
    "reserve_hit_for_claim",
    "reserve_next_assignment",
    "save_draft",
    "set_assignment_status",
    "set_item_order",
    "set_project_status",
    "submission_key",
    "submit_and_reserve_next",
    "submit_assignment",
    "submittable_assignment",
    "unblock_worker",
    "worker_for_external_id",
    "worker_for_user",
]
