"""Write side of the annotation engine: every state change goes through one function here.

Allocation (``reserve_next_assignment``) and submission (``submit_assignment``) run in one transaction
each. On PostgreSQL the HIT to hand out is picked with ``SELECT ... FOR UPDATE SKIP LOCKED`` so that
concurrent workers take different rows instead of queueing on one; on SQLite the settings open every
transaction IMMEDIATE, so writers are serialised by the database lock. In both cases the slot counter
is incremented with ``UPDATE ... WHERE taken < R`` and the row count checked, so no HIT (and therefore
no item) ever gets more than R assignments that hold a slot, whatever the isolation level.
"""
from __future__ import annotations

import hashlib
import json
import random
import time
from contextlib import nullcontext
from datetime import timedelta
from typing import Any, Iterable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone
from django.utils.text import slugify

from argora import counters
from argora.errors import FieldError

from . import providers, rawsql, selectors, teams
from .auth import cached_worker, remember_worker
from .models import (
    HIT,
    Adjudication,
    Admission,
    Assignment,
    AssignmentDraft,
    GoldItem,
    GoldRecord,
    HITItem,
    Item,
    Project,
    Response,
    StudyPhases,
    Worker,
    WorkerProjectCode,
    new_invite_token,
)
from .signals import assignment_submitted
from .task_types import ResponseInvalid, TaskType, get_task_type


# --- errors -------------------------------------------------------------------------------------
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


def _skip_locked() -> bool:
    return bool(connection.features.has_select_for_update_skip_locked)


def _serialised_writes() -> bool:
    """SQLite (>= 3.35, for ``UPDATE ... RETURNING``): every transaction is IMMEDIATE (the settings), so a writing
    transaction holds the database's only write lock from its start; what it reads cannot change under it."""
    return connection.vendor == "sqlite" and connection.Database.sqlite_version_info >= (3, 35)


# --- workers ------------------------------------------------------------------------------------
def worker_for_user(user, *, source: str = "local") -> Worker:
    """The Worker of a Django user, created on first use."""
    known, worker = cached_worker(user)
    if not known:
        worker = Worker.objects.filter(user=user).first()
    if worker is not None:
        return worker
    try:
        with transaction.atomic():
            worker = Worker.objects.create(user=user, source=source)
    except IntegrityError:  # created by a concurrent request
        worker = Worker.objects.get(user=user)
    remember_worker(user, worker)
    return worker


def worker_for_external_id(external_id: str, *, source: str) -> Worker:
    """The Worker with an external id (MTurk WorkerId, Prolific PID), created on first use."""
    if not external_id:
        raise ValueError("external_id is empty")
    worker = Worker.objects.filter(source=source, external_id=external_id).first()
    if worker is not None:
        return worker
    try:
        with transaction.atomic():
            return Worker.objects.create(source=source, external_id=external_id)
    except IntegrityError:
        return Worker.objects.get(source=source, external_id=external_id)


def provisional_worker(source: str, claimed_id: str) -> Worker:
    """A new worker for an identity a platform has not confirmed (an MTurk workerId or a Prolific PID in a URL).

    Each unconfirmed claim gets its own provisional worker, so that a made-up claim never touches the record of the
    worker who really has that id: their gold record, block, quota and completed HITs. Its answers are left out of
    every aggregate and export (:func:`annotation.selectors.unverified_q`) and its gold answers are scored only when
    the platform confirms the claim (:func:`confirm_assignment`)."""
    if not claimed_id:
        raise ValueError("claimed_id is empty")
    return Worker.objects.create(source=source, claimed_external_id=claimed_id)


def confirmed_worker(source: str, external_id: str) -> Worker | None:
    """The worker a platform has confirmed as ``external_id``, if any."""
    return Worker.objects.filter(source=source, external_id=external_id).first() if external_id else None


def confirm_assignment(assignment: Assignment, *, source: str, external_id: str, now=None) -> Assignment | None:
    """The platform confirmed that ``external_id`` did ``assignment`` (an MTurk sync listed its assignmentId under
    that WorkerId): the assignment moves from its provisional worker to the confirmed worker (created on first use),
    its gold answers are scored now -- which may block that worker, as at submission -- and its answers count from
    now on. Idempotent; ``None`` (nothing changed, logged by the caller) when the assignment's provisional worker
    claimed another id, or when the confirmed worker already holds an assignment of the same HIT."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().select_related("worker", "project").get(pk=assignment.pk)
        provisional = locked.worker
        if provisional.source == source and provisional.external_id == external_id:
            return locked  # confirmed already
        if provisional.claimed_external_id != external_id or provisional.source != source:
            return None
        worker = worker_for_external_id(external_id, source=source)
        if Assignment.objects.filter(hit_id=locked.hit_id, worker=worker).exists():
            return None
        Assignment.objects.filter(pk=locked.pk).update(worker=worker)
        locked.worker = worker
        GoldRecord.objects.filter(assignment=locked).delete()  # none are scored for a provisional worker
        if locked.status in Assignment.DONE and _score_stored_gold(locked, worker, now):
            worker.refresh_from_db(fields=["blocked", "blocked_reason", "blocked_at"])
        # the claim's study phases (consent, training, survey) are the confirmed worker's now
        from . import phases  # a real cycle: phases makes completion codes with this module
        phases.merge_claim(locked.project, worker, source=source, claimed_id=external_id)
        if not provisional.assignments.exists():
            provisional.delete()
    return locked


def block_worker(worker: Worker, reason: str, *, now=None) -> Worker:
    Worker.objects.filter(pk=worker.pk).update(blocked=True, blocked_reason=reason, blocked_at=now or timezone.now())
    worker.refresh_from_db(fields=["blocked", "blocked_reason", "blocked_at"])
    return worker


def unblock_worker(worker: Worker) -> Worker:
    Worker.objects.filter(pk=worker.pk).update(blocked=False, blocked_reason="", blocked_at=None)
    worker.refresh_from_db(fields=["blocked", "blocked_reason", "blocked_at"])
    return worker


# --- projects and items -------------------------------------------------------------------------
PROJECT_SETTINGS = (
    "guidelines", "assignments_per_item", "items_per_hit", "gold_rate", "max_hits_per_worker", "reward_cents",
    "time_estimate_seconds", "reservation_timeout_seconds", "gold_min_items", "gold_min_accuracy", "status",
)


def _unique_slug(base: str) -> str:
    base = (slugify(base) or "project")[:180]
    slug, n = base, 2
    while Project.objects.filter(slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return slug


def create_project(*, name: str, task_type: str, slug: str | None = None, config: dict | None = None,
                   created_by=None, **settings: Any) -> Project:
    """A new project; the task type checks ``config``. Raises :class:`ProjectInvalid` naming the field."""
    unknown = set(settings) - set(PROJECT_SETTINGS)
    if unknown:
        raise TypeError(f"unknown project settings: {', '.join(sorted(unknown))}")
    if not name or not name.strip():
        raise ProjectInvalid("name", "give the project a name")
    try:
        tt = get_task_type(task_type)
    except KeyError as exc:
        raise ProjectInvalid("task_type", str(exc.args[0])) from None
    try:
        config = tt.clean_config(config)
    except ResponseInvalid as exc:
        raise ProjectInvalid(f"config.{exc.field}", exc.reason) from None
    for key, value in tt.project_defaults.items():  # the task type's defaults for what the caller left out
        if settings.get(key) is None:
            settings[key] = value
    settings = {key: value for key, value in settings.items() if value is not None}
    if slug:
        if Project.objects.filter(slug=slug).exists():
            raise ProjectInvalid("slug", f"a project with slug {slug!r} exists")
    else:
        slug = _unique_slug(name)
    project = Project(name=name.strip(), slug=slug, task_type=task_type, config=config, created_by=created_by,
                      **settings)
    _check_settings(project)
    with transaction.atomic():
        project.save()
        teams.add_creator(project, created_by)  # who made it owns it (annotation.access)
    return project


def admit_worker(project: Project, worker: Worker, *, via: str = "invite") -> None:
    """``worker`` came in through one of ``project``'s doors (its invite link, its Prolific study link): it may
    take the project's HITs (:func:`annotation.access.worker_admitted`)."""
    Admission.objects.get_or_create(project=project, worker=worker, defaults={"via": via[:20]})


def _check_settings(project: Project) -> None:
    if project.assignments_per_item < 1:
        raise ProjectInvalid("assignments_per_item", "must be at least 1")
    if project.items_per_hit < 1:
        raise ProjectInvalid("items_per_hit", "must be at least 1")
    if not 0 <= project.gold_rate <= 1:
        raise ProjectInvalid("gold_rate", "must be between 0 and 1")
    if not 0 <= project.gold_min_accuracy <= 1:
        raise ProjectInvalid("gold_min_accuracy", "must be between 0 and 1")
    if project.status not in Project.Status.values:
        raise ProjectInvalid("status", f"must be one of {', '.join(Project.Status.values)}")
    try:
        selectors.clean_item_order((project.config or {}).get("item_order"),
                                   assignments_per_item=project.assignments_per_item)
    except FieldError as exc:
        raise ProjectInvalid(exc.field, exc.reason) from None


def set_item_order(project: Project, value) -> dict:
    """Set the order in which the project's items enter work (``Project.config["item_order"]``: a mode of
    :data:`annotation.selectors.ITEM_ORDERS` or ``{"mode", "r_min", "r_max", "min_agreement"}``; ``None`` =
    random), then put the open HITs in that order (:func:`reorder_hits`). Raises :class:`ProjectInvalid` naming
    ``config.item_order[.key]``; nothing is written then. Returns what :func:`reorder_hits` returns."""
    with transaction.atomic():
        locked = Project.objects.select_for_update(no_key=True).get(pk=project.pk)
        try:
            cleaned = selectors.clean_item_order(value, assignments_per_item=locked.assignments_per_item)
        except FieldError as exc:
            raise ProjectInvalid(exc.field, exc.reason) from None
        config = dict(locked.config or {})
        if cleaned is None or cleaned == {"mode": "random"}:
            config.pop("item_order", None)
        else:
            config["item_order"] = cleaned
        Project.objects.filter(pk=locked.pk).update(config=config)
        project.config = locked.config = config
        return reorder_hits(locked)


def set_project_status(project: Project, status: str) -> Project:
    if status not in Project.Status.values:
        raise ProjectInvalid("status", f"must be one of {', '.join(Project.Status.values)}")
    if status == Project.Status.ACTIVE and not HIT.objects.filter(project=project).exists():
        raise ProjectInvalid("status", "cannot activate a project with no HITs: import its items first")
    Project.objects.filter(pk=project.pk).update(status=status)
    project.status = status
    return project


def regenerate_invite_token(project: Project) -> str:
    project.invite_token = new_invite_token()
    Project.objects.filter(pk=project.pk).update(invite_token=project.invite_token)
    return project.invite_token


@transaction.atomic
def add_items(project: Project, payloads: Iterable[dict], *, gold: Iterable[dict] | None = None) -> list[Item]:
    """Add items (payload dicts, as ``build_items`` returns them) and gold items.

    ``gold``: dicts ``{"payload": {...}, "expected": {...}, "tolerance": 0.0, "explanation": ""}`` (``"training":
    true``: a training item of the study's training phase, never in a HIT); the expected answer is validated like a
    worker's response. All or nothing.
    """
    tt = get_task_type(project.task_type)
    last = Item.objects.filter(project=project).order_by("-position").values_list("position", flat=True).first()
    position = (last or 0) + 1 if last is not None else 0
    items: list[Item] = []
    for i, payload in enumerate(payloads):
        if not isinstance(payload, dict):
            raise ProjectInvalid(f"items[{i}]", "an item payload must be an object")
        items.append(Item(project=project, payload=payload, position=position, **tt.item_links(payload)))
        position += 1
    gold_rows: list[tuple[Item, dict]] = []
    for i, spec in enumerate(gold or []):
        if not isinstance(spec, dict) or not isinstance(spec.get("payload"), dict) or "expected" not in spec:
            raise ProjectInvalid(f"gold[{i}]", 'give {"payload": {...}, "expected": {...}}')
        item = Item(project=project, payload=spec["payload"], is_gold=True, is_training=spec.get("training") is True,
                    position=position, **tt.item_links(spec["payload"]))
        position += 1
        try:
            expected = tt.validate_response(project, item, spec["expected"])
        except ResponseInvalid as exc:
            raise ProjectInvalid(f"gold[{i}].expected.{exc.field}", exc.reason) from None
        gold_rows.append((item, {"expected": expected, "tolerance": float(spec.get("tolerance", 0.0)),
                                 "explanation": str(spec.get("explanation", ""))}))
    created = Item.objects.bulk_create(items + [item for item, _ in gold_rows])
    if gold_rows:
        if any(item.pk is None for item, _ in gold_rows):  # backends that do not return ids from bulk_create
            for item, _ in gold_rows:
                item.pk = Item.objects.get(project=project, position=item.position).pk
        GoldItem.objects.bulk_create([GoldItem(item=item, **fields) for item, fields in gold_rows])
    return created


def gold_from_sentences(project: Project, sentences: list, *, field: str = "gold") -> list[dict]:
    """Gold items (``{"payload", "expected"}``, as :func:`add_items` takes them) from corpus sentences whose stance
    the task type reads as the expected answer (``TaskType.gold_from_sentence``); each answer is checked as a worker's
    response. Raises :class:`ProjectInvalid` naming ``field`` when the task type takes no gold from a stance or a
    sentence's stance is no valid answer."""
    if not sentences:
        return []
    tt = get_task_type(project.task_type)
    refused = ProjectInvalid(field, f"{tt.label} items take no gold answer from a corpus stance; set it to 0")
    if type(tt).gold_from_sentence is TaskType.gold_from_sentence:
        raise refused
    gold = []
    for n, (sentence, payload) in enumerate(zip(sentences, tt.build_items(project, sentences))):
        expected = tt.gold_from_sentence(project, sentence, payload)
        if expected is None:
            raise refused
        try:
            expected = tt.validate_response(project, Item(project=project, payload=payload, is_gold=True), expected)
        except ResponseInvalid as exc:
            raise ProjectInvalid(field, f"sentence {n + 1} ({sentence.text[:60]!r}, stance {sentence.stance}) is no "
                                        f"valid gold answer: {exc.reason}") from None
        gold.append({"payload": payload, "expected": expected})
    return gold


def add_items_from_rows(project: Project, rows: Iterable[Any], *, gold=None) -> list[Item]:
    """Corpus rows -> payloads (through the task type) -> items."""
    return add_items(project, get_task_type(project.task_type).build_items(project, rows), gold=gold)


@transaction.atomic
def build_hits(project: Project) -> int:
    """Put every non-gold item that is in no HIT yet into new HITs of ``items_per_hit``; returns HITs created."""
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).first()  # one builder at a time per project
    loose = list(Item.objects.filter(project=project, is_gold=False, hit_items__isnull=True)
                 .order_by("position", "id").values_list("pk", flat=True))
    if not loose:
        return 0
    order = selectors.item_order(project)
    if order["mode"] == "uncertainty":  # items the model is least sure of enter HITs together, and first
        confidence = _item_confidence(project, loose)
        if confidence:
            loose.sort(key=lambda pk: confidence.get(pk, 1.0))
    size = project.items_per_hit
    last = (HIT.objects.filter(project=project, position__lt=ITEM_ORDER_MARK).order_by("-position")
            .values_list("position", flat=True).first())
    start = 0 if last is None else last + 1
    chunks = [loose[i:i + size] for i in range(0, len(loose), size)]
    hits = HIT.objects.bulk_create([HIT(project=project, position=start + n) for n in range(len(chunks))])
    if any(h.pk is None for h in hits):
        hits = list(HIT.objects.filter(project=project, position__gte=start).order_by("position"))
    HITItem.objects.bulk_create([HITItem(hit=hit, item_id=item_id, position=p)
                                 for hit, chunk in zip(hits, chunks) for p, item_id in enumerate(chunk)])
    if order["mode"] != "random":
        reorder_hits(project)
    return len(hits)


# --- the order in which items enter work ---------------------------------------------------------
ITEM_ORDER_MARK = 1 << 30  # HIT positions from here on: HITs marked for responses beyond r_min (adaptive R)


def _item_confidence(project: Project, item_ids: list[int]) -> dict[int, float]:
    """The active model's confidence per item (:data:`providers.item_confidence`); ``{}`` when there is none."""
    got = providers.item_confidence.get(project, item_ids)
    return {int(k): float(v) for k, v in (got or {}).items() if v is not None}


def _hit_keys(project: Project, order: dict, hits: list[dict]) -> tuple[dict[int, float], set[int], str]:
    """Sort key per open HIT (lower = offered sooner), the HITs marked for more responses, and a note."""
    item_ids = [i for h in hits for i in h["items"]]
    mode = order["mode"]
    if mode == "uncertainty":
        conf = _item_confidence(project, item_ids)
        if not conf:
            return {}, set(), "no model gives confidences for this task type: random order (as imported)"
        return ({h["id"]: min((conf.get(i, 1.0) for i in h["items"]), default=1.0) for h in hits}, set(),
                f"least confident first ({len(conf)} items scored)")
    if mode == "model-human":
        diff = selectors.model_human_disagreement(project, item_ids)
        if not diff:
            return {}, set(), "no item has both a model annotator's and a human answer yet: order unchanged"
        return ({h["id"]: -max((diff.get(i, 0.0) for i in h["items"]), default=0.0) for h in hits}, set(),
                f"model-human disagreement first ({len(diff)} items)")
    agreement = selectors.item_agreement(project, item_ids)
    keys, marked = {}, set()
    for h in hits:
        shares = [agreement[i] for i in h["items"] if i in agreement]
        # the most disagreeing item of the HIT decides; HITs nobody answered yet come after those with answers
        keys[h["id"]] = min((share for share, _ in shares), default=2.0)
        if order["adaptive"] and h["taken"] >= order["r_min"] and any(
                n >= order["r_min"] and share < order["min_agreement"] for share, n in shares):
            marked.add(h["id"])
    return keys, marked, f"most disagreement first; {len(marked)} HITs marked for more than r_min responses"


@transaction.atomic
def reorder_hits(project: Project) -> dict:
    """Put the project's open HITs (``taken`` below the cap) in the order of its item order
    (``Project.config["item_order"]``; see :func:`annotation.selectors.clean_item_order`) by giving them new
    ``position`` values -- the allocation hands out the lowest free position, so nothing else changes there.

    - ``random``: nothing (the import order, today's behaviour);
    - ``uncertainty``: least confident first under the active model (:data:`providers.item_confidence`; without one:
      unchanged, and the note says so); ``build_hits`` also groups the least confident items into the first HITs;
    - ``disagreement``: HITs whose answered items disagree most (share of the most common answer) first, then the
      HITs nobody answered; with ``r_min < r_max`` a HIT that has ``r_min`` slots taken takes more (up to ``r_max``)
      only while an item with ``r_min`` answers agrees less than ``min_agreement``: such HITs are *marked* by a
      position at or above :data:`ITEM_ORDER_MARK`, which the allocation offers before any new HIT;
    - ``model-human``: HITs where a model annotator's answer differs most from the humans' first.

    New positions are above the current highest of their band, so the unique (project, position) constraint never
    sees a collision; a HIT that an allocation is taking right now (row locked on PostgreSQL) keeps its position.
    Returns ``{"mode", "moved", "marked", "note"}``. Safe to call at any time (a debounced task after submissions,
    after a model is activated, after ``build_hits``).
    """
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).first()  # one reorder/builder at a time
    order = selectors.item_order(project)
    if order["mode"] == "random":
        return {"mode": "random", "moved": 0, "marked": 0, "note": "random order (as imported)"}
    hits = selectors.open_hits(project, order["cap"])
    keys, marked, note = _hit_keys(project, order, hits)
    if not keys:
        return {"mode": order["mode"], "moved": 0, "marked": 0, "note": note}
    ids = [h["id"] for h in hits]
    if _skip_locked():  # FOR UPDATE: also skips HITs whose assignment row is being inserted (FOR KEY SHARE)
        ids = set(HIT.objects.select_for_update(skip_locked=True).filter(pk__in=ids).values_list("pk", flat=True))
    else:
        ids = set(ids)
    by_position = sorted((h for h in hits if h["id"] in ids), key=lambda h: (keys.get(h["id"], 0.0), h["position"]))
    normal = [h for h in by_position if h["id"] not in marked]
    flagged = [h for h in by_position if h["id"] in marked]
    top = HIT.objects.filter(project=project, position__lt=ITEM_ORDER_MARK).order_by("-position").values_list(
        "position", flat=True).first()
    top_marked = HIT.objects.filter(project=project, position__gte=ITEM_ORDER_MARK).order_by("-position").values_list(
        "position", flat=True).first()
    base = 0 if top is None else top + 1
    base_marked = ITEM_ORDER_MARK if top_marked is None else top_marked + 1
    if base + len(normal) >= ITEM_ORDER_MARK:
        raise ProjectInvalid("item_order", "HIT positions are exhausted; rebuild the project's HITs")
    updates = [HIT(pk=h["id"], position=base + n) for n, h in enumerate(normal)]
    updates += [HIT(pk=h["id"], position=base_marked + n) for n, h in enumerate(flagged)]
    HIT.objects.bulk_update(updates, ["position"], batch_size=500)
    return {"mode": order["mode"], "moved": len(updates), "marked": len(flagged), "note": note}


# --- allocation ---------------------------------------------------------------------------------
def current_assignment(project: Project, worker: Worker, *, now=None) -> Assignment | None:
    """The worker's unexpired reserved assignment in this project, if any (``project`` is the given object: joining
    the project's row would only read it again)."""
    now = now or timezone.now()
    held = (Assignment.objects.select_related("hit")
            .filter(project=project, worker=worker, status=Assignment.Status.RESERVED, expires_at__gt=now)
            .order_by("reserved_at").first())
    if held is not None:
        held.project = project
    return held


def _gold_count(project: Project, n_items: int, rng: random.Random) -> int:
    exact = project.gold_rate * n_items
    whole = int(exact)
    return whole + (1 if rng.random() < exact - whole else 0)


def _pick_gold(project: Project, worker: Worker, n: int, rng: random.Random) -> list[int]:
    if n <= 0:
        return []
    seen = set(GoldRecord.objects.filter(worker=worker, item__project=project).values_list("item_id", flat=True))
    seen |= set(Assignment.gold_items.through.objects
                .filter(assignment__worker=worker, assignment__project=project).values_list("item_id", flat=True))
    pool = [pk for pk in Item.objects.filter(project=project, is_gold=True, is_training=False, gold__isnull=False)
            .values_list("pk", flat=True) if pk not in seen]
    return rng.sample(pool, min(n, len(pool)))


def reserve_next_assignment(project: Project, worker: Worker, *, now=None, fresh: bool = False
                            ) -> Assignment | None:
    """Reserve a HIT that still needs assignments and that this worker has not had; ``None`` = nothing left.

    A worker who already holds an unexpired reservation in the project gets that one back. Raises
    :class:`WorkerBlocked`, :class:`ProjectNotActive`, :class:`QuotaReached` or :class:`PhasesPending` (the study's
    consent, instructions or training come first: :mod:`annotation.phases`). ``fresh=True``: the caller has just
    read ``project`` (a request handler), so its settings and status are not read again.
    """
    now = now or timezone.now()
    if not fresh:
        project = Project.objects.get(pk=project.pk)  # fresh settings and status
    if project.status != Project.Status.ACTIVE:
        raise ProjectNotActive(f"project {project.name!r} is {project.get_status_display().lower()}, not active")
    if selectors.gates_work(selectors.phase_config(project)):
        step = selectors.phase_step(project, worker)
        if step != selectors.WORK:
            raise PhasesPending(step)
    assignment = _reserve(project, worker, now)
    if assignment is not None:
        return assignment
    # Nothing free: return this project's stale reservations to the pool and look again -- also when this sweep gave
    # none back (a twin request, the same worker's, may have just swept the one it is taking: the look finds it held).
    # A stale reservation this sweep skipped is being swept or submitted right now: look again once that is done.
    for delay in (0, *SKIP_LOCKED_RETRY_DELAYS):
        if delay:
            time.sleep(delay)
        expire_reservations(now=now, project=project)
        assignment = _reserve(project, worker, now)
        if assignment is not None or not _stale_reservations(project, now).exists():
            return assignment
    return None


def _reserve(project: Project, worker: Worker, now) -> Assignment | None:
    with transaction.atomic():
        return _reserve_in_transaction(project, worker, now)


def _reserve_in_transaction(project: Project, worker: Worker, now, locked: Worker | None = None
                            ) -> Assignment | None:
    """The allocation itself, inside the caller's transaction. Raises :class:`WorkerBlocked` or
    :class:`QuotaReached` only before anything is written, so a caller may catch them and still commit what it
    wrote before (:func:`submit_and_reserve_next`). ``locked`` (PostgreSQL): the worker's row, already locked by the
    caller's transaction (its ``blocked`` state read with the lock)."""
    if _skip_locked():
        return _reserve_skip_locked(project, worker, now, locked)
    if _serialised_writes():
        return _reserve_serialised(project, worker, now)
    # Neither: one allocation at a time per worker (two tabs, a retried request) by locking the worker row.
    locked = (Worker.objects.select_for_update(no_key=True).only("pk", "blocked", "blocked_reason")
              .get(pk=worker.pk))
    if locked.blocked:
        raise WorkerBlocked(locked.blocked_reason)
    held = current_assignment(project, worker, now=now)
    if held is not None:
        return held
    if project.max_hits_per_worker is not None:
        used = Assignment.objects.filter(project=project, worker=worker).exclude(
            status=Assignment.Status.EXPIRED).count()
        if used >= project.max_hits_per_worker:
            raise _quota_reached(project)
    assignment = _new_reservation(project, worker, now)
    for r, from_position in _allocation_passes(project):
        hit_id = _take_hit_slow(project, worker, r, from_position)
        if hit_id is not None:
            assignment.hit_id = hit_id
            assignment.save(force_insert=True)
            break
    else:
        return None
    _add_gold(project, worker, assignment)
    return assignment


def _reserve_skip_locked(project: Project, worker: Worker, now, locked: Worker | None) -> Assignment | None:
    """PostgreSQL: the allocation in two statements. The worker's row is locked first (one allocation at a time per
    worker: two tabs, a retried request), unless the caller's statement locked it; then one statement checks that the
    worker holds no reservation and is under the quota, takes a free HIT, inserts the reservation and reads the HIT's
    items (:func:`_take_free_hit`). When every free HIT is locked by allocations in flight, it tries again after
    short pauses (:func:`_take_free_hit_retrying`)."""
    if locked is None:
        locked = (Worker.objects.select_for_update(no_key=True).only("pk", "blocked", "blocked_reason")
                  .get(pk=worker.pk))
    if locked.blocked:
        raise WorkerBlocked(locked.blocked_reason)
    assignment = _new_reservation(project, worker, now)
    passes = _allocation_passes(project)
    for _ in range(2):
        outcome = _take_free_hit(assignment, *passes[0], now=now, quota=project.max_hits_per_worker)
        if outcome != "held":
            break
        held = current_assignment(project, worker, now=now)
        if held is not None:
            return held
        # submitted meanwhile (a submission does not take the worker's lock): check again
    if outcome == "quota":
        raise _quota_reached(project)
    if outcome != "taken" and not any(_take_free_hit_retrying(assignment, r, from_position, tried=n == 0)
                                      for n, (r, from_position) in enumerate(passes)):
        return None
    _add_gold(project, worker, assignment)
    return assignment


def _reserve_serialised(project: Project, worker: Worker, now) -> Assignment | None:
    """SQLite: the IMMEDIATE transaction already holds the database's write lock (one writer at a time), so the
    worker's state, the reservation they hold and their HIT count are read in one statement, and the HIT picked by
    :func:`_take_hit_serialised` is final."""
    asg = rawsql.table(Assignment)
    quota = project.max_hits_per_worker
    used = "0" if quota is None else (f"(SELECT count(*) FROM {asg} q WHERE q.project_id = %s AND q.worker_id = w.id "
                                      f"AND q.status <> %s)")
    sql = (f"SELECT w.blocked, w.blocked_reason, (SELECT a.id FROM {asg} a WHERE a.project_id = %s "
           f"AND a.worker_id = w.id AND a.status = %s AND a.expires_at > %s LIMIT 1), {used} "
           f"FROM {rawsql.table(Worker)} w WHERE w.id = %s")
    params = [project.pk, Assignment.Status.RESERVED.value,
              Assignment._meta.get_field("expires_at").get_db_prep_value(now, connection),
              *([] if quota is None else [project.pk, Assignment.Status.EXPIRED.value]), worker.pk]
    with rawsql.cursor() as cursor:
        cursor.execute(sql, params)
        blocked, reason, held_id, used_count = cursor.fetchone()
    if blocked:
        raise WorkerBlocked(reason)
    if held_id is not None:
        return current_assignment(project, worker, now=now)
    if quota is not None and used_count >= quota:
        raise _quota_reached(project)
    for r, from_position in _allocation_passes(project):
        hit_id = _take_hit_serialised(project, worker, r, from_position)
        if hit_id is not None:
            break
    else:
        return None
    assignment = _new_reservation(project, worker, now)
    assignment.hit_id = hit_id
    columns, exprs, params = rawsql.insert_columns(assignment)
    with rawsql.cursor() as cursor:
        cursor.execute(f"INSERT INTO {asg} ({', '.join(columns)}) VALUES ({', '.join(exprs)}) RETURNING id", params)
        rawsql.saved(assignment, cursor.fetchone()[0])
    assignment._argora_hit_items = _hit_items(hit_id)
    _add_gold(project, worker, assignment)
    return assignment


def _new_reservation(project: Project, worker: Worker, now) -> Assignment:
    """The unsaved reservation an allocation fills in with the HIT it takes."""
    return Assignment(project=project, worker=worker, status=Assignment.Status.RESERVED, reserved_at=now,
                      expires_at=now + timedelta(seconds=project.reservation_timeout_seconds))


def _quota_reached(project: Project) -> QuotaReached:
    return QuotaReached(f"you have done the maximum of {project.max_hits_per_worker} HITs in this project")


def _allocation_passes(project: Project) -> list[tuple[int, int | None]]:
    """``(cap, lowest position)`` per pass of the allocation: one pass ``(R, None)``; with adaptive R (the
    ``disagreement`` order with ``r_min < r_max``) first the HITs marked for more responses (``r_max``, positions from
    :data:`ITEM_ORDER_MARK`), then any HIT below ``r_min``. Every cap is at most R."""
    order = selectors.item_order(project)
    if order["adaptive"]:
        return [(order["r_max"], ITEM_ORDER_MARK), (order["r_min"], None)]
    return [(order["cap"], None)]


def _add_gold(project: Project, worker: Worker, assignment: Assignment) -> None:
    """Interleave gold items (``gold_rate`` of the HIT's items, ones this worker has not seen) into a new assignment."""
    gold_ids: list[int] = []
    if project.gold_rate > 0:
        rng = random.Random()
        n_items = HITItem.objects.filter(hit_id=assignment.hit_id).count()
        gold_ids = _pick_gold(project, worker, _gold_count(project, n_items, rng), rng)
        if gold_ids:
            assignment.gold_items.add(*gold_ids)
    assignment._argora_gold_ids = sorted(gold_ids)  # assignment_items need not ask again


class HITFull(AllocationError):
    """Every slot of the HIT a platform named is taken."""

    status = 409


class HITAlreadyDone(AllocationError):
    """The worker has done (or was rejected on) the HIT a platform named."""

    status = 409


class TooManyUnconfirmed(AllocationError):
    """Too many HITs held by claims a platform has not confirmed (per claimed id or per client address)."""

    status = 429


UNCONFIRMED_ADDRESS_KEY = "argora:unconfirmed:{}:{}"


def reserve_hit_for_claim(project: Project, hit_id: int, *, source: str, claimed_id: str, external_id: str,
                          expires_at, client: str = "", now=None) -> Assignment:
    """Reserve a slot of the HIT a platform named for an identity it has not confirmed yet (an MTurk accept: the
    workerId and assignmentId in the URL cannot be checked before a sync lists them).

    The reservation goes to a new provisional worker (:func:`provisional_worker`), never to the worker who really
    has that id. What may be checked now is: the confirmed worker with that id, if any, is not blocked, has not done
    this HIT and is under the project's HIT quota; the claim holds at most ``ARGORA_UNCONFIRMED_PER_WORKER`` open
    unconfirmed reservations in the project; the client address has made at most ``ARGORA_UNCONFIRMED_PER_ADDRESS``
    unconfirmed accepts in the project within a reservation's lifetime. Raises :class:`WorkerBlocked`,
    :class:`HITAlreadyDone`, :class:`QuotaReached`, :class:`TooManyUnconfirmed`, :class:`HITFull`.
    """
    now = now or timezone.now()
    real = confirmed_worker(source, claimed_id)
    if real is not None:
        if real.blocked:
            raise WorkerBlocked(real.blocked_reason)
        if Assignment.objects.filter(hit_id=hit_id, worker=real).exists():
            raise HITAlreadyDone("you have already done this HIT; please return it")
    claims = Assignment.objects.filter(project=project, worker__source=source,
                                       worker__claimed_external_id=claimed_id)
    if project.max_hits_per_worker is not None:
        used = claims.exclude(status__in=(Assignment.Status.EXPIRED, Assignment.Status.REJECTED)).count()
        if real is not None:
            used += Assignment.objects.filter(project=project, worker=real).exclude(
                status=Assignment.Status.EXPIRED).count()
        if used >= project.max_hits_per_worker:
            raise _quota_reached(project)
    per_worker = int(getattr(settings, "ARGORA_UNCONFIRMED_PER_WORKER", 2))
    if claims.filter(status=Assignment.Status.RESERVED, expires_at__gt=now).count() >= per_worker:
        raise TooManyUnconfirmed(f"you hold {per_worker} unsubmitted HITs of this study; submit or return one "
                                 f"before accepting another")
    if client:
        per_address = int(getattr(settings, "ARGORA_UNCONFIRMED_PER_ADDRESS", 6))
        key = UNCONFIRMED_ADDRESS_KEY.format(project.pk, hashlib.sha256(client.encode()).hexdigest()[:16])
        window = max(1, int((expires_at - now).total_seconds()))
        try:
            accepted = counters.bump(key, window=window)
        except counters.CounterUnavailable:
            raise TooManyUnconfirmed("the server cannot take new HITs of this study for a moment; please try again in "
                                     "a minute") from None
        if accepted > per_address:
            raise TooManyUnconfirmed("too many HITs of this study were accepted from your network; try again later")
    return reserve_hit(project, provisional_worker(source, claimed_id), hit_id, external_id=external_id,
                       expires_at=expires_at, now=now)


def reserve_hit(project: Project, worker: Worker, hit_id: int, *, external_id: str, expires_at, now=None
                ) -> Assignment:
    """Reserve a slot of one given HIT for a worker, for a platform that hands out HITs itself (MTurk: the worker
    accepted that HIT there). ``external_id``: the platform's assignment id, stored on the assignment.

    The same rules as :func:`reserve_next_assignment`, in one transaction with the worker row locked: a blocked
    worker is refused (:class:`WorkerBlocked`); a slot is taken only with ``UPDATE ... WHERE taken < R``; gold items
    are interleaved. A worker who returned the HIT on the platform and accepted it again keeps their assignment
    (a new ``external_id``; an expired one is revived if a slot is free). Raises :class:`HITAlreadyDone` when the
    worker submitted it, :class:`HITFull` when no slot is left (after giving stale reservations back once).
    """
    now = now or timezone.now()
    r = selectors.item_order(project)["cap"]  # R, or r_max of adaptive R (never above R)
    for attempt in range(2):
        with transaction.atomic():
            locked = Worker.objects.select_for_update(no_key=True).get(pk=worker.pk)
            if locked.blocked:
                raise WorkerBlocked(locked.blocked_reason)
            existing = Assignment.objects.select_for_update(no_key=True).filter(hit_id=hit_id, worker=worker).first()
            if existing is not None:
                if existing.status in Assignment.DONE or existing.status == Assignment.Status.REJECTED:
                    raise HITAlreadyDone("you have already done this HIT; please return it")
                revived = existing.status != Assignment.Status.EXPIRED or bool(
                    HIT.objects.filter(pk=hit_id, taken__lt=r).update(taken=F("taken") + 1))
                if revived:
                    if existing.status == Assignment.Status.EXPIRED:
                        existing.status = Assignment.Status.RESERVED
                        existing.reserved_at = now
                    existing.external_id = external_id
                    existing.expires_at = expires_at
                    existing.save(update_fields=["status", "reserved_at", "external_id", "expires_at"])
                    return existing
            elif HIT.objects.filter(pk=hit_id, taken__lt=r).update(taken=F("taken") + 1):
                assignment = Assignment.objects.create(
                    project=project, hit_id=hit_id, worker=worker, status=Assignment.Status.RESERVED,
                    reserved_at=now, expires_at=expires_at, external_id=external_id)
                _add_gold(project, worker, assignment)
                return assignment
        if attempt == 0 and expire_reservations(now=now, project=project):
            continue  # stale reservations gave slots back: try once more
        break
    raise HITFull("every slot of this HIT is taken in Argora; please return the HIT")


def _hit_items(hit_id: int) -> list[Item]:
    """The items of a HIT, in their order in it."""
    sql = (f"SELECT {rawsql.select((Item, 'i'))} FROM {rawsql.table(HIT)} h {_hit_items_join('h.id')} "
           f"WHERE h.id = %s {_in_hit_order()}")
    with rawsql.cursor() as cursor:
        cursor.execute(sql, [hit_id])
        return _joined_items(cursor.fetchall(), 0)


def _joined_items(rows, start: int) -> list[Item]:
    """The items a :func:`_hit_items_join` added to ``rows`` (their columns from ``row[start]``), a HIT without any
    read as none."""
    return rawsql.column_instances(Item, rows, start)


def _in_hit_order() -> str:
    """SQL: ``ORDER BY`` the items a :func:`_hit_items_join` added in their order in the HIT."""
    return f"ORDER BY hi.{rawsql.column(HITItem, 'position')}, hi.id"


def _hit_items_join(hit_id_sql: str) -> str:
    """SQL: ``LEFT JOIN`` the HIT items (alias ``hi``) and items (``i``) of the HIT whose id is ``hit_id_sql``."""
    return (f"LEFT JOIN {rawsql.table(HITItem)} hi ON hi.{rawsql.column(HITItem, 'hit')} = {hit_id_sql} "
            f"LEFT JOIN {rawsql.table(Item)} i ON i.id = hi.{rawsql.column(HITItem, 'item')}")


# "a HIT this worker has not had": the worker's HITs of the project read once into a set (PostgreSQL: a hashed
# subplan; SQLite: an ephemeral index), never a join the planner may turn quadratic. With NOT EXISTS, PostgreSQL's
# plan followed its statistics: taken when the study had no assignments yet (one row estimated), it materialised the
# worker's assignments and compared every one with every HIT scanned -- 26 ms for a worker 550 HITs in, growing with
# each HIT; this is 0.6 ms (bench/allocation.py, one item per HIT). hit_id is NOT NULL, so NOT IN means NOT EXISTS.
def _not_had(asg_table: str) -> str:
    """SQL: HIT ``c`` is not one this worker had (parameters: the worker's id, the project's id)."""
    return f"c.id NOT IN (SELECT a.hit_id FROM {asg_table} a WHERE a.worker_id = %s AND a.project_id = %s)"


def _take_free_hit(assignment: Assignment, r: int, from_position: int | None = None, *, now=None,
                   quota: int | None = None) -> str:
    """PostgreSQL: pick the first free HIT nobody else is allocating, take a slot, insert the reservation and read
    the HIT's items, in one statement (one round trip). ``"taken"``: the reservation is saved on ``assignment`` and
    its HIT's items are cached there; ``""``: nothing was written (every candidate is locked right now, or none is
    left).

    ``SKIP LOCKED`` makes concurrent workers take different rows instead of queueing on one; the ``taken < R`` guard
    in the UPDATE's WHERE is what keeps every HIT at or below R. ``from_position``: only HITs at or after that
    position (the marked HITs of adaptive R). ``now`` (the first try of an allocation, after the worker's row was
    locked): the same statement first checks that the worker holds no unexpired reservation in the project --
    ``"held"``, nothing written -- and, with ``quota``, has fewer than ``quota`` HITs there that did not expire --
    ``"quota"``, nothing written. A check in a statement of its own would cost a round trip; inside the locking
    statement it would read the snapshot taken before a wait on the lock and miss what a twin request committed.
    """
    project_id, worker_id = assignment.project_id, assignment.worker_id
    hit_table, asg_table = rawsql.table(HIT), rawsql.table(Assignment)
    ctes, cte_params, gate, gate_params, outcomes, outcome_params = [], [], "", [], [], []
    if now is not None:
        ctes.append(f"held AS (SELECT a.id FROM {asg_table} a WHERE a.project_id = %s AND a.worker_id = %s "
                    f"AND a.status = %s AND a.expires_at > %s LIMIT 1)")
        cte_params += [project_id, worker_id, Assignment.Status.RESERVED.value,
                       Assignment._meta.get_field("expires_at").get_db_prep_value(now, connection)]
        gate = "NOT EXISTS (SELECT 1 FROM held) AND "
        outcomes.append("SELECT 'held', id, NULL FROM held")
        if quota is not None:
            ctes.append(f"used AS (SELECT count(*) AS n FROM {asg_table} q WHERE q.project_id = %s "
                        f"AND q.worker_id = %s AND q.status <> %s)")
            cte_params += [project_id, worker_id, Assignment.Status.EXPIRED.value]
            gate += "(SELECT n FROM used) < %s AND "
            gate_params.append(quota)
            outcomes.append("SELECT 'quota', NULL, NULL FROM used WHERE NOT EXISTS (SELECT 1 FROM held) AND n >= %s")
            outcome_params.append(quota)
    band = "" if from_position is None else "AND c.position >= %s "
    columns, exprs, insert_params = rawsql.insert_columns(assignment, raw={"hit_id": "h.id"})
    ctes.append(f"h AS (UPDATE {hit_table} SET taken = taken + 1 WHERE id = ("
                f"SELECT c.id FROM {hit_table} c WHERE {gate}c.project_id = %s AND c.taken < %s {band}"
                f"AND {_not_had(asg_table)} ORDER BY c.position LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED) "
                f"AND taken < %s RETURNING id)")
    ctes.append(f"ins AS (INSERT INTO {asg_table} ({', '.join(columns)}) SELECT {', '.join(exprs)} FROM h "
                f"RETURNING id, hit_id)")
    outcomes.insert(0, "SELECT 'taken' AS kind, id, hit_id FROM ins")
    sql = (f"WITH {', '.join(ctes)} SELECT k.kind, k.id, k.hit_id, {rawsql.select((Item, 'i'))} "
           f"FROM ({' UNION ALL '.join(outcomes)}) k {_hit_items_join('k.hit_id')} "
           f"{_in_hit_order()}")
    params = [*cte_params, *gate_params, project_id, r, *([] if from_position is None else [from_position]),
              worker_id, project_id, r, *insert_params, *outcome_params]
    with rawsql.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not rows:
        return ""
    if rows[0][0] == "taken":
        rawsql.saved(assignment, rows[0][1]).hit_id = rows[0][2]
        assignment._argora_hit_items = _joined_items(rows, 3)
    return rows[0][0]


# Pauses (seconds) between tries of _take_free_hit while every free HIT is locked by allocations in flight: 2.8 s in
# all, many times the few ms a reserving transaction holds its lock.
SKIP_LOCKED_RETRY_DELAYS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8, 1.2)


def _take_free_hit_retrying(assignment: Assignment, r: int, from_position: int | None = None, *,
                            tried: bool = False) -> bool:
    """PostgreSQL: :func:`_take_free_hit`, tried again after a pause while a free HIT exists that every try found
    locked by another allocation (it may still have a slot once that one commits); ``False`` when none is left.

    It never waits on a row lock. A failed ``SKIP LOCKED`` pick can leave a lock behind, on a HIT that was full
    by the time it was locked (PostgreSQL keeps the lock of a row that fails its re-check); a transaction that then
    waited on another HIT's lock -- what this fallback used to do -- could wait in a cycle with one that did the
    same (``deadlock detected``, seen with 50 workers on the last free HITs). The free-HIT check reads without
    locking; each statement sees what has committed. ``tried``: the caller has just made the first try."""
    if not tried and _take_free_hit(assignment, r, from_position):
        return True
    for delay in SKIP_LOCKED_RETRY_DELAYS:
        if not _free_hits(assignment.project_id, assignment.worker_id, r, from_position).exists():
            return False
        time.sleep(delay)
        if _take_free_hit(assignment, r, from_position):
            return True
    return False


def _free_hits(project_id: int, worker_id: int, r: int, from_position: int | None = None) -> QuerySet:
    """The project's HITs with a slot below ``r`` that the worker has not had, first position first."""
    hits = (HIT.objects.filter(project_id=project_id, taken__lt=r)
            .exclude(pk__in=Assignment.objects.filter(project_id=project_id, worker_id=worker_id).values("hit_id"))
            .order_by("position"))
    return hits if from_position is None else hits.filter(position__gte=from_position)


def _take_hit_slow(project: Project, worker: Worker, r: int, from_position: int | None = None) -> int | None:
    """Pick a candidate HIT, then take a slot with ``UPDATE ... WHERE taken < R`` (a database with neither
    ``SKIP LOCKED`` nor serialised writers)."""
    candidates = _free_hits(project.pk, worker.pk, r, from_position)
    for _ in range(8):
        hit_id = candidates.values_list("pk", flat=True).first()
        if hit_id is None:
            return None
        # The guard in the WHERE clause is what keeps taken <= R, whatever the isolation level.
        if HIT.objects.filter(pk=hit_id, taken__lt=r).update(taken=F("taken") + 1):
            return hit_id
    return None


def _take_hit_serialised(project: Project, worker: Worker, r: int, from_position: int | None = None) -> int | None:
    """SQLite: pick the first free HIT this worker has not had and take a slot, in one ``UPDATE ... RETURNING``
    (the writer holds the database lock, so the pick is final; the ``taken < R`` guard stays in the WHERE)."""
    qn = connection.ops.quote_name
    hit_table, asg_table = qn(HIT._meta.db_table), qn(Assignment._meta.db_table)
    band = "" if from_position is None else "AND c.position >= %s "
    sql = (f"UPDATE {hit_table} SET taken = taken + 1 WHERE id = ("
           f"SELECT c.id FROM {hit_table} c WHERE c.project_id = %s AND c.taken < %s {band}AND {_not_had(asg_table)} "
           f"ORDER BY c.position LIMIT 1) AND taken < %s RETURNING id")
    params = [project.pk, r, *([] if from_position is None else [from_position]), worker.pk, project.pk, r]
    with rawsql.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else row[0]


def assignment_items(assignment: Assignment) -> list[Item]:
    """The HIT's items with the interleaved gold items, in an order that is stable for this assignment.

    Both are fixed once the assignment exists, so the list is cached on the instance (and handed on to
    :func:`submit_assignment`, which then does not read them again).
    """
    cached = getattr(assignment, "_argora_items", None)
    if cached is not None:
        return list(cached)
    items = getattr(assignment, "_argora_hit_items", None)  # read with the assignment or the reservation
    items = _hit_items(assignment.hit_id) if items is None else list(items)
    gold_ids = getattr(assignment, "_argora_gold_ids", None)
    if gold_ids is None:
        gold = list(assignment.gold_items.order_by("pk"))
    else:
        gold = list(Item.objects.filter(pk__in=gold_ids).order_by("pk")) if gold_ids else []
    if gold:
        rng = random.Random(assignment.pk)
        for g in gold:
            items.insert(rng.randint(0, len(items)), g)
    assignment._argora_items = items
    return list(items)


def expire_reservations(now=None, *, project: Project | None = None) -> int:
    """Mark reservations past their ``expires_at`` expired and give their slots back; returns how many."""
    now = now or timezone.now()
    stale = Assignment.objects.filter(status=Assignment.Status.RESERVED, expires_at__lte=now)
    drafts = AssignmentDraft.objects.exclude(assignment__status__in=(Assignment.Status.RESERVED,
                                                                     Assignment.Status.EXPIRED))
    if project is not None:
        stale = stale.filter(project=project)
        drafts = drafts.filter(assignment__project=project)
    drafts.delete()  # answers that were sent (or refused) need no draft
    return sum(_expire_one(pk, now) for pk in list(stale.values_list("pk", flat=True)[:10000]))


def _stale_reservations(project: Project, now) -> QuerySet:
    """The project's reservations past their ``expires_at`` that no sweep has given back yet."""
    return Assignment.objects.filter(project=project, status=Assignment.Status.RESERVED, expires_at__lte=now)


def _expire_one(pk: int, now) -> bool:
    """Mark one reservation past its ``expires_at`` expired and give its slot back (once, whoever gets there)."""
    return _give_back(Assignment.objects.filter(pk=pk, status=Assignment.Status.RESERVED, expires_at__lte=now))


def _give_back(qs) -> bool:
    """Expire the one reserved assignment of ``qs`` and give its slot back to the HIT; ``False`` when it is not
    reserved (any more)."""
    with transaction.atomic():
        # a row being submitted right now is skipped; the next sweep sees it submitted
        row = (qs.select_for_update(skip_locked=True, no_key=True) if _skip_locked() else qs).values("hit_id").first()
        if row is None:  # submitted (or being submitted, or expired) meanwhile
            return False
        if qs.update(status=Assignment.Status.EXPIRED):
            HIT.objects.filter(pk=row["hit_id"]).update(taken=F("taken") - 1)
            return True
    return False


def release_reservation(assignment: Assignment, worker: Worker) -> bool:
    """The worker stops (the HIT page's "Stop and get my completion code"): their reservation ends now and its slot
    goes back to the pool at once, with its draft. ``False`` when it was not reserved any more."""
    if assignment.worker_id != worker.pk:
        raise NotYourAssignment("this assignment is not held by you")
    released = _give_back(Assignment.objects.filter(pk=assignment.pk, status=Assignment.Status.RESERVED))
    AssignmentDraft.objects.filter(assignment_id=assignment.pk).delete()
    return released


# How long a worker may keep one HIT by extending it: this many reservation timeouts from the reservation.
MAX_HOLD_TIMEOUTS = 4


def extend_reservation(assignment: Assignment, worker: Worker, *, now=None) -> Assignment:
    """Give the worker another reservation timeout on their HIT (the HIT page's "extend"), at most
    :data:`MAX_HOLD_TIMEOUTS` timeouts after it was reserved. Before the deadline, and after it while no sweep has
    run, the worker still holds the slot; once the reservation has expired, it is taken again only while the HIT
    has a free slot (else :class:`SlotTaken`) and the worker holds no other HIT of the project."""
    now = now or timezone.now()
    if assignment.worker_id != worker.pk:
        raise NotYourAssignment("this assignment is not held by you")
    with transaction.atomic():
        locked = Assignment.objects.select_for_update(no_key=True).select_related("project").get(pk=assignment.pk)
        project = locked.project
        timeout = timedelta(seconds=project.reservation_timeout_seconds)
        until = min(now + timeout, locked.reserved_at + MAX_HOLD_TIMEOUTS * timeout)
        if locked.status == Assignment.Status.EXPIRED:
            if project.status != Project.Status.ACTIVE:
                raise AssignmentNotOpen(f"the study is {project.get_status_display().lower()}: its HITs cannot be "
                                        f"extended; submit to keep your answers as late answers")
            if current_assignment(project, worker, now=now) is not None:
                raise AssignmentNotOpen("you hold another HIT of this study now")
        elif locked.status != Assignment.Status.RESERVED:
            raise AssignmentNotOpen(f"this assignment is {locked.get_status_display().lower()}; it cannot be extended")
        if until <= max(now, locked.expires_at if locked.status == Assignment.Status.RESERVED else now):
            raise AssignmentNotOpen(f"this HIT cannot be held longer than {MAX_HOLD_TIMEOUTS} x "
                                    f"{project.reservation_timeout_seconds // 60} minutes; please submit it")
        if locked.status == Assignment.Status.EXPIRED:
            took = HIT.objects.filter(pk=locked.hit_id, taken__lt=selectors.item_order(project)["cap"]).update(
                taken=F("taken") + 1)
            if not took:
                raise SlotTaken("another worker has taken your place in this HIT; submit to keep your answers as "
                                "late answers")
        Assignment.objects.filter(pk=locked.pk).update(status=Assignment.Status.RESERVED, expires_at=until)
        locked.status, locked.expires_at = Assignment.Status.RESERVED, until
    return locked


# --- drafts: answers saved as the worker gives them -----------------------------------------------------------
DRAFT_MAX_BYTES = 256 * 1024
DRAFT_REVISION_MAX = 2 ** 53 - 1  # the largest integer a browser's Number holds exactly


def save_draft(assignment: Assignment, worker: Worker, values: Any, *, feedback: str = "",
               revision: Any = None) -> AssignmentDraft:
    """Keep the answers given so far (``{item id: {field: value}}``, the HIT form's fields as
    :func:`annotation.forms.parse_item_responses` reads them; partial answers are fine, nothing is validated but
    the shape) and the feedback text, so that a reload or another tab shows them again. Only for the worker's own
    assignment while it can still take answers (reserved, or expired: its answers can still be sent late).

    ``revision`` (optional, an integer that grows with each save of a page: hit.js sends its clock in ms) orders
    saves that cross on the way: one older than the draft's is dropped and the newer draft is kept, so a slow save
    that arrives after the one a page sends as it closes cannot bring back older answers. Without it the save
    always wins."""
    if assignment.worker_id != worker.pk:
        raise NotYourAssignment("this assignment is not held by you")
    if assignment.status not in (Assignment.Status.RESERVED, Assignment.Status.EXPIRED):
        raise AssignmentNotOpen(f"this assignment is {assignment.get_status_display().lower()}; nothing to save")
    if not isinstance(values, dict):
        raise ValidationFailed({"fields": "expected an object keyed by item id"})
    if revision is not None and (isinstance(revision, bool) or not isinstance(revision, int)
                                 or not 0 <= revision <= DRAFT_REVISION_MAX):
        raise ValidationFailed({"revision": f"expected a whole number from 0 to {DRAFT_REVISION_MAX}"})
    item_ids = {item.pk for item in assignment_items(assignment)}
    clean: dict[str, dict] = {}
    for key, fields in values.items():
        if not str(key).isdigit() or int(key) not in item_ids:
            raise ValidationFailed({f"fields.{key}": "not an item of this HIT"})
        if not isinstance(fields, dict) or not all(
                isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))
                for v in fields.values()):
            raise ValidationFailed({f"fields.{key}": "expected {field: text or list of texts}"})
        clean[str(int(key))] = fields
    if not isinstance(feedback, str) or len(feedback) > 10000:
        raise ValidationFailed({"feedback": "at most 10000 characters of text"})
    if len(json.dumps(clean, ensure_ascii=False)) > DRAFT_MAX_BYTES:
        raise ValidationFailed({"fields": f"a draft holds at most {DRAFT_MAX_BYTES // 1024} KB"})
    defaults: dict[str, Any] = {"responses": clean, "feedback": feedback}
    if revision is not None:
        defaults["revision"] = revision
    with transaction.atomic():
        kept = AssignmentDraft.objects.select_for_update().filter(assignment_id=assignment.pk).first()
        if kept is None:  # the first save (update_or_create: one racing it updates instead)
            return AssignmentDraft.objects.update_or_create(assignment_id=assignment.pk, defaults=defaults)[0]
        if revision is not None and kept.revision > revision:
            return kept  # a newer save got here first
        for name, value in defaults.items():
            setattr(kept, name, value)
        kept.save(update_fields=[*defaults, "updated_at"])
    return kept


def draft_values(assignment: Assignment) -> tuple[dict[int, dict], str]:
    """The saved answers (``{item id: {field: value}}``) and feedback of a reserved assignment, for the HIT page."""
    draft = AssignmentDraft.objects.filter(assignment_id=assignment.pk).first()
    if draft is None:
        return {}, ""
    return {int(k): v for k, v in (draft.responses or {}).items() if str(k).isdigit()}, draft.feedback


# --- submission ---------------------------------------------------------------------------------
def submission_key(responses: dict, feedback: str = "") -> str:
    canonical = json.dumps({"responses": {str(k): v for k, v in responses.items()}, "feedback": feedback or ""},
                           sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _clean_responses(assignment: Assignment, responses: Any) -> dict[int, tuple[Item, dict]]:
    if not isinstance(responses, dict):
        raise ValidationFailed({"responses": "expected an object keyed by item id"})
    project = assignment.project
    tt = get_task_type(project.task_type)
    items = {item.pk: item for item in assignment_items(assignment)}
    errors: dict[str, str] = {}
    cleaned: dict[int, tuple[Item, dict]] = {}
    for key, data in responses.items():
        try:
            item_id = int(key)
        except (TypeError, ValueError):
            errors[f"responses.{key}"] = "not an item id"
            continue
        item = items.get(item_id)
        if item is None:
            errors[f"responses.{key}"] = "unknown item: not part of this assignment"
            continue
        try:
            cleaned[item_id] = (item, tt.validate_response(project, item, data, assignment=assignment))
        except ResponseInvalid as exc:
            errors[f"responses.{item_id}.{exc.field}"] = exc.reason
    for item_id in items:
        if item_id not in cleaned and f"responses.{item_id}" not in errors and not any(
                k.startswith(f"responses.{item_id}.") for k in errors):
            errors[f"responses.{item_id}"] = "missing: answer every item"
    if errors:
        raise ValidationFailed(errors)
    return cleaned


def submittable_assignment(pk: int) -> Assignment:
    """An assignment as :func:`submit_assignment` reads it, in one statement: with its project, the project's phase
    settings (:func:`submit_and_reserve_next` needs them to hand out the next HIT), ``has_gold`` (whether gold items
    were interleaved) and its HIT's items. A request handler that reads it this way passes ``fresh=True`` and saves
    the second read. Raises ``Assignment.DoesNotExist``."""
    gold = Assignment.gold_items.through
    models = (Assignment, Project, StudyPhases)
    sql = (f"SELECT EXISTS (SELECT 1 FROM {rawsql.table(gold)} g WHERE g.{rawsql.column(gold, 'assignment')} = a.id), "
           f"{rawsql.select(*zip(models, 'aps'), (Item, 'i'))} FROM {rawsql.table(Assignment)} a "
           f"JOIN {rawsql.table(Project)} p ON p.id = a.{rawsql.column(Assignment, 'project')} "
           f"LEFT JOIN {rawsql.table(StudyPhases)} s ON s.{rawsql.column(StudyPhases, 'project')} = p.id "
           f"{_hit_items_join('a.' + rawsql.column(Assignment, 'hit'))} "
           f"WHERE a.id = %s {_in_hit_order()}")
    with rawsql.cursor() as cursor:
        cursor.execute(sql, [pk])
        rows = cursor.fetchall()
    if not rows:
        raise Assignment.DoesNotExist(f"no assignment {pk}")
    assignment, project, phases = rawsql.instances(rows[0], models, 1)
    project._argora_phases = phases  # what selectors.phase_config reads
    assignment.project = project
    assignment.has_gold = bool(rows[0][0])
    assignment._argora_hit_items = _joined_items(rows, 1 + rawsql.width(*models))
    return assignment


def submit_assignment(assignment: Assignment, worker: Worker, responses: dict, *, feedback: str = "",
                      client_seconds: float | None = None, now=None, fresh: bool = False) -> Assignment:
    """Validate, then store all responses of an assignment in one transaction.

    A retried identical submission returns the stored assignment and writes nothing. Raises
    :class:`ValidationFailed` (400), :class:`NotYourAssignment` (403) or :class:`AssignmentNotOpen` (409);
    on any error nothing is written. After the commit of a new submission (never on a retry),
    :data:`annotation.signals.assignment_submitted` is sent with ``assignment=``.

    The transaction is short: everything is read and validated before it starts; inside it, one
    ``UPDATE ... WHERE status = 'reserved'`` claims the assignment (the row lock is taken here, so two
    concurrent submissions cannot both pass) and the responses are inserted in one statement.
    ``fresh=True``: ``assignment`` was just read with :func:`submittable_assignment`. The returned assignment's
    ``gold_scored`` says whether gold answers were scored (only then can the worker have been blocked by it; a retry
    of a submission with gold items says so too, for the first attempt scored them).
    """
    return _submit(assignment, worker, responses, feedback=feedback, client_seconds=client_seconds, now=now,
                   fresh=fresh)


def submit_and_reserve_next(assignment: Assignment, worker: Worker, responses: dict, *, feedback: str = "",
                            client_seconds: float | None = None, now=None, fresh: bool = False
                            ) -> tuple[Assignment, Assignment | None, AllocationError | None]:
    """Submit an assignment (:func:`submit_assignment`, same errors, same guarantees) and reserve the worker's next
    HIT in the same project (:func:`reserve_next_assignment`, same rules): one request per HIT for a worker going
    through a study. Returns ``(submitted, next, refusal)``: ``next`` is ``None`` when no HIT is handed out, and then
    ``refusal`` says why when it is a rule (blocked, quota, phases, project not active) rather than nothing left.

    A new submission and the reservation share one transaction (one commit): the reservation is written only after
    the answers are, and a refusal is raised before it writes anything, so the answers are kept whatever happens to
    it. A retried submission stores nothing again and gets the reservation the first attempt made (the worker holds
    it) or the refusal it got; so does a twin sent at the same moment. Late or concurrently changed submissions, a project whose phases come before the HITs, and a project with
    nothing free (stale reservations are given back first) take the plain path: the submission, then
    :func:`reserve_next_assignment`.
    """
    now = now or timezone.now()
    if not fresh:
        assignment = submittable_assignment(assignment.pk)
        fresh = True
    project = assignment.project
    inline = project.status == Project.Status.ACTIVE and not selectors.gates_work(selectors.phase_config(project))
    box: dict[str, Any] = {}

    def reserve_inside(done: Assignment, locked: Worker | None) -> None:
        try:
            box["next"] = _reserve_in_transaction(project, worker, now, locked)
        except AllocationError as exc:  # raised before the reservation wrote anything: the answers stay
            box["refusal"] = exc

    done = _submit(assignment, worker, responses, feedback=feedback, client_seconds=client_seconds, now=now,
                   fresh=fresh, after_store=reserve_inside if inline else None)
    if "refusal" in box:
        return done, None, box["refusal"]
    if box.get("next") is not None:
        return done, box["next"], None
    try:
        return done, reserve_next_assignment(project, worker, now=now, fresh=True), None
    except AllocationError as exc:
        return done, None, exc


def _submit(assignment: Assignment, worker: Worker, responses: dict, *, feedback: str = "",
            client_seconds: float | None = None, now=None, fresh: bool = False, after_store=None) -> Assignment:
    """:func:`submit_assignment`; ``after_store(assignment, locked)`` runs inside the transaction that stores a new
    submission (never on a retry, a late or a refused one) and must not raise after writing anything. ``locked``
    (PostgreSQL; else ``None``): the worker's row, locked by the statement that stored the answers."""
    now = now or timezone.now()
    feedback = feedback or ""
    if assignment.worker_id != worker.pk:
        raise NotYourAssignment("this assignment is not held by you")
    if client_seconds is not None:
        try:
            client_seconds = float(client_seconds)
        except (TypeError, ValueError):
            raise ValidationFailed({"client_seconds": "must be a number of seconds"}) from None
        if not 0 <= client_seconds < 10 ** 7:
            raise ValidationFailed({"client_seconds": "must be a non-negative number of seconds"})
    if len(feedback) > 10000:
        raise ValidationFailed({"feedback": "at most 10000 characters"})
    key = submission_key(responses if isinstance(responses, dict) else {}, feedback)
    cached_items = getattr(assignment, "_argora_items", None)
    if not (fresh and hasattr(assignment, "has_gold")):
        assignment = submittable_assignment(assignment.pk)
    assignment.gold_scored = False
    if _sent(assignment, key):
        # retried submission: a no-op, but the first attempt may have scored gold answers (and blocked the worker)
        assignment.gold_scored = getattr(assignment, "has_gold", True)
        return assignment
    late = _is_late(assignment, now)
    if not late:
        _check_open(assignment, key, now)
    if cached_items is not None:
        assignment._argora_items = cached_items  # the items of an assignment never change
    elif not assignment.has_gold:
        assignment._argora_gold_ids = []  # no need to ask for its gold items
    cleaned = _clean_responses(assignment, responses)  # everything validated before any write
    if late:
        return _store_late(assignment, cleaned, key, feedback, client_seconds, now)
    project = assignment.project
    tt = get_task_type(project.task_type)
    gold_ids = [i for i, (item, _) in cleaned.items() if item.is_gold]
    golds = {g.item_id: g for g in GoldItem.objects.filter(item_id__in=gold_ids)} if gold_ids else {}
    work_seconds = max(0.0, (now - assignment.reserved_at).total_seconds())
    fields = {"status": Assignment.Status.SUBMITTED, "submitted_at": now, "work_seconds": work_seconds,
              "client_seconds": client_seconds, "feedback": feedback, "submission_key": key}

    if not golds and cleaned and connection.vendor == "postgresql":
        # one statement, atomic by itself; with ``after_store`` both share one transaction (one commit)
        with transaction.atomic() if after_store is not None else nullcontext():
            stored, locked = _claim_and_store(assignment, fields, cleaned, now,
                                              lock_worker=None if after_store is None else worker.pk)
            if stored:
                for name, value in fields.items():
                    setattr(assignment, name, value)
                transaction.on_commit(lambda: assignment_submitted.send(sender=Assignment, assignment=assignment))
                if after_store is not None:
                    after_store(assignment, locked)
                return assignment
    else:
        with transaction.atomic():
            claimed = Assignment.objects.filter(pk=assignment.pk, status=Assignment.Status.RESERVED,
                                                expires_at__gt=now).update(**fields)
            if claimed:
                Response.objects.bulk_create([Response(assignment_id=assignment.pk, item=item, data=data)
                                              for item, data in cleaned.values()])
                for name, value in fields.items():
                    setattr(assignment, name, value)
                if golds and not worker.claimed_external_id:  # a provisional worker's gold waits for confirmation
                    _score_gold(assignment, worker, project, tt, golds, cleaned, now)
                    assignment.gold_scored = True
                transaction.on_commit(
                    lambda: assignment_submitted.send(sender=Assignment, assignment=assignment))
                if after_store is not None:
                    after_store(assignment, None)
                return assignment
    # Someone else changed it since we read it: a concurrent retry (same key), an expiry, another answer.
    current = Assignment.objects.select_related("project").get(pk=assignment.pk)
    if _sent(current, key):
        return current  # a concurrent retry got there first
    if _is_late(current, now):
        current._argora_items = assignment_items(assignment)
        return _store_late(current, cleaned, key, feedback, client_seconds, now)
    _check_open(current, key, now)
    raise AssignmentNotOpen("this assignment changed while it was being submitted; ask for a new HIT")


def _sent(assignment: Assignment, key: str) -> bool:
    """These answers were stored already (a retried request)."""
    return (assignment.status in Assignment.DONE or assignment.status == Assignment.Status.LATE) \
        and assignment.submission_key == key


def _is_late(assignment: Assignment, now) -> bool:
    """The reservation has ended (expired, or past its deadline with no sweep yet) and no answers were sent."""
    return assignment.status == Assignment.Status.EXPIRED or (
        assignment.status == Assignment.Status.RESERVED and assignment.expires_at <= now)


def _store_late(assignment: Assignment, cleaned: dict[int, tuple[Item, dict]], key: str, feedback: str,
                client_seconds, now) -> Assignment:
    """Answers that came after the reservation ended: kept as a late assignment (status ``late``), which holds no slot
    (one still held goes back now) and counts in no aggregate, gold score or export until staff accept it
    (:func:`accept_late_assignment`). The worker is told so and goes on to the next HIT."""
    with transaction.atomic():
        locked = Assignment.objects.select_for_update(no_key=True).get(pk=assignment.pk)
        if _sent(locked, key):
            return locked
        if not _is_late(locked, now):
            _check_open(locked, key, now)  # submitted or rejected meanwhile: says why
            raise AssignmentNotOpen("this assignment changed while it was being submitted; ask for a new HIT")
        if locked.status == Assignment.Status.RESERVED:
            HIT.objects.filter(pk=locked.hit_id).update(taken=F("taken") - 1)
        fields = {"status": Assignment.Status.LATE, "submitted_at": now, "client_seconds": client_seconds,
                  "work_seconds": max(0.0, (now - locked.reserved_at).total_seconds()), "feedback": feedback,
                  "submission_key": key}
        Assignment.objects.filter(pk=locked.pk).update(**fields)
        Response.objects.bulk_create([Response(assignment_id=locked.pk, item=item, data=data)
                                      for item, data in cleaned.values()])
        AssignmentDraft.objects.filter(assignment_id=locked.pk).delete()
    for name, value in fields.items():
        setattr(assignment, name, value)
    assignment.gold_scored = False
    return assignment


def accept_late_assignment(assignment: Assignment, *, now=None) -> Assignment:
    """Staff count a late assignment's answers after all: it becomes submitted (holding a slot of its HIT, which may
    then have more than R answers), its gold answers are scored, and the aggregates are recomputed as after any
    submission. Idempotent."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = (Assignment.objects.select_for_update(no_key=True).select_related("project", "worker")
                  .get(pk=assignment.pk))
        if locked.status != Assignment.Status.LATE:
            if locked.late_accepted_at is not None:
                return locked
            raise AssignmentNotOpen(f"assignment {locked.pk} is {locked.get_status_display().lower()}, not late")
        HIT.objects.filter(pk=locked.hit_id).update(taken=F("taken") + 1)
        Assignment.objects.filter(pk=locked.pk).update(status=Assignment.Status.SUBMITTED, late_accepted_at=now)
        locked.status, locked.late_accepted_at = Assignment.Status.SUBMITTED, now
        if not locked.worker.claimed_external_id:  # a provisional worker's gold waits for confirmation
            _score_stored_gold(locked, locked.worker, now)
        transaction.on_commit(lambda: assignment_submitted.send(sender=Assignment, assignment=locked))
    return locked


def _claim_and_store(assignment: Assignment, fields: dict, cleaned: dict[int, tuple[Item, dict]], now, *,
                     lock_worker: int | None = None) -> tuple[bool, Worker | None]:
    """PostgreSQL: claim the reserved, unexpired assignment and insert its responses in one statement (atomic by
    itself: no BEGIN/COMMIT round trips). ``(False, ...)``: nothing written, it is no longer reserved or it expired.
    ``lock_worker``: the same statement locks that worker's row (inside the caller's transaction, for the
    allocation that follows: :func:`submit_and_reserve_next`) and returns it with its ``blocked`` state.

    The answers travel as one JSON parameter (``jsonb_to_recordset``), so the statement's text is the same for every
    HIT size: one prepared statement (:func:`annotation.rawsql.cursor`) serves them all, and no answer is adapted as a
    parameter of its own."""
    meta = Assignment._meta
    params = [meta.get_field(name).get_db_prep_save(value, connection) for name, value in fields.items()]
    answers = json.dumps([{"item": item.pk, "data": data} for item, data in cleaned.values()])
    created_at = Response._meta.get_field("created_at")
    params += [assignment.pk, Assignment.Status.RESERVED.value, meta.get_field("expires_at").get_db_prep_value(
        now, connection), created_at.get_db_prep_save(timezone.now(), connection), answers]
    with rawsql.cursor() as cursor:
        cursor.execute(_claim_sql(tuple(fields), lock_worker is not None),
                       params if lock_worker is None else [lock_worker, *params])
        row = cursor.fetchone()
    if row is None:  # no such worker
        return False, None
    locked = Worker.from_db(connection.alias, _LOCKED_WORKER, row[1:]) if lock_worker is not None else None
    return bool(row[0]), locked


_LOCKED_WORKER = ("id", "blocked", "blocked_reason")


def _claim_sql(fields: tuple[str, ...], lock_worker: bool) -> str:
    """The statement of :func:`_claim_and_store` (its text built once per connection). Parameters: [the worker's id,]
    the values of ``fields``, the assignment's id, status ``reserved``, now, the responses' ``created_at`` and the
    answers as a JSON array of ``{"item": id, "data": answer}``."""
    def build() -> str:
        qn = connection.ops.quote_name
        meta, response = Assignment._meta, Response._meta
        sets = ", ".join(f"{qn(meta.get_field(name).column)} = %s" for name in fields)
        # every column of a response: from the claimed assignment, the JSON array, or the one created_at parameter
        source = {"assignment": "c.id", "item": "x.item", "data": "x.data", "created_at": "%s"}
        stored = [f for f in response.concrete_fields if not f.primary_key]
        if {f.name for f in stored} != set(source):
            raise ImproperlyConfigured(f"Response has fields this statement does not write: {stored}")
        item, data = response.get_field("item"), response.get_field("data")
        lock = read = ""
        if lock_worker:
            lock = (f"w AS (SELECT {', '.join(rawsql.column(Worker, name) for name in _LOCKED_WORKER)} "
                    f"FROM {rawsql.table(Worker)} WHERE id = %s FOR NO KEY UPDATE), ")
            read = f", {', '.join('w.' + rawsql.column(Worker, name) for name in _LOCKED_WORKER)} FROM w"
        return (f"WITH {lock}c AS (UPDATE {rawsql.table(Assignment)} SET {sets} WHERE id = %s AND status = %s "
                f"AND expires_at > %s RETURNING id), ins AS (INSERT INTO {rawsql.table(Response)} "
                f"({', '.join(qn(f.column) for f in stored)}) SELECT {', '.join(source[f.name] for f in stored)} "
                f"FROM c CROSS JOIN jsonb_to_recordset(%s::jsonb) AS x(item {item.db_type(connection)}, "
                f"data {data.db_type(connection)}) RETURNING 1) SELECT (SELECT count(*) FROM ins){read}")
    return rawsql.memo(("claim", fields, lock_worker), build)


def _check_open(assignment: Assignment, key: str, now) -> None:
    """The reservation can take answers as a submission: reserved and not past ``expires_at`` (a hard deadline:
    answers after it are stored as late answers by :func:`_store_late`, whether or not a sweep has run)."""
    if assignment.status in Assignment.DONE or assignment.status == Assignment.Status.LATE:
        raise AssignmentNotOpen("this assignment was already submitted with different answers")
    if assignment.status != Assignment.Status.RESERVED:
        raise AssignmentNotOpen(f"this assignment is {assignment.get_status_display().lower()}; ask for a new HIT")


def _score_stored_gold(assignment: Assignment, worker: Worker, now) -> bool:
    """Score the stored answers of an assignment's gold items (an answer counted after it was stored: a confirmed
    claim, an accepted late assignment); ``False`` when it has none."""
    project = assignment.project
    golds = {g.item_id: g for g in GoldItem.objects.filter(item__in=assignment.gold_items.all())}
    answers = {r.item_id: (None, r.data) for r in Response.objects.filter(assignment=assignment,
                                                                          item_id__in=list(golds))}
    golds = {item_id: g for item_id, g in golds.items() if item_id in answers}
    if golds:
        _score_gold(assignment, worker, project, get_task_type(project.task_type), golds, answers, now)
    return bool(golds)


def _score_gold(assignment, worker, project, tt, golds, cleaned, now) -> None:
    seen = set(GoldRecord.objects.filter(worker=worker, item_id__in=list(golds)).values_list("item_id", flat=True))
    records = []
    for item_id, gold in golds.items():
        if item_id in seen:
            continue
        score = float(tt.score_gold(project, gold, cleaned[item_id][1]))
        records.append(GoldRecord(worker=worker, item_id=item_id, assignment=assignment, score=score,
                                  correct=score >= 0.5))
    GoldRecord.objects.bulk_create(records)
    if project.gold_min_items <= 0:
        return
    stats = GoldRecord.objects.filter(worker=worker, item__project=project).aggregate(
        n=Count("pk"), right=Count("pk", filter=Q(correct=True)))
    if stats["n"] >= project.gold_min_items:
        accuracy = stats["right"] / stats["n"]
        if accuracy < project.gold_min_accuracy:
            Worker.objects.filter(pk=worker.pk, blocked=False).update(
                blocked=True, blocked_at=now,
                blocked_reason=(f"gold accuracy {accuracy:.0%} on {stats['n']} gold items in project "
                                f"{project.slug!r} is below {project.gold_min_accuracy:.0%}"))


def set_assignment_status(assignment: Assignment, status: str) -> Assignment:
    """Staff review: approve or reject a submitted assignment (a rejection frees its slot for another worker)."""
    if status not in (Assignment.Status.APPROVED, Assignment.Status.REJECTED):
        raise ValueError("status must be approved or rejected")
    with transaction.atomic():
        locked = Assignment.objects.select_for_update(no_key=True).get(pk=assignment.pk)
        if locked.status == status:
            return locked
        if locked.status not in Assignment.DONE:
            raise AssignmentNotOpen(f"only submitted assignments can be {status}")
        if status == Assignment.Status.REJECTED:
            HIT.objects.filter(pk=locked.hit_id).update(taken=F("taken") - 1)
        locked.status = status
        locked.save(update_fields=["status"])
    return locked


# --- completion codes --------------------------------------------------------------
def completion_code(project: Project, worker: Worker, *, kind: str = WorkerProjectCode.Kind.COMPLETED) -> str:
    """A random code, stable per worker x project x kind (``completed``, or ``screened_out`` for a worker the
    study's qualification screened out), created on first call."""
    mine = WorkerProjectCode.objects.filter(project=project, worker=worker, kind=kind)
    code = mine.values_list("code", flat=True).first()
    if code:
        return code
    try:
        with transaction.atomic():
            return WorkerProjectCode.objects.create(project=project, worker=worker, kind=kind).code
    except IntegrityError:
        return mine.get().code


# --- staff: removing an assignment ------------------------------------------------------------------
def do_release_assignment(assignment: Assignment) -> bool:
    """Delete an assignment (with its responses and gold records) and give its slot back to the HIT.

    The one way staff remove an assignment (the admin's delete goes through here), so that ``HIT.taken`` stays
    the number of assignments holding a slot: the assignment and its HIT are locked (``select_for_update``) in
    one transaction, the counter is decremented only if the assignment held a slot (reserved / submitted /
    approved; a rejected or expired one gave it back already), then the row is deleted. Returns ``False`` when
    the assignment was gone already (a second click, a concurrent delete).
    """
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().filter(pk=assignment.pk).values("hit_id", "status").first()
        if locked is None:
            return False
        if locked["status"] in Assignment.HOLDING:
            HIT.objects.select_for_update(no_key=True).filter(pk=locked["hit_id"]).values_list("pk").first()
            HIT.objects.filter(pk=locked["hit_id"], taken__gt=0).update(taken=F("taken") - 1)
        Assignment.objects.filter(pk=assignment.pk).delete()
    return True


# --- experts: the final answer of an item -----------------------------------------------------------------
def adjudicate_item(item: Item, answer: dict, *, expert, note: str = "") -> Adjudication:
    """Record an expert's final answer for ``item`` (who and when), checked by the task type like a worker's
    response (:meth:`~annotation.task_types.base.TaskType.adjudicate`, which also applies what the task type keeps
    besides the :class:`~annotation.models.Adjudication` row, e.g. the aspect export's ``payload["adjudicated"]``).
    All or nothing; raises :class:`AdjudicationRefused` naming the field."""
    project = item.project
    tt = get_task_type(project.task_type)
    if not isinstance(answer, dict):
        raise AdjudicationRefused("answer", "expected an object")
    with transaction.atomic():
        try:
            cleaned = tt.adjudicate(project, item, answer, expert=expert)
        except ResponseInvalid as exc:
            raise AdjudicationRefused(exc.field, exc.reason) from None
        return Adjudication.objects.create(item=item, answer=cleaned, expert=expert, note=note or "")
