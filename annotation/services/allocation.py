"""Allocation: reserving the next HIT for a worker (:func:`reserve_next_assignment`), and the end of a reservation
(expired, released, extended).

Allocation runs in one transaction. On PostgreSQL the HIT to hand out is picked with ``SELECT ... FOR UPDATE SKIP
LOCKED`` so that concurrent workers take different rows instead of queueing on one; on SQLite the settings open every
transaction IMMEDIATE, so writers are serialised by the database lock. In both cases the slot counter is incremented
with ``UPDATE ... WHERE taken < R`` and the row count checked, so no HIT (and therefore no item) ever gets more than R
assignments that hold a slot, whatever the isolation level.
"""

from __future__ import annotations

import random
import time
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from .. import rawsql, selectors
from ..models import HIT, Assignment, AssignmentDraft, GoldRecord, HITItem, Item, Project, Worker
from .errors import (
    AssignmentNotOpen,
    NotYourAssignment,
    PhasesPending,
    ProjectNotActive,
    QuotaReached,
    SlotTaken,
    WorkerBlocked,
)
from .items import hit_items, hit_items_join, in_hit_order, joined_items, remember
from .ordering import ITEM_ORDER_MARK


def current_assignment(project: Project, worker: Worker, *, now=None) -> Assignment | None:
    """The worker's unexpired reserved assignment in this project, if any (``project`` is the given object: joining
    the project's row would only read it again)."""
    now = now or timezone.now()
    held = (
        Assignment.objects.select_related("hit")
        .filter(project=project, worker=worker, status=Assignment.Status.RESERVED, expires_at__gt=now)
        .order_by("reserved_at")
        .first()
    )
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
    seen |= set(
        Assignment.gold_items.through.objects.filter(
            assignment__worker=worker, assignment__project=project
        ).values_list("item_id", flat=True)
    )
    pool = [
        pk
        for pk in Item.objects.filter(project=project, is_gold=True, is_training=False, gold__isnull=False).values_list(
            "pk", flat=True
        )
        if pk not in seen
    ]
    return rng.sample(pool, min(n, len(pool)))


def reserve_next_assignment(project: Project, worker: Worker, *, now=None, fresh: bool = False) -> Assignment | None:
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
        return reserve_in_transaction(project, worker, now)


def reserve_in_transaction(project: Project, worker: Worker, now, locked: Worker | None = None) -> Assignment | None:
    """The allocation itself, inside the caller's transaction. Raises :class:`WorkerBlocked` or
    :class:`QuotaReached` only before anything is written, so a caller may catch them and still commit what it
    wrote before (:func:`annotation.services.submit_and_reserve_next`). ``locked`` (PostgreSQL): the worker's row,
    already locked by the caller's transaction (its ``blocked`` state read with the lock)."""
    if rawsql.skip_locked():
        return _reserve_skip_locked(project, worker, now, locked)
    if rawsql.serialised_writes():
        return _reserve_serialised(project, worker, now)
    # Neither: one allocation at a time per worker (two tabs, a retried request) by locking the worker row.
    locked = Worker.objects.select_for_update(no_key=True).only("pk", "blocked", "blocked_reason").get(pk=worker.pk)
    if locked.blocked:
        raise WorkerBlocked(locked.blocked_reason)
    held = current_assignment(project, worker, now=now)
    if held is not None:
        return held
    if project.max_hits_per_worker is not None:
        used = (
            Assignment.objects.filter(project=project, worker=worker).exclude(status=Assignment.Status.EXPIRED).count()
        )
        if used >= project.max_hits_per_worker:
            raise quota_reached(project)
    assignment = _new_reservation(project, worker, now)
    for r, from_position in _allocation_passes(project):
        hit_id = _take_hit_slow(project, worker, r, from_position)
        if hit_id is not None:
            assignment.hit_id = hit_id
            assignment.save(force_insert=True)
            break
    else:
        return None
    remember(assignment, gold_ids=add_gold(project, worker, assignment))  # assignment_items need not ask again
    return assignment


def _reserve_skip_locked(project: Project, worker: Worker, now, locked: Worker | None) -> Assignment | None:
    """PostgreSQL: the allocation in two statements. The worker's row is locked first (one allocation at a time per
    worker: two tabs, a retried request), unless the caller's statement locked it; then one statement checks that the
    worker holds no reservation and is under the quota, takes a free HIT, inserts the reservation and reads the HIT's
    items (:func:`_take_free_hit`). When every free HIT is locked by allocations in flight, it tries again after
    short pauses (:func:`_take_free_hit_retrying`)."""
    if locked is None:
        locked = Worker.objects.select_for_update(no_key=True).only("pk", "blocked", "blocked_reason").get(pk=worker.pk)
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
        raise quota_reached(project)
    if outcome != "taken" and not any(
        _take_free_hit_retrying(assignment, r, from_position, tried=n == 0)
        for n, (r, from_position) in enumerate(passes)
    ):
        return None
    remember(assignment, gold_ids=add_gold(project, worker, assignment))  # assignment_items need not ask again
    return assignment


def _reserve_serialised(project: Project, worker: Worker, now) -> Assignment | None:
    """SQLite: the IMMEDIATE transaction already holds the database's write lock (one writer at a time), so the
    worker's state, the reservation they hold and their HIT count are read in one statement, and the HIT picked by
    :func:`_take_hit_serialised` is final."""
    asg = rawsql.table(Assignment)
    quota = project.max_hits_per_worker
    used = (
        "0"
        if quota is None
        else (f"(SELECT count(*) FROM {asg} q WHERE q.project_id = %s AND q.worker_id = w.id AND q.status <> %s)")
    )
    sql = (
        f"SELECT w.blocked, w.blocked_reason, (SELECT a.id FROM {asg} a WHERE a.project_id = %s "
        f"AND a.worker_id = w.id AND a.status = %s AND a.expires_at > %s LIMIT 1), {used} "
        f"FROM {rawsql.table(Worker)} w WHERE w.id = %s"
    )
    params = [
        project.pk,
        Assignment.Status.RESERVED.value,
        Assignment._meta.get_field("expires_at").get_db_prep_value(now, connection),
        *([] if quota is None else [project.pk, Assignment.Status.EXPIRED.value]),
        worker.pk,
    ]
    with rawsql.cursor() as cursor:
        cursor.execute(sql, params)
        blocked, reason, held_id, used_count = cursor.fetchone()
    if blocked:
        raise WorkerBlocked(reason)
    if held_id is not None:
        return current_assignment(project, worker, now=now)
    if quota is not None and used_count >= quota:
        raise quota_reached(project)
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
    remember(assignment, hit_items=hit_items(hit_id))
    remember(assignment, gold_ids=add_gold(project, worker, assignment))  # assignment_items need not ask again
    return assignment


def _new_reservation(project: Project, worker: Worker, now) -> Assignment:
    """The unsaved reservation an allocation fills in with the HIT it takes."""
    return Assignment(
        project=project,
        worker=worker,
        status=Assignment.Status.RESERVED,
        reserved_at=now,
        expires_at=now + timedelta(seconds=project.reservation_timeout_seconds),
    )


def quota_reached(project: Project) -> QuotaReached:
    return QuotaReached(f"you have done the maximum of {project.max_hits_per_worker} HITs in this project")


def _allocation_passes(project: Project) -> list[tuple[int, int | None]]:
    """``(cap, lowest position)`` per pass of the allocation: one pass ``(R, None)``; with adaptive R (the
    ``disagreement`` order with ``r_min < r_max``) first the HITs marked for more responses (``r_max``, positions from
    :data:`ITEM_ORDER_MARK`), then any HIT below ``r_min``. Every cap is at most R."""
    order = selectors.item_order(project)
    if order["adaptive"]:
        return [(order["r_max"], ITEM_ORDER_MARK), (order["r_min"], None)]
    return [(order["cap"], None)]


def add_gold(project: Project, worker: Worker, assignment: Assignment) -> list[int]:
    """Interleave gold items (``gold_rate`` of the HIT's items, ones this worker has not seen) into a new assignment;
    returns their ids, sorted (the caller keeps them: :func:`annotation.services.items.remember`)."""
    gold_ids: list[int] = []
    if project.gold_rate > 0:
        rng = random.Random()
        n_items = HITItem.objects.filter(hit_id=assignment.hit_id).count()
        gold_ids = _pick_gold(project, worker, _gold_count(project, n_items, rng), rng)
        if gold_ids:
            assignment.gold_items.add(*gold_ids)
    return sorted(gold_ids)


# "a HIT this worker has not had": the worker's HITs of the project read once into a set (PostgreSQL: a hashed
# subplan; SQLite: an ephemeral index), never a join the planner may turn quadratic. With NOT EXISTS, PostgreSQL's
# plan followed its statistics: taken when the study had no assignments yet (one row estimated), it materialised the
# worker's assignments and compared every one with every HIT scanned -- 26 ms for a worker 550 HITs in, growing with
# each HIT; this is 0.6 ms (bench/allocation.py, one item per HIT). hit_id is NOT NULL, so NOT IN means NOT EXISTS.
def _not_had(asg_table: str) -> str:
    """SQL: HIT ``c`` is not one this worker had (parameters: the worker's id, the project's id)."""
    return f"c.id NOT IN (SELECT a.hit_id FROM {asg_table} a WHERE a.worker_id = %s AND a.project_id = %s)"


def _take_free_hit(
    assignment: Assignment, r: int, from_position: int | None = None, *, now=None, quota: int | None = None
) -> str:
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
        ctes.append(
            f"held AS (SELECT a.id FROM {asg_table} a WHERE a.project_id = %s AND a.worker_id = %s "
            f"AND a.status = %s AND a.expires_at > %s LIMIT 1)"
        )
        cte_params += [
            project_id,
            worker_id,
            Assignment.Status.RESERVED.value,
            Assignment._meta.get_field("expires_at").get_db_prep_value(now, connection),
        ]
        gate = "NOT EXISTS (SELECT 1 FROM held) AND "
        outcomes.append("SELECT 'held', id, NULL FROM held")
        if quota is not None:
            ctes.append(
                f"used AS (SELECT count(*) AS n FROM {asg_table} q WHERE q.project_id = %s "
                f"AND q.worker_id = %s AND q.status <> %s)"
            )
            cte_params += [project_id, worker_id, Assignment.Status.EXPIRED.value]
            gate += "(SELECT n FROM used) < %s AND "
            gate_params.append(quota)
            outcomes.append("SELECT 'quota', NULL, NULL FROM used WHERE NOT EXISTS (SELECT 1 FROM held) AND n >= %s")
            outcome_params.append(quota)
    band = "" if from_position is None else "AND c.position >= %s "
    columns, exprs, insert_params = rawsql.insert_columns(assignment, raw={"hit_id": "h.id"})
    ctes.append(
        f"h AS (UPDATE {hit_table} SET taken = taken + 1 WHERE id = ("
        f"SELECT c.id FROM {hit_table} c WHERE {gate}c.project_id = %s AND c.taken < %s {band}"
        f"AND {_not_had(asg_table)} ORDER BY c.position LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED) "
        f"AND taken < %s RETURNING id)"
    )
    ctes.append(
        f"ins AS (INSERT INTO {asg_table} ({', '.join(columns)}) SELECT {', '.join(exprs)} FROM h RETURNING id, hit_id)"
    )
    outcomes.insert(0, "SELECT 'taken' AS kind, id, hit_id FROM ins")
    sql = (
        f"WITH {', '.join(ctes)} SELECT k.kind, k.id, k.hit_id, {rawsql.select((Item, 'i'))} "
        f"FROM ({' UNION ALL '.join(outcomes)}) k {hit_items_join('k.hit_id')} "
        f"{in_hit_order()}"
    )
    params = [
        *cte_params,
        *gate_params,
        project_id,
        r,
        *([] if from_position is None else [from_position]),
        worker_id,
        project_id,
        r,
        *insert_params,
        *outcome_params,
    ]
    with rawsql.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not rows:
        return ""
    if rows[0][0] == "taken":
        rawsql.saved(assignment, rows[0][1]).hit_id = rows[0][2]
        remember(assignment, hit_items=joined_items(rows, 3))
    return rows[0][0]


# Pauses (seconds) between tries of _take_free_hit while every free HIT is locked by allocations in flight: 2.8 s in
# all, many times the few ms a reserving transaction holds its lock.
SKIP_LOCKED_RETRY_DELAYS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8, 1.2)


def _take_free_hit_retrying(
    assignment: Assignment, r: int, from_position: int | None = None, *, tried: bool = False
) -> bool:
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
    hits = (
        HIT.objects.filter(project_id=project_id, taken__lt=r)
        .exclude(pk__in=Assignment.objects.filter(project_id=project_id, worker_id=worker_id).values("hit_id"))
        .order_by("position")
    )
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
    sql = (
        f"UPDATE {hit_table} SET taken = taken + 1 WHERE id = ("
        f"SELECT c.id FROM {hit_table} c WHERE c.project_id = %s AND c.taken < %s {band}AND {_not_had(asg_table)} "
        f"ORDER BY c.position LIMIT 1) AND taken < %s RETURNING id"
    )
    params = [project.pk, r, *([] if from_position is None else [from_position]), worker.pk, project.pk, r]
    with rawsql.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else row[0]


def expire_reservations(now=None, *, project: Project | None = None) -> int:
    """Mark reservations past their ``expires_at`` expired and give their slots back; returns how many."""
    now = now or timezone.now()
    stale = Assignment.objects.filter(status=Assignment.Status.RESERVED, expires_at__lte=now)
    drafts = AssignmentDraft.objects.exclude(
        assignment__status__in=(Assignment.Status.RESERVED, Assignment.Status.EXPIRED)
    )
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
        locking = qs.select_for_update(skip_locked=True, no_key=True) if rawsql.skip_locked() else qs
        row = locking.values("hit_id").first()
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
                raise AssignmentNotOpen(
                    f"the study is {project.get_status_display().lower()}: its HITs cannot be "
                    f"extended; submit to keep your answers as late answers"
                )
            if current_assignment(project, worker, now=now) is not None:
                raise AssignmentNotOpen("you hold another HIT of this study now")
        elif locked.status != Assignment.Status.RESERVED:
            raise AssignmentNotOpen(f"this assignment is {locked.get_status_display().lower()}; it cannot be extended")
        if until <= max(now, locked.expires_at if locked.status == Assignment.Status.RESERVED else now):
            raise AssignmentNotOpen(
                f"this HIT cannot be held longer than {MAX_HOLD_TIMEOUTS} x "
                f"{project.reservation_timeout_seconds // 60} minutes; please submit it"
            )
        if locked.status == Assignment.Status.EXPIRED:
            took = HIT.objects.filter(pk=locked.hit_id, taken__lt=selectors.item_order(project)["cap"]).update(
                taken=F("taken") + 1
            )
            if not took:
                raise SlotTaken(
                    "another worker has taken your place in this HIT; submit to keep your answers as late answers"
                )
        Assignment.objects.filter(pk=locked.pk).update(status=Assignment.Status.RESERVED, expires_at=until)
        locked.status, locked.expires_at = Assignment.Status.RESERVED, until
    return locked
