"""Model annotators of a project (:mod:`annotation.model_annotators`) from the command line.

    manage.py model_annotators list <project>
    manage.py model_annotators add-llm <project> <name> [--model M] [--base-url URL] [--prompt-file F]
    manage.py model_annotators add-registry <project> <name> --version <ModelVersion id>
    manage.py model_annotators run <project> <name>            # here, with a progress bar (the studio queues a job)
    manage.py model_annotators report <project> [--epsilon E] [--min-instances N] [--json]

``report`` prints, per model annotator, alpha / kappa of the humans with and without it, its agreement with each
human and with the human majority, and the alt-test (``{"models": {name: {..., "alt_test": {"winning_rate",
"advantage_probability", "passed", ...}}}}`` with ``--json``). Bad input exits with status 2 and ``field: reason``.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation import model_annotators as ma
from annotation.models import ModelAnnotator, Project
from argora.errors import FieldError
from argora.progress import cli_progress


def _fail(reason: str) -> CommandError:
    return CommandError(reason, returncode=2)


def _num(v) -> str:
    return "—" if v is None else f"{v:.3f}"


class Command(BaseCommand):
    help = "Model annotators (registry models, LLMs) of a project: add, run, and report their agreement + alt-test."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        p = sub.add_parser("list")
        p.add_argument("project")
        p = sub.add_parser("add-llm")
        p.add_argument("project")
        p.add_argument("name")
        p.add_argument("--model", default="")
        p.add_argument("--base-url", default="")
        p.add_argument("--api-key-env", default="")
        p.add_argument("--prompt-file", default="")
        p = sub.add_parser("add-registry")
        p.add_argument("project")
        p.add_argument("name")
        p.add_argument("--version", required=True)
        p = sub.add_parser("run")
        p.add_argument("project")
        p.add_argument("name")
        p = sub.add_parser("report")
        p.add_argument("project")
        p.add_argument("--epsilon", type=float, default=None)
        p.add_argument("--min-instances", type=int, default=None)
        p.add_argument("--json", action="store_true")

    def handle(self, *args, **o):
        project = Project.objects.filter(slug=o["project"]).first()
        if project is None:
            raise _fail(f"project: no project with slug {o['project']!r}")
        try:
            getattr(self, "do_" + o["action"].replace("-", "_"))(project, o)
        except FieldError as exc:
            raise _fail(f"{exc.field}: {exc.reason}") from None

    def _annotator(self, project, name) -> ModelAnnotator:
        found = ModelAnnotator.objects.filter(project=project, name=name).first()
        if found is None:
            raise _fail(f"name: {project.slug!r} has no model annotator {name!r}")
        return found

    def do_list(self, project, o):
        for a in ModelAnnotator.objects.filter(project=project).order_by("id"):
            s = ma.summary(a)
            self.stdout.write(
                f"{a.name}\t{a.kind}\t{s['model_id']}\t{a.status}\t{s['answered']} answered\t"
                f"{s['failures']} failed attempts"
            )

    def do_add_llm(self, project, o):
        template = None
        if o["prompt_file"]:
            try:
                template = Path(o["prompt_file"]).read_text(encoding="utf-8")
            except OSError as exc:
                raise _fail(f"{o['prompt_file']}: {exc.strerror}") from None
        options = {"model": o["model"], "base_url": o["base_url"], "api_key_env": o["api_key_env"] or None}
        a = ma.create_annotator(project, name=o["name"], kind="llm", options=options, prompt_template=template)
        self.stdout.write(f"model annotator {a.name} added ({ma.model_id(a)})")

    def do_add_registry(self, project, o):
        a = ma.create_annotator(project, name=o["name"], kind="registry", options={"version": o["version"]})
        self.stdout.write(f"model annotator {a.name} added ({ma.model_id(a)})")

    def do_run(self, project, o):
        a = self._annotator(project, o["name"])
        with cli_progress(f"{a.name}") as progress:
            out = ma.run(a.pk, progress=progress)
        self.stdout.write(json.dumps(out, default=str))

    def do_report(self, project, o):
        eps = o["epsilon"]
        if eps is not None and not 0 <= eps < 1:
            raise _fail(f"epsilon: must be at least 0 and below 1, got {eps}")
        if o["min_instances"] is not None and o["min_instances"] < 1:
            raise _fail("min_instances: at least 1")
        reports = ma.report(project, epsilon=eps, min_instances=o["min_instances"])
        if o["json"]:
            self.stdout.write(
                json.dumps({"project": project.slug, "models": {r["name"]: r for r in reports}}, indent=2, default=str)
            )
            return
        if not reports:
            self.stdout.write(f"{project.slug}: no model annotators")
        for r in reports:
            self.stdout.write(f"{r['name']} ({r['model_id']}): {r['n_answers']} answers")
            for p in r["problems"]:
                self.stdout.write(f"  {p}")
            if "without" in r:
                self.stdout.write(
                    f"  alpha without / with: {_num(r['without']['alpha'])} "
                    f"(n = {r['without']['n_units']} units) / {_num(r['with']['alpha'])} "
                    f"(n = {r['with']['n_units']} units)"
                )
                self.stdout.write(
                    f"  agreement with the human majority: {_num(r['majority']['accuracy'])} (n = {r['majority']['n']})"
                )
            alt = r.get("alt_test")
            if alt:
                verdict = {True: "passed", False: "not passed", None: "no verdict"}[alt["passed"]]
                self.stdout.write(
                    f"  alt-test: winning rate {_num(alt['winning_rate'])}, advantage probability "
                    f"{_num(alt['advantage_probability'])}, epsilon {alt['epsilon']}: {verdict} "
                    f"({alt['n_tested']} of {alt['n_humans']} humans tested, "
                    f"{alt['n_instances']} instances)"
                )
                for p in alt["problems"]:
                    self.stdout.write(f"    {p}")
