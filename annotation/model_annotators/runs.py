"""Model annotators, the run: batches of answers asked of the provider slot, validated like a human's and stored
(one transaction per batch, resumable, failed attempts retried after a back-off).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from argora.progress import Progress, null_progress

from .. import providers
from ..models import Assignment, HITItem, Item, ModelAnnotator, ModelAnswer, ModelAnswerFailure, Response
from ..task_types import ResponseInvalid
from .reports import summary
from .setup import DEFAULT_BATCH, RAW_EXCERPT

_sleep: Callable[[float], None] = time.sleep


def set_sleep(fn: Callable[[float], None] | None) -> None:
    """Replace how a run waits between passes (``None``: ``time.sleep``); tests record instead of waiting."""
    global _sleep
    _sleep = fn or time.sleep


# --- the run -----------------------------------------------------------------------------------------------------
def _option(annotator: ModelAnnotator, key: str, default):
    value = (annotator.options or {}).get(key)
    return default if value in (None, "") else value


def max_attempts(annotator: ModelAnnotator) -> int:
    return int(_option(annotator, "max_attempts", settings.ARGORA_LLM_MAX_ATTEMPTS))


def runnable_items(annotator: ModelAnnotator):
    """The project's items the annotator has not answered: non-gold items of the HITs, in their order."""
    return (
        Item.objects.filter(project_id=annotator.project_id, is_gold=False, hit_items__isnull=False)
        .exclude(model_answers__annotator=annotator)
        .order_by("position", "id")
    )


def _tries(annotator: ModelAnnotator, since=None) -> dict[int, int]:
    """Failed attempts per item (``since``: only those of the run that started then)."""
    qs = ModelAnswerFailure.objects.filter(annotator=annotator)
    if since is not None:
        qs = qs.filter(created_at__gte=since)
    return dict(qs.values("item_id").annotate(n=Count("pk")).values_list("item_id", "n"))


def _backoff(retry: int, retry_after: float | None) -> float:
    steps = tuple(settings.ARGORA_LLM_BACKOFF) or (1.0,)
    wait = float(steps[min(retry, len(steps) - 1)])
    if retry_after:
        wait = max(wait, float(retry_after))
    return min(wait, float(settings.ARGORA_LLM_MAX_SLEEP))


def run(annotator_id: int, *, progress: Progress = null_progress, task_id: str = "") -> dict:
    """Answer every item the annotator has not answered yet (see the module doc); returns :func:`summary`."""
    annotator = ModelAnnotator.objects.select_related("project").get(pk=annotator_id)
    project = annotator.project
    answered = ModelAnswer.objects.filter(annotator=annotator).count()
    total = answered + runnable_items(annotator).count()
    started = timezone.now()
    ModelAnnotator.objects.filter(pk=annotator.pk).update(
        status=ModelAnnotator.Status.RUNNING,
        started_at=started,
        finished_at=None,
        error="",
        task_id=task_id or annotator.task_id,
        total=total,
        processed=answered,
        heartbeat_at=timezone.now(),
    )
    batch_size = int(_option(annotator, "batch_size", DEFAULT_BATCH[annotator.kind]))
    attempts = max_attempts(annotator)
    done = answered
    progress(done, total, f"model annotator {annotator.name}")
    try:
        retry, wait = 0, None
        while True:
            tries = _tries(annotator, since=started)
            pending = [item for item in runnable_items(annotator) if tries.get(item.pk, 0) < attempts]
            if not pending:
                break
            if retry:
                _sleep(_backoff(retry - 1, wait))
            wait = None
            for start in range(0, len(pending), batch_size):
                batch = pending[start : start + batch_size]
                answers = providers.model_answerer(annotator, batch)
                stored, asked_wait = store_answers(annotator, batch, answers)
                done += stored
                if asked_wait:
                    wait = max(wait or 0.0, asked_wait)
                progress(done, total, f"model annotator {annotator.name}")
            retry += 1
    except Exception as exc:
        ModelAnnotator.objects.filter(pk=annotator.pk).update(
            status=ModelAnnotator.Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:5000], finished_at=timezone.now()
        )
        raise
    left = runnable_items(annotator).count()
    ModelAnnotator.objects.filter(pk=annotator.pk).update(
        status=ModelAnnotator.Status.DONE,
        failed=left,
        processed=done,
        finished_at=timezone.now(),
        heartbeat_at=timezone.now(),
    )
    progress(total, total, "done")
    annotator.refresh_from_db()
    return summary(annotator) | {"project": project.slug}


def store_answers(annotator: ModelAnnotator, items: list[Item], answers: list[dict]) -> tuple[int, float | None]:
    """Store one batch's answers in one transaction: valid ones as Responses + ModelAnswers (an item answered
    already is skipped), the others as failures. Returns (answers stored, the longest Retry-After asked)."""
    project = annotator.project
    tt = project.get_task_type()
    by_item = {a.get("item"): a for a in answers if isinstance(a, dict)}
    hit_of = dict(HITItem.objects.filter(item__in=items).values_list("item_id", "hit_id"))
    tries = _tries(annotator)
    stored, wait = 0, None
    now = timezone.now()
    with transaction.atomic():
        ModelAnnotator.objects.select_for_update().filter(pk=annotator.pk).first()  # one batch writer at a time
        have = set(ModelAnswer.objects.filter(annotator=annotator, item__in=items).values_list("item_id", flat=True))
        for item in items:
            if item.pk in have:
                continue
            answer = by_item.get(item.pk) or {"failure": "error", "error": "the model gave no answer for this item"}
            common = {
                "model_id": str(answer.get("model_id") or "")[:300],
                "prompt_version": answer.get("prompt_version"),
            }
            attempt = tries.get(item.pk, 0) + 1
            failure, error, data = answer.get("failure") or "", str(answer.get("error") or ""), answer.get("data")
            cleaned = None
            if not failure:
                try:
                    cleaned = tt.validate_response(project, item, data)
                except ResponseInvalid as exc:
                    failure, error = ModelAnswerFailure.Kind.INVALID, f"{exc.field}: {exc.reason}"
            if failure:
                raw = str(answer.get("raw") or "")
                if len(raw) > RAW_EXCERPT:
                    error = f"{error[:4800]} (a reply of {len(raw)} characters: its first {RAW_EXCERPT} are kept)"
                if failure not in ModelAnswerFailure.Kind.values:
                    failure = ModelAnswerFailure.Kind.ERROR
                if failure == ModelAnswerFailure.Kind.RATE_LIMITED and answer.get("retry_after"):
                    wait = max(wait or 0.0, float(answer["retry_after"]))
                ModelAnswerFailure.objects.create(
                    annotator=annotator,
                    item=item,
                    kind=failure,
                    error=error[:5000],
                    raw=raw[:RAW_EXCERPT],
                    attempt=attempt,
                    seconds=float(answer.get("seconds") or 0.0),
                    **common,
                )
                continue
            assignment, _ = Assignment.objects.get_or_create(
                hit_id=hit_of[item.pk],
                worker=annotator.worker,
                defaults={
                    "project": project,
                    "status": Assignment.Status.MODEL,
                    "reserved_at": now,
                    "expires_at": now,
                    "submitted_at": now,
                },
            )
            response = Response.objects.create(assignment=assignment, item=item, data=cleaned)
            try:
                with transaction.atomic():
                    ModelAnswer.objects.create(
                        annotator=annotator,
                        item=item,
                        response=response,
                        attempts=attempt,
                        confidence=answer.get("confidence"),
                        seconds=float(answer.get("seconds") or 0.0),
                        tokens=answer.get("tokens"),
                        cost=answer.get("cost"),
                        raw=str(answer.get("raw") or "")[:20000],
                        **common,
                    )
            except IntegrityError:  # another run stored it meanwhile: keep theirs
                response.delete()
                continue
            stored += 1
        ModelAnnotator.objects.filter(pk=annotator.pk).update(heartbeat_at=timezone.now())
    return stored, wait
