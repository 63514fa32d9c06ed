"""``manage.py silver``: silver annotation runs (see :mod:`ml.silver`).

::

    manage.py silver start --kind tagger|argspan|argspanscheme|argument --topic T [--source S] [--all]
        [--arguments-from-run RUN] [--project SLUG] [--version ID] [--batch-size 64] [--shards N | --shard-size N]
        [--arguments-only] [--scheme-ratio 0.2] [--keep-others] [--queue] [--json]
    manage.py silver resume <run> [--queue] [--json]
    manage.py silver cancel <run>
    manage.py silver status [<run>] [--json]
    manage.py silver recover [--older-than SECONDS] [--requeue] [--json]

Without ``--queue`` the run is processed here with a progress bar (on stderr), its shards one after the other; with
it, a one-shard run goes to ``ml.tasks.silver`` on a ``gpu`` worker and a sharded one (``--shards N``: N contiguous
id ranges of about equal size; ``--shard-size N``: ranges of about N sentences) to one ``ml.tasks.silver_shard`` task
per shard, a chord finalised by ``ml.silver_finalise``, so any number of ``gpu`` workers share it. ``--kind argument``
writes the predicted stance; ``--arguments-from-run RUN`` selects the sentences argument run RUN predicted pro or con. ``--json``: stdout is JSON only -- one object for ``start`` / ``resume`` (the run's summary,
:func:`ml.silver.summary`, after processing, or with ``"queued": true``) and ``recover``
(``{"recovered": [...]}``), a list of summaries for ``status`` without a run id, one summary with it (with a
``"shards"`` list: status, range, checkpoint, processed / total, worker of each shard; the text form prints a line
per shard and the total). ``recover``
marks runs left ``running`` without a heartbeat as interrupted (and with ``--requeue`` resumes them on a worker),
what the beat task does. Exit 2 with the reason for a bad request.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Project
from argora.progress import cli_progress
from ml import silver
from ml.models import ModelVersion, SilverRun


class Command(BaseCommand):
    help = "Silver annotation: run an active tagger / argspan / argspanscheme / argument model over corpus sentences."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        start = sub.add_parser("start", help="start a run")
        start.add_argument(
            "--kind",
            required=True,
            help="a trainer kind whose model annotates sentences (tagger, argspan, argspanscheme, "
            "argument: ml.registry.silver_kinds)",
        )
        start.add_argument("--topic", help="topic slug, name or id")
        start.add_argument("--source", default="", help="Sentence.source to select")
        start.add_argument("--all", action="store_true", help="every sentence (no topic/source filter)")
        start.add_argument("--project", help="project slug: use its active model (else the global one)")
        start.add_argument("--version", type=int, help="a model version id instead of the active one")
        start.add_argument(
            "--arguments-from-run",
            dest="arguments_from_run",
            type=int,
            default=None,
            help="only sentences this argument silver run predicted pro or con",
        )
        start.add_argument("--batch-size", dest="batch_size", type=int, default=64)
        split = start.add_mutually_exclusive_group()
        split.add_argument("--shards", type=int, default=None, help="split the selection into N id ranges (default 1)")
        split.add_argument(
            "--shard-size",
            dest="shard_size",
            type=int,
            default=None,
            help="split the selection into id ranges of about N sentences",
        )
        start.add_argument("--arguments-only", dest="arguments_only", action="store_true")
        start.add_argument("--scheme-ratio", dest="scheme_ratio", type=float, default=0.2)
        start.add_argument(
            "--keep-others", dest="keep_others", action="store_true", help="keep sentences whose top scheme is Others"
        )
        start.add_argument("--min-confidence", dest="min_confidence", type=float, default=0.0)
        start.add_argument("--queue", action="store_true", help="run it on a gpu worker (ml.tasks.silver)")
        start.add_argument("--json", action="store_true", help="stdout: the run's summary as one JSON object")
        for name in ("resume", "cancel"):
            p = sub.add_parser(name)
            p.add_argument("run", type=int)
            if name == "resume":
                p.add_argument("--queue", action="store_true")
                p.add_argument("--json", action="store_true", help="stdout: the run's summary as one JSON object")
        status = sub.add_parser("status")
        status.add_argument("run", type=int, nargs="?")
        status.add_argument(
            "--json", action="store_true", help="stdout: one JSON summary (with a run id) or a JSON list of them"
        )
        recover = sub.add_parser("recover", help="mark runs left running without a heartbeat as interrupted")
        recover.add_argument(
            "--older-than",
            dest="older_than",
            type=float,
            default=None,
            help="seconds without a heartbeat (default: ml.silver.stale_seconds())",
        )
        recover.add_argument("--requeue", action="store_true", help="resume them on a gpu worker")
        recover.add_argument("--json", action="store_true")

    def _run(self, pk):
        run = SilverRun.objects.filter(pk=pk).first()
        if run is None:
            raise CommandError(f"run: no silver run {pk}", returncode=2)
        return run

    def _process(self, run, *, as_json: bool = False):
        with cli_progress(f"silver {run.kind} #{run.pk}") as progress:
            result = silver.process(run.pk, progress=progress)
        self.stdout.write(json.dumps(result, sort_keys=as_json))

    def _queued(self, run) -> None:
        run.refresh_from_db()
        self.stdout.write(json.dumps({**silver.summary(run), "queued": True}, sort_keys=True))

    def _status_text(self, info: dict) -> None:
        for s in info["shards"]:
            self.stdout.write(
                f"shard {s['shard']:>3}  {s['status']:<9} ids {s['first_id']}-{s['last_id']}  "
                f"{s['processed']}/{s['total']}  checkpoint {s['last_sentence_id']}  "
                f"attempts {s['attempts']}{'  worker ' + s['worker'] if s['worker'] else ''}"
                f"{'  error: ' + s['error'] if s['error'] else ''}"
            )
        total = info["total"] or 0
        pct = f" ({100.0 * info['processed'] / total:.1f}%)" if total else ""
        self.stdout.write(
            f"silver run {info['run']} ({info['kind']}): {info['status']}, {info['processed']}/{total}"
            f"{pct}, {info['shards_done']}/{info['shard_count']} shards done, "
            f"{info['labelled']} labelled{'; error: ' + info['error'] if info['error'] else ''}"
        )
        self.stdout.write(json.dumps({k: v for k, v in info.items() if k != "shards"}))

    def handle(self, *args, **opts):
        action = opts["action"]
        try:
            if action == "start":
                project = None
                if opts["project"]:
                    project = Project.objects.filter(slug=opts["project"]).first()
                    if project is None:
                        raise CommandError(f"--project: no project {opts['project']!r}", returncode=2)
                version = None
                if opts["version"]:
                    version = ModelVersion.objects.filter(pk=opts["version"]).first()
                    if version is None:
                        raise CommandError(f"--version: no model version {opts['version']}", returncode=2)
                run = silver.start(
                    opts["kind"],
                    topic=opts["topic"],
                    source=opts["source"],
                    all_sentences=opts["all"],
                    project=project,
                    version=version,
                    batch_size=opts["batch_size"],
                    shards=opts["shards"],
                    shard_size=opts["shard_size"],
                    options={
                        "arguments_only": opts["arguments_only"],
                        "arguments_from_run": opts["arguments_from_run"],
                        "scheme_ratio": opts["scheme_ratio"],
                        "discard_others": not opts["keep_others"],
                        "min_confidence": opts["min_confidence"],
                    },
                    enqueue=opts["queue"],
                )
                if not opts["json"]:
                    self.stdout.write(f"silver run {run.pk}: {run.kind} with model version {run.model_version_id}")
                if not opts["queue"]:
                    self._process(run, as_json=opts["json"])
                elif opts["json"]:
                    self._queued(run)
            elif action == "resume":
                run = silver.resume(self._run(opts["run"]), enqueue=opts["queue"])
                if not opts["json"]:
                    self.stdout.write(f"silver run {run.pk} resumes after sentence {run.last_sentence_id}")
                if not opts["queue"]:
                    self._process(run, as_json=opts["json"])
                elif opts["json"]:
                    self._queued(run)
            elif action == "recover":
                found = silver.recover_interrupted(older_than=opts["older_than"], requeue=opts["requeue"])
                if opts["json"]:
                    self.stdout.write(json.dumps({"recovered": found}, sort_keys=True))
                else:
                    for item in found:
                        self.stdout.write(json.dumps(item))
                    self.stdout.write(f"{len(found)} interrupted silver run(s)")
            elif action == "cancel":
                run = silver.cancel(self._run(opts["run"]))
                self.stdout.write(
                    f"silver run {run.pk}: {run.status}"
                    f"{' (stops after its current batch)' if run.status == 'running' else ''}"
                )
            else:
                runs = [self._run(opts["run"])] if opts["run"] else list(SilverRun.objects.all()[:50])
                if opts["json"]:
                    summaries = [silver.summary(run, shards=bool(opts["run"])) for run in runs]
                    self.stdout.write(json.dumps(summaries[0] if opts["run"] else summaries, sort_keys=True))
                    return
                if opts["run"]:
                    self._status_text(silver.summary(runs[0], shards=True))
                    return
                for run in runs:
                    self.stdout.write(json.dumps(silver.summary(run)))
        except silver.SilverError as exc:
            raise CommandError(str(exc), returncode=2) from None
