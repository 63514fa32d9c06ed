"""The errors of the annotation engine's services, each with the HTTP status a view answers it with: allocation
refusals (:class:`AllocationError`), submission refusals (:class:`SubmissionError`) and set-up errors naming a field
(:class:`ProjectInvalid`, :class:`AdjudicationRefused`)."""

from __future__ import annotations

from argora.errors import FieldError


class AllocationError(Exception):
    """No HIT can be handed to this worker, for a reason a person can read (``str(exc)``)."""

    status = 403


class WorkerBlocked(AllocationError):
    def __init__(self, reason: str):
        super().__init__(reason or "you are blocked from new HITs")
        self.reason = reason


class ProjectNotActive(AllocationError):
    pass


class QuotaReached(AllocationError):
    pass


class PhasesPending(AllocationError):
    """The worker has not passed the study's phases before the HITs (consent, instructions, training): no HIT yet
    (:mod:`annotation.phases`; ``step`` names the page they must see)."""

    def __init__(self, step: str):
        super().__init__(f"complete the study's {step} step first (open the study's work page)")
        self.step = step


class SubmissionError(Exception):
    status = 400


class ValidationFailed(SubmissionError):
    status = 400

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


class NotYourAssignment(SubmissionError):
    status = 403


class AssignmentNotOpen(SubmissionError):
    status = 409


class SlotTaken(AssignmentNotOpen):
    """An expired reservation cannot be extended: another worker has its place now."""


class ProjectInvalid(FieldError):
    """A project / item set-up error naming the field."""


class AdjudicationRefused(FieldError):
    """An adjudicated answer the task type refuses (HTTP 400)."""


class HITFull(AllocationError):
    """Every slot of the HIT a platform named is taken."""

    status = 409


class HITAlreadyDone(AllocationError):
    """The worker has done (or was rejected on) the HIT a platform named."""

    status = 409


class TooManyUnconfirmed(AllocationError):
    """Too many HITs held by claims a platform has not confirmed (per claimed id or per client address)."""

    status = 429
