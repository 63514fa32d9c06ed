"""``manage.py train <kind> --data FILE``: train a model version of a registered kind and (maybe) activate it.

::

    manage.py train ranker --data appf_train.jsonl [--dev appf_dev.jsonl] [--project SLUG] [--seed 13]
        [--epochs 3] [--base-model PATH] [--hp lr=2e-5 --hp batch_size=16] [--activate if_better|always|never]
        [--json] [--queue] [--eval in-topic|cross-topic] [--threads N]

``--data``: a file (Arg-CTRL App. F aspect JSONL; the span-grounding ``spans.jsonl`` export; any JSONL of the
kind's rows) or a folder with ``train.jsonl`` + ``dev.jsonl``. The kind's ``TrainerSpec.rows_from_file`` turns it
into (train, dev) rows; without one, the default reader of :mod:`ml.loop` does (App. F -> §3.1 Step 2a label rows
for ``ranker``; a file without a ``split`` field is split by sentence hash). Without ``--data``, ``--project`` alone
trains on the project's aggregated labels. ``--queue`` sends it to a ``gpu`` worker (``ml.tasks.train``) instead
of training here. ``--eval cross-topic`` (ranker, span_ranker: leave-one-topic-out recall@k, ``cross_topic_recall@k``
in the dev metrics; argument: leave-one-topic-out macro F1 with one line per held-out topic). Exit 2 with ``FILE:LINE: reason`` for bad data or options.

``--dev DEV``: every row of ``--data`` trains (no hash split), every row of DEV is a dev row; rows marked
``split: "test"`` in either file give the version's test metrics only (``metrics.test``), never training or
selection. ``--threads N``: torch / OpenMP threads of this run (default ``$ARGORA_TORCH_THREADS``, else one on a
CPU-only machine; :func:`ml.training.apply_threads`). Progress: a bar on a terminal, else a plain line every
``ARGORA_PROGRESS_SECONDS`` (30) on stderr. Ctrl-C or SIGTERM marks the version ``interrupted`` at once (exit 130 /
143); a run killed outright (SIGKILL, OOM) is marked so by the next ``train`` / ``models list`` / ``/ml/models/``
once its heartbeat is stale (60 s).
"""

from __future__ import annotations

import json
import os
import uuid

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Project
from argora.progress import cli_progress
from ml import errors, registry, training, versions
from ml.loop import train_and_activate
from ml.metrics import beside_baselines, metric_line
from ml.similarity.sampling import SamplingError, canonical
from ml.tasks import train

SAMPLING_KINDS = ("augsbert",)  # kinds whose hyperparameters include strategy and k (AugSBERT §3.1)


EVAL_KINDS = ("ranker", "span_ranker", "argument", "tagger")  # kinds with the "eval" hyperparameter (in- / cross-topic)


def parse_hp(values: list[str], what: str = "hp") -> dict:
    """``--<what> key=value`` options as a dict (values parsed as JSON where they are JSON, else strings)."""
    out = {}
    for item in values or []:
        if "=" not in item:
            raise CommandError(f"--{what}: {item!r} is not key=value", returncode=2)
        key, raw = item.split("=", 1)
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


def sampling_options(kind: str, strategy: str | None, k: int | None) -> dict:
    """``--strategy`` / ``--k`` as hyperparameters (checked here, so a bad value trains nothing)."""
    out: dict = {}
    if strategy is None and k is None:
        return out
    flag = "--strategy" if strategy is not None else "--k"
    if kind not in SAMPLING_KINDS:
        raise CommandError(
            f"{flag}: only for {', '.join(SAMPLING_KINDS)} (kind {kind!r} samples no silver pairs)", returncode=2
        )
    if strategy is not None:
        try:
            out["strategy"] = canonical(strategy)
        except SamplingError as exc:
            raise CommandError(f"--{exc}", returncode=2) from None
    if k is not None:
        if k < 1:
            raise CommandError(f"--k: must be >= 1, got {k}", returncode=2)
        out["k"] = k
    return out


class Command(BaseCommand):
    help = "Train a model version of a registered kind (see ml/registry.py) from a data file or a project."

    def add_arguments(self, parser):
        parser.add_argument("kind", help="trainer kind (manage.py models kinds lists them)")
        parser.add_argument(
            "--data",
            help="the kind's training file or folder (README, \"Models\": each kind's formats), "
            "e.g. App. F aspect JSONL or CoNLL aspect spans (tagger), the BWS similarity "
            "CSV or UKP ASPECT TSV (crossencoder, biencoder, augsbert), a folder with "
            "train/dev files",
        )
        parser.add_argument("--dev", help="a separate dev file (else the dev split comes from --data)")
        parser.add_argument(
            "--project", help="project slug: the version belongs to it (and, without --data, its labels)"
        )
        parser.add_argument("--seed", type=int, default=13)
        parser.add_argument("--epochs", type=int, help="hyperparameter epochs")
        parser.add_argument("--base-model", dest="base_model", help="name or local path to start from")
        parser.add_argument(
            "--hp", action="append", default=[], help="hyperparameter key=value (JSON value), repeatable"
        )
        parser.add_argument(
            "--strategy",
            help="augsbert: silver pair sampling strategy (random, kde, bm25, semantic, "
            "bm25+semantic; default bm25); same as --hp strategy=...",
        )
        parser.add_argument(
            "--k",
            type=int,
            help="augsbert: top-k neighbours per sentence for bm25 / semantic sampling (default 3); same as --hp k=...",
        )
        parser.add_argument("--activate", choices=["if_better", "always", "never"], default="if_better")
        parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
        parser.add_argument("--queue", action="store_true", help="enqueue ml.tasks.train on the gpu queue instead")
        parser.add_argument(
            "--threads",
            type=int,
            default=None,
            help="torch / OpenMP CPU threads for this run (default: $ARGORA_TORCH_THREADS, else 1 on a "
            "machine without CUDA: one training per process; more threads on a busy machine "
            "make training slower, not faster)",
        )
        parser.add_argument(
            "--eval",
            choices=["in-topic", "cross-topic"],
            default=None,
            help="ranker / span_ranker: cross-topic also reports leave-one-topic-out recall@5/10/15/20 "
            "(Arg-CTRL Table 2); argument: leave-one-topic-out macro F1 per held-out topic (one "
            "extra training per topic); in-topic (default): the dev split only",
        )

    def handle(self, *args, **opts):
        try:
            registry.get_trainer(opts["kind"])
        except errors.TrainerError as exc:
            raise CommandError(str(exc), returncode=2) from None
        project = None
        if opts["project"]:
            project = Project.objects.filter(slug=opts["project"]).first()
            if project is None:
                raise CommandError(f"--project: no project {opts['project']!r}", returncode=2)
        if not opts["data"] and project is None:
            raise CommandError("--data: give a data file (or --project to train on its labels)", returncode=2)
        hyperparameters = parse_hp(opts["hp"])
        if opts["epochs"] is not None:
            hyperparameters["epochs"] = opts["epochs"]
        hyperparameters.update(sampling_options(opts["kind"], opts.get("strategy"), opts.get("k")))
        if opts.get("eval"):
            if opts["kind"] not in EVAL_KINDS:
                raise CommandError(
                    f"--eval: only {', '.join(EVAL_KINDS)} report in- and cross-topic figures, not {opts['kind']!r}",
                    returncode=2,
                )
            hyperparameters["eval"] = opts["eval"]

        if opts.get("threads") is not None:
            if opts["queue"]:
                raise CommandError(
                    "--threads: sets this process's threads; a worker takes $ARGORA_TORCH_THREADS "
                    "(see the README), not --queue",
                    returncode=2,
                )
            try:
                training.thread_count(opts["threads"])
            except errors.TrainerError as exc:
                raise CommandError(f"--{exc}", returncode=2) from None
            os.environ[training.ENV_THREADS] = str(opts["threads"])  # read by versions.train_version

        if opts["queue"]:
            result = train.apply_async(
                kwargs={
                    "kind": opts["kind"],
                    "project_id": getattr(project, "pk", None),
                    "data": opts["data"],
                    "dev_data": opts["dev"],
                    "seed": opts["seed"],
                    "hyperparameters": hyperparameters,
                    "activate": opts["activate"],
                    "base_model": opts["base_model"],
                }
            )
            out = {"task_id": result.id, "queue": "gpu"}
            self.stdout.write(json.dumps(out) if opts["json"] else f"queued ml.tasks.train as {result.id}")
            return

        versions.sweep_interrupted()  # runs killed outright before this one: interrupted, not "training"
        task_id = f"cli-{uuid.uuid4().hex}"  # names this run's version so a stop can mark it interrupted
        try:
            with versions.stop_marks_interrupted(task_id), cli_progress(f"train {opts['kind']}") as progress:
                outcome = train_and_activate(
                    opts["kind"],
                    project=project,
                    data=opts["data"],
                    dev_data=opts["dev"],
                    seed=opts["seed"],
                    hyperparameters=hyperparameters,
                    base_model=opts["base_model"],
                    activate=opts["activate"],
                    progress=progress,
                    task_id=task_id,
                )
        except errors.TrainerError as exc:
            raise CommandError(str(exc), returncode=2) from None
        except KeyboardInterrupt:
            self.stderr.write("interrupted (Ctrl-C): the version is marked interrupted")
            raise SystemExit(130) from None
        if opts["json"]:
            self.stdout.write(json.dumps(outcome, sort_keys=True, default=str))
            return
        metric = (outcome["metrics"] or {}).get("primary_metric", "primary")
        self.stdout.write(
            f"version {outcome['version']} ({outcome['kind']}): {outcome['status']}, dev {metric} = "
            f"{(outcome['metrics'] or {}).get('primary')}"
        )
        test = (outcome["metrics"] or {}).get("test") or {}
        if test:
            self.stdout.write(
                f"test ({(outcome['metrics'] or {}).get('n_test', '?')} rows): "
                + "; ".join(metric_line(r) for r in beside_baselines(test, metric)[:6])
            )
        dev = (outcome["metrics"] or {}).get("dev") or {}
        if any(k.startswith("cross_topic_recall@") for k in dev):
            for setting, prefix in (("in-topic", ""), ("cross-topic", "cross_topic_")):
                figures = ", ".join(
                    f"@{k} {dev[f'{prefix}recall@{k}']:.4f}"
                    for k in (5, 10, 15, 20)
                    if dev.get(f"{prefix}recall@{k}") is not None
                )
                self.stdout.write(f"{setting} recall {figures}")
        per_topic = (((outcome["metrics"] or {}).get("info") or {}).get("cross_topic") or {}).get("per_topic") or {}
        if per_topic:
            self.stdout.write(
                f"in-topic macro F1 {dev.get('f1_macro', float('nan')):.4f} "
                f"(majority {dev.get('majority_f1_macro', float('nan')):.4f}); cross-topic macro F1 "
                f"{dev.get('cross_topic_f1_macro', float('nan')):.4f} "
                f"(majority {dev.get('cross_topic_majority_f1_macro', float('nan')):.4f})"
            )
            for topic, row in sorted(per_topic.items()):
                self.stdout.write(
                    f"  held out {topic}: macro F1 {row.get('f1_macro', float('nan')):.4f}, "
                    f"majority {row.get('majority_f1_macro', float('nan')):.4f}, n {row.get('n')}"
                )
        self.stdout.write(
            "activated" if outcome["activated"] else f"not activated (active: {outcome['active'] or 'none'})"
        )
