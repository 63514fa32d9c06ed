"""``manage.py models``: the model registry from the command line.

::

    manage.py models list [--kind K] [--project SLUG] [--json]
    manage.py models kinds                       registered trainer kinds
    manage.py models activate <id>
    manage.py models rollback <kind> [--project SLUG]
    manage.py models recover [--older-than SECONDS] [--requeue]   versions left "training" by a lost worker
    manage.py models evaluate <id> --data FILE [--json]            score a version on any file of its kind

``list`` first marks versions whose run died (heartbeat older than 60 s) ``interrupted``
(:func:`ml.versions.sweep_interrupted`); its ``--json`` rows carry the dev and test metrics and, per metric,
``{"metric", "value", "scale", "baseline", "baseline_metric"}`` (:func:`ml.metrics.beside_baselines`).

``evaluate`` reads FILE with the kind's own reader (:func:`ml.loop.rows_from_file_parts`: every row, whatever its
``split``), scores the version with ``spec.evaluate`` and prints each metric on the kind's scale beside the
baseline the kind reports. Exit 2 for an unknown version, one that is not ready, a kind without ``evaluate`` or a
file the kind cannot read (``FILE:LINE: reason``).
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Project
from ml import errors, loop, registry, splits, versions
from ml.metrics import baseline_of, beside_baselines, metric_line
from ml.models import ModelVersion


def version_row(v: ModelVersion) -> dict:
    """One version as ``models list --json`` gives it: the dev primary metric and the test metrics, each figure
    beside the baseline the kind reports, on the kind's scale (nothing rescaled)."""
    metrics = v.metrics or {}
    primary_metric = metrics.get("primary_metric")
    dev, test = metrics.get("dev") or {}, metrics.get("test") or {}
    dev_base = baseline_of(primary_metric, dev) if primary_metric else None
    test_base = baseline_of(primary_metric, test) if primary_metric else None
    return {
        "id": v.pk,
        "kind": v.kind,
        "project": v.project.slug if v.project else None,
        "status": versions.status_of(v),
        "active": v.is_active,
        "primary": v.primary_metric,
        "primary_metric": primary_metric,
        "primary_baseline": dev_base[1] if dev_base else None,
        "primary_baseline_metric": dev_base[0] if dev_base else None,
        "test_primary": test.get(primary_metric) if primary_metric else None,
        "test_primary_baseline": test_base[1] if test_base else None,
        "n_train": v.n_train,
        "n_dev": v.n_dev,
        "n_test": metrics.get("n_test", test.get("n")),
        "seed": v.seed,
        "data_snapshot": v.data_snapshot,
        "created_at": v.created_at.isoformat(),
        "artifact_path": v.artifact_path,
        "dev": beside_baselines(dev, primary_metric),
        "test": beside_baselines(test, primary_metric),
    }


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
        ev = sub.add_parser("evaluate", help="score a registered version on a file of its kind")
        ev.add_argument("version", help="model version id (models list)")
        ev.add_argument(
            "--data",
            required=True,
            help="a file (or folder) the kind's --data reader accepts; every row is scored, whatever its split",
        )
        ev.add_argument("--json", action="store_true")

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
            versions.sweep_interrupted()
            qs = ModelVersion.objects.select_related("project").order_by("kind", "project_id", "id")
            if opts["kind"]:
                qs = qs.filter(kind=opts["kind"])
            if opts["project"]:
                qs = qs.filter(project=self._project(opts["project"]))
            rows = [version_row(v) for v in qs]
            if opts["json"]:
                self.stdout.write(json.dumps(rows, indent=2))
                return
            for r in rows:
                test = "" if r["test_primary"] is None else f"  test={round(r['test_primary'], 4)}"
                self.stdout.write(
                    f"{r['id']:>5} {'*' if r['active'] else ' '} {r['kind']:<14} "
                    f"{r['project'] or 'global':<20} {r['status']:<11} "
                    f"{r['primary_metric'] or '':>10}={'' if r['primary'] is None else round(r['primary'], 4)}"
                    f"{test}  {r['data_snapshot']}"
                )
            return
        if action == "evaluate":
            self._evaluate(opts)
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
            found = versions.recover_interrupted(older_than=opts["older_than"], requeue=opts["requeue"])
            for item in found:
                self.stdout.write(json.dumps(item))
            self.stdout.write(f"{len(found)} interrupted version(s)")

    def _evaluate(self, opts) -> None:
        try:
            pk = int(opts["version"])
        except ValueError:
            raise CommandError(f"VERSION: {opts['version']!r} is not a version id", returncode=2) from None
        version = ModelVersion.objects.select_related("project").filter(pk=pk).first()
        if version is None:
            raise CommandError(f"VERSION: no model version {pk}", returncode=2)
        try:
            spec = registry.get_trainer(version.kind)
        except errors.TrainerError as exc:
            raise CommandError(f"VERSION: version {pk}: {exc}", returncode=2) from None
        if spec.evaluate is None:
            raise CommandError(
                f"VERSION: kind {version.kind!r} cannot score a file (its trainer has no evaluate)", returncode=2
            )
        if version.status not in (ModelVersion.Status.READY, ModelVersion.Status.ARCHIVED) or not (
            version.artifact_path and Path(version.artifact_path).is_dir()
        ):
            raise CommandError(
                f"VERSION: version {pk} is {versions.status_of(version)} and has no artifact to load", returncode=2
            )
        path = Path(opts["data"])
        try:
            train, dev, test = loop.rows_from_file_parts(version.kind, path)
        except errors.TrainerError as exc:
            raise CommandError(str(exc), returncode=2) from None
        rows = splits.untagged(train + dev + test)
        if not rows:
            raise CommandError(f"{path}:0: no rows to score", returncode=2)
        model = registry.load_model(version)
        try:
            metrics = dict(spec.evaluate(model, rows) or {})
        except (KeyError, ValueError, TypeError) as exc:
            raise CommandError(
                f"{path}:0: the {version.kind} kind cannot score these rows ({exc})", returncode=2
            ) from None
        table = beside_baselines(metrics, spec.primary_metric)
        if opts["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "version": version.pk,
                        "kind": version.kind,
                        "data": str(path),
                        "rows": len(rows),
                        "primary_metric": spec.primary_metric,
                        "primary": metrics.get(spec.primary_metric),
                        "metrics": metrics,
                        "beside_baselines": table,
                    },
                    indent=2,
                    default=str,
                )
            )
            return
        self.stdout.write(f"version {version.pk} ({version.kind}) on {path}: {len(rows)} rows")
        for row in table:
            mark = "*" if row["metric"] == spec.primary_metric else " "
            self.stdout.write(f"{mark} {metric_line(row)}")
