"""Generation runs on workers (issue 37, point 5): the request queues a run, a Celery worker fills it.

Every state change of a queued run is one function here; the API, the pages and the task call them:

* :func:`start_run` (web request): checks the request as :func:`ml.generation.generate.run_generation` does
  (mode, inputs, decoding, options, the model version and its kind: ``GenerationError`` naming the field, nothing
  stored or queued), stores the run at once with ``status "queued"`` (``run.json`` + an empty ``outputs.jsonl``
  under ``ARTIFACT_ROOT/generation/runs/<id>/``) and sends ``ml.tasks.generate`` (the ``gpu`` queue,
  :mod:`ml.generation.tasks`) under a fresh task id kept in the run (``task_id``: its job page ``/jobs/<id>/``).
* :func:`execute_run` (the worker): ``running``; loads the model (cached per worker process by
  :func:`ml.registry.load_model`, so a warm worker answers at once), generates input after input and after each
  one replaces ``outputs.jsonl`` atomically, then counts it in ``run.json`` (``inputs_done``, ``n_outputs``;
  written after the outputs, so a reader never sees a count above the rows); ``done``, or ``failed`` with
  ``error``. A redelivered task (worker lost) goes on after the last stored input; a done or failed run returns.
* :func:`start_training` (the generation page's "Train" form): ``ml.tasks.train`` of kind ``generator`` /
  ``seq2seq`` on a published release of the right kind, activated when ready; returns the job id.

Who reads a run: its creator and superusers (:func:`visible`, asking
:func:`annotation.access.owner_or_superuser`); runs made on the command line (no creator): superusers.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from django.urls import reverse
from kombu.exceptions import OperationalError

from annotation import access
from argora.jobs import result_link
from argora.progress import null_progress
from corpus.models import Release
from corpus.releases import release_path
from ml import registry
from ml.tasks import train as train_task

from . import generate as gen

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
FINISHED = (DONE, FAILED)


class QueueUnavailable(RuntimeError):
    """The task could not be sent (the broker did not answer); the run is marked failed."""


def _now() -> str:
    return datetime.now(UTC).isoformat()


def visible(user, run: dict) -> bool:
    """May ``user`` read ``run`` (a ``run.json`` dict)?"""
    return access.owner_or_superuser(user, run.get("created_by"))


def runs_for(user, limit: int = 50) -> list[dict]:
    """The newest runs ``user`` may read."""
    return gen.list_runs(limit, keep=lambda meta: visible(user, meta))


def check_request(
    mode: str, inputs: list, *, version=None, kind: str | None = None, decoding=None, options=None
) -> tuple:
    """``(version, decoding, options)`` of a request that can be served; ``GenerationError("<field>: reason")``."""
    if mode not in gen.MODES:
        raise gen.GenerationError(f"mode: {mode!r} is not one of {', '.join(gen.MODES)}")
    decoding, options = gen.clean_decoding(decoding), gen.clean_options(options)
    gen.check_inputs(mode, inputs)
    version = gen.resolve_version(version, kind=kind or gen.MODE_KINDS.get(mode))
    if version.kind != gen.MODE_KINDS[mode]:
        raise gen.GenerationError(
            f"model_version: mode {mode} needs a {gen.MODE_KINDS[mode]} model; version {version.pk} is a {version.kind}"
        )
    return version, decoding, options


def start_run(
    mode: str,
    inputs: list,
    *,
    user=None,
    version=None,
    kind: str | None = None,
    decoding=None,
    options=None,
    references: list[dict] | None = None,
    name: str = "",
) -> dict:
    """Check the request, store the run as queued and send its task (module docstring). Returns the run's
    ``run.json`` dict (``id``, ``status``, ``task_id``, ...)."""
    from .tasks import generate as generate_task  # cycle: the task module imports this one

    version, decoding, options = check_request(
        mode, inputs, version=version, kind=kind, decoding=decoding, options=options
    )
    inputs = list(inputs)
    task_id = str(uuid.uuid4())
    config = {
        "decoding": decoding,
        "options": options,
        "inputs": inputs,
        "model": None,
        "references_source": "given" if references else None,
    }
    meta = gen.create_run(
        mode=mode,
        outputs=[],
        version=version,
        config=config,
        references=references,
        name=name,
        status=QUEUED,
        created_by=getattr(user, "pk", None),
        extra={"task_id": task_id, "n_inputs": len(inputs), "inputs_done": 0, "error": ""},
    )
    try:
        generate_task.apply_async(args=[meta["id"]], task_id=task_id)
    except OperationalError as exc:  # the broker did not answer: say so, leave no run waiting forever
        gen.update_run(
            meta["id"], status=FAILED, error=f"queue: the task could not be sent ({exc})", finished_at=_now()
        )
        raise QueueUnavailable(f"queue: the generation task could not be sent: {exc}") from exc
    return meta


def execute_run(run_id: str, *, progress=null_progress, task_id: str = "") -> dict:
    """Fill a queued run (module docstring); the worker's side. Returns a summary with a link to the run page."""
    run = gen.get_run(run_id)
    if run["status"] not in FINISHED:
        try:
            _generate(run, progress)
        except Exception as exc:
            gen.update_run(run_id, status=FAILED, error=f"{type(exc).__name__}: {exc}"[:2000], finished_at=_now())
            raise
        gen.update_run(run_id, status=DONE, finished_at=_now())
    run = gen.get_run(run_id)
    if run["status"] == FAILED:
        raise gen.GenerationError(run.get("error") or "the run failed")
    return {
        "run": run_id,
        "mode": run["mode"],
        "inputs": run.get("n_inputs"),
        "outputs": len(run["outputs"]),
        **result_link(reverse("ml:generation-run", args=[run_id]), f"Generation run {run_id}"),
    }


def _generate(run: dict, progress) -> None:
    run_id, mode, config = run["id"], run["mode"], run.get("config") or {}
    inputs = list(config.get("inputs") or [])
    outputs = list(run["outputs"])
    start = int(run.get("inputs_done") or 0)
    gen.update_run(run_id, status=RUNNING, started_at=run.get("started_at") or _now())
    progress(start, len(inputs), "loading the model")
    version = gen.resolve_version(run.get("model_version"))
    try:
        generator = registry.load_model(version)
    except (OSError, ValueError) as exc:
        raise gen.GenerationError(f"model_version: version {version.pk} could not be loaded: {exc}") from None
    if not run.get("references_rows") and mode in ("arguments", "counter"):
        references = generator.dev_arguments()  # held out from training: fair references
        if references:
            gen.write_references(run_id, references)
            config = dict(config, references_source="model dev split")
            gen.update_run(run_id, references=len(references))
    gen.update_run(run_id, config=dict(config, model=generator.info))
    decoding, options = config.get("decoding") or {}, config.get("options") or {}
    for index in range(start, len(inputs)):
        rows = gen.generate_outputs(generator, mode, [inputs[index]], decoding, options=options)
        for row in rows:
            outputs.append({"id": len(outputs), **row, "input": index})
        gen.write_outputs(run_id, outputs)
        gen.update_run(run_id, inputs_done=index + 1, n_outputs=len(outputs))
        progress(index + 1, len(inputs), "generating")


def public(run: dict) -> dict:
    """What the API and the run page's poll answer: the run without its reference rows, with ``progress``
    (``done``, ``total``, ``percent``) and the links of its page and job."""
    out = {k: v for k, v in run.items() if k != "references_rows"}
    total = int(run.get("n_inputs") or 0)
    done = total if run.get("status") == DONE else int(run.get("inputs_done") or 0)
    out["progress"] = {"done": done, "total": total, "percent": round(100.0 * done / total, 1) if total else None}
    out["url"] = reverse("ml:generation-run", args=[run["id"]])
    out["job"] = reverse("job-detail", args=[run["task_id"]]) if run.get("task_id") else None
    return out


# --- training a generator from a release (the generation page's form) -----------------------------------------

RELEASE_KINDS = {"aspect-docs": "generator", "debate-paths": "seq2seq", "argu-inputs": "seq2seq"}
RELEASE_FILES = {"aspect-docs": "aspect-docs.jsonl", "argu-inputs": "argu-inputs.jsonl"}
DEBATE_STRATEGIES = ("complex", "supportive", "contradicting", "multi-turn")
# "tiny": a 2-layer BERT from a config (seconds on a CPU; a smoke test); "packaged": warm-started from the packaged
# all-MiniLM-L6-v2 encoder (the default base model of both kinds)
SIZES = {
    "tiny": {
        "from_config": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128}
    },
    "packaged": {},
}
TRAIN_DEFAULTS = {"max_steps": 200, "size": "tiny", "strategy": "complex"}


def training_releases(user):
    """The published releases of a generation corpus kind that ``user`` may read, newest first."""
    return access.visible_releases(
        user, Release.objects.filter(kind__in=RELEASE_KINDS, status=Release.Status.PUBLISHED)
    )


def start_training(
    user, *, release, kind: str, size: str = "tiny", max_steps: int = 200, strategy: str = "complex", seed: int = 13
) -> str:
    """Queue ``ml.tasks.train`` for ``kind`` on ``release`` (one the user may read: :func:`training_releases`),
    activated when ready; returns the job id. ``GenerationError("<field>: reason")`` for a request that cannot be
    trained (nothing queued)."""
    if release is None or not training_releases(user).filter(pk=release.pk).exists():
        raise gen.GenerationError("release: choose a published aspect-docs, debate-paths or argu-inputs release")
    if RELEASE_KINDS[release.kind] != kind:
        raise gen.GenerationError(
            f"kind: a {release.kind} release trains a {RELEASE_KINDS[release.kind]}, not a {kind}"
        )
    if size not in SIZES:
        raise gen.GenerationError(f"size: {size!r} is not one of {', '.join(SIZES)}")
    if not isinstance(max_steps, int) or not 1 <= max_steps <= 100_000:
        raise gen.GenerationError("max_steps: a whole number between 1 and 100000")
    folder = release_path(release)
    names = set(release.files.values_list("name", flat=True))
    dev_data = None
    if release.kind == "debate-paths":
        if strategy not in DEBATE_STRATEGIES:
            raise gen.GenerationError(f"strategy: {strategy!r} is not one of {', '.join(DEBATE_STRATEGIES)}")
        train_name, dev_name = f"{strategy}-train.jsonl", f"{strategy}-dev.jsonl"
        if train_name not in names or dev_name not in names:
            raise gen.GenerationError(f"strategy: release {release} has no {strategy} train and dev files")
        data, dev_data = folder / train_name, folder / dev_name
    else:
        name = RELEASE_FILES[release.kind]
        if name not in names:
            raise gen.GenerationError(f"release: {release} has no {name}")
        data = folder / name
    hyperparameters = dict(SIZES[size], max_steps=max_steps)
    task_id = str(uuid.uuid4())
    train_task.apply_async(
        kwargs={
            "kind": kind,
            "data": str(data),
            "dev_data": str(dev_data) if dev_data else None,
            "seed": seed,
            "hyperparameters": hyperparameters,
            "activate": "always",
        },
        task_id=task_id,
    )
    return task_id
