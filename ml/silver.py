"""Silver annotation: run an active model over a corpus selection and store its predictions as SilverLabel rows.

Arg-CTRL §4 ("Aspect Detection": the tagger over millions of sentences; the argument / stance classifier before it)
and ArgU §3.2 (ArgSpanScheme over the parallel corpus, §3.2.4 post-processing). Predictions are kept apart from
gold/crowd labels (:class:`ml.models.SilverLabel`: a silver label never changes ``Sentence.stance`` or any human
label) and can be published as their own release (``silver`` kind, :mod:`ml.exporters`).

Kinds: every trainer kind whose spec fills ``silver`` (:class:`ml.registry.SilverSpec`, :func:`silver_spec`);
this module names none. The spec's ``predict(model, batch)`` turns a :class:`Batch` of sentences (texts, topic names,
the topics' fact variables) into predictions: spans (+ scheme probabilities), or -- a kind with ``stances`` -- the
predicted stance ``pro`` / ``con`` / ``none`` with its probability (``SilverLabel.stance``, ``stance_probability``,
``stance_probs``; its spans stay empty). :func:`predicted_stances` reads stances back;
``options["arguments_from_run"] = <run id>`` selects only the sentences a stance run predicted pro or con (a span
run over "arguments predicted by run X"). The spec's ``release_row`` adds the kind's own fields to a release row.

Flow (:func:`start` -> :func:`process` in the CLI or ``ml.tasks.silver``, or one ``ml.tasks.silver_shard`` task per
shard on the ``gpu`` queue, a Celery ``chord`` finalised by ``ml.silver_finalise``):

- selection: a topic, a source (``Sentence.source``), both, everything, or ``arguments_from_run``;
  ``arguments_only`` skips (gold) stance ``none``;
- shards: :func:`start` splits the selection into ``options["shards"]`` (or ``ceil(n / shard_size)``) contiguous
  Sentence id ranges of about equal size (:class:`ml.models.SilverShard`; one shard by default). Each shard is
  checkpointed like a whole run: its sentences are streamed in id order after its checkpoint and predicted in batches
  of ``batch_size``; each batch's labels, the shard's checkpoint (``last_sentence_id``), its counters and scheme sums
  are committed in ONE transaction with the shard row locked (the run's live counters move in the same transaction),
  so a crash loses at most the batch in flight, a resumed or redelivered shard starts after its checkpoint, and the
  unique (run, sentence) constraint guards the rest. A done shard's task returns at once;
- :func:`finalise` (the chord callback, and every shard when it ends, so a run also finishes when its chord never
  fires, e.g. after a shard was requeued by hand or by recovery) sums the shard counters and scheme sums into the
  run and marks it done once every shard is done (failed / cancelled when none is left to run). Idempotent;
- the run's model is the active version of the kind for the project (or the global one) when it starts;
- ``cancel_requested`` is checked between batches (:func:`cancel`); progress goes to ``progress(done, total)``;
- every committed batch refreshes the shard's and the run's ``heartbeat_at``. :func:`recover_interrupted` (the beat
  task ``ml.recover_interrupted``, also ``manage.py silver recover``) finds shards, and runs, left ``running`` with
  no heartbeat for ``older_than`` seconds (default 4 x the model heartbeat, or ``ARGORA_SILVER_STALE_SECONDS``),
  marks them ``failed`` ("interrupted: ...") and with ``requeue`` sends them to a worker again, continuing after
  their checkpoint. A live but slow worker that is recovered by mistake loses nothing: the checkpoint check in each
  batch's transaction stops whichever of the two is behind. On Redis the broker also redelivers a killed worker's
  unacknowledged shard message after its visibility timeout (``ARGORA_BROKER_VISIBILITY_TIMEOUT``, settings).

Filters (``options``, applied when rows are read back for a release, :func:`silver_rows`, since they need the
scheme means over the whole run): ``scheme_ratio`` (default 0.2): keep a predicted scheme only if its
probability is >= ratio x that scheme's mean probability over the run (ArgU §3.2.4); ``discard_others`` (default
true): drop sentences whose top scheme is "Others"; ``min_confidence``: drop spans below it;
``drop_unlabelled``: drop sentences without spans and schemes (argument runs: without a pro / con stance).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Iterator
from datetime import timedelta

from celery import chord, group
from django.db import transaction
from django.db.models import F, Sum, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from argora.progress import Progress, null_progress
from corpus.models import FactVariable, Sentence, Stance, Topic

from . import registry
from .errors import TrainerError
from .models import SilverLabel, SilverRun, SilverShard
from .registry import SilverSpec
from .versions import HEARTBEAT_SECONDS

log = logging.getLogger(__name__)

ARGUMENT_STANCES = ("pro", "con")  # a stance run's sentence is "labelled" (an argument) when predicted one of these
DEFAULT_OPTIONS = {
    "batch_size": 64,
    "arguments_only": False,
    "scheme_ratio": 0.2,
    "discard_others": True,
    "min_confidence": 0.0,
    "drop_unlabelled": False,
    "scheme_threshold": None,
}
OTHERS = "Others"
Status = SilverRun.Status
UNFINISHED = (Status.PENDING, Status.RUNNING, Status.FAILED, Status.CANCELLED)


class SilverError(ValueError):
    """A request the silver service refuses (unknown kind, no active model, bad selection...)."""


def spec_of(kind: str) -> SilverSpec | None:
    """The kind's :class:`~ml.registry.SilverSpec`, or None (an unknown kind, or one whose model annotates nothing)."""
    try:
        return registry.get_trainer(kind).silver
    except TrainerError:
        return None


def silver_spec(kind: str) -> SilverSpec:
    """The kind's :class:`~ml.registry.SilverSpec`; :class:`SilverError` for a kind that cannot annotate sentences."""
    spec = spec_of(kind)
    if spec is None:
        raise SilverError(f"kind: {kind!r} is not a silver kind ({', '.join(registry.silver_kinds())})")
    return spec


# --- selection -------------------------------------------------------------------------------------


def resolve_topic(topic):
    if topic is None or topic == "" or hasattr(topic, "pk"):
        return topic or None
    found = Topic.objects.filter(slug=str(topic)).first() or Topic.objects.filter(name__iexact=str(topic)).first()
    if found is None and str(topic).isdigit():
        found = Topic.objects.filter(pk=int(topic)).first()
    if found is None:
        raise SilverError(f"topic: no topic {topic!r} (give its slug, name or id)")
    return found


def base_selection(run):
    """Every sentence the run selects (no checkpoint), unordered."""
    qs = Sentence.objects.all()
    if run.topic_id:
        qs = qs.filter(topic_id=run.topic_id)
    if run.source:
        qs = qs.filter(source=run.source)
    opts = run.options or {}
    if opts.get("arguments_only"):
        qs = qs.exclude(stance=Stance.NONE)
    if opts.get("arguments_from_run"):
        qs = qs.filter(
            pk__in=SilverLabel.objects.filter(
                run_id=int(opts["arguments_from_run"]), stance__in=ARGUMENT_STANCES
            ).values("sentence_id")
        )
    return qs


def selection(run, shard=None):
    """The run's (or one shard's) sentences after its checkpoint, in id order."""
    qs = base_selection(run)
    if shard is None:
        return qs.filter(pk__gt=run.last_sentence_id).order_by("pk")
    return qs.filter(pk__gt=max(shard.last_sentence_id, shard.first_id - 1), pk__lte=shard.last_id).order_by("pk")


def plan_shards(run, *, shards: int = 1, shard_size: int | None = None) -> list[SilverShard]:
    """Split the run's selection into contiguous id ranges of about equal size (rows, not yet saved)."""
    qs = base_selection(run)
    n = qs.count()
    if shard_size:
        shards = max(1, math.ceil(n / int(shard_size)))
    shards = max(1, min(int(shards), n or 1))
    if n == 0:
        return [SilverShard(run=run, index=0, first_id=1, last_id=0, last_sentence_id=0, total=0)]
    if shards == 1:
        ids = qs.order_by("pk").values_list("pk", flat=True)
        first, last = ids.first(), qs.order_by("-pk").values_list("pk", flat=True).first()
        return [SilverShard(run=run, index=0, first_id=first, last_id=last, last_sentence_id=first - 1, total=n)]
    out: list[SilverShard] = []
    size, start, count, prev = n / shards, None, 0, None
    for i, pk in enumerate(qs.order_by("pk").values_list("pk", flat=True).iterator(chunk_size=10000)):
        if start is None:
            start = pk
        count += 1
        prev = pk
        if i + 1 >= round(size * (len(out) + 1)):
            out.append(
                SilverShard(
                    run=run, index=len(out), first_id=start, last_id=pk, last_sentence_id=start - 1, total=count
                )
            )
            start, count = None, 0
    if start is not None:  # rows added since the count
        out.append(
            SilverShard(run=run, index=len(out), first_id=start, last_id=prev, last_sentence_id=start - 1, total=count)
        )
    return out


def ensure_shards(run) -> list[SilverShard]:
    """The run's shards; a run from before sharding gets one shard carrying its checkpoint and counters."""
    shards = list(run.shards.order_by("index"))
    if shards:
        return shards
    with transaction.atomic():
        locked = SilverRun.objects.select_for_update().get(pk=run.pk)
        shards = list(locked.shards.order_by("index"))
        if shards:
            return shards
        [shard] = plan_shards(locked)
        if locked.processed:
            shard.first_id = min(shard.first_id, locked.last_sentence_id + 1) if shard.total else 1
            shard.last_id = max(shard.last_id, locked.last_sentence_id)
            shard.last_sentence_id = locked.last_sentence_id
            shard.processed, shard.labelled, shard.batches = locked.processed, locked.labelled, locked.batches
            shard.scheme_sums = dict(locked.scheme_sums or {})
            shard.total = locked.processed + selection(locked).count()
        shard.save()
    return [shard]


# --- actions ---------------------------------------------------------------------------------------


def start(
    kind: str,
    *,
    topic=None,
    source: str = "",
    all_sentences: bool = False,
    project=None,
    version=None,
    batch_size: int = 64,
    options: dict | None = None,
    shards: int | None = None,
    shard_size: int | None = None,
    enqueue: bool = False,
):
    """Create a pending run with the active ``kind`` model (or ``version``), split into shards; enqueue it on commit
    if asked. ``shards`` / ``shard_size`` (also read from ``options``): how many id ranges (default 1)."""
    silver_spec(kind)
    topic = resolve_topic(topic)
    opts = dict(DEFAULT_OPTIONS)
    opts.update(options or {})
    shards = shards if shards is not None else opts.pop("shards", None)
    shard_size = shard_size if shard_size is not None else opts.pop("shard_size", None)
    opts.pop("shards", None), opts.pop("shard_size", None)
    from_run = opts.get("arguments_from_run")
    if from_run not in (None, "", 0):
        try:
            from_run = int(from_run)
        except (TypeError, ValueError):
            raise SilverError(f"arguments_from_run: {from_run!r} is not a run id") from None
        source_run = SilverRun.objects.filter(pk=from_run).first()
        source_spec = spec_of(source_run.kind) if source_run is not None else None
        if source_spec is None or not source_spec.stances:
            raise SilverError(
                f"arguments_from_run: no argument silver run {from_run} (a run of a kind that predicts stances)"
            )
        opts["arguments_from_run"] = from_run
    else:
        opts.pop("arguments_from_run", None)
        from_run = None
    if topic is None and not source and not all_sentences and from_run is None:
        raise SilverError("selection: give a topic, a source, an argument run, or all sentences explicitly")
    if version is None:
        version = registry.active_version(kind, project)
        if version is None:
            raise SilverError(
                f"kind: no active {kind!r} model{' for project ' + project.slug if project else ''} "
                f"(train one: manage.py train {kind} --data FILE)"
            )
    elif version.kind != kind or not version.artifact_path:
        raise SilverError(
            f"version: model version {version.pk} is a {version.status} {version.kind!r} model, "
            f"not a ready {kind!r} one"
        )
    if int(batch_size) < 1:
        raise SilverError("batch_size: must be at least 1")
    for name, value in (("shards", shards), ("shard_size", shard_size)):
        if value is not None and int(value) < 1:
            raise SilverError(f"{name}: must be at least 1")
    opts["batch_size"] = int(batch_size)
    with transaction.atomic():
        run = SilverRun.objects.create(
            kind=kind, model_version=version, project=project, topic=topic, source=source or "", options=opts
        )
        planned = plan_shards(run, shards=int(shards or 1), shard_size=int(shard_size) if shard_size else None)
        SilverShard.objects.bulk_create(planned)
        run.total = sum(s.total for s in planned)
        run.options = dict(opts, shards=len(planned))
        run.save(update_fields=["total", "options"])
    if enqueue:
        _enqueue(run)
    return run


def _enqueue(run) -> None:
    """One ``ml.tasks.silver`` task for a one-shard run; a chord of ``ml.tasks.silver_shard`` tasks (one per
    unfinished shard, ``gpu`` queue) finalised by ``ml.silver_finalise`` otherwise. Sent on commit."""
    from . import tasks  # cycle: ml.tasks imports this module

    if run.shards.count() <= 1:
        transaction.on_commit(lambda: tasks.silver.apply_async(args=[run.pk]))
        return
    todo = list(run.shards.exclude(status=Status.DONE).order_by("index").values_list("index", flat=True))
    if not todo:
        transaction.on_commit(lambda: tasks.silver_finalise.apply_async(args=[run.pk]))
        return
    header = group(tasks.silver_shard.s(run.pk, i) for i in todo)
    transaction.on_commit(lambda: chord(header)(tasks.silver_finalise.si(run.pk)))


def requeue_shard(shard) -> None:
    """Send one shard again (no chord: the shard finalises the run itself when it is the last)."""
    from . import tasks  # cycle: ml.tasks imports this module

    run_id, index = shard.run_id, shard.index
    transaction.on_commit(lambda: tasks.silver_shard.apply_async(args=[run_id, index]))


def resume(run, *, enqueue: bool = False):
    """Make a failed / cancelled / interrupted run pending again (each shard continues after its checkpoint)."""
    run = SilverRun.objects.get(pk=run.pk)
    if run.status == Status.DONE:
        raise SilverError(f"run: silver run {run.pk} is done; start a new one")
    ensure_shards(run)
    with transaction.atomic():  # shards first, then the run: the lock order of a batch commit
        SilverShard.objects.filter(run_id=run.pk).exclude(status=Status.DONE).update(status=Status.PENDING, error="")
        run = SilverRun.objects.select_for_update().get(pk=run.pk)
        if run.status == Status.DONE:
            raise SilverError(f"run: silver run {run.pk} is done; start a new one")
        run.status, run.cancel_requested, run.error = Status.PENDING, False, ""
        run.save(update_fields=["status", "cancel_requested", "error"])
    if enqueue:
        _enqueue(run)
    return run


def cancel(run):
    """Ask a run to stop after its current batches (a run that is not running is cancelled at once)."""
    with transaction.atomic():
        run = SilverRun.objects.select_for_update().get(pk=run.pk)
        if run.status in (Status.DONE, Status.CANCELLED):
            return run
        run.cancel_requested = True
        fields = ["cancel_requested"]
        if run.status != Status.RUNNING:
            run.status, run.finished_at = Status.CANCELLED, timezone.now()
            fields += ["status", "finished_at"]
        run.save(update_fields=fields)
    if run.status == Status.CANCELLED:
        SilverShard.objects.filter(run_id=run.pk).exclude(status__in=(Status.DONE, Status.RUNNING)).update(
            status=Status.CANCELLED
        )
    return run


def stale_seconds() -> float:
    """How long a ``running`` shard / run may go without a heartbeat before :func:`recover_interrupted` takes it."""
    raw = os.environ.get("ARGORA_SILVER_STALE_SECONDS", "").strip()
    return float(raw) if raw else 4 * HEARTBEAT_SECONDS


def recover_interrupted(*, older_than: float | None = None, requeue: bool = False) -> list[dict]:
    """Runs and shards still ``running`` with no heartbeat (last committed batch, or the start) for ``older_than``
    seconds.

    A run is taken whole when none of its shards is pending or running with a fresh heartbeat (every worker on it
    is gone): it is marked ``failed`` with ``error = "interrupted: ..."`` (one guarded UPDATE, so two sweeps cannot
    both take it) and with ``requeue`` resumed (pending again) and enqueued on commit; entries
    ``{"run", "kind", "processed", "last_sentence_id", "requeued"}``. Otherwise each stale shard of a live run is
    marked failed the same way and with ``requeue`` sent again alone (``ml.tasks.silver_shard``); entries add
    ``"shard"``. Either continues after its checkpoint."""
    older_than = stale_seconds() if older_than is None else float(older_than)
    cutoff = timezone.now() - timedelta(seconds=older_than)
    found, taken_runs = [], set()
    for run in SilverRun.objects.filter(status=Status.RUNNING).order_by("pk"):
        last = run.heartbeat_at or run.started_at or run.created_at
        if last > cutoff:
            continue
        shards = list(run.shards.all())
        if any(
            (s.heartbeat_at or s.started_at or run.created_at) > cutoff for s in shards if s.status == Status.RUNNING
        ):
            continue  # a worker is on one of its shards: stale shards are taken one by one below
        if len(shards) > 1 and any(s.status == Status.PENDING for s in shards):
            continue  # shards still wait in the queue for a worker
        taken = SilverRun.objects.filter(pk=run.pk, status=Status.RUNNING, heartbeat_at=run.heartbeat_at).update(
            status=Status.FAILED, error=f"interrupted: no sign of life since {last.isoformat()}"
        )
        if not taken:  # it moved on (a batch committed) or another sweep took it
            continue
        taken_runs.add(run.pk)
        SilverShard.objects.filter(run_id=run.pk, status=Status.RUNNING).update(
            status=Status.FAILED, error=f"interrupted: no sign of life since {last.isoformat()}"
        )
        requeued = False
        if requeue:
            try:
                resume(run, enqueue=True)
                requeued = True
            except SilverError as exc:  # pragma: no cover - a done run is never "running"
                log.warning("silver run %s: not requeued: %s", run.pk, exc)
        log.warning(
            "silver run %s: interrupted (no heartbeat since %s)%s",
            run.pk,
            last.isoformat(),
            "; requeued" if requeued else "",
        )
        found.append(
            {
                "run": run.pk,
                "kind": run.kind,
                "processed": run.processed,
                "last_sentence_id": run.last_sentence_id,
                "requeued": requeued,
            }
        )
    for shard in SilverShard.objects.filter(status=Status.RUNNING).select_related("run").order_by("run_id", "index"):
        if shard.run_id in taken_runs or shard.run.status in (Status.DONE, Status.CANCELLED):
            continue
        last = shard.heartbeat_at or shard.started_at or shard.run.created_at
        if last > cutoff:
            continue
        taken = SilverShard.objects.filter(pk=shard.pk, status=Status.RUNNING, heartbeat_at=shard.heartbeat_at).update(
            status=Status.FAILED, error=f"interrupted: no sign of life since {last.isoformat()}"
        )
        if not taken:
            continue
        requeued = False
        if requeue:
            SilverShard.objects.filter(pk=shard.pk, status=Status.FAILED).update(status=Status.PENDING)
            requeue_shard(shard)
            requeued = True
        log.warning(
            "silver run %s shard %s: interrupted (no heartbeat since %s)%s",
            shard.run_id,
            shard.index,
            last.isoformat(),
            "; requeued" if requeued else "",
        )
        found.append(
            {
                "run": shard.run_id,
                "shard": shard.index,
                "kind": shard.run.kind,
                "processed": shard.processed,
                "last_sentence_id": shard.last_sentence_id,
                "requeued": requeued,
            }
        )
    return found


# --- the job ---------------------------------------------------------------------------------------


def _variables_for(topic_ids) -> dict:
    out: dict = {}
    for v in FactVariable.objects.filter(topic_id__in=set(topic_ids), status=FactVariable.Status.ACTIVE).order_by("id"):
        out.setdefault(v.topic_id, []).append({"id": v.pk, "text": v.text})
    return out


def _topic_names(topic_ids, cache: dict) -> dict:
    names = cache.setdefault("topic_names", {})
    missing = set(topic_ids) - set(names)
    if missing:
        names.update(Topic.objects.filter(pk__in=missing).values_list("pk", "name"))
    return names


class Batch:
    """One batch of a silver run as a kind's ``SilverSpec.predict`` sees it: ``sentences`` (``(id, text, topic_id)``),
    ``texts``, ``batch_size``, and per sentence its topic's name (:meth:`topic_names`) and active fact variables
    (:meth:`variables`), read on first use and kept for the shard in ``cache``."""

    def __init__(self, sentences: list, *, batch_size: int, cache: dict):
        self.sentences = sentences
        self.texts = [s[1] for s in sentences]
        self.batch_size = batch_size
        self.cache = cache

    def topic_names(self) -> list[str]:
        names = _topic_names({s[2] for s in self.sentences}, self.cache)
        return [names.get(s[2], "") for s in self.sentences]

    def variables(self) -> list[list[dict]]:
        known = self.cache.setdefault("variables", {})
        missing = {s[2] for s in self.sentences} - set(known)
        if missing:
            found = _variables_for(missing)
            for t in missing:
                known[t] = found.get(t, [])
        return [known[s[2]] for s in self.sentences]


def predict_batch(kind: str, model, sentences: list, *, batch_size: int, cache: dict) -> list[dict]:
    """Predictions for ``[(id, text, topic_id)]`` by the kind's ``SilverSpec.predict``, one per sentence, each with
    ``spans``, ``schemes``, ``confidence`` and (a stance kind) ``stance``, ``stance_probability``, ``stance_probs``."""
    preds = list(silver_spec(kind).predict(model, Batch(sentences, batch_size=batch_size, cache=cache)))
    if len(preds) != len(sentences):
        raise SilverError(f"kind: the {kind!r} model gave {len(preds)} predictions for {len(sentences)} sentences")
    return [{"spans": [], "schemes": {}, "confidence": 0.0, **pred} for pred in preds]


def _batch_delay() -> float:
    """Test / bench hook: ``ARGORA_SILVER_BATCH_DELAY`` seconds of sleep after each committed batch (a slow model)."""
    raw = os.environ.get("ARGORA_SILVER_BATCH_DELAY", "").strip()
    return float(raw) if raw else 0.0


def process(run_id: int, *, progress: Progress = null_progress, task_id: str = "", model=None) -> dict:
    """Run (or continue) silver run ``run_id`` to the end, a cancel, or an error, its shards one after the other in
    this process. Returns :func:`summary`.

    Idempotent: a done or cancelled run returns at once; a redelivered task continues from the checkpoints.
    """
    run = SilverRun.objects.select_related("model_version").get(pk=run_id)
    if run.status in (Status.DONE, Status.CANCELLED):
        return summary(run)
    if run.cancel_requested:
        return _cancel_now(run)
    shards = ensure_shards(run)
    if task_id:
        SilverRun.objects.filter(pk=run.pk).update(task_id=task_id)
    model = model if model is not None else registry.load_model(run.model_version)
    for shard in shards:
        if shard.status == Status.DONE:
            continue
        out = process_shard(
            run.pk, shard.index, progress=progress, task_id=task_id, model=model, run_progress=True, finish=False
        )
        if out["status"] != Status.DONE:
            break
    run = finalise(run.pk)
    if run.status == Status.DONE:
        progress(run.processed, run.processed, "done")
    return summary(run)


def _cancel_now(run) -> dict:
    SilverRun.objects.filter(pk=run.pk).update(status=Status.CANCELLED, finished_at=timezone.now())
    SilverShard.objects.filter(run_id=run.pk).exclude(status__in=(Status.DONE, Status.RUNNING)).update(
        status=Status.CANCELLED
    )
    run.refresh_from_db()
    return summary(run)


def process_shard(
    run_id: int,
    index: int,
    *,
    progress: Progress = null_progress,
    task_id: str = "",
    worker: str = "",
    model=None,
    run_progress: bool = False,
    finish: bool = True,
) -> dict:
    """Run (or continue) shard ``index`` of run ``run_id`` after its checkpoint. A done (or cancelled) shard
    returns at once. ``finish``: call :func:`finalise` at the end (a Celery shard task; the sequential
    :func:`process` finalises once itself). Returns :func:`shard_summary`."""
    run = SilverRun.objects.select_related("model_version").get(pk=run_id)
    shard = SilverShard.objects.get(run_id=run_id, index=index)
    if shard.status in (Status.DONE, Status.CANCELLED) or run.status in (Status.DONE, Status.CANCELLED):
        if finish:
            finalise(run_id)
        return shard_summary(shard)
    if run.cancel_requested:
        SilverShard.objects.filter(pk=shard.pk).update(status=Status.CANCELLED, finished_at=timezone.now())
        if finish:
            finalise(run_id)
        shard.refresh_from_db()
        return shard_summary(shard)
    now = timezone.now()
    with transaction.atomic():
        shard = SilverShard.objects.select_for_update().get(pk=shard.pk)
        remaining = selection(run, shard).count()
        shard.total = shard.processed + remaining
        shard.status, shard.error, shard.heartbeat_at = Status.RUNNING, "", now
        shard.task_id, shard.worker = task_id or shard.task_id, worker or shard.worker
        shard.attempts += 1
        shard.started_at = shard.started_at or now
        shard.save(
            update_fields=["total", "status", "error", "heartbeat_at", "task_id", "worker", "attempts", "started_at"]
        )
        SilverRun.objects.filter(pk=run.pk).exclude(status__in=(Status.DONE, Status.CANCELLED)).update(
            status=Status.RUNNING, started_at=run.started_at or now, heartbeat_at=now, error=""
        )
    totals = _run_total(run.pk) if run_progress else None
    label = f"silver {run.kind} run {run.pk} shard {shard.index}"
    try:
        model = model if model is not None else registry.load_model(run.model_version)
        batch_size = int(run.options.get("batch_size") or 64)
        cache: dict = {}
        delay = _batch_delay()
        if run_progress:
            progress(
                SilverRun.objects.filter(pk=run.pk).values_list("processed", flat=True).first() or 0, totals, label
            )
        else:
            progress(shard.processed, shard.total, label)
        batch: list = []
        for row in _pages(run, shard, max(batch_size, 100)):
            batch.append(row)
            if len(batch) < batch_size:
                continue
            if not _commit_batch(run, shard, model, batch, cache, progress, totals, label):
                return _stopped(run, shard, finish)
            batch = []
            if delay:
                time.sleep(delay)
        if batch and not _commit_batch(run, shard, model, batch, cache, progress, totals, label):
            return _stopped(run, shard, finish)
        SilverShard.objects.filter(pk=shard.pk, status=Status.RUNNING).update(
            status=Status.DONE, finished_at=timezone.now()
        )
        shard.refresh_from_db()
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:10000]
        SilverShard.objects.filter(pk=shard.pk).exclude(status=Status.DONE).update(status=Status.FAILED, error=error)
        SilverRun.objects.filter(pk=run.pk).exclude(status__in=(Status.DONE, Status.CANCELLED)).update(
            status=Status.FAILED,
            error=error if SilverShard.objects.filter(run_id=run.pk).count() == 1 else f"shard {shard.index}: {error}",
        )
        raise
    if finish:
        finalise(run.pk)
    return shard_summary(shard)


def _pages(run, shard, size: int) -> Iterator[tuple]:
    """``(id, text, topic_id)`` of the shard's sentences after its checkpoint, in id order, read ``size`` at a time
    by key (``id > last``), each page fetched whole. No read stays open while a batch is written: on SQLite an open
    cursor (``.iterator()``) pins its snapshot, and once another worker has committed, this connection's
    ``BEGIN IMMEDIATE`` fails at once with "database is locked" (the busy timeout cannot help a stale snapshot)."""
    after = None
    while True:
        qs = selection(run, shard)
        if after is not None:
            qs = qs.filter(pk__gt=after)
        page = list(qs.values_list("id", "text", "topic_id")[:size])
        yield from page
        if len(page) < size:
            return
        after = page[-1][0]


def _stopped(run, shard, finish: bool) -> dict:
    shard.refresh_from_db()
    if finish:
        finalise(run.pk)
    return shard_summary(shard)


def _run_total(run_id: int) -> int:
    """The run's total (sum of its shards' totals), for progress over the whole run."""
    return int(SilverShard.objects.filter(run_id=run_id).aggregate(t=Sum("total"))["t"] or 0)


def _commit_batch(run, shard, model, batch, cache, progress, totals, label) -> bool:
    """Predict one batch and commit labels + the shard's checkpoint together. False when the shard must stop
    (cancelled, or another worker moved the checkpoint)."""
    if SilverRun.objects.filter(pk=run.pk, cancel_requested=True).exists():
        SilverShard.objects.filter(pk=shard.pk).update(status=Status.CANCELLED, finished_at=timezone.now())
        return False
    preds = predict_batch(run.kind, model, batch, batch_size=len(batch), cache=cache)
    labels, labelled = [], 0
    sums: dict = {}
    for (sid, _text, _topic), pred in zip(batch, preds):
        schemes = pred.get("schemes") or {}
        for s, p in schemes.items():
            sums[s] = sums.get(s, 0.0) + float(p)
        stance = pred.get("stance") or ""
        labelled += bool(pred["spans"] or schemes or stance in ARGUMENT_STANCES)
        labels.append(
            SilverLabel(
                run_id=run.pk,
                sentence_id=sid,
                spans=pred["spans"],
                schemes=schemes,
                confidence=float(pred.get("confidence") or 0.0),
                stance=stance,
                stance_probability=pred.get("stance_probability"),
                stance_probs=pred.get("stance_probs") or {},
            )
        )
    now = timezone.now()
    with transaction.atomic():
        locked = SilverShard.objects.select_for_update().get(pk=shard.pk)
        if locked.last_sentence_id != shard.last_sentence_id or locked.status != Status.RUNNING:
            log.warning(
                "silver run %s shard %s: checkpoint moved to %s (expected %s) or status %s; another worker owns it",
                run.pk,
                shard.index,
                locked.last_sentence_id,
                shard.last_sentence_id,
                locked.status,
            )
            return False
        SilverLabel.objects.bulk_create(labels)
        merged = dict(locked.scheme_sums or {})
        for s, v in sums.items():
            merged[s] = merged.get(s, 0.0) + v
        locked.last_sentence_id = batch[-1][0]
        locked.processed += len(batch)
        locked.labelled += labelled
        locked.batches += 1
        locked.scheme_sums = merged
        locked.heartbeat_at = now
        locked.save(
            update_fields=["last_sentence_id", "processed", "labelled", "batches", "scheme_sums", "heartbeat_at"]
        )
        # the run's live counters, last in the transaction (its row is locked only until the commit)
        SilverRun.objects.filter(pk=run.pk).update(
            processed=F("processed") + len(batch),
            labelled=F("labelled") + labelled,
            batches=F("batches") + 1,
            last_sentence_id=Greatest(F("last_sentence_id"), Value(batch[-1][0])),
            heartbeat_at=now,
        )
    shard.last_sentence_id, shard.processed, shard.labelled = locked.last_sentence_id, locked.processed, locked.labelled
    shard.batches, shard.scheme_sums, shard.heartbeat_at = locked.batches, locked.scheme_sums, now
    if totals is not None:
        done = SilverRun.objects.filter(pk=run.pk).values_list("processed", flat=True).first() or 0
        progress(done, totals, f"{label}: {done}/{totals}")
    else:
        progress(shard.processed, shard.total, f"{label}: {shard.processed}/{shard.total}")
    return True


def finalise(run_id: int):
    """Sum the shard counters and scheme sums into the run; mark it done when every shard is done (failed when
    none is left to run and one failed; cancelled when one was cancelled). Idempotent: the chord callback, each shard
    task at its end, and :func:`process` all call it. Returns the run."""
    with transaction.atomic():
        run = SilverRun.objects.select_for_update().get(pk=run_id)
        if run.status == Status.DONE:
            return run
        shards = list(SilverShard.objects.filter(run_id=run_id).order_by("index"))
        if not shards:
            return run
        sums: dict = {}
        for s in shards:
            for k, v in (s.scheme_sums or {}).items():
                sums[k] = sums.get(k, 0.0) + float(v)
        run.processed = sum(s.processed for s in shards)
        run.labelled = sum(s.labelled for s in shards)
        run.batches = sum(s.batches for s in shards)
        run.total = sum(s.total for s in shards)
        run.scheme_sums = sums
        run.last_sentence_id = max([run.last_sentence_id] + [s.last_sentence_id for s in shards if s.processed])
        fields = ["processed", "labelled", "batches", "total", "scheme_sums", "last_sentence_id"]
        statuses = {s.status for s in shards}
        if statuses == {Status.DONE}:
            run.status, run.finished_at, run.error, run.cancel_requested = Status.DONE, timezone.now(), "", False
            fields += ["status", "finished_at", "error", "cancel_requested"]
        elif not statuses & {Status.PENDING, Status.RUNNING}:
            if Status.CANCELLED in statuses or run.cancel_requested:
                run.status, run.finished_at = Status.CANCELLED, timezone.now()
                fields += ["status", "finished_at"]
            elif run.status != Status.FAILED:
                failed = next(s for s in shards if s.status == Status.FAILED)
                run.status, run.error = Status.FAILED, failed.error
                fields += ["status", "error"]
        run.save(update_fields=fields)
    return run


def shard_summary(shard) -> dict:
    return {
        "run": shard.run_id,
        "shard": shard.index,
        "status": shard.status,
        "first_id": shard.first_id,
        "last_id": shard.last_id,
        "last_sentence_id": shard.last_sentence_id,
        "processed": shard.processed,
        "total": shard.total,
        "labelled": shard.labelled,
        "batches": shard.batches,
        "worker": shard.worker,
        "task_id": shard.task_id,
        "attempts": shard.attempts,
        "error": shard.error,
    }


def summary(run, *, shards: bool = False) -> dict:
    """The run's counters (live while it runs) and shard counts; ``shards=True`` adds one entry per shard."""
    rows = list(SilverShard.objects.filter(run_id=run.pk).order_by("index"))
    out = {
        "run": run.pk,
        "kind": run.kind,
        "status": run.status,
        "processed": run.processed,
        "labelled": run.labelled,
        "total": run.total,
        "batches": run.batches,
        "last_sentence_id": run.last_sentence_id,
        "model_version": run.model_version_id,
        "error": run.error,
        "shard_count": len(rows),
        "shards_done": sum(1 for s in rows if s.status == Status.DONE),
    }
    if shards:
        out["shards"] = [shard_summary(s) for s in rows]
    return out


def predicted_stances(
    run_id: int, *, stances=("pro", "con", "none"), min_probability: float | None = None
) -> Iterator[tuple[int, str, float | None]]:
    """``(sentence_id, stance, probability)`` of an argument run's silver labels, in sentence id order (streamed).
    ``stances``: which to yield; ``min_probability``: only those at least that probable."""
    qs = SilverLabel.objects.filter(run_id=run_id, stance__in=list(stances))
    if min_probability is not None:
        qs = qs.filter(stance_probability__gte=float(min_probability))
    yield from (
        qs.order_by("sentence_id").values_list("sentence_id", "stance", "stance_probability").iterator(chunk_size=5000)
    )


# --- reading back (with the filters) ---------------------------------------------------------------


def filter_label(run, label_spans: list, schemes: dict, means: dict, options: dict) -> tuple[list, list, bool]:
    """``(spans, kept schemes, keep the sentence)`` after the run's filters."""
    spans = [s for s in label_spans if float(s.get("confidence", 1.0)) >= float(options.get("min_confidence") or 0.0)]
    kept: list[str] = []
    keep = True
    if schemes:
        ratio = float(options.get("scheme_ratio") if options.get("scheme_ratio") is not None else 0.2)
        threshold = options.get("scheme_threshold")
        for s, p in schemes.items():
            if threshold is not None and p < float(threshold):
                continue
            if p >= ratio * means.get(s, 0.0):
                kept.append(s)
        top = max(schemes, key=schemes.get)
        if options.get("discard_others", True) and top == OTHERS:
            keep = False
        kept.sort(key=lambda s: -schemes[s])
    if options.get("drop_unlabelled") and not spans and not kept:
        keep = False
    return spans, kept, keep


def silver_rows(run, *, options: dict | None = None) -> Iterator[dict]:
    """The run's labels as release rows (streamed), filtered by the run's options (overridden by ``options``)."""
    opts = dict(run.options or {})
    opts.update(options or {})
    means = run.scheme_means()
    spec = spec_of(run.kind)  # None: the kind is gone; its rows keep the common fields
    source = f"model:{run.model_version_id}"
    qs = SilverLabel.objects.filter(run=run).select_related("sentence__topic").order_by("sentence_id")
    for label in qs.iterator(chunk_size=2000):
        s = label.sentence
        spans, schemes, keep = filter_label(run, label.spans or [], label.schemes or {}, means, opts)
        if spec is not None and spec.stances:  # no spans / schemes: "labelled" means predicted pro or con
            keep = not opts.get("drop_unlabelled") or label.stance in ARGUMENT_STANCES
        if not keep:
            continue
        row = {
            "run": run.pk,
            "kind": run.kind,
            "model_version": run.model_version_id,
            "source": source,
            "sentence_id": s.pk,
            "hash": s.external_id or s.content_hash,
            "topic": s.topic.name,
            "stance": s.stance,
            "sentence": s.text,
            "corpus_source": s.source,
            "spans": spans,
            "confidence": label.confidence,
            "silver": True,
        }
        if spec is not None and spec.release_row is not None:  # the kind's own fields
            row = spec.release_row(row, label, s)
        if label.schemes:
            row["scheme_probabilities"] = label.schemes
            row["schemes"] = schemes
            row["scheme"] = schemes[0] if schemes else None
        yield row
