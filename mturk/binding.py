"""Binding an MTurk assignment (assignmentId / workerId / hitId) to an Argora Worker and Assignment.

MTurk puts assignmentId, workerId, hitId and turkSubmitTo in the ExternalQuestion URL; nothing there is
signed, so Argora signs the binding it makes on accept (``django.core.signing`` with the salt
``ARGORA_MTURK_SIGNING_SALT``) and the submit endpoint only trusts that token: an assignmentId / workerId / hitId
changed after the accept (query string or token), or a binding for someone else's assignment, is refused with 403
and nothing is written.

What the binding cannot do is prove, on accept, that MTurk really issued the assignmentId / workerId pair: a
made-up pair for a known hitId is bound like a real one (MTurk offers no call to check an assignment that is
still being worked on). Such an assignment is *unverified* until a sync finds it in ListAssignmentsForHIT: its
answers are left out of the aggregates and exports (``annotation.selectors.unverified_q``), and a sync rejects it
in Argora, giving its slot back, once MTurk still does not list it an assignment duration after it was submitted
(``mturk.sync.exclude_unknown``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core import signing
from django.utils import timezone

from annotation import services as annotation_services
from annotation.models import Assignment, Project, Worker

from .models import MTurkHIT, MTurkProjectSettings

PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
MTURK_SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
FAKE_TURK_PATH = "/mturk/_test/turk"


class BindingRefused(Exception):
    """The request does not match a binding Argora made (403)."""

    status = 403


class BindingConflict(Exception):
    """A readable reason why this MTurk assignment cannot be bound now (e.g. no free slot): 409."""

    status = 409


@dataclass(frozen=True)
class Binding:
    assignment_id: str  # MTurk assignmentId
    worker_id: str  # MTurk workerId
    hit_id: str  # MTurk hitId
    argora_assignment: int
    turk_submit_to: str
    project: str  # slug

    def dumps(self) -> str:
        return signing.dumps(
            {
                "a": self.assignment_id,
                "w": self.worker_id,
                "h": self.hit_id,
                "x": self.argora_assignment,
                "t": self.turk_submit_to,
                "p": self.project,
            },
            salt=settings.ARGORA_MTURK_SIGNING_SALT,
            compress=True,
        )

    @property
    def submit_url(self) -> str:
        return self.turk_submit_to.rstrip("/") + "/mturk/externalSubmit"


def fake_turk_enabled() -> bool:
    return bool(settings.DEBUG or getattr(settings, "ARGORA_MTURK_FAKE_TURK", False))


def allowed_submit_to(value: str, request=None) -> bool:
    """turkSubmitTo must be MTurk (or, in DEBUG/tests, the local stand-in): never post answers elsewhere."""
    value = (value or "").rstrip("/")
    allowed = set(MTURK_SUBMIT_HOSTS) | {v.rstrip("/") for v in getattr(settings, "ARGORA_MTURK_SUBMIT_TO", [])}
    if value in allowed:
        return True
    if fake_turk_enabled() and request is not None:
        return value == request.build_absolute_uri(FAKE_TURK_PATH).rstrip("/")
    return False


def load(token: str, *, project: Project, query) -> Binding:
    """Verify the signed token and that the query's assignmentId / workerId / hitId (when sent) match it."""
    max_age = getattr(settings, "ARGORA_MTURK_BINDING_MAX_AGE", 14 * 24 * 3600)
    try:
        data = signing.loads(token or "", salt=settings.ARGORA_MTURK_SIGNING_SALT, max_age=max_age)
    except signing.SignatureExpired:
        raise BindingRefused("this HIT page is too old; open the HIT again from MTurk") from None
    except signing.BadSignature:
        raise BindingRefused("the HIT binding is not valid (tampered or from another server)") from None
    try:
        binding = Binding(
            assignment_id=data["a"],
            worker_id=data["w"],
            hit_id=data["h"],
            argora_assignment=int(data["x"]),
            turk_submit_to=data["t"],
            project=data["p"],
        )
    except (KeyError, TypeError, ValueError):
        raise BindingRefused("the HIT binding is not valid") from None
    if binding.project != project.slug:
        raise BindingRefused("this HIT binding belongs to another project")
    for param, value in (
        ("assignmentId", binding.assignment_id),
        ("workerId", binding.worker_id),
        ("hitId", binding.hit_id),
    ):
        sent = query.get(param)
        if sent is not None and sent != value:
            raise BindingRefused(f"{param} does not match the HIT you accepted")
    return binding


def assignment_for(binding: Binding, project: Project) -> tuple[Assignment, Worker]:
    """The bound Argora assignment, re-checked against the database (worker and MTurk ids)."""
    assignment = (
        Assignment.objects.select_related("worker", "hit", "project")
        .filter(pk=binding.argora_assignment, project=project)
        .first()
    )
    if (
        assignment is None
        or assignment.external_id != binding.assignment_id
        or assignment.worker.source != Worker.Source.MTURK
        or _worker_id(assignment.worker) != binding.worker_id
    ):
        raise BindingRefused("this HIT binding does not match Argora's records")
    if not MTurkHIT.objects.filter(mturk_hit_id=binding.hit_id, hit_id=assignment.hit_id).exists():
        raise BindingRefused("this HIT binding does not match Argora's records")
    return assignment, assignment.worker


def _worker_id(worker: Worker) -> str:
    """The MTurk workerId of an assignment's worker: confirmed, or claimed when no sync has confirmed it yet."""
    return worker.external_id or worker.claimed_external_id


def _timeout(project: Project) -> timedelta:
    cfg = MTurkProjectSettings.objects.filter(project=project).first()
    seconds = max(project.reservation_timeout_seconds, cfg.assignment_duration_seconds if cfg else 0)
    return timedelta(seconds=seconds)


def bind(
    project: Project,
    mhit: MTurkHIT,
    *,
    assignment_id: str,
    worker_id: str,
    turk_submit_to: str,
    client: str = "",
    now=None,
) -> Binding:
    """Accept: an Argora Assignment on the Argora HIT this MTurk HIT maps to, for a provisional worker that claims
    ``worker_id`` (:func:`annotation.services.reserve_hit_for_claim`: nothing in the URL is trusted before a sync
    lists the assignment; ``client`` is the request's address, for the per-address limit).

    The reservation lasts as long as the MTurk assignment (``assignment_duration_seconds``) so that Argora never
    expires work MTurk still lets the worker do. Opening the page again with the same assignmentId gives the same
    binding. Raises BindingRefused (ids that do not match), BindingConflict (no slot, HIT done already),
    annotation.services.WorkerBlocked / ProjectNotActive / QuotaReached / TooManyUnconfirmed.
    """
    now = now or timezone.now()
    if project.status != Project.Status.ACTIVE:
        raise annotation_services.ProjectNotActive(f"project {project.name!r} is not active")
    if not assignment_id or not worker_id or len(assignment_id) > 200 or len(worker_id) > 200:
        raise BindingRefused("assignmentId and workerId are required")
    bound = Assignment.objects.select_related("worker").filter(project=project, external_id=assignment_id).first()
    if bound is not None:
        if (
            bound.worker.source != Worker.Source.MTURK
            or _worker_id(bound.worker) != worker_id
            or bound.hit_id != mhit.hit_id
        ):
            raise BindingRefused("this assignmentId belongs to another worker or HIT")
        return Binding(assignment_id, worker_id, mhit.mturk_hit_id, bound.pk, turk_submit_to, project.slug)
    try:
        assignment = annotation_services.reserve_hit_for_claim(
            project,
            mhit.hit_id,
            source=Worker.Source.MTURK,
            claimed_id=worker_id,
            external_id=assignment_id,
            expires_at=now + _timeout(project),
            client=client,
            now=now,
        )
    except (annotation_services.HITFull, annotation_services.HITAlreadyDone) as exc:
        raise BindingConflict(str(exc)) from None
    return Binding(assignment_id, worker_id, mhit.mturk_hit_id, assignment.pk, turk_submit_to, project.slug)


def netloc(url: str) -> str:
    return urlsplit(url).netloc
