"""The Arg-CTRL data pipeline (Arg-CTRL §4): raw documents -> training documents, one resumable chain.

Stages (:data:`STAGES`), each recorded in a :class:`ml.models.PipelineRun` row (``stages[stage]`` =
``{"status", "counts", "started_at", "finished_at"[, "run", "queued"]}``; ``stage`` = the first one not done):

1. ``import`` -- every ``*.txt`` file of the folder becomes a Document of the topic, its sentences split offline,
   fragments under three tokens and duplicates dropped (within the folder and against the database):
   :func:`corpus.importers.documents.parse_documents` + :func:`corpus.importers.writers.save`, the two halves of
   ``manage.py import_documents``. A document already stored is skipped, so a second pipeline over the same folder
   imports nothing new.
2. ``relevance`` -- Arg-CTRL §4 / App. B: a sentence is kept only when it contains a token of the topic name
   (function words left out) or one of the topic's synonyms, matched from a token boundary, case-insensitively,
   as a prefix ("uniform" matches "uniforms"): :class:`corpus.sentences.RelevanceFilter`. The synonyms are the
   stored topic's (``Topic.synonyms``), else Table 9's for a UKP topic, plus ``synonyms`` given to the pipeline;
   ``relevance=False`` keeps every sentence. Non-relevant sentences are never stored, so no corpus model needs a
   relevance mark and the next stage's selection (the topic) holds relevant sentences only. Import and relevance
   commit in ONE transaction together with both stages' state: a kill in between leaves nothing half-done.
3. ``argument`` -- a silver run of kind ``argument`` (:mod:`ml.silver`; the pair topic + sentence through the
   ``argument`` model) over the topic's sentences: predicted stance pro / con / none + probability per sentence,
   written as SilverLabel rows (never over ``Sentence.stance``).
4. ``aspects`` -- a silver run of kind ``tagger`` over the sentences the argument run predicted pro or con
   (``options["arguments_from_run"]``).
5. ``documents`` -- a release of kind ``aspect-docs`` (:mod:`ml.generation.exporters`) built from the two runs
   (``config["silver_runs"]``): stance = the sentence's own pro / con stance, else the predicted one; aspects = the
   tagger's spans; grouped by (topic, stance, aspect stem) into documents of ``min_args`` .. ``max_args`` arguments,
   at most ``max_per_topic_stance`` per topic and stance. The stage's counts say what every filter dropped.

Resuming: the run ids are stored in the pipeline row in the same transaction that creates the run, and a silver run
checkpoints every batch, so re-running the pipeline continues the unfinished run after its checkpoint (no sentence
labelled twice, none left out: the unique (run, sentence) constraint guards it) and then the later stages; a
finished pipeline adds nothing. With ``queue=True`` the silver stages are sent to the ``gpu`` workers
(``ml.tasks.silver`` / one task per shard) and :func:`advance` returns with the pipeline ``waiting``; calling it
again (the command again, or the admin action) moves on once the run is done.

Service functions: :func:`prepare` (validate the request, resolve model versions; :class:`PipelineError` names the
option), :func:`find_or_create`, :func:`next_stage`, :func:`run_stage`, :func:`advance`, :func:`summary`,
:func:`write_documents`.

``ARGORA_PIPELINE_STAGE_DELAY`` (seconds, tests only): sleep after each progress report of a silver stage, so a test
can kill the process while the stage runs.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from annotation.models import Project
from argora.progress import Progress, null_progress
from corpus.hashing import normalise
from corpus.importers import ImportFailed
from corpus.importers.documents import parse_documents, topic_synonyms
from corpus.importers.writers import save
from corpus.models import Release, Topic
from corpus.releases import ReleaseExists, build_release, release_file_path
from corpus.sentences import RelevanceFilter

from . import registry, silver
from .generation import corpora, exporters
from .models import ModelVersion, PipelineRun, SilverLabel, SilverRun

KIND = "argctrl"
STAGES = ("import", "relevance", "argument", "aspects", "documents")
DONE = "done"
DOCS_FILE = "aspect-docs.jsonl"
RELEASE_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,49}")
# the request keys a re-run must repeat unchanged (the CLI option that sets each, for errors)
REQUEST_OPTIONS = {
    "topic_name": "--topic-name",
    "synonyms": "--synonyms",
    "relevance": "--no-relevance-filter",
    "argument_version": "--argument-version",
    "argument_project": "--argument-project",
    "tagger_version": "--tagger-version",
    "tagger_project": "--tagger-project",
    "batch_size": "--batch-size",
    "shards": "--shards",
    "min_args": "--min-args",
    "max_args": "--max-args",
    "max_per_topic_stance": "--max-per-topic-stance",
    "seed": "--seed",
    "release_name": "--release-name",
    "release_version": "--release-version",
}


class PipelineError(ValueError):
    """A request the pipeline refuses; ``option`` names the CLI option (``--documents``...) at fault."""

    def __init__(self, option: str, message: str):
        self.option = option
        super().__init__(f"{option}: {message}")


# --- the request ---------------------------------------------------------------------------------------------


def _version(kind: str, version_id, project_slug, option: str) -> int:
    """The model version id a silver stage will use: the given one, else the active one of the project, else
    the global active one."""
    if version_id is not None:
        version = ModelVersion.objects.filter(pk=version_id).first()
        if version is None:
            raise PipelineError(option, f"no model version {version_id}")
        if version.kind != kind or version.status != ModelVersion.Status.READY or not version.artifact_path:
            raise PipelineError(
                option,
                f"model version {version.pk} is a {version.status} {version.kind!r} model, not a ready {kind!r} one",
            )
        return version.pk
    project = None
    if project_slug:
        project = Project.objects.filter(slug=project_slug).first()
        if project is None:
            raise PipelineError(option.replace("-version", "-project"), f"no project {project_slug!r}")
    version = registry.active_version(kind, project)
    if version is None:
        scope = f" for project {project_slug}" if project_slug else ""
        raise PipelineError(option, f"no active {kind!r} model{scope}; give one (manage.py train {kind} ...)")
    return version.pk


def _whole(value, option: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise PipelineError(option, f"expected a whole number >= {minimum}, got {value!r}")
    return value


def prepare(
    documents,
    topic: str,
    *,
    topic_name: str | None = None,
    synonyms=(),
    relevance: bool = True,
    argument_version: int | None = None,
    argument_project: str | None = None,
    tagger_version: int | None = None,
    tagger_project: str | None = None,
    batch_size: int = 64,
    shards: int | None = None,
    min_args: int = corpora.DEFAULT_MIN_ARGS,
    max_args: int = corpora.DEFAULT_MAX_ARGS,
    max_per_topic_stance: int = corpora.DEFAULT_MAX_PER_TOPIC_STANCE,
    seed: int = 13,
    release_name: str | None = None,
    release_version: str | None = None,
) -> dict:
    """Validate an ``argctrl`` request; returns ``{"documents", "topic", "request", "argument_version",
    "tagger_version"}`` (absolute folder, the topic as given, the options, the resolved model version ids).
    Raises :class:`PipelineError` naming the option."""
    folder = Path(documents or "")
    if not str(documents or "").strip() or not folder.is_dir():
        raise PipelineError("--documents", f"{documents!r} is not a folder")
    if not any(p.is_file() for p in folder.glob("*.txt")):
        raise PipelineError("--documents", f"{folder}: no *.txt files in this folder")
    topic = normalise(str(topic or ""))
    if not topic:
        raise PipelineError("--topic", "a topic is required")
    if isinstance(synonyms, str):
        synonyms = synonyms.split(",")
    synonyms = sorted({normalise(str(s)) for s in synonyms or () if normalise(str(s))})
    existing = _existing_topic(topic)
    name = existing.name if existing is not None else normalise(topic_name or "") or topic
    if existing is not None and topic_name and normalise(topic_name).lower() != existing.name.lower():
        raise PipelineError("--topic-name", f"topic {topic!r} exists already, named {existing.name!r}")
    if relevance:
        try:
            RelevanceFilter(name, list(topic_synonyms(name)) + synonyms)
        except ValueError as exc:
            raise PipelineError("--topic", str(exc)) from None
    _whole(batch_size, "--batch-size", 1)
    if shards is not None:
        _whole(shards, "--shards", 1)
    _whole(min_args, "--min-args", 1)
    _whole(max_args, "--max-args", 1)
    _whole(max_per_topic_stance, "--max-per-topic-stance", 1)
    _whole(seed, "--seed", 0)
    if min_args > max_args:
        raise PipelineError("--min-args", f"{min_args} is more than --max-args {max_args}")
    for option, value in (("--release-name", release_name), ("--release-version", release_version)):
        if value is not None and not RELEASE_PART.fullmatch(str(value)):
            raise PipelineError(option, f"{value!r}: letters, digits, '.', '_' and '-' (a folder name)")
    request = {
        "topic_name": name,
        "synonyms": synonyms,
        "relevance": bool(relevance),
        "argument_version": argument_version,
        "argument_project": argument_project or None,
        "tagger_version": tagger_version,
        "tagger_project": tagger_project or None,
        "batch_size": batch_size,
        "shards": shards,
        "min_args": min_args,
        "max_args": max_args,
        "max_per_topic_stance": max_per_topic_stance,
        "seed": seed,
        "release_name": release_name,
        "release_version": release_version,
    }
    return {
        "documents": str(folder.resolve()),
        "topic": topic,
        "request": request,
        "argument_version": _version("argument", argument_version, argument_project, "--argument-version"),
        "tagger_version": _version("tagger", tagger_version, tagger_project, "--tagger-version"),
    }


def _existing_topic(topic: str):
    try:
        return silver.resolve_topic(topic)
    except silver.SilverError:
        return None


def find_or_create(prepared: dict, *, new: bool = False) -> tuple[PipelineRun, bool]:
    """The latest pipeline of this folder and topic (``created`` False), or a new one. A re-run must repeat the
    request (a changed option raises :class:`PipelineError` naming it: pass ``new`` for another pipeline)."""
    with transaction.atomic():
        found = None
        if not new:
            found = (
                PipelineRun.objects.select_for_update()
                .filter(kind=KIND, documents=prepared["documents"], topic_name=prepared["topic"])
                .order_by("-pk")
                .first()
            )
        if found is not None:
            before = (found.options or {}).get("request", {})
            for key, option in REQUEST_OPTIONS.items():
                if before.get(key) != prepared["request"].get(key):
                    raise PipelineError(
                        option,
                        f"{prepared['request'].get(key)!r} differs from pipeline "
                        f"{found.pk}'s {before.get(key)!r}; repeat it, or pass --new to "
                        f"start another pipeline",
                    )
            return found, False
        pipeline = PipelineRun.objects.create(
            kind=KIND,
            documents=prepared["documents"],
            topic_name=prepared["topic"],
            options={
                "request": prepared["request"],
                "argument_version": prepared["argument_version"],
                "tagger_version": prepared["tagger_version"],
            },
            stage=STAGES[0],
            status=PipelineRun.Status.PENDING,
            stages={s: {"status": "pending", "counts": {}} for s in STAGES},
        )
    return pipeline, True


# --- state ---------------------------------------------------------------------------------------------------


def next_stage(pipeline: PipelineRun) -> str | None:
    """The first stage that is not done (None: the pipeline is finished)."""
    for stage in STAGES:
        if (pipeline.stages or {}).get(stage, {}).get("status") != DONE:
            return stage
    return None


def _set(
    pipeline: PipelineRun,
    stage: str,
    *,
    status: str | None = None,
    counts: dict | None = None,
    pipeline_status: str | None = None,
    error: str | None = None,
    **extra,
) -> PipelineRun:
    """Record one stage's state (and the pipeline's) with the row locked; returns the fresh row."""
    with transaction.atomic():
        locked = PipelineRun.objects.select_for_update().get(pk=pipeline.pk)
        stages = dict(locked.stages or {})
        state = dict(stages.get(stage) or {"status": "pending", "counts": {}})
        now = timezone.now().isoformat()
        if status is not None:
            if status == "running" and not state.get("started_at"):
                state["started_at"] = now
            if status == DONE:
                state["finished_at"] = now
            state["status"] = status
        if counts is not None:
            state["counts"] = counts
        state.update(extra)
        stages[stage] = state
        locked.stages = stages
        fields = ["stages", "stage", "status", "updated_at"]
        if error is not None:
            locked.error = error
            fields.append("error")
        locked.stage = next_stage(locked) or DONE
        locked.status = PipelineRun.Status.DONE if locked.stage == DONE else pipeline_status or locked.status
        locked.save(update_fields=fields)
    return locked


# --- stages --------------------------------------------------------------------------------------------------


def _stage_delay(progress: Progress) -> Progress:
    raw = os.environ.get("ARGORA_PIPELINE_STAGE_DELAY", "").strip()
    if not raw:
        return progress
    seconds = float(raw)

    def slow(done, total, description=""):
        progress(done, total, description)
        time.sleep(seconds)

    return slow


def _import_and_relevance(pipeline: PipelineRun, progress: Progress) -> PipelineRun:
    request = pipeline.options["request"]
    name = request["topic_name"]
    try:
        parsed = parse_documents(pipeline.documents, name, progress=progress, relevance_filter=False)
    except ImportFailed as exc:
        raise PipelineError("--documents", str(exc)) from None
    examined = len(parsed.sentences)
    relevance = {"examined": examined, "kept": examined, "dropped": 0, "filter": "off", "terms": []}
    if request["relevance"]:
        keep = RelevanceFilter(name, list(topic_synonyms(name)) + list(request["synonyms"]))
        parsed.sentences = [s for s in parsed.sentences if keep(s.text)]
        relevance.update(
            kept=len(parsed.sentences),
            dropped=examined - len(parsed.sentences),
            filter="topic tokens + synonyms (Arg-CTRL App. B)",
            terms=keep.terms,
        )
        parsed.dropped["not_relevant"] = examined - len(parsed.sentences)
    with transaction.atomic():
        result = save(parsed, progress=progress)
        topic = Topic.objects.get(name=parsed.topics[0])
        PipelineRun.objects.filter(pk=pipeline.pk).update(topic=topic)
        imported = {
            "documents": result.created.get("documents", 0),
            "sentences": result.created.get("sentences", 0),
            "documents_already_stored": len(list(Path(pipeline.documents).glob("*.txt"))) - len(parsed.documents),
            "skipped": result.skipped,
            "too_short": parsed.dropped.get("too_short", 0),
            "too_long": parsed.dropped.get("too_long", 0),
        }
        _set(pipeline, "import", status=DONE, counts=imported)
        return _set(pipeline, "relevance", status=DONE, counts=relevance)


def _silver_stage(pipeline: PipelineRun, stage: str, progress: Progress, queue: bool) -> PipelineRun:
    kind = "argument" if stage == "argument" else "tagger"
    field = "argument_run" if stage == "argument" else "aspect_run"
    request = pipeline.options["request"]
    with transaction.atomic():
        locked = PipelineRun.objects.select_for_update().get(pk=pipeline.pk)
        run = getattr(locked, field)
        if run is None:
            options = {"arguments_from_run": locked.argument_run_id} if stage == "aspects" else {}
            if request.get("shards"):
                options["shards"] = request["shards"]
            try:
                run = silver.start(
                    kind,
                    topic=locked.topic,
                    project=None,
                    version=ModelVersion.objects.get(pk=locked.options[f"{kind}_version"]),
                    batch_size=request["batch_size"],
                    options=options,
                    enqueue=queue,
                )
            except silver.SilverError as exc:
                raise PipelineError(f"--{kind}-version", str(exc)) from None
            setattr(locked, field, run)
            locked.save(update_fields=[field, "updated_at"])
            queued = queue
        else:
            queued = bool((locked.stages.get(stage) or {}).get("queued"))
    pipeline = _set(
        locked, stage, status="running", pipeline_status=PipelineRun.Status.RUNNING, run=run.pk, queued=queued
    )
    run.refresh_from_db()
    if run.status != SilverRun.Status.DONE:
        if queue:
            if run.status in (SilverRun.Status.FAILED, SilverRun.Status.CANCELLED) or not queued:
                silver.resume(run, enqueue=True)
            return _set(
                pipeline, stage, pipeline_status=PipelineRun.Status.WAITING, queued=True, counts=_run_counts(run)
            )
        if run.status in (SilverRun.Status.FAILED, SilverRun.Status.CANCELLED):
            silver.resume(run)
        try:
            silver.process(run.pk, progress=_stage_delay(progress))
        except Exception as exc:
            _set(
                pipeline,
                stage,
                status="failed",
                pipeline_status=PipelineRun.Status.FAILED,
                error=f"{stage}: silver run {run.pk}: {type(exc).__name__}: {exc}"[:10000],
            )
            raise
        run.refresh_from_db()
    if run.status != SilverRun.Status.DONE:
        return _set(
            pipeline,
            stage,
            pipeline_status=PipelineRun.Status.WAITING,
            counts=_run_counts(run),
            error=f"{stage}: silver run {run.pk} is {run.status} (another process may hold it)",
        )
    return _set(pipeline, stage, status=DONE, counts=_run_counts(run), error="")


def _run_counts(run: SilverRun) -> dict:
    out = {
        "run": run.pk,
        "run_status": run.status,
        "processed": run.processed,
        "total": run.total,
        "labelled": run.labelled,
        "labels": SilverLabel.objects.filter(run=run).count(),
    }
    if run.kind == "argument":
        for stance in ("pro", "con", "none"):
            out[stance] = SilverLabel.objects.filter(run=run, stance=stance).count()
    return out


def release_config(pipeline: PipelineRun) -> dict:
    """The ``aspect-docs`` release config of the documents stage."""
    r = pipeline.options["request"]
    return {
        "silver_runs": {"aspects": pipeline.aspect_run_id, "stance": pipeline.argument_run_id},
        "min_args": r["min_args"],
        "max_args": r["max_args"],
        "max_per_topic_stance": r["max_per_topic_stance"],
        "seed": r["seed"],
        "source": "silver",
    }


def release_id(pipeline: PipelineRun) -> tuple[str, str]:
    r = pipeline.options["request"]
    slug = pipeline.topic.slug if pipeline.topic_id else "topic"
    return r.get("release_name") or f"argctrl-{slug}"[:50], r.get("release_version") or f"p{pipeline.pk}"


def _documents(pipeline: PipelineRun, progress: Progress) -> PipelineRun:
    name, version = release_id(pipeline)
    config = release_config(pipeline)
    release = Release.objects.filter(name=name, version=version).first()
    if release is not None and release.status == Release.Status.PUBLISHED:
        if release.kind != "aspect-docs" or release.config.get("silver_runs") != config["silver_runs"]:
            raise PipelineError(
                "--release-name",
                f"release {name} {version} exists and was not built by pipeline "
                f"{pipeline.pk}; choose another --release-name / --release-version",
            )
    else:
        pipeline = _set(pipeline, "documents", status="running", pipeline_status=PipelineRun.Status.RUNNING)
        try:
            release = build_release(name, version, kind="aspect-docs", config=config, progress=progress)
        except ReleaseExists as exc:
            raise PipelineError("--release-version", str(exc)) from None
    PipelineRun.objects.filter(pk=pipeline.pk).update(release=release)
    # the figures of every filter (the release stores the documents; the counts are recomputed from the same runs)
    stats = exporters.build_docs(exporters.prepare_aspect_docs(dict(config))).stats
    counts = {
        "release": release.pk,
        "name": name,
        "version": version,
        "documents": stats["documents"],
        "arguments": stats["arguments"],
        "rows": stats["rows"],
        "dropped": stats["dropped"],
        "per_topic_stance": stats["per_topic_stance"],
    }
    return _set(pipeline, "documents", status=DONE, counts=counts, error="")


def run_stage(
    pipeline: PipelineRun, stage: str, *, progress: Progress = null_progress, queue: bool = False
) -> PipelineRun:
    """Run (or continue) one stage; returns the fresh row. Import and relevance run together (one transaction)."""
    pipeline = PipelineRun.objects.select_related("topic").get(pk=pipeline.pk)
    if (pipeline.stages.get(stage) or {}).get("status") == DONE:
        return pipeline
    if stage in ("import", "relevance"):
        return _import_and_relevance(pipeline, progress)
    if stage in ("argument", "aspects"):
        return _silver_stage(pipeline, stage, progress, queue)
    if stage == "documents":
        return _documents(pipeline, progress)
    raise PipelineError("stage", f"unknown stage {stage!r}")


def advance(
    pipeline: PipelineRun, *, queue: bool = False, progress_for: Callable[[str], Progress] | None = None
) -> PipelineRun:
    """Run stages from the first unfinished one until the pipeline is done, or waits for a queued silver run."""
    while True:
        stage = next_stage(pipeline)
        if stage is None:
            return pipeline
        pipeline = run_stage(
            pipeline, stage, progress=progress_for(stage) if progress_for else null_progress, queue=queue
        )
        if (pipeline.stages.get(stage) or {}).get("status") != DONE:
            return pipeline


def summary(pipeline: PipelineRun) -> dict:
    pipeline.refresh_from_db()
    return {
        "pipeline": pipeline.pk,
        "kind": pipeline.kind,
        "status": pipeline.status,
        "stage": pipeline.stage,
        "documents": pipeline.documents,
        "topic": pipeline.topic.name if pipeline.topic_id else pipeline.topic_name,
        "argument_run": pipeline.argument_run_id,
        "aspect_run": pipeline.aspect_run_id,
        "release": pipeline.release_id,
        "error": pipeline.error,
        "stages": {s: dict((pipeline.stages or {}).get(s) or {}) for s in STAGES},
    }


def write_documents(pipeline: PipelineRun, out) -> int:
    """Copy the pipeline's released ``aspect-docs.jsonl`` to ``out`` (through a temporary file; rows returned)."""
    if pipeline.release_id is None:
        raise PipelineError("--out", f"pipeline {pipeline.pk} has no documents release yet")
    source = release_file_path(pipeline.release, DOCS_FILE)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.")
    try:
        with os.fdopen(fd, "wb") as fh, open(source, "rb") as src:
            shutil.copyfileobj(src, fh)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    with open(out, "rb") as fh:
        return sum(1 for _ in fh)
