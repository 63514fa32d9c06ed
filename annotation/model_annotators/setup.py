"""Model annotators, set-up: the prompt a new annotator starts with, the options an annotator may have (its
endpoint checked, :mod:`argora.outbound`), creating one, its prompt versions, including it and starting a run.
"""

from __future__ import annotations

import json
import uuid
from string import Template

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from argora import outbound
from argora.errors import FieldError

from .. import providers
from ..models import Item, ModelAnnotator, ModelPromptVersion, Project, Worker

REGISTRY_TASK = "ml.tasks.model_annotate"  # gpu queue (every ml.tasks.* is routed there)
LLM_TASK = "ml.llm_annotate"  # default queue: an HTTP client, no model in memory
DEFAULT_BATCH = {ModelAnnotator.Kind.REGISTRY: 64, ModelAnnotator.Kind.LLM: 4}
NAME_MAX = 100
TEMPLATE_MAX = 20000
RAW_EXCERPT = 500  # characters of a failed attempt's reply that are stored (and shown on the Failures page)
STALE_SECONDS = 600  # a "running" annotator without a batch for this long may be started again

# The prompt a new LLM annotator starts with and the answer format it is told (``$format``) come from the task type's
# side (:data:`annotation.providers.model_prompt`, filled by ml); without one, this generic prompt:
GENERIC_PROMPT = (
    "You annotate one item of an annotation project ($task_type).\nItem: $item_json\n\n"
    "Answer with one JSON object and nothing else, in the format a human annotator's answer has: "
    "$format\n"
)


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
    ctx: dict[str, str] = {
        k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in payload.items()
    }
    ctx.setdefault("text", "")
    ctx.setdefault("topic", "")
    ctx["task_type"] = project.task_type
    ctx["item_json"] = json.dumps(payload, ensure_ascii=False)
    labels = tt.labels(project) if hasattr(tt, "labels") else []
    ctx["labels"] = ", ".join(map(str, labels))
    cands = [c for c in (payload.get("candidates") or []) + (payload.get("more") or []) if isinstance(c, dict)]
    ctx["candidates"] = "\n".join(f"{c.get('id')}: {c.get('text', '')}" for c in cands)
    ctx["check_question"] = str(((item.payload or {}).get("check") or {}).get("question", ""))
    ctx["format"] = Template(
        _prompt_defaults(project).get("format") or "the task type's answer object"
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
        raise FieldError(
            "api_key_env",
            "the operator allows no key variable per annotator (ARGORA_LLM_KEY_PREFIX "
            "is empty): leave it empty to use ARGORA_LLM_API_KEY",
        )
    if not name.startswith(prefix) or name == prefix:
        raise FieldError(
            "api_key_env",
            f"a variable whose name starts with {prefix} (e.g. {prefix}OPENAI), which "
            f"the operator sets; empty: ARGORA_LLM_API_KEY",
        )
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
        known = {
            "base_url",
            "model",
            "api_key_env",
            "temperature",
            "timeout",
            "max_tokens",
            "batch_size",
            "max_attempts",
        }
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
        raise FieldError(
            "version", f"model version {version} is not a ready {' or '.join(kinds)} model for this project"
        )
    return {
        "registry_kind": offered[version]["kind"],
        "version": version,
        **{k: options[k] for k in ("batch_size", "max_attempts") if k in options},
    }


def catalogue(project: Project) -> list[dict]:
    """The ready registry models that can answer the project (``[]`` without the ml app)."""
    return list(providers.model_catalogue.get(project) or [])


@transaction.atomic
def create_annotator(
    project: Project,
    *,
    name: str,
    kind: str,
    options: dict | None = None,
    prompt_template: str | None = None,
    user=None,
) -> ModelAnnotator:
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
    worker = Worker.objects.create(source=Worker.Source.MODEL, external_id=f"{project.pk}:{uuid.uuid4().hex[:12]}")
    annotator = ModelAnnotator.objects.create(
        project=project,
        name=name,
        kind=kind,
        worker=worker,
        options=options,
        prompt_template=template,
        prompt_version=version,
        created_by=user,
    )
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
    ModelPromptVersion.objects.create(
        annotator=annotator, version=annotator.prompt_version, template=template, created_by=user
    )
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
        transaction.on_commit(
            lambda: current_app.send_task(
                name, args=[locked.pk], task_id=task_id, queue="default" if name == LLM_TASK else "gpu"
            )
        )
    return task_id
