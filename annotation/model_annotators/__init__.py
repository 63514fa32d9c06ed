"""Model annotators: registry models and LLMs answering a project's items beside the crowd (issue 24, items 1-2).

The one place that changes :class:`~annotation.models.ModelAnnotator` and its answers (views, the admin, the CLI and
the Celery tasks call these functions); the read side, :mod:`.reports` (failures, the agreement report of the dashboard
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


One module per concern: :mod:`.setup` (prompts, options, creating and changing an annotator), :mod:`.runs` (a run
and storing its answers), :mod:`.reports` (the read side); every name is re-exported here.
"""

from __future__ import annotations

from .reports import annotator_report, failures, model_id, model_records, report, summary  # noqa: F401
from .runs import max_attempts, run, runnable_items, set_sleep, store_answers  # noqa: F401
from .setup import (  # noqa: F401
    DEFAULT_BATCH,
    GENERIC_PROMPT,
    LLM_TASK,
    NAME_MAX,
    RAW_EXCERPT,
    REGISTRY_TASK,
    STALE_SECONDS,
    TEMPLATE_MAX,
    catalogue,
    check_base_url,
    create_annotator,
    default_prompt,
    is_operator_endpoint,
    key_env_name,
    prompt_context,
    render_prompt,
    set_included,
    start_run,
    update_prompt,
)
