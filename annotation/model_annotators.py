"""Model annotators: registry models and LLMs answering a project's items beside the crowd (issue 24, items 1-2).

The one place that changes :class:`~annotation.models.ModelAnnotator` and its answers (views, the admin, the CLI and
the Celery tasks call these functions); the read side at the end (failures, the agreement report of the dashboard
and the CLI) writes nothing.

Where the answers come from
    annotation never imports ml: :func:`run` asks the provider slot :data:`annotation.providers.model_answerer`
    (filled by ml: :func:`ml.annotators.answer`) for one answer per item, a batch at a time. An *answer* is a dict::

        {"item": item id, "data": the answer in the task type's response format, or None,
         "failure": "" or a ModelAnswerFailure.Kind ("malformed", "timeout", "rate_limited", "http", "error"),
         "error": why, "raw": the reply as it came, "model_id": "tagger#12" / "llm:<model>@<base url>",
         "prompt_version": int or None, "confidence": float or None, "seconds": float, "tokens": int or None,
         "cost": float or None, "retry_after": seconds the endpoint asked to wait (429) or None}

Validation
    ``data`` goes through the task type's ``validate_response`` exactly like a human's answer; an answer it refuses
    is stored as a failure (``invalid``) with the raw reply, never as a label. A valid answer becomes a
    :class:`~annotation.models.Response` of an assignment of the annotator's worker (source ``model``) with status
    ``model`` -- one assignment per HIT, holding no slot -- plus a :class:`~annotation.models.ModelAnswer` with the
    model id, prompt version, confidence, time, tokens and cost.

Kept apart
    Every count, aggregate, agreement figure and release reads assignments with status submitted / approved, so a
    model's answers are in none of them; :func:`annotation.selectors.counted_responses` adds the answers of the
    annotators the researcher included (``include_in_results``). The dashboard's model section (:func:`report`)
    reads them on purpose.

Runs (:func:`start_run` -> a Celery task -> :func:`run`)
    Batched (``options["batch_size"]``), one transaction per batch; resumable and idempotent per (annotator, item):
    an item with a stored answer is never asked again (a redelivered or re-run task goes on with the rest; the
    unique constraint is the last guard). Failed attempts are stored, and the items they left without an answer are
    asked again in another pass after a back-off (``ARGORA_LLM_BACKOFF``; a 429's ``Retry-After`` when it is longer,
    at most ``ARGORA_LLM_MAX_SLEEP``), until ``options["max_attempts"]`` (``ARGORA_LLM_MAX_ATTEMPTS``) attempts per
    item were made. Progress goes to ``progress(done, total)``.

Not a way out of the server (SECURITY.md)
    An LLM annotator's ``base_url`` other than the operator's endpoint (the scheme, host and port of
    ``ARGORA_LLM_BASE_URL``) must not reach the server's own networks unless the operator allowed the host
    (:func:`check_base_url`, :mod:`argora.outbound`), and ``api_key_env`` must start with ``ARGORA_LLM_KEY_PREFIX``
    (:func:`key_env_name`): checked here on write and again by the client at call time. A failed attempt keeps only
    the first ``RAW_EXCERPT`` characters of the reply, and its error says how long the reply was.
"""
from __future__ import annotations

import json
import time
import uuid
from collections import Counter, defaultdict
from string import Template
from typing import Any, Callable

from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from argora import outbound
from argora.errors import FieldError
from argora.progress import Progress, null_progress

from . import providers
from .agreement.alttest import (
    DEFAULT_EPSILON,
    MIN_HUMANS,
    MIN_INSTANCES,
    AltTestInputError,
    alt_test,
)
from .agreement.minimums import MIN_UNITS, mark
from .agreement.records import build_matrix, load_responses
from .agreement.table import figures, reliability_data
from .models import (
    Assignment,
    HITItem,
    Item,
    ModelAnnotator,
    ModelAnswer,
    ModelAnswerFailure,
    ModelPromptVersion,
    Project,
    Response,
    Worker,
)
from .task_types import ResponseInvalid

REGISTRY_TASK = "ml.tasks.model_annotate"   # gpu queue (every ml.tasks.* is routed there)
LLM_TASK = "ml.llm_annotate"                 # default queue: an HTTP client, no model in memory
DEFAULT_BATCH = {ModelAnnotator.Kind.REGISTRY: 64, ModelAnnotator.Kind.LLM: 4}
NAME_MAX = 100
TEMPLATE_MAX = 20000
RAW_EXCERPT = 500    # characters of a failed attempt's reply that are stored (and shown on the Failures page)
STALE_SECONDS = 600  # a "running" annotator without a batch for this long may be started again

# The prompt a new LLM annotator starts with and the answer format it is told (``$format``) come from the task type's
# side (:data:`annotation.providers.model_prompt`, filled by ml); without one, this generic prompt:
GENERIC_PROMPT = ("You annotate one item of an annotation project ($task_type).\nItem: $item_json\n\n"
                  "Answer with one JSON object and nothing else, in the format a human annotator's answer has: "
                  "$format\n")

_sleep: Callable[[float], None] = time.sleep


def set_sleep(fn: Callable[[float], None] | None) -> None:
    """Replace how a run waits between passes (``None``: ``time.sleep``); tests record instead of waiting."""
    global _sleep
    _sleep = fn or time.sleep


def _prompt_defaults(project: Project) -> dict:
    found = providers.model_prompt.get(project) or {}
    return found if isinstance(found, dict) else {}


def default_prompt(project: Project) -> str:
    return _prompt_defaults(project).get("template") or GENERIC_PROMPT


def prompt_context(project: Project, item: Item) -> dict[str, str]:
    """The placeholders a prompt template may use for ``item``: every key of the payload a worker may see
    (``$text``, ``$topic``, ``$premise``...; lists and objects as JSON), ``$item_json``, ``$task_type``,
    ``$labels`` (label tasks), ``$candidates`` (one ``id: phrase`` per line), ``$check_question`` and ``$format``."""
    tt = project.get_task_type()
    payload = tt.worker_payload(project, item)
    ctx: dict[str, str] = {k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                           for k, v in payload.items()}
    ctx.setdefault("text", "")
    ctx.setdefault("topic", "")
    ctx["task_type"] = project.task_type
    ctx["item_json"] = json.dumps(payload, ensure_ascii=False)
    labels = tt.labels(project) if hasattr(tt, "labels") else []
    ctx["labels"] = ", ".join(map(str, labels))
    cands = [c for c in (payload.get("candidates") or []) + (payload.get("more") or []) if isinstance(c, dict)]
    ctx["candidates"] = "\n".join(f'{c.get("id")}: {c.get("text", "")}' for c in cands)
    ctx["check_question"] = str(((item.payload or {}).get("check") or {}).get("question", ""))
    ctx["format"] = Template(_prompt_defaults(project).get("format") or "the task type's answer object"
                             ).safe_substitute(ctx)
    return ctx


def render_prompt(annotator: ModelAnnotator, item: Item) -> str:
    """The prompt of ``annotator``'s current template for ``item``."""
    return Template(annotator.prompt_template).substitute(prompt_context(annotator.project, item))


def _check_template(project: Project, template: str) -> str:
    if not isinstance(template, str) or not template.strip():
        raise FieldError("prompt_template", "write the prompt (placeholders: $text, $labels, $format, ...)")
    if len(template) > TEMPLATE_MAX:
        raise FieldError("prompt_template", f"at most {TEMPLATE_MAX} characters")
    sample = Item.objects.filter(project=project, is_gold=False).order_by("position", "id").first()
    try:
        if sample is not None:
            Template(template).substitute(prompt_context(project, sample))
        else:
            Template(template).safe_substitute({})
    except KeyError as exc:
        known = ", ".join(f"${k}" for k in sorted(prompt_context(project, sample))) if sample else ""
        raise FieldError("prompt_template", f"unknown placeholder ${exc.args[0]} (known: {known})") from None
    except ValueError as exc:
        raise FieldError("prompt_template", f"{exc} (write $$ for a dollar sign)") from None
    return template


# --- set-up ------------------------------------------------------------------------------------------------------
def is_operator_endpoint(url: str) -> bool:
    """``url`` reaches the operator's own LLM endpoint (the scheme, host and port of ``ARGORA_LLM_BASE_URL``)."""
    return outbound.same_origin(str(url), str(settings.ARGORA_LLM_BASE_URL or ""))


def check_base_url(url: str) -> str:
    """``url`` when an LLM annotator may call it: the operator's endpoint, or one whose host resolves only to
    addresses outside the server's networks or allowed by the operator (:func:`argora.outbound.check_url`)."""
    if is_operator_endpoint(url):
        return url
    try:
        return outbound.check_url(str(url))
    except outbound.Refused as exc:
        raise FieldError("base_url", str(exc)) from None


def key_env_name(name) -> str:
    """``name`` when an annotator may read its key from that environment variable: it starts with
    ``ARGORA_LLM_KEY_PREFIX`` (so no annotator can send ``DJANGO_SECRET_KEY``, ``PROLIFIC_API_TOKEN`` or AWS keys)."""
    if not (isinstance(name, str) and name.isascii() and name.replace("_", "").isalnum()):
        raise FieldError("api_key_env", "the name of an environment variable holding the key")
    prefix = str(settings.ARGORA_LLM_KEY_PREFIX or "")
    if not prefix:
        raise FieldError("api_key_env", "the operator allows no key variable per annotator (ARGORA_LLM_KEY_PREFIX "
                                        "is empty): leave it empty to use ARGORA_LLM_API_KEY")
    if not name.startswith(prefix) or name == prefix:
        raise FieldError("api_key_env", f"a variable whose name starts with {prefix} (e.g. {prefix}OPENAI), which "
                                        f"the operator sets; empty: ARGORA_LLM_API_KEY")
    return name


def _number(options: dict, key: str, low: float, high: float, *, integer: bool = False):
    if key not in options or options[key] in (None, ""):
        return
    value = options[key]
    try:
        value = int(value) if integer else float(value)
    except (TypeError, ValueError):
        raise FieldError(key, f"a {'whole ' if integer else ''}number from {low:g} to {high:g}") from None
    if not low <= value <= high:
        raise FieldError(key, f"a {'whole ' if integer else ''}number from {low:g} to {high:g}")
    options[key] = value


def _clean_options(kind: str, project: Project, options: dict | None) -> dict:
    options = {k: v for k, v in dict(options or {}).items() if v not in (None, "")}
    _number(options, "batch_size", 1, 1024, integer=True)
    _number(options, "max_attempts", 1, 10, integer=True)
    if kind == ModelAnnotator.Kind.LLM:
        known = {"base_url", "model", "api_key_env", "temperature", "timeout", "max_tokens", "batch_size",
                 "max_attempts"}
        unknown = set(options) - known
        if unknown:
            raise FieldError(sorted(unknown)[0], f"not an LLM option (known: {', '.join(sorted(known))})")
        base = str(options.get("base_url") or settings.ARGORA_LLM_BASE_URL or "")
        if not base.startswith(("http://", "https://")):
            raise FieldError("base_url", "the endpoint's base URL, e.g. http://localhost:8000/v1 (vLLM)")
        if options.get("base_url"):
            options["base_url"] = check_base_url(base.strip())
        if not str(options.get("model") or settings.ARGORA_LLM_MODEL or "").strip():
            raise FieldError("model", "name the model the endpoint serves (or set ARGORA_LLM_MODEL)")
        if options.get("api_key_env") is not None:
            key_env_name(options["api_key_env"])
        _number(options, "temperature", 0, 2)
        _number(options, "timeout", 1, 600)
        _number(options, "max_tokens", 1, 32768, integer=True)
        return options
    offered = {int(m["version"]): m for m in catalogue(project)}
    if not offered:
        raise FieldError("kind", f"no ready registry model answers {project.task_type!r} projects; use an LLM")
    kinds = sorted({m["kind"] for m in offered.values()})
    version = options.get("version")
    try:
        version = int(version)
    except (TypeError, ValueError):
        raise FieldError("version", f"choose a ready {' or '.join(kinds)} model") from None
    if version not in offered:
        raise FieldError("version", f"model version {version} is not a ready {' or '.join(kinds)} model for this "
                                    f"project")
    return {"registry_kind": offered[version]["kind"], "version": version,
            **{k: options[k] for k in ("batch_size", "max_attempts") if k in options}}


def catalogue(project: Project) -> list[dict]:
    """The ready registry models that can answer the project (``[]`` without the ml app)."""
    return list(providers.model_catalogue.get(project) or [])


@transaction.atomic
def create_annotator(project: Project, *, name: str, kind: str, options: dict | None = None,
                     prompt_template: str | None = None, user=None) -> ModelAnnotator:
    """A new model annotator of ``project`` with its worker; raises :class:`FieldError` naming the field."""
    name = (name or "").strip()
    if not name or len(name) > NAME_MAX:
        raise FieldError("name", f"a name of 1 to {NAME_MAX} characters")
    if kind not in ModelAnnotator.Kind.values:
        raise FieldError("kind", f"one of {', '.join(ModelAnnotator.Kind.values)}")
    if ModelAnnotator.objects.filter(project=project, name=name).exists():
        raise FieldError("name", f"this project has a model annotator named {name!r}")
    options = _clean_options(kind, project, options)
    template, version = "", 0
    if kind == ModelAnnotator.Kind.LLM:
        template, version = _check_template(project, prompt_template or default_prompt(project)), 1
    worker = Worker.objects.create(source=Worker.Source.MODEL,
                                   external_id=f"{project.pk}:{uuid.uuid4().hex[:12]}")
    annotator = ModelAnnotator.objects.create(project=project, name=name, kind=kind, worker=worker, options=options,
                                              prompt_template=template, prompt_version=version, created_by=user)
    if version:
        ModelPromptVersion.objects.create(annotator=annotator, version=version, template=template, created_by=user)
    return annotator


@transaction.atomic
def update_prompt(annotator: ModelAnnotator, template: str, *, user=None) -> ModelAnnotator:
    """A new version of the LLM annotator's prompt (answers already given keep the version they were asked with)."""
    annotator = ModelAnnotator.objects.select_for_update().get(pk=annotator.pk)
    if annotator.kind != ModelAnnotator.Kind.LLM:
        raise FieldError("prompt_template", "only an LLM annotator has a prompt")
    template = _check_template(annotator.project, template)
    if template == annotator.prompt_template:
        return annotator
    annotator.prompt_version += 1
    annotator.prompt_template = template
    annotator.save(update_fields=["prompt_version", "prompt_template"])
    ModelPromptVersion.objects.create(annotator=annotator, version=annotator.prompt_version, template=template,
                                      created_by=user)
    return annotator


def set_included(annotator: ModelAnnotator, include: bool) -> ModelAnnotator:
    """Count the annotator's answers in aggregates and releases (``True``) or keep them apart (``False``)."""
    ModelAnnotator.objects.filter(pk=annotator.pk).update(include_in_results=bool(include))
    annotator.include_in_results = bool(include)
    return annotator


def start_run(annotator: ModelAnnotator) -> str:
    """Queue a run of ``annotator`` over the items it has not answered; returns the Celery task id (the job page).
    Registry models run on the ``gpu`` queue, LLMs on ``default``; sent once the transaction commits."""
    task_id = str(uuid.uuid4())
    with transaction.atomic():
        locked = ModelAnnotator.objects.select_for_update().get(pk=annotator.pk)
        busy = locked.status in (ModelAnnotator.Status.QUEUED, ModelAnnotator.Status.RUNNING)
        last = locked.heartbeat_at or locked.started_at
        if busy and last is not None and (timezone.now() - last).total_seconds() < STALE_SECONDS:
            raise FieldError("status", f"{locked.name} is already {locked.status} (job {locked.task_id})")
        locked.status, locked.task_id, locked.error = ModelAnnotator.Status.QUEUED, task_id, ""
        locked.heartbeat_at = timezone.now()
        locked.save(update_fields=["status", "task_id", "error", "heartbeat_at"])
        name = LLM_TASK if locked.kind == ModelAnnotator.Kind.LLM else REGISTRY_TASK
        transaction.on_commit(lambda: current_app.send_task(name, args=[locked.pk], task_id=task_id,
                                                            queue="default" if name == LLM_TASK else "gpu"))
    return task_id


# --- the run -----------------------------------------------------------------------------------------------------
def _option(annotator: ModelAnnotator, key: str, default):
    value = (annotator.options or {}).get(key)
    return default if value in (None, "") else value


def max_attempts(annotator: ModelAnnotator) -> int:
    return int(_option(annotator, "max_attempts", settings.ARGORA_LLM_MAX_ATTEMPTS))


def runnable_items(annotator: ModelAnnotator):
    """The project's items the annotator has not answered: non-gold items of the HITs, in their order."""
    return (Item.objects.filter(project_id=annotator.project_id, is_gold=False, hit_items__isnull=False)
            .exclude(model_answers__annotator=annotator).order_by("position", "id"))


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
        status=ModelAnnotator.Status.RUNNING, started_at=started, finished_at=None, error="",
        task_id=task_id or annotator.task_id, total=total, processed=answered, heartbeat_at=timezone.now())
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
                batch = pending[start:start + batch_size]
                answers = providers.model_answerer(annotator, batch)
                stored, asked_wait = store_answers(annotator, batch, answers)
                done += stored
                if asked_wait:
                    wait = max(wait or 0.0, asked_wait)
                progress(done, total, f"model annotator {annotator.name}")
            retry += 1
    except Exception as exc:
        ModelAnnotator.objects.filter(pk=annotator.pk).update(status=ModelAnnotator.Status.FAILED,
                                                              error=f"{type(exc).__name__}: {exc}"[:5000],
                                                              finished_at=timezone.now())
        raise
    left = runnable_items(annotator).count()
    ModelAnnotator.objects.filter(pk=annotator.pk).update(status=ModelAnnotator.Status.DONE, failed=left,
                                                          processed=done, finished_at=timezone.now(),
                                                          heartbeat_at=timezone.now())
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
            common = {"model_id": str(answer.get("model_id") or "")[:300],
                      "prompt_version": answer.get("prompt_version")}
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
                ModelAnswerFailure.objects.create(annotator=annotator, item=item, kind=failure, error=error[:5000],
                                                  raw=raw[:RAW_EXCERPT], attempt=attempt,
                                                  seconds=float(answer.get("seconds") or 0.0), **common)
                continue
            assignment, _ = Assignment.objects.get_or_create(
                hit_id=hit_of[item.pk], worker=annotator.worker,
                defaults={"project": project, "status": Assignment.Status.MODEL, "reserved_at": now,
                          "expires_at": now, "submitted_at": now})
            response = Response.objects.create(assignment=assignment, item=item, data=cleaned)
            try:
                with transaction.atomic():
                    ModelAnswer.objects.create(
                        annotator=annotator, item=item, response=response, attempts=attempt,
                        confidence=answer.get("confidence"), seconds=float(answer.get("seconds") or 0.0),
                        tokens=answer.get("tokens"), cost=answer.get("cost"),
                        raw=str(answer.get("raw") or "")[:20000], **common)
            except IntegrityError:  # another run stored it meanwhile: keep theirs
                response.delete()
                continue
            stored += 1
        ModelAnnotator.objects.filter(pk=annotator.pk).update(heartbeat_at=timezone.now())
    return stored, wait


# --- read side ---------------------------------------------------------------------------------------------------
def summary(annotator: ModelAnnotator) -> dict:
    answers = ModelAnswer.objects.filter(annotator=annotator)
    seconds = [s for s in answers.values_list("seconds", flat=True)]
    costs = [c for c in answers.values_list("cost", flat=True) if c is not None]
    return {"annotator": annotator.pk, "name": annotator.name, "kind": annotator.kind, "status": annotator.status,
            "answered": answers.count(), "failed_items": annotator.failed,
            "failures": ModelAnswerFailure.objects.filter(annotator=annotator).count(),
            "failure_kinds": dict(Counter(ModelAnswerFailure.objects.filter(annotator=annotator)
                                          .values_list("kind", flat=True))),
            "seconds_per_item": (sum(seconds) / len(seconds)) if seconds else None,
            "cost": sum(costs) if costs else None, "model_id": model_id(annotator)}


def model_id(annotator: ModelAnnotator) -> str:
    """What identifies the model now: ``tagger#12`` or ``llm:<model>@<base url> prompt v3``."""
    opts = annotator.options or {}
    if annotator.kind == ModelAnnotator.Kind.REGISTRY:
        return f'{opts.get("registry_kind")}#{opts.get("version")}'
    return (f'llm:{opts.get("model") or settings.ARGORA_LLM_MODEL}@{opts.get("base_url") or settings.ARGORA_LLM_BASE_URL}'
            f" prompt v{annotator.prompt_version}")


def failures(annotator: ModelAnnotator, *, limit: int = 200) -> list[ModelAnswerFailure]:
    return list(ModelAnswerFailure.objects.filter(annotator=annotator).select_related("item")
                .order_by("-created_at", "-id")[:limit])


def model_records(annotator: ModelAnnotator) -> list[dict]:
    """The annotator's answers as response records (:func:`annotation.agreement.records.load_responses`' shape)."""
    rows = (ModelAnswer.objects.filter(annotator=annotator, item__is_gold=False)
            .order_by("created_at", "id").values_list("item_id", "response__data", "item__payload__topic",
                                                     "response__assignment_id", "created_at"))
    coder = f"worker:{annotator.worker_id}"
    return [{"item_id": item_id, "worker_id": annotator.worker_id, "coder": coder, "assignment_id": assignment_id,
             "submitted_at": at, "data": data or {}, "topic": "" if topic is None else str(topic), "is_expert": False}
            for item_id, data, topic, assignment_id, at in rows]


def _labels_by_coder(rel: dict) -> dict[str, dict[str, Any]]:
    """``{coder: {unit: value}}`` from reliability data (units as text: the alt-test's instances)."""
    out: dict[str, dict[str, Any]] = {}
    for coder, row in zip(rel.get("coders", []), rel.get("matrix") or []):
        out[coder] = {str(u): v for u, v in zip(rel["units"], row) if v is not None}
    return out


def _majority(humans: dict[str, dict[str, Any]]) -> dict[str, Any]:
    votes: dict[str, Counter] = defaultdict(Counter)
    for labels in humans.values():
        for unit, v in labels.items():
            votes[unit][json.dumps(v, sort_keys=True, default=str)] += 1
    out = {}
    for unit, counter in votes.items():
        ranked = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
        if len(ranked) == 1 or ranked[0][1] > ranked[1][1]:  # a strict majority; ties have none
            out[unit] = json.loads(ranked[0][0])
    return out


def _pair_figures(cells: dict, unit_item: dict, level: str) -> dict:
    f = figures(build_matrix(cells, unit_item, level), bootstrap=0)
    return {"alpha": f.get("alpha"), "kappa": f.get("kappa"), "percent_agreement": f.get("percent_agreement"),
            "n_units": f.get("n_units") or 0, "mark": mark(f.get("n_units") or 0, MIN_UNITS, "shared units")}


def _scoring(level: str, labels: dict) -> str:
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool)
                  for row in labels.values() for v in row.values())
    return "neg_rmse" if level in ("interval", "ratio", "ordinal") and numeric else "accuracy"


def annotator_report(annotator: ModelAnnotator, *, humans_records: list[dict] | None = None,
                     epsilon: float | None = None, min_instances: int | None = None) -> dict:
    """The dashboard's (and the CLI's) section of one model annotator: alpha / kappa of the humans with and without
    it, its agreement with each human and with the human majority, and the alt-test (each figure with its n)."""
    project = annotator.project
    humans_records = load_responses(project) if humans_records is None else humans_records
    mine = model_records(annotator)
    out: dict[str, Any] = {"annotator": annotator.pk, "name": annotator.name, "kind": annotator.kind,
                           "model_id": model_id(annotator), "n_answers": len(mine),
                           "n_human_coders": len({r["coder"] for r in humans_records}), "problems": []}
    try:
        rel_h = reliability_data(project, humans_records)
        rel_all = reliability_data(project, humans_records + mine)
    except Exception as exc:  # noqa: BLE001 - a task type that cannot read an answer must not break the page
        out["problems"].append(f"the answers could not be read for agreement: {exc}")
        return out
    if rel_h.get("unsupported"):
        out["problems"].append(rel_h["unsupported"])
        return out
    level = rel_all.get("level", "nominal")
    without, with_model = figures(rel_h, bootstrap=0), figures(rel_all, bootstrap=0)
    out["level"] = level
    out["without"] = {k: without.get(k) for k in ("alpha", "kappa", "percent_agreement", "n_units", "n_coders")}
    out["with"] = {k: with_model.get(k) for k in ("alpha", "kappa", "percent_agreement", "n_units", "n_coders")}
    out["without"]["mark"] = mark(without.get("n_units") or 0, MIN_UNITS, "pairable units")
    out["with"]["mark"] = mark(with_model.get("n_units") or 0, MIN_UNITS, "pairable units")

    labels = _labels_by_coder(rel_all)
    model_coder = f"worker:{annotator.worker_id}"
    model = labels.pop(model_coder, {})
    humans = labels
    unit_item = {str(u): i for u, i in zip(rel_all["units"], rel_all["unit_item"])}
    per_human = []
    for coder in sorted(humans):
        cells = {("human", u): v for u, v in humans[coder].items()}
        cells.update({("model", u): v for u, v in model.items()})
        shared = set(humans[coder]) & set(model)
        row = {"coder": coder, "n": len(shared), **_pair_figures(cells, unit_item, level)}
        row["accuracy"] = (sum(1 for u in shared if humans[coder][u] == model[u]) / len(shared)) if shared else None
        per_human.append(row)
    out["per_human"] = per_human
    majority = _majority(humans)
    shared = set(majority) & set(model)
    cells = {("majority", u): v for u, v in majority.items()}
    cells.update({("model", u): v for u, v in model.items()})
    out["majority"] = {"n": len(shared), **_pair_figures(cells, unit_item, level),
                       "accuracy": (sum(1 for u in shared if majority[u] == model[u]) / len(shared))
                       if shared else None}

    scoring = _scoring(level, humans)
    try:
        result = alt_test(humans, model, scoring=scoring,
                          epsilon=DEFAULT_EPSILON if epsilon is None else epsilon,
                          min_instances=MIN_INSTANCES if min_instances is None else min_instances)
        out["alt_test"] = result.as_dict()
    except AltTestInputError as exc:
        out["alt_test"] = None
        out["problems"].append(f"alt-test: {exc.field}: {exc.reason}")
    out["minimum"] = (f"the alt-test needs at least {MIN_HUMANS} humans, each sharing at least "
                      f"{MIN_INSTANCES if min_instances is None else min_instances} instances (annotated by 2+ humans "
                      f"and the model) with the model")
    return out


def report(project: Project, *, epsilon: float | None = None, min_instances: int | None = None) -> list[dict]:
    """:func:`annotator_report` of every model annotator of the project that has answers."""
    annotators = list(ModelAnnotator.objects.filter(project=project).order_by("id"))
    if not annotators:
        return []
    humans = load_responses(project)
    return [annotator_report(a, humans_records=humans, epsilon=epsilon, min_instances=min_instances)
            for a in annotators]
