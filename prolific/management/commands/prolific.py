"""Prolific from the command line.

    manage.py prolific preview-cost --project P [--places N] [--offline] [--json]
    manage.py prolific create --project P
    manage.py prolific publish --project P [--yes]
    manage.py prolific pause|start --project P
    manage.py prolific add-places --project P --places N
    manage.py prolific sync --project P [--json]
    manage.py prolific bonus --project P --submission ID --amount-cents N --reason TEXT
    manage.py prolific bonus --project P --wage-topups
    manage.py prolific hooks [--workspace W] [--target-url URL] [--new-secret] [--event E ...]
    manage.py prolific resolve --key KEY (--happened | --not-happened)

``publish`` prints the cost preview and asks first (``--yes`` skips the question; without a terminal it refuses
unless ``--yes``). Errors a person can act on exit 2 with ``prolific: field: reason``.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Project
from argora.errors import FieldError
from prolific import publishing, sync, webhooks
from prolific.client import ProlificError


class Command(BaseCommand):
    help = "Prolific: cost preview, draft, publish / pause / start, places, sync, bonuses, webhooks."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(
            dest="subcommand",
            required=True,
            metavar="{preview-cost,create,publish,pause,start,add-places,sync,bonus,hooks,resolve}",
        )
        p = sub.add_parser("preview-cost", help="reward from the wage floor, total with Prolific's fees")
        p.add_argument("--project", required=True, help="project slug")
        p.add_argument("--places", type=int, default=None)
        p.add_argument("--offline", action="store_true", help="do not ask Prolific's cost calculator")
        p.add_argument("--json", action="store_true")
        for name, text in (
            ("create", "create the draft study on Prolific"),
            ("pause", "pause the study"),
            ("start", "start a paused study again"),
        ):
            sub.add_parser(name, help=text).add_argument("--project", required=True)
        u = sub.add_parser("publish", help="create the draft if needed and publish it")
        u.add_argument("--project", required=True)
        u.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        a = sub.add_parser("add-places", help="raise the study's places")
        a.add_argument("--project", required=True)
        a.add_argument("--places", required=True, help="places to add")
        s = sub.add_parser("sync", help="bind submissions, approve/reject, free places, pay bonuses")
        s.add_argument("--project", required=True)
        s.add_argument("--json", action="store_true")
        b = sub.add_parser("bonus", help="plan a bonus (or wage top-ups); the next sync pays")
        b.add_argument("--project", required=True)
        b.add_argument("--submission", default="")
        b.add_argument("--amount-cents", default=None)
        b.add_argument("--reason", default="")
        b.add_argument("--wage-topups", action="store_true")
        h = sub.add_parser("hooks", help="subscribe this site's webhook endpoint on Prolific")
        h.add_argument("--workspace", default="")
        h.add_argument("--target-url", default="")
        h.add_argument("--new-secret", action="store_true", help="create (replace) the workspace's hook secret")
        h.add_argument("--event", action="append", default=None, choices=webhooks.EVENTS)
        r = sub.add_parser("resolve", help="settle a call whose outcome is unknown, after checking on Prolific")
        r.add_argument("--key", required=True)
        g = r.add_mutually_exclusive_group(required=True)
        g.add_argument("--happened", action="store_true")
        g.add_argument("--not-happened", action="store_true")

    def _project(self, slug):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"prolific: project: no project with slug {slug!r}", returncode=2)
        return project

    def handle(self, *args, **o):
        try:
            return getattr(self, "do_" + o["subcommand"].replace("-", "_"))(o)
        except (FieldError, ProlificError) as exc:
            raise CommandError(f"prolific: {exc}", returncode=2) from None

    def do_preview_cost(self, o):
        preview = publishing.cost_preview(
            self._project(o["project"]), places=o["places"], ask_prolific=not o["offline"]
        )
        self.stdout.write(json.dumps(preview.as_dict(), indent=2) if o["json"] else "\n".join(preview.lines()))

    def do_create(self, o):
        cfg = publishing.create_study(self._project(o["project"]))
        self.stdout.write(self.style.SUCCESS(f"draft study {cfg.study_id} ({cfg.status})"))

    def do_publish(self, o):
        project = self._project(o["project"])
        cfg = publishing.settings_for(project)
        publishing.check_publishable(project, cfg)
        preview = publishing.cost_preview(project)
        self.stdout.write("\n".join(preview.lines()))
        if not o["yes"]:
            if not sys.stdin.isatty():
                raise CommandError(
                    "prolific: --yes: not a terminal; add --yes to publish without a question", returncode=2
                )
            total = preview.total_cost_cents if preview.total_cost_cents is not None else preview.rewards_total_cents
            if input(
                f"Publish {preview.places} place(s) for {publishing.money(total)}? [y/N] "
            ).strip().lower() not in {"y", "yes"}:
                self.stdout.write("nothing published")
                return
        cfg = publishing.publish(project)
        self.stdout.write(self.style.SUCCESS(f"study {cfg.study_id} published ({cfg.status})"))

    def do_pause(self, o):
        self.stdout.write(f"study {publishing.pause(self._project(o['project'])).status}")

    def do_start(self, o):
        self.stdout.write(f"study {publishing.start(self._project(o['project'])).status}")

    def do_add_places(self, o):
        cfg = publishing.add_places(self._project(o["project"]), o["places"])
        self.stdout.write(f"the study has {cfg.places} places now")

    def do_sync(self, o):
        report = sync.sync_project(self._project(o["project"]))
        self.stdout.write(json.dumps(report.as_dict(), indent=2) if o["json"] else "\n".join(report.lines()))

    def do_bonus(self, o):
        project = self._project(o["project"])
        if o["wage_topups"]:
            self.stdout.write(
                f"planned {len(sync.plan_wage_topups(project))} wage top-up bonus(es); the next sync pays them"
            )
            return
        if o["amount_cents"] is None:
            raise FieldError("amount-cents", "give --amount-cents (or --wage-topups)")
        bonus = sync.grant_bonus(project, o["submission"], o["amount_cents"], o["reason"])
        self.stdout.write(f"bonus {bonus.pk} of {publishing.money(bonus.amount_cents)} planned; the next sync pays it")

    def do_hooks(self, o):
        out = webhooks.register(
            workspace_id=o["workspace"],
            target_url=o["target_url"],
            new_secret=o["new_secret"],
            events=tuple(o["event"] or ("submission.status.change",)),
        )
        self.stdout.write(f"webhook {out['target_url']}: subscriptions {', '.join(out['subscriptions'])}")
        if out["secret"]:
            self.stdout.write(
                f"new hook secret (shown once; put it in ARGORA_PROLIFIC_WEBHOOK_SECRET): {out['secret']}"
            )

    def do_resolve(self, o):
        op = sync.resolve_operation(o["key"], happened=o["happened"])
        self.stdout.write(f"{op.key}: {op.status}")
