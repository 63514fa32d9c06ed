"""Silver annotation: run an active model over a corpus selection and store its predictions as SilverLabel rows.

Arg-CTRL §4 ("Aspect Detection": the tagger over millions of sentences) and ArgU §3.2 (ArgSpanScheme over the
parallel corpus, §3.2.4 post-processing). Predictions are kept apart from gold/crowd labels
(:class:`ml.models.SilverLabel`) and can be published as their own release (``silver`` kind, :mod:`ml.exporters`).

Flow (:func:`start` -> :func:`process` in a worker or the CLI):

- selection: a topic, a source (``Sentence.source``), both, or everything; ``arguments_only`` skips stance ``none``;
- the run's model is the active version of the kind for the project (or the global one) when it starts;
- sentences are streamed in id order with ``.iterator()`` (after the checkpoint) and predicted in batches of
  ``batch_size`` (length-sorted, padded per batch, int8 on CPU / fp16 on CUDA: :mod:`ml.inference`);
- each batch's labels, the new checkpoint (``last_sentence_id``), the counters and the running scheme sums are
  committed in ONE transaction, with the run row locked: a crash loses at most the batch in flight, a resume starts
  after the checkpoint and never duplicates (and a unique (run, sentence) constraint guards it anyway);
- ``cancel_requested`` is checked between batches (:func:`cancel`); progress goes to ``progress(done, total)``;
- every committed batch refreshes ``heartbeat_at``. A run left ``running`` by a worker that died outright (no
  ``failed`` written) is found by :func:`recover_interrupted` (the beat task ``ml.recover_interrupted``, also
  ``manage.py silver recover``): no heartbeat for ``older_than`` seconds (default 4 x the model heartbeat, or
  ``ARGORA_SILVER_STALE_SECONDS``) marks it ``failed`` ("interrupted: ..."), and with ``requeue`` it is made
  pending and sent to a worker again, continuing after its checkpoint. A live but slow worker that is recovered by
  mistake loses nothing: the checkpoint check in each batch's transaction stops whichever of the two is behind.

Filters (``options``, applied when rows are read back for a release, :func:`silver_rows`, since they need the
scheme means over the whole run): ``scheme_ratio`` (default 0.2): keep a predicted scheme only if its
probability is >= ratio x that scheme's mean probability over the run (ArgU §3.2.4); ``discard_others`` (default
true): drop sentences whose top scheme is "Others"; ``min_confidence``: drop spans below it;
``drop_unlabelled``: drop sentences without spans and schemes.
"""
from __future__ import annotations

import logging
from typing import Iterator

from django.db import transaction
from django.utils import timezone

from annotation.task_types.aspect.appf import APPF_STANCE, format_pos
from argora.progress import Progress, null_progress
from corpus.models import FactVariable, Sentence, Stance, Topic

from . import registry
from .models import SilverLabel, SilverRun
from .registry import HEARTBEAT_SECONDS

log = logging.getLogger(__name__)

KINDS = ("tagger", "argspan", "argspanscheme")
DEFAULT_OPTIONS = {"batch_size": 64, "arguments_only": False, "scheme_ratio": 0.2, "discard_others": True,
                   "min_confidence": 0.0, "drop_unlabelled": False, "scheme_threshold": None}
OTHERS = "Others"


class SilverError(ValueError):
    """A request the silver service refuses (unknown kind, no active model, bad selection...)."""


# --- selection -------------------------------------------------------------------------------------

def resolve_topic(topic):
    if topic is None or topic == "" or hasattr(topic, "pk"):
        return topic or None
    found = (Topic.objects.filter(slug=str(topic)).first() or Topic.objects.filter(name__iexact=str(topic)).first())
    if found is None and str(topic).isdigit():
        found = Topic.objects.filter(pk=int(topic)).first()
    if found is None:
        raise SilverError(f"topic: no topic {topic!r} (give its slug, name or id)")
    return found


def selection(run):
    """The run's sentences after its checkpoint, in id order."""
    qs = Sentence.objects.all()
    if run.topic_id:
        qs = qs.filter(topic_id=run.topic_id)
    if run.source:
        qs = qs.filter(source=run.source)
    if (run.options or {}).get("arguments_only"):
        qs = qs.exclude(stance=Stance.NONE)
    return qs.filter(pk__gt=run.last_sentence_id).order_by("pk")


# --- actions ---------------------------------------------------------------------------------------

def start(kind: str, *, topic=None, source: str = "", all_sentences: bool = False, project=None, version=None,
          batch_size: int = 64, options: dict | None = None, enqueue: bool = False):
    """Create a pending run with the active ``kind`` model (or ``version``); enqueue it on commit if asked."""
    if kind not in KINDS:
        raise SilverError(f"kind: {kind!r} is not a silver kind ({', '.join(KINDS)})")
    topic = resolve_topic(topic)
    if topic is None and not source and not all_sentences:
        raise SilverError("selection: give a topic, a source, or all sentences explicitly")
    if version is None:
        version = registry.active_version(kind, project)
        if version is None:
            raise SilverError(f"kind: no active {kind!r} model{' for project ' + project.slug if project else ''} "
                              f"(train one: manage.py train {kind} --data FILE)")
    elif version.kind != kind or not version.artifact_path:
        raise SilverError(f"version: model version {version.pk} is a {version.status} {version.kind!r} model, "
                          f"not a ready {kind!r} one")
    if int(batch_size) < 1:
        raise SilverError("batch_size: must be at least 1")
    opts = dict(DEFAULT_OPTIONS)
    opts.update(options or {})
    opts["batch_size"] = int(batch_size)
    run = SilverRun.objects.create(kind=kind, model_version=version, project=project, topic=topic,
                                   source=source or "", options=opts)
    if enqueue:
        _enqueue(run)
    return run


def _enqueue(run) -> None:
    from .tasks import silver as task  # cycle: ml.tasks imports this module

    transaction.on_commit(lambda: task.apply_async(args=[run.pk]))


def resume(run, *, enqueue: bool = False):
    """Make a failed / cancelled / interrupted run pending again (it continues after its checkpoint)."""
    with transaction.atomic():
        run = SilverRun.objects.select_for_update().get(pk=run.pk)
        if run.status == SilverRun.Status.DONE:
            raise SilverError(f"run: silver run {run.pk} is done; start a new one")
        run.status, run.cancel_requested, run.error = SilverRun.Status.PENDING, False, ""
        run.save(update_fields=["status", "cancel_requested", "error"])
    if enqueue:
        _enqueue(run)
    return run


def cancel(run):
    """Ask a run to stop after its current batch (a run that is not running is cancelled at once)."""
    with transaction.atomic():
        run = SilverRun.objects.select_for_update().get(pk=run.pk)
        if run.status in (SilverRun.Status.DONE, SilverRun.Status.CANCELLED):
            return run
        run.cancel_requested = True
        fields = ["cancel_requested"]
        if run.status != SilverRun.Status.RUNNING:
            run.status, run.finished_at = SilverRun.Status.CANCELLED, timezone.now()
            fields += ["status", "finished_at"]
        run.save(update_fields=fields)
    return run


def stale_seconds() -> float:
    """How long a ``running`` run may go without a heartbeat before :func:`recover_interrupted` takes it."""
    import os

    raw = os.environ.get("ARGORA_SILVER_STALE_SECONDS", "").strip()
    return float(raw) if raw else 4 * HEARTBEAT_SECONDS


def recover_interrupted(*, older_than: float | None = None, requeue: bool = False) -> list[dict]:
    """Runs still ``running`` with no heartbeat (last committed batch, or the start) for ``older_than`` seconds.

    Each is marked ``failed`` with ``error = "interrupted: ..."`` (one guarded UPDATE, so two sweeps cannot both take
    it); with ``requeue`` it is then resumed (pending again) and enqueued on commit (``ml.tasks.silver``), and it
    continues after its checkpoint. Returns ``[{"run", "kind", "processed", "last_sentence_id", "requeued"}]``."""
    from datetime import timedelta

    older_than = stale_seconds() if older_than is None else float(older_than)
    cutoff = timezone.now() - timedelta(seconds=older_than)
    found = []
    for run in SilverRun.objects.filter(status=SilverRun.Status.RUNNING).order_by("pk"):
        last = run.heartbeat_at or run.started_at or run.created_at
        if last > cutoff:
            continue
        taken = SilverRun.objects.filter(pk=run.pk, status=SilverRun.Status.RUNNING, heartbeat_at=run.heartbeat_at
                                         ).update(status=SilverRun.Status.FAILED,
                                                  error=f"interrupted: no sign of life since {last.isoformat()}")
        if not taken:  # it moved on (a batch committed) or another sweep took it
            continue
        requeued = False
        if requeue:
            try:
                resume(run, enqueue=True)
                requeued = True
            except SilverError as exc:  # pragma: no cover - a done run is never "running"
                log.warning("silver run %s: not requeued: %s", run.pk, exc)
        log.warning("silver run %s: interrupted (no heartbeat since %s)%s", run.pk, last.isoformat(),
                    "; requeued" if requeued else "")
        found.append({"run": run.pk, "kind": run.kind, "processed": run.processed,
                      "last_sentence_id": run.last_sentence_id, "requeued": requeued})
    return found


# --- the job ---------------------------------------------------------------------------------------

def _variables_for(topic_ids) -> dict:
    out: dict = {}
    for v in FactVariable.objects.filter(topic_id__in=set(topic_ids), status=FactVariable.Status.ACTIVE).order_by("id"):
        out.setdefault(v.topic_id, []).append({"id": v.pk, "text": v.text})
    return out


def predict_batch(kind: str, model, sentences: list, *, batch_size: int, variables_cache: dict) -> list[dict]:
    """Predictions for ``[(id, text, topic_id)]``: spans (+ grounding for argspan) and scheme probabilities."""
    texts = [s[1] for s in sentences]
    if kind == "argspan":
        missing = {s[2] for s in sentences} - set(variables_cache)
        if missing:
            found = _variables_for(missing)
            for t in missing:
                variables_cache[t] = found.get(t, [])
        return model.predict(texts, [variables_cache[s[2]] for s in sentences], batch_size=batch_size)
    return model.predict(texts, batch_size=batch_size)


def process(run_id: int, *, progress: Progress = null_progress, task_id: str = "", model=None) -> dict:
    """Run (or continue) silver run ``run_id`` to the end, a cancel, or an error. Returns a summary dict.

    Idempotent: a done or cancelled run returns at once; a redelivered task continues from the checkpoint.
    """
    run = SilverRun.objects.select_related("model_version").get(pk=run_id)
    if run.status in (SilverRun.Status.DONE, SilverRun.Status.CANCELLED):
        return summary(run)
    if run.cancel_requested:
        SilverRun.objects.filter(pk=run.pk).update(status=SilverRun.Status.CANCELLED, finished_at=timezone.now())
        run.refresh_from_db()
        return summary(run)
    total = selection(run).count() + run.processed  # sentences after the checkpoint + those already done
    SilverRun.objects.filter(pk=run.pk).update(status=SilverRun.Status.RUNNING, started_at=run.started_at or timezone.now(),
                                               task_id=task_id or run.task_id, total=total, error="",
                                               heartbeat_at=timezone.now())
    run.refresh_from_db()
    try:
        model = model if model is not None else registry.load_model(run.model_version)
        batch_size = int(run.options.get("batch_size") or 64)
        cache: dict = {}
        progress(run.processed, total, f"silver {run.kind} run {run.pk}")
        batch: list = []
        rows = selection(run).values_list("id", "text", "topic_id").iterator(chunk_size=max(batch_size, 100))
        for row in rows:
            batch.append(row)
            if len(batch) < batch_size:
                continue
            if not _commit_batch(run, model, batch, cache, progress, total):
                return summary(run)
            batch = []
        if batch and not _commit_batch(run, model, batch, cache, progress, total):
            return summary(run)
        SilverRun.objects.filter(pk=run.pk, status=SilverRun.Status.RUNNING).update(
            status=SilverRun.Status.DONE, finished_at=timezone.now())
        run.refresh_from_db()
        progress(run.processed, run.processed, "done")
        return summary(run)
    except Exception as exc:
        SilverRun.objects.filter(pk=run.pk).update(status=SilverRun.Status.FAILED,
                                                   error=f"{type(exc).__name__}: {exc}"[:10000])
        raise


def _commit_batch(run, model, batch, cache, progress, total) -> bool:
    """Predict one batch and commit labels + checkpoint together. False when the run must stop (cancelled, or
    another worker moved the checkpoint)."""
    if SilverRun.objects.filter(pk=run.pk, cancel_requested=True).exists():
        SilverRun.objects.filter(pk=run.pk).update(status=SilverRun.Status.CANCELLED, finished_at=timezone.now())
        run.refresh_from_db()
        return False
    preds = predict_batch(run.kind, model, batch, batch_size=len(batch), variables_cache=cache)
    labels, labelled = [], 0
    sums: dict = {}
    for (sid, _text, _topic), pred in zip(batch, preds):
        schemes = pred.get("schemes") or {}
        for s, p in schemes.items():
            sums[s] = sums.get(s, 0.0) + float(p)
        labelled += bool(pred["spans"] or schemes)
        labels.append(SilverLabel(run_id=run.pk, sentence_id=sid, spans=pred["spans"], schemes=schemes,
                                  confidence=float(pred.get("confidence") or 0.0)))
    with transaction.atomic():
        locked = SilverRun.objects.select_for_update().get(pk=run.pk)
        if locked.last_sentence_id != run.last_sentence_id or locked.status != SilverRun.Status.RUNNING:
            log.warning("silver run %s: checkpoint moved to %s (expected %s) or status %s; another worker owns it",
                        run.pk, locked.last_sentence_id, run.last_sentence_id, locked.status)
            run.refresh_from_db()
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
        locked.heartbeat_at = timezone.now()
        locked.save(update_fields=["last_sentence_id", "processed", "labelled", "batches", "scheme_sums",
                                   "heartbeat_at"])
    run.last_sentence_id, run.processed, run.labelled = locked.last_sentence_id, locked.processed, locked.labelled
    run.batches, run.scheme_sums = locked.batches, locked.scheme_sums
    progress(run.processed, total, f"silver {run.kind} run {run.pk}: {run.processed}/{total}")
    return True


def summary(run) -> dict:
    return {"run": run.pk, "kind": run.kind, "status": run.status, "processed": run.processed,
            "labelled": run.labelled, "total": run.total, "batches": run.batches,
            "last_sentence_id": run.last_sentence_id, "model_version": run.model_version_id, "error": run.error}


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
    source = f"model:{run.model_version_id}"
    qs = (SilverLabel.objects.filter(run=run).select_related("sentence__topic").order_by("sentence_id"))
    for label in qs.iterator(chunk_size=2000):
        s = label.sentence
        spans, schemes, keep = filter_label(run, label.spans or [], label.schemes or {}, means, opts)
        if not keep:
            continue
        row = {"run": run.pk, "kind": run.kind, "model_version": run.model_version_id, "source": source,
               "sentence_id": s.pk, "hash": s.external_id or s.content_hash, "topic": s.topic.name, "stance": s.stance,
               "sentence": s.text, "corpus_source": s.source, "spans": spans, "confidence": label.confidence,
               "silver": True}
        if run.kind == "tagger":  # App. F shape, so a silver file trains the next tagger / ranker directly
            row["aspect_pos"] = [format_pos(x["begin"], x["end"] - x["begin"]) for x in spans]
            row["aspect_pos_string"] = [s.text[x["begin"]:x["end"]] for x in spans]
            row["stance"] = APPF_STANCE.get(s.stance, s.stance)
        if label.schemes:
            row["scheme_probabilities"] = label.schemes
            row["schemes"] = schemes
            row["scheme"] = schemes[0] if schemes else None
        yield row
