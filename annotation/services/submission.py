"""Submission: storing all answers of an assignment in one transaction (:func:`submit_assignment`), with the next
HIT reserved in the same one (:func:`submit_and_reserve_next`), and late answers (kept, counted once staff accept
them)."""

from __future__ import annotations

import hashlib
import json
from contextlib import nullcontext
from typing import Any, cast

from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.db.models import F, Field
from django.utils import timezone

from .. import rawsql, selectors
from ..models import HIT, Assignment, AssignmentDraft, GoldItem, Item, Project, Response, StudyPhases, Worker
from ..signals import assignment_submitted
from ..task_types import ResponseInvalid, get_task_type
from .allocation import reserve_in_transaction, reserve_next_assignment
from .errors import AllocationError, AssignmentNotOpen, NotYourAssignment, ValidationFailed
from .gold import score_gold, score_stored_gold
from .items import assignment_items, hit_items_join, in_hit_order, items_read, joined_items, remember


def submission_key(responses: dict, feedback: str = "") -> str:
    canonical = json.dumps(
        {"responses": {str(k): v for k, v in responses.items()}, "feedback": feedback or ""},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
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
        if (
            item_id not in cleaned
            and f"responses.{item_id}" not in errors
            and not any(k.startswith(f"responses.{item_id}.") for k in errors)
        ):
            errors[f"responses.{item_id}"] = "missing: answer every item"
    if errors:
        raise ValidationFailed(errors)
    return cleaned


def submittable_assignment(pk: int) -> Assignment:
    """An assignment as :func:`submit_assignment` reads it, in one statement: with its project, the project's phase
    settings (:func:`submit_and_reserve_next` needs them to hand out the next HIT), ``has_gold`` (whether gold items
    were interleaved) and its HIT's items. A request handler that reads it this way passes ``fresh=True`` and saves
    the second read. Raises ``Assignment.DoesNotExist``."""
    if not rawsql.storable_pk(Assignment, pk):  # an id from a URL no row can have
        raise Assignment.DoesNotExist(f"no assignment {pk}")
    gold = Assignment.gold_items.through
    models = (Assignment, Project, StudyPhases)
    sql = (
        f"SELECT EXISTS (SELECT 1 FROM {rawsql.table(gold)} g WHERE g.{rawsql.column(gold, 'assignment')} = a.id), "
        f"{rawsql.select(*zip(models, 'aps'), (Item, 'i'))} FROM {rawsql.table(Assignment)} a "
        f"JOIN {rawsql.table(Project)} p ON p.id = a.{rawsql.column(Assignment, 'project')} "
        f"LEFT JOIN {rawsql.table(StudyPhases)} s ON s.{rawsql.column(StudyPhases, 'project')} = p.id "
        f"{hit_items_join('a.' + rawsql.column(Assignment, 'hit'))} "
        f"WHERE a.id = %s {in_hit_order()}"
    )
    with rawsql.cursor() as cursor:
        cursor.execute(sql, [pk])
        rows = cursor.fetchall()
    if not rows:
        raise Assignment.DoesNotExist(f"no assignment {pk}")
    assignment, project, phases = rawsql.instances(rows[0], models, 1)
    Project._meta.get_field("phases").set_cached_value(project, phases)  # project.phases: what phase_config reads
    assignment.project = project
    assignment.has_gold = bool(rows[0][0])
    return remember(assignment, hit_items=joined_items(rows, 1 + rawsql.width(*models)))


def submit_assignment(
    assignment: Assignment,
    worker: Worker,
    responses: dict,
    *,
    feedback: str = "",
    client_seconds: float | None = None,
    now=None,
    fresh: bool = False,
) -> Assignment:
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
    return _submit(
        assignment, worker, responses, feedback=feedback, client_seconds=client_seconds, now=now, fresh=fresh
    )


def submit_and_reserve_next(
    assignment: Assignment,
    worker: Worker,
    responses: dict,
    *,
    feedback: str = "",
    client_seconds: float | None = None,
    now=None,
    fresh: bool = False,
) -> tuple[Assignment, Assignment | None, AllocationError | None]:
    """Submit an assignment (:func:`submit_assignment`, same errors, same guarantees) and reserve the worker's next
    HIT in the same project (:func:`reserve_next_assignment`, same rules): one request per HIT for a worker going
    through a study. Returns ``(submitted, next, refusal)``: ``next`` is ``None`` when no HIT is handed out, and then
    ``refusal`` says why when it is a rule (blocked, quota, phases, project not active) rather than nothing left.

    A new submission and the reservation share one transaction (one commit): the reservation is written only after
    the answers are, and a refusal is raised before it writes anything, so the answers are kept whatever happens to
    it. A retried submission stores nothing again and gets the reservation the first attempt made (the worker holds
    it) or the refusal it got; so does a twin sent at the same moment. Late or concurrently changed submissions, a
    project whose phases come before the HITs, and a project with nothing free (stale reservations are given back
    first) take the plain path: the submission, then :func:`reserve_next_assignment`.
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
            box["next"] = reserve_in_transaction(project, worker, now, locked)
        except AllocationError as exc:  # raised before the reservation wrote anything: the answers stay
            box["refusal"] = exc

    done = _submit(
        assignment,
        worker,
        responses,
        feedback=feedback,
        client_seconds=client_seconds,
        now=now,
        fresh=fresh,
        after_store=reserve_inside if inline else None,
    )
    if "refusal" in box:
        return done, None, box["refusal"]
    if box.get("next") is not None:
        return done, box["next"], None
    try:
        return done, reserve_next_assignment(project, worker, now=now, fresh=True), None
    except AllocationError as exc:
        return done, None, exc


def _submit(
    assignment: Assignment,
    worker: Worker,
    responses: dict,
    *,
    feedback: str = "",
    client_seconds: float | None = None,
    now=None,
    fresh: bool = False,
    after_store=None,
) -> Assignment:
    """:func:`submit_assignment`; ``after_store(assignment, locked)`` runs inside the transaction that stores a new
    submission (never on a retry, a late or a refused one) and must not raise after writing anything. ``locked``
    (PostgreSQL; else ``None``): the worker's row, locked by the statement that stored the answers.

    The steps: the request is checked; the assignment is read (unless ``fresh``); a retry returns what was stored;
    the answers are validated before any write; then they are stored as a submission (:func:`_store`, the one write
    path) or, after the deadline, as late answers (:func:`_store_late`)."""
    now = now or timezone.now()
    feedback = feedback or ""
    client_seconds = _checked_request(assignment, worker, feedback, client_seconds)
    key = submission_key(responses if isinstance(responses, dict) else {}, feedback)
    known_items = items_read(assignment).items
    if not (fresh and assignment.has_gold is not None):
        assignment = submittable_assignment(assignment.pk)
    assignment.gold_scored = False
    if _sent(assignment, key):
        # retried submission: a no-op, but the first attempt may have scored gold answers (and blocked the worker)
        assignment.gold_scored = bool(assignment.has_gold)
        return assignment
    late = _is_late(assignment, now)
    if not late:
        _check_open(assignment, key, now)
    if known_items is not None:
        remember(assignment, items=known_items)  # the items of an assignment never change
    elif not assignment.has_gold:
        remember(assignment, gold_ids=[])  # no need to ask for its gold items
    cleaned = _clean_responses(assignment, responses)  # everything validated before any write
    if late:
        return _store_late(assignment, cleaned, key, feedback, client_seconds, now)
    fields = {
        "status": Assignment.Status.SUBMITTED,
        "submitted_at": now,
        "work_seconds": max(0.0, (now - assignment.reserved_at).total_seconds()),
        "client_seconds": client_seconds,
        "feedback": feedback,
        "submission_key": key,
    }
    if _store(assignment, worker, fields, cleaned, now, after_store):
        return assignment
    return _changed_meanwhile(assignment, key, cleaned, feedback, client_seconds, now)


def _checked_request(assignment: Assignment, worker: Worker, feedback: str, client_seconds) -> float | None:
    """The worker's own assignment, a feedback text of at most 10,000 characters and ``client_seconds`` a number of
    seconds (returned as a float); raises :class:`NotYourAssignment` or :class:`ValidationFailed`."""
    if assignment.worker_id != worker.pk:
        raise NotYourAssignment("this assignment is not held by you")
    if client_seconds is not None:
        try:
            client_seconds = float(client_seconds)
        except (TypeError, ValueError):
            raise ValidationFailed({"client_seconds": "must be a number of seconds"}) from None
        if not 0 <= client_seconds < 10**7:
            raise ValidationFailed({"client_seconds": "must be a non-negative number of seconds"})
    if len(feedback) > 10000:
        raise ValidationFailed({"feedback": "at most 10000 characters"})
    return client_seconds


def _store(
    assignment: Assignment, worker: Worker, fields: dict, cleaned: dict[int, tuple[Item, dict]], now, after_store
) -> bool:
    """Claim the reserved, unexpired assignment (the row lock is taken here, so two concurrent submissions cannot
    both pass), store its answers, score its gold answers and run ``after_store``, in one transaction; ``False``:
    nothing was written (it changed since it was read).

    Without gold answers PostgreSQL does it in one statement, atomic by itself (:func:`_claim_and_store`; with
    ``after_store`` both share one transaction, one commit); else an ``UPDATE ... WHERE status = 'reserved'`` and
    one insert (:func:`_claim_then_store`)."""
    gold_ids = [i for i, (item, _) in cleaned.items() if item.is_gold]
    golds = {g.item_id: g for g in GoldItem.objects.filter(item_id__in=gold_ids)} if gold_ids else {}
    one_statement = bool(not golds and cleaned and connection.vendor == "postgresql")
    with transaction.atomic() if after_store is not None or not one_statement else nullcontext():
        if one_statement:
            stored, locked = _claim_and_store(
                assignment, fields, cleaned, now, lock_worker=None if after_store is None else worker.pk
            )
        else:
            stored, locked = _claim_then_store(assignment, fields, cleaned, now), None
        if not stored:
            return False
        for name, value in fields.items():
            setattr(assignment, name, value)
        if golds and not worker.claimed_external_id:  # a provisional worker's gold waits for confirmation
            project = assignment.project
            score_gold(assignment, worker, project, get_task_type(project.task_type), golds, cleaned, now)
            assignment.gold_scored = True
        transaction.on_commit(lambda: assignment_submitted.send(sender=Assignment, assignment=assignment))
        if after_store is not None:
            after_store(assignment, locked)
    return True


def _claim_then_store(assignment: Assignment, fields: dict, cleaned: dict[int, tuple[Item, dict]], now) -> bool:
    """Inside the caller's transaction: claim the reserved, unexpired assignment with ``UPDATE ... WHERE status =
    'reserved'`` (its row count says whether this submission won), then insert its responses in one statement."""
    if not Assignment.objects.filter(pk=assignment.pk, status=Assignment.Status.RESERVED, expires_at__gt=now).update(
        **fields
    ):
        return False
    Response.objects.bulk_create(
        [Response(assignment_id=assignment.pk, item=item, data=data) for item, data in cleaned.values()]
    )
    return True


def _changed_meanwhile(
    assignment: Assignment, key: str, cleaned: dict[int, tuple[Item, dict]], feedback: str, client_seconds, now
) -> Assignment:
    """Someone else changed the assignment since it was read: a concurrent retry (same key: its result), an expiry
    (late answers), another answer (:class:`AssignmentNotOpen`)."""
    current = Assignment.objects.select_related("project").get(pk=assignment.pk)
    if _sent(current, key):
        return current  # a concurrent retry got there first
    if _is_late(current, now):
        remember(current, items=assignment_items(assignment))
        return _store_late(current, cleaned, key, feedback, client_seconds, now)
    _check_open(current, key, now)
    raise AssignmentNotOpen("this assignment changed while it was being submitted; ask for a new HIT")


def _sent(assignment: Assignment, key: str) -> bool:
    """These answers were stored already (a retried request)."""
    return (
        assignment.status in Assignment.DONE or assignment.status == Assignment.Status.LATE
    ) and assignment.submission_key == key


def _is_late(assignment: Assignment, now) -> bool:
    """The reservation has ended (expired, or past its deadline with no sweep yet) and no answers were sent."""
    return assignment.status == Assignment.Status.EXPIRED or (
        assignment.status == Assignment.Status.RESERVED and assignment.expires_at <= now
    )


def _store_late(
    assignment: Assignment, cleaned: dict[int, tuple[Item, dict]], key: str, feedback: str, client_seconds, now
) -> Assignment:
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
        fields = {
            "status": Assignment.Status.LATE,
            "submitted_at": now,
            "client_seconds": client_seconds,
            "work_seconds": max(0.0, (now - locked.reserved_at).total_seconds()),
            "feedback": feedback,
            "submission_key": key,
        }
        Assignment.objects.filter(pk=locked.pk).update(**fields)
        Response.objects.bulk_create(
            [Response(assignment_id=locked.pk, item=item, data=data) for item, data in cleaned.values()]
        )
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
        locked = (
            Assignment.objects.select_for_update(no_key=True).select_related("project", "worker").get(pk=assignment.pk)
        )
        if locked.status != Assignment.Status.LATE:
            if locked.late_accepted_at is not None:
                return locked
            raise AssignmentNotOpen(f"assignment {locked.pk} is {locked.get_status_display().lower()}, not late")
        HIT.objects.filter(pk=locked.hit_id).update(taken=F("taken") + 1)
        Assignment.objects.filter(pk=locked.pk).update(status=Assignment.Status.SUBMITTED, late_accepted_at=now)
        locked.status, locked.late_accepted_at = Assignment.Status.SUBMITTED, now
        if not locked.worker.claimed_external_id:  # a provisional worker's gold waits for confirmation
            score_stored_gold(locked, locked.worker, now)
        transaction.on_commit(lambda: assignment_submitted.send(sender=Assignment, assignment=locked))
    return locked


def _claim_and_store(
    assignment: Assignment, fields: dict, cleaned: dict[int, tuple[Item, dict]], now, *, lock_worker: int | None = None
) -> tuple[bool, Worker | None]:
    """PostgreSQL: claim the reserved, unexpired assignment and insert its responses in one statement (atomic by
    itself: no BEGIN/COMMIT round trips). ``(False, ...)``: nothing written, it is no longer reserved or it expired.
    ``lock_worker``: the same statement locks that worker's row (inside the caller's transaction, for the
    allocation that follows: :func:`submit_and_reserve_next`) and returns it with its ``blocked`` state.

    The answers travel as one JSON parameter (``jsonb_to_recordset``), so the statement's text is the same for every
    HIT size: one prepared statement (:func:`annotation.rawsql.cursor`) serves them all, and no answer is adapted as a
    parameter of its own."""
    meta = Assignment._meta
    params = [_field(meta, name).get_db_prep_save(value, connection) for name, value in fields.items()]
    answers = json.dumps([{"item": item.pk, "data": data} for item, data in cleaned.values()])
    created_at = Response._meta.get_field("created_at")
    params += [
        assignment.pk,
        Assignment.Status.RESERVED.value,
        meta.get_field("expires_at").get_db_prep_value(now, connection),
        created_at.get_db_prep_save(timezone.now(), connection),
        answers,
    ]
    with rawsql.cursor() as cursor:
        cursor.execute(
            _claim_sql(tuple(fields), lock_worker is not None),
            params if lock_worker is None else [lock_worker, *params],
        )
        row = cursor.fetchone()
    if row is None:  # no such worker
        return False, None
    locked = Worker.from_db(connection.alias, _LOCKED_WORKER, row[1:]) if lock_worker is not None else None
    return bool(row[0]), locked


_LOCKED_WORKER = ("id", "blocked", "blocked_reason")


def _field(meta, name: str) -> Field:
    """A concrete field of a model (what the claim statement writes; never a relation's reverse side)."""
    return cast(Field, meta.get_field(name))


def _claim_sql(fields: tuple[str, ...], lock_worker: bool) -> str:
    """The statement of :func:`_claim_and_store` (its text built once per connection). Parameters: [the worker's id,]
    the values of ``fields``, the assignment's id, status ``reserved``, now, the responses' ``created_at`` and the
    answers as a JSON array of ``{"item": id, "data": answer}``."""

    def build() -> str:
        qn = connection.ops.quote_name
        meta, response = Assignment._meta, Response._meta
        sets = ", ".join(f"{qn(cast(str, _field(meta, name).column))} = %s" for name in fields)
        # every column of a response: from the claimed assignment, the JSON array, or the one created_at parameter
        source = {"assignment": "c.id", "item": "x.item", "data": "x.data", "created_at": "%s"}
        stored = [f for f in response.concrete_fields if not f.primary_key]
        if {f.name for f in stored} != set(source):
            raise ImproperlyConfigured(f"Response has fields this statement does not write: {stored}")
        item, data = response.get_field("item"), response.get_field("data")
        lock = read = ""
        if lock_worker:
            lock = (
                f"w AS (SELECT {', '.join(rawsql.column(Worker, name) for name in _LOCKED_WORKER)} "
                f"FROM {rawsql.table(Worker)} WHERE id = %s FOR NO KEY UPDATE), "
            )
            read = f", {', '.join('w.' + rawsql.column(Worker, name) for name in _LOCKED_WORKER)} FROM w"
        return (
            f"WITH {lock}c AS (UPDATE {rawsql.table(Assignment)} SET {sets} WHERE id = %s AND status = %s "
            f"AND expires_at > %s RETURNING id), ins AS (INSERT INTO {rawsql.table(Response)} "
            f"({', '.join(qn(cast(str, f.column)) for f in stored)}) SELECT {', '.join(source[f.name] for f in stored)} "
            f"FROM c CROSS JOIN jsonb_to_recordset(%s::jsonb) AS x(item {item.db_type(connection)}, "
            f"data {data.db_type(connection)}) RETURNING 1) SELECT (SELECT count(*) FROM ins){read}"
        )

    return rawsql.memo(("claim", fields, lock_worker), build)


def _check_open(assignment: Assignment, key: str, now) -> None:
    """The reservation can take answers as a submission: reserved and not past ``expires_at`` (a hard deadline:
    answers after it are stored as late answers by :func:`_store_late`, whether or not a sweep has run)."""
    if assignment.status in Assignment.DONE or assignment.status == Assignment.Status.LATE:
        raise AssignmentNotOpen("this assignment was already submitted with different answers")
    if assignment.status != Assignment.Status.RESERVED:
        raise AssignmentNotOpen(f"this assignment is {assignment.get_status_display().lower()}; ask for a new HIT")
