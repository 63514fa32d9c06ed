"""Amazon Mechanical Turk from the command line.

    manage.py mturk preview-cost --project P [--pilot] [--json]
    manage.py mturk publish --project P [--sandbox | --production] [--yes] [--limit N] [--no-pilot]
    manage.py mturk sync --project P [--json]
    manage.py mturk balance [--production]
    manage.py mturk resolve --key KEY (--happened | --not-happened)

``publish`` prints the cost preview and asks before creating HITs (``--yes`` skips the question; without a
terminal it refuses unless ``--yes``). Errors a person can act on exit 2 with ``mturk: field: reason``.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Project
from mturk import payments, publishing, sync
from mturk.client import MTurkError, account_balance


class Command(BaseCommand):
    help = "Amazon Mechanical Turk: cost preview, publishing, sync, balance, resolving a call by hand."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(
            dest="subcommand", required=True, metavar="{preview-cost,publish,sync,balance,resolve}"
        )
        p = sub.add_parser("preview-cost", help="reward from the wage floor and the total cost with MTurk's fee")
        p.add_argument("--project", required=True, help="project slug")
        p.add_argument(
            "--pilot",
            action="store_true",
            help="time HITs with the pilot batch (median work_seconds of submitted assignments); "
            "default: the project's time estimate",
        )
        p.add_argument("--json", action="store_true")
        u = sub.add_parser("publish", help="create the ExternalQuestion HITs on MTurk")
        u.add_argument("--project", required=True)
        env = u.add_mutually_exclusive_group()
        env.add_argument("--sandbox", dest="sandbox", action="store_const", const=True, default=None)
        env.add_argument("--production", dest="sandbox", action="store_const", const=False)
        u.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        u.add_argument("--limit", type=int, default=None, help="publish at most N HITs (a pilot batch)")
        u.add_argument("--no-pilot", action="store_true", help="price from the time estimate, not the pilot")
        s = sub.add_parser("sync", help="list assignments, approve/reject, pay bonuses, sync the block list")
        s.add_argument("--project", required=True)
        s.add_argument("--json", action="store_true")
        b = sub.add_parser("balance", help="the requester account's balance")
        b.add_argument("--production", action="store_true")
        r = sub.add_parser("resolve", help="settle a call whose outcome is unknown, after checking on MTurk")
        r.add_argument("--key", required=True)
        g = r.add_mutually_exclusive_group(required=True)
        g.add_argument("--happened", action="store_true")
        g.add_argument("--not-happened", action="store_true")

    def _project(self, slug):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"mturk: --project: no project with slug {slug!r}", returncode=2)
        return project

    def handle(self, *args, **o):
        try:
            return getattr(self, "do_" + o["subcommand"].replace("-", "_"))(o)
        except (publishing.PublishError, MTurkError) as exc:
            raise CommandError(f"mturk: {exc}", returncode=2) from None

    def do_preview_cost(self, o):
        project = self._project(o["project"])
        preview = payments.cost_preview(project, pilot=o["pilot"])
        if o["json"]:
            self.stdout.write(json.dumps(preview.as_dict(), indent=2))
        else:
            self.stdout.write("\n".join(preview.lines()))

    def do_publish(self, o):
        project = self._project(o["project"])
        cfg = publishing.settings_for(project)
        sandbox = cfg.sandbox if o["sandbox"] is None else o["sandbox"]
        preview = payments.cost_preview(project, pilot=not o["no_pilot"])
        if o["limit"] is not None:
            preview = payments.cost_preview(project, pilot=not o["no_pilot"], hits=min(o["limit"], preview.hits))
        publishing.check_publishable(project, cfg)
        self.stdout.write(f"environment: {publishing.env_name(sandbox)}")
        self.stdout.write("\n".join(preview.lines()))
        if not o["yes"]:
            if not sys.stdin.isatty():
                raise CommandError(
                    "mturk: --yes: not a terminal; add --yes to publish without a question", returncode=2
                )
            answer = input(f"Publish {preview.hits} HIT(s) for {payments.dollars(preview.total_cents)}? [y/N] ")
            if answer.strip().lower() not in {"y", "yes"}:
                self.stdout.write("nothing published")
                return
        rows = publishing.publish_project(project, sandbox=sandbox, pilot=not o["no_pilot"], limit=o["limit"])
        for row in rows:
            self.stdout.write(f"{row.mturk_hit_id}  Argora HIT {row.hit.position}  reward {row.reward_cents}c")
        self.stdout.write(self.style.SUCCESS(f"published {len(rows)} HIT(s) on {publishing.env_name(sandbox)}"))

    def do_sync(self, o):
        report = sync.sync_project(self._project(o["project"]))
        if o["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
        else:
            self.stdout.write("\n".join(report.lines()))

    def do_balance(self, o):
        balance = account_balance(sandbox=not o["production"])
        self.stdout.write(
            f"available ${balance['available']}"
            + (f", on hold ${balance['on_hold']}" if balance.get("on_hold") else "")
        )

    def do_resolve(self, o):
        op = sync.resolve_operation(o["key"], happened=o["happened"])
        self.stdout.write(f"{op.key}: {op.status}")
