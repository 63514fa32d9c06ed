"""``manage.py spans``: KB-grounded factual spans (ArgU §3).

    manage.py spans kb-export --file kb.csv|kb.jsonl|- [--format csv|jsonl] [--topic T] [--status active,pending|all]
    manage.py spans kb-import --file kb.csv|kb.jsonl [--format csv|jsonl] [--topic T]
    manage.py spans normalise --project SLUG [--threshold 0.85] [--cluster-threshold 0.75] [--no-propose]
    manage.py spans normalise --pending [--topic T]          # suggest merges for proposals awaiting review
    manage.py spans export --project SLUG --file out.jsonl|- [--include-unannotated] [--filters]
    manage.py spans metrics --file eval.jsonl [--json]

``metrics``: each JSONL line ``{"text", "reference": [spans], "predicted": [spans]}`` (spans ``{"begin", "end",
"variable"}``); prints span detection F1 (mean per example, and micro), grounding label accuracy (Figure 7) and
span-level F1 at partial / full / exact overlap (§3.2.2, Table 1).
Bad input: ``file:line: reason`` on stderr, exit 2, nothing written.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

import annotation.task_types.span_grounding.task_type  # noqa: F401  (registers the task type)
from annotation.selectors import project_of_type
from annotation.task_types.span_grounding import kb, normalisation
from annotation.task_types.span_grounding.export import project_rows
from annotation.task_types.span_grounding.metrics import evaluate
from argora.errors import FileLineError, command_error
from argora.jsonl import dumps, read_jsonl, write_jsonl
from corpus.importers import ImportFailed
from corpus.models import FactVariable, Topic


def _fail(msg: str):
    return CommandError(msg, returncode=2)


class Command(BaseCommand):
    help = "Span grounding: KB export/import, normalisation, JSONL export, span metrics."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        p = sub.add_parser("kb-export", help="write the fact KB as CSV or JSONL")
        p.add_argument("--file", required=True, help="path, or - for stdout")
        p.add_argument("--format", choices=["csv", "jsonl"])
        p.add_argument("--topic")
        p.add_argument("--status", default="active", help="comma-separated statuses, or all")
        p = sub.add_parser("kb-import", help="import fact variables (facts-csv / facts-jsonl), all or nothing")
        p.add_argument("--file", required=True)
        p.add_argument("--format", choices=["csv", "jsonl"])
        p.add_argument("--topic", help="topic of rows that name none")
        p = sub.add_parser("normalise", help="map Others spans / pending proposals onto the KB")
        p.add_argument("--project")
        p.add_argument("--pending", action="store_true")
        p.add_argument("--topic")
        p.add_argument("--threshold", type=float, default=0.85)
        p.add_argument("--cluster-threshold", type=float, default=0.75)
        p.add_argument("--no-propose", action="store_true", help="do not create proposed variables")
        p = sub.add_parser("export", help="JSONL export of a span_grounding project")
        p.add_argument("--project", required=True)
        p.add_argument("--file", required=True, help="path, or - for stdout")
        p.add_argument("--include-unannotated", action="store_true")
        p.add_argument(
            "--filters",
            action="store_true",
            help="apply ArgU §3.2.4's filters (<= 30%% unnormalised spans, 1-4 variables each "
            "present 2-4 times, <= 150 words)",
        )
        p = sub.add_parser("metrics", help="span detection F1 + grounding accuracy of predictions vs reference")
        p.add_argument("--file", required=True)
        p.add_argument("--json", action="store_true")

    def handle(self, *args, action, **options):
        return getattr(self, "_" + action.replace("-", "_"))(options)

    # --- KB --------------------------------------------------------------------------------------------
    def _kb_export(self, o):
        statuses = None if o["status"] == "all" else [s.strip() for s in o["status"].split(",") if s.strip()]

        bad = [s for s in statuses or [] if s not in FactVariable.Status.values]
        if bad:
            raise _fail(f"--status: unknown status {bad[0]!r} (known: {', '.join(FactVariable.Status.values)}, all)")
        if o["file"] == "-":
            self.stdout.write(kb.kb_text(o["format"] or "jsonl", topic=o["topic"], statuses=statuses), ending="")
            return
        try:
            n = kb.export_kb(o["file"], o["format"], topic=o["topic"], statuses=statuses)
        except ValueError as exc:
            raise _fail(f"{o['file']}:0: {exc}") from None
        self.stdout.write(f"{o['file']}: {n} fact variable{'s' if n != 1 else ''}")

    def _kb_import(self, o):
        try:
            summary = kb.import_kb(o["file"], o["format"], topic=o["topic"])
        except ImportFailed as exc:
            raise _fail(str(exc)) from None
        self.stdout.write(f"{o['file']}: {summary}")

    # --- normalisation ------------------------------------------------------------------------------------
    def _normalise(self, o):
        if o["pending"] == bool(o["project"]):
            raise _fail("normalise: give either --project SLUG or --pending")
        if not 0 < o["threshold"] <= 1 or not 0 < o["cluster_threshold"] <= 1:
            raise _fail("--threshold / --cluster-threshold: a cosine in (0, 1]")
        if o["pending"]:
            topic = None
            if o["topic"]:
                topic = (
                    Topic.objects.filter(name__iexact=o["topic"]).first()
                    or Topic.objects.filter(slug=o["topic"]).first()
                )
                if topic is None:
                    raise _fail(f"--topic: no topic {o['topic']!r}")
            r = normalisation.normalise_pending(
                topic, threshold=o["threshold"], cluster_threshold=o["cluster_threshold"]
            )
            self.stdout.write(f"{r['pending']} pending: {r['merge']} suggested merges, {r['accept']} new")
            return
        project = self._project(o["project"])
        r = normalisation.normalise_project(
            project, threshold=o["threshold"], cluster_threshold=o["cluster_threshold"], propose=not o["no_propose"]
        )
        self.stdout.write(
            f"{project.slug}: {r['spans']} Others spans: {r['direct']} direct, {r['indirect']} indirect, "
            f"{r['unmapped']} unmapped; {r['proposed']} proposed variables; {r['path']}"
        )

    # --- export / metrics -------------------------------------------------------------------------------------
    def _export(self, o):
        project = self._project(o["project"])
        rows = project_rows(project, include_unannotated=o["include_unannotated"], filters=o["filters"])
        if o["file"] == "-":
            for row in rows:
                self.stdout.write(dumps(row))
            return
        n = write_jsonl(rows, o["file"])
        self.stdout.write(f"{o['file']}: {n} argument{'s' if n != 1 else ''}")

    def _metrics(self, o):
        path = o["file"]
        examples = []
        try:
            for n, obj in read_jsonl(path, require_rows=True):
                if not isinstance(obj.get("text"), str):
                    raise FileLineError(path, n, 'expected an object with "text", "reference", "predicted"')
                for key in ("reference", "predicted"):
                    spans = obj.get(key, [])
                    if not isinstance(spans, list):
                        raise FileLineError(path, n, f'"{key}" must be a list of spans')
                    for s in spans:
                        ok = isinstance(s, dict) and all(
                            isinstance(s.get(k), int) and not isinstance(s.get(k), bool) for k in ("begin", "end")
                        )
                        if not ok or not 0 <= s["begin"] < s["end"] <= len(obj["text"]):
                            raise FileLineError(
                                path,
                                n,
                                f'"{key}": {s!r} is not a span inside the text ({{"begin", "end", "variable"}})',
                            )
                examples.append(obj)
        except FileLineError as exc:
            raise command_error(exc) from None
        r = evaluate(examples)
        if o["json"]:
            r = {k: v for k, v in r.items() if k != "examples"}
            self.stdout.write(json.dumps(r, sort_keys=True))
            return
        acc = "—" if r["label_accuracy"] is None else f"{r['label_accuracy']:.3f}"
        self.stdout.write(
            f"{r['n']} examples: span detection F1 {r['f1']:.3f} (mean per example; micro "
            f"{r['micro_f1']:.3f}; TP {r['tp']} FP {r['fp']} FN {r['fn']}); label accuracy {acc} "
            f"({r['label_correct']}/{r['label_total']}); span-level F1 partial "
            f"{r['span_partial_f1']:.3f}, full {r['span_full_f1']:.3f}, exact {r['span_exact_f1']:.3f}"
        )

    def _project(self, slug):
        return project_of_type(slug, "span_grounding", error=lambda reason: _fail(f"--project: {reason}"))
