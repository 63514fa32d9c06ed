"""``manage.py pipeline argctrl``: raw documents -> Arg-CTRL training documents, resumable (see :mod:`ml.pipeline`).

::

    manage.py pipeline argctrl --documents DIR --topic T [--topic-name NAME] [--synonyms a,b]
        [--no-relevance-filter] [--argument-version ID | --argument-project SLUG]
        [--tagger-version ID | --tagger-project SLUG] [--batch-size 64] [--shards N]
        [--min-args 15] [--max-args 1500] [--max-per-topic-stance 100000] [--seed 13]
        [--release-name NAME] [--release-version V] [--out FILE] [--queue] [--new] [--json]
    manage.py pipeline status [ID] [--json]

Stages: import -> relevance -> argument -> aspects -> documents. Each stage prints one line when it ends (and a
progress bar on stderr while it runs, on a terminal). Re-running the same command continues the latest pipeline of
this folder and topic from its first unfinished stage; a finished pipeline adds nothing (it prints its figures and
writes ``--out`` again from its release). ``--queue`` sends the silver stages to the ``gpu`` workers and returns
(status ``waiting``): run the command again to move on once they are done. ``--new`` starts another pipeline.
``--json``: stdout is one JSON object (:func:`ml.pipeline.summary`, plus ``"out"`` / ``"rows"``). Exit 2 with the
option and the reason for a bad request; exit 1 when a stage fails (the pipeline row keeps the error; re-run to
continue).
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from argora.progress import cli_progress
from ml import pipeline as service
from ml.generation import corpora
from ml.models import PipelineRun


class Command(BaseCommand):
    help = "Chained data pipelines; argctrl: documents -> relevance -> argument/stance -> aspects -> training docs."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="pipeline", required=True, metavar="argctrl|status")
        a = sub.add_parser("argctrl", help="Arg-CTRL §4: raw documents to aspect-control training documents")
        a.add_argument("--documents", required=True, help="folder of *.txt documents")
        a.add_argument("--topic", required=True, help="topic slug, name or id (created with this name if new)")
        a.add_argument("--topic-name", dest="topic_name", help="name of a new topic when --topic is a slug")
        a.add_argument(
            "--synonyms",
            action="append",
            default=[],
            help="more relevance terms for the topic (comma-separated, repeatable)",
        )
        a.add_argument(
            "--no-relevance-filter",
            dest="relevance",
            action="store_false",
            help="keep sentences that mention neither the topic nor its synonyms",
        )
        a.add_argument("--argument-version", dest="argument_version", type=int, help="argument model version id")
        a.add_argument(
            "--argument-project",
            dest="argument_project",
            help="use this project's active argument model (default: the global one)",
        )
        a.add_argument("--tagger-version", dest="tagger_version", type=int, help="tagger model version id")
        a.add_argument(
            "--tagger-project", dest="tagger_project", help="use this project's active tagger (default: the global one)"
        )
        a.add_argument("--batch-size", dest="batch_size", type=int, default=64)
        a.add_argument("--shards", type=int, help="split each silver run into N shards (workers share them)")
        a.add_argument("--min-args", dest="min_args", type=int, default=corpora.DEFAULT_MIN_ARGS)
        a.add_argument("--max-args", dest="max_args", type=int, default=corpora.DEFAULT_MAX_ARGS)
        a.add_argument(
            "--max-per-topic-stance",
            dest="max_per_topic_stance",
            type=int,
            default=corpora.DEFAULT_MAX_PER_TOPIC_STANCE,
        )
        a.add_argument("--seed", type=int, default=13)
        a.add_argument("--release-name", dest="release_name", help="default argctrl-<topic slug>")
        a.add_argument("--release-version", dest="release_version", help="default p<pipeline id>")
        a.add_argument("--out", help="also write the training documents (JSONL) here")
        a.add_argument("--queue", action="store_true", help="send the silver stages to the gpu workers")
        a.add_argument("--new", action="store_true", help="start another pipeline for this folder and topic")
        a.add_argument("--json", action="store_true", help="stdout: one JSON summary")
        s = sub.add_parser("status", help="a pipeline's stages (or the latest pipelines)")
        s.add_argument("id", type=int, nargs="?")
        s.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        if opts["pipeline"] == "status":
            return self.status(opts)
        if opts["argument_version"] is not None and opts["argument_project"]:
            raise CommandError(
                "--argument-project: give --argument-version or --argument-project, not both", returncode=2
            )
        if opts["tagger_version"] is not None and opts["tagger_project"]:
            raise CommandError("--tagger-project: give --tagger-version or --tagger-project, not both", returncode=2)
        synonyms = [s.strip() for value in opts["synonyms"] for s in value.split(",") if s.strip()]
        try:
            prepared = service.prepare(
                opts["documents"],
                opts["topic"],
                topic_name=opts["topic_name"],
                synonyms=synonyms,
                relevance=opts["relevance"],
                argument_version=opts["argument_version"],
                argument_project=opts["argument_project"],
                tagger_version=opts["tagger_version"],
                tagger_project=opts["tagger_project"],
                batch_size=opts["batch_size"],
                shards=opts["shards"],
                min_args=opts["min_args"],
                max_args=opts["max_args"],
                max_per_topic_stance=opts["max_per_topic_stance"],
                seed=opts["seed"],
                release_name=opts["release_name"],
                release_version=opts["release_version"],
            )
            pipeline, created = service.find_or_create(prepared, new=opts["new"])
        except service.PipelineError as exc:
            raise CommandError(f"pipeline argctrl: {exc}", returncode=2) from None
        say = (lambda text: None) if opts["json"] else self.stdout.write
        say(
            f"pipeline {pipeline.pk} ({'new' if created else 'continued'}): {pipeline.documents} -> "
            f"{pipeline.topic_name}"
        )
        for stage in service.STAGES:
            state = (pipeline.stages or {}).get(stage) or {}
            if state.get("status") == service.DONE:
                say(f"  {stage}: done (earlier) {_figures(stage, state.get('counts') or {})}")
        try:
            while True:
                stage = service.next_stage(pipeline)
                if stage is None:
                    break
                with cli_progress(f"argctrl {stage}") as progress:
                    pipeline = service.run_stage(pipeline, stage, progress=progress, queue=opts["queue"])
                state = pipeline.stages.get(stage) or {}
                if stage == "import":  # import and relevance end together
                    say(f"  import: {state.get('status')} {_figures(stage, state.get('counts') or {})}")
                    stage, state = "relevance", pipeline.stages.get("relevance") or {}
                say(f"  {stage}: {state.get('status')} {_figures(stage, state.get('counts') or {})}")
                if state.get("status") != service.DONE:
                    break
        except service.PipelineError as exc:
            raise CommandError(f"pipeline argctrl: {exc}", returncode=2) from None
        except Exception as exc:  # noqa: BLE001 - a stage failed: the row keeps the error, a re-run continues
            raise CommandError(
                f"pipeline argctrl: pipeline {pipeline.pk}: {type(exc).__name__}: {exc}", returncode=1
            ) from None
        out = service.summary(pipeline)
        if pipeline.status == PipelineRun.Status.DONE and opts["out"]:
            try:
                out["rows"] = service.write_documents(pipeline, opts["out"])
            except service.PipelineError as exc:
                raise CommandError(f"pipeline argctrl: {exc}", returncode=2) from None
            out["out"] = opts["out"]
        if opts["json"]:
            self.stdout.write(json.dumps(out, sort_keys=True, default=str))
        elif pipeline.status == PipelineRun.Status.DONE:
            self.stdout.write(
                f"pipeline {pipeline.pk} done: release {out['release']}"
                + (f", {out['rows']} documents written to {out['out']}" if "out" in out else "")
            )
        else:
            self.stdout.write(
                f"pipeline {pipeline.pk} {pipeline.status} at stage {pipeline.stage}"
                + (f": {pipeline.error}" if pipeline.error else "")
                + ("; run the command again to continue" if pipeline.status != "failed" else "")
            )

    def status(self, opts):
        if opts["id"] is not None:
            pipeline = PipelineRun.objects.filter(pk=opts["id"]).first()
            if pipeline is None:
                raise CommandError(f"id: no pipeline {opts['id']}", returncode=2)
            rows = [service.summary(pipeline)]
        else:
            rows = [service.summary(p) for p in PipelineRun.objects.order_by("-pk")[:20]]
        if opts["json"]:
            self.stdout.write(json.dumps(rows[0] if opts["id"] is not None else rows, sort_keys=True, default=str))
            return
        for row in rows:
            self.stdout.write(
                f"pipeline {row['pipeline']} {row['kind']} {row['topic']}: {row['status']} (stage {row['stage']})"
            )
            for stage, state in row["stages"].items():
                self.stdout.write(
                    f"  {stage}: {state.get('status', 'pending')} {_figures(stage, state.get('counts') or {})}"
                )


def _figures(stage: str, counts: dict) -> str:
    if not counts:
        return ""
    if stage == "documents":
        dropped = ", ".join(f"{k} {v}" for k, v in (counts.get("dropped") or {}).items() if v) or "nothing"
        return (
            f"(release {counts.get('name')} {counts.get('version')}: {counts.get('documents')} documents, "
            f"{counts.get('arguments')} arguments; dropped {dropped})"
        )
    keep = {k: v for k, v in counts.items() if not isinstance(v, (list, dict))}
    return "(" + ", ".join(f"{k} {v}" for k, v in keep.items()) + ")"
