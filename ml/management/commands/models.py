"""``manage.py models``: the model registry from the command line.

::

    manage.py models list [--kind K] [--project SLUG] [--json]
    manage.py models kinds                       registered trainer kinds
    manage.py models activate <id>
    manage.py models rollback <kind> [--project SLUG]
    manage.py models recover [--older-than SECONDS] [--requeue]   versions left "training" by a lost worker
"""
from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Project
from ml import registry
from ml.models import ModelVersion


class Command(BaseCommand):
    help = "List, activate and roll back trained model versions."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        ls = sub.add_parser("list")
        ls.add_argument("--kind")
        ls.add_argument("--project")
        ls.add_argument("--json", action="store_true")
        sub.add_parser("kinds")
        act = sub.add_parser("activate")
        act.add_argument("id", type=int)
        rb = sub.add_parser("rollback")
        rb.add_argument("kind")
        rb.add_argument("--project")
        rec = sub.add_parser("recover")
        rec.add_argument("--older-than", dest="older_than", type=float, default=None)
        rec.add_argument("--requeue", action="store_true")

    def _project(self, slug):
        if not slug:
            return None

        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"--project: no project {slug!r}", returncode=2)
        return project

    def handle(self, *args, **opts):
        action = opts["action"]
        if action == "kinds":
            for kind in registry.trainer_kinds():
                spec = registry.get_trainer(kind)
                self.stdout.write(f"{kind}\t{spec.primary_metric}\t{spec.description}")
            return
        if action == "list":
            qs = ModelVersion.objects.select_related("project").order_by("kind", "project_id", "id")
            if opts["kind"]:
                qs = qs.filter(kind=opts["kind"])
            if opts["project"]:
                qs = qs.filter(project=self._project(opts["project"]))
            rows = [{"id": v.pk, "kind": v.kind, "project": v.project.slug if v.project else None,
                     "status": v.status, "active": v.is_active, "primary": v.primary_metric,
                     "primary_metric": (v.metrics or {}).get("primary_metric"), "n_train": v.n_train,
                     "n_dev": v.n_dev, "seed": v.seed, "data_snapshot": v.data_snapshot,
                     "created_at": v.created_at.isoformat(), "artifact_path": v.artifact_path} for v in qs]
            if opts["json"]:
                self.stdout.write(json.dumps(rows, indent=2))
                return
            for r in rows:
                self.stdout.write(f"{r['id']:>5} {'*' if r['active'] else ' '} {r['kind']:<14} "
                                  f"{r['project'] or 'global':<20} {r['status']:<9} "
                                  f"{r['primary_metric'] or '':>10}={'' if r['primary'] is None else round(r['primary'], 4)}"
                                  f"  {r['data_snapshot']}")
            return
        if action == "activate":
            version = ModelVersion.objects.filter(pk=opts["id"]).first()
            if version is None:
                raise CommandError(f"id: no model version {opts['id']}", returncode=2)
            try:
                registry.activate(version)
            except ValueError as exc:
                raise CommandError(str(exc), returncode=2) from None
            self.stdout.write(f"version {version.pk} is the active {version.kind}")
            return
        if action == "rollback":
            previous = registry.rollback(opts["kind"], self._project(opts["project"]))
            if previous is None:
                raise CommandError(f"no earlier ready {opts['kind']} version to roll back to", returncode=2)
            self.stdout.write(f"rolled back: version {previous.pk} is the active {previous.kind}")
            return
        if action == "recover":
            found = registry.recover_interrupted(older_than=opts["older_than"], requeue=opts["requeue"])
            for item in found:
                self.stdout.write(json.dumps(item))
            self.stdout.write(f"{len(found)} interrupted version(s)")
