"""``manage.py valnov import|export``: validity / novelty data in the ArgMining 2022 shared-task layout.

    manage.py valnov import FILE.csv --project P [--as-gold] [--format csv|jsonl] [--activate]
    manage.py valnov export --project P --out FILE.csv [--format csv|jsonl] [--labels auto|crowd|reference]
                            [--with-weights]

``import`` creates the project (task type ``validity_novelty``, R = 3, draft) when there is none with slug P, checks
every row first and writes nothing when one is bad: ``file:line: reason`` on stderr, exit 2. ``export`` writes the
imported columns in the imported order (extra columns included); ``--out -`` writes to stdout. The format defaults
to the file's extension (``.jsonl`` -> JSONL, else CSV). See :mod:`annotation.task_types.validity_novelty.results` for the label modes.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

import annotation.task_types.validity_novelty.task_type  # noqa: F401  (registers the task type)
from annotation import services
from annotation.models import Project
from annotation.selectors import status_note
from annotation.task_types.validity_novelty import results
from annotation.task_types.validity_novelty.csvio import guess_format, read_file
from corpus.importers.base import ImportFailed


class Command(BaseCommand):
    help = "Validity/novelty (ValNov): import or export shared-task CSV / JSONL files."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        p = sub.add_parser("import", help="rows of a shared-task CSV / JSONL -> items (or gold items) of a project")
        p.add_argument("file")
        p.add_argument("--project", required=True, help="project slug (created when missing)")
        p.add_argument("--format", choices=("csv", "jsonl"), default=None)
        p.add_argument("--as-gold", action="store_true", help="make every row a gold item (expected = its labels)")
        p.add_argument("--activate", action="store_true", help="open the project to workers after the import")
        p = sub.add_parser("export", help="the project's labels in the shared-task layout")
        p.add_argument("--project", required=True)
        p.add_argument("--out", required=True, help="output file, or - for stdout")
        p.add_argument("--format", choices=("csv", "jsonl"), default=None)
        p.add_argument("--labels", choices=("auto", "crowd", "reference"), default="auto")
        p.add_argument("--with-weights", action="store_true", help="append an Instance-Weight column (1..5)")

    def handle(self, *args, action, **options):
        try:
            if action == "import":
                if options["as_gold"] and options["activate"]:
                    raise results.ValNovError(
                        "--activate: gold items alone make no HITs; import the items to "
                        "annotate without --as-gold to open the project"
                    )
                table = read_file(options["file"], options["format"])  # every row checked before any write
                project = results.get_project(options["project"], create=True)
                s = results.import_table(project, table, gold_rows=range(len(table.rows)) if options["as_gold"] else ())
                if options["activate"]:
                    services.set_project_status(project, Project.Status.ACTIVE)
                kind = "gold items" if options["as_gold"] else "items"
                self.stdout.write(
                    f"{project.slug}: {s['created']} {kind} created, {s['skipped']} already present, "
                    f"{s['hits']} HITs built; {status_note(project)}"
                )
                return
            project = results.get_project(options["project"])
            out = options["out"]
            fmt = options["format"] or ("csv" if out == "-" else guess_format(out))
            if out == "-":
                summary = results.export(
                    project, sys.stdout, fmt=fmt, labels=options["labels"], with_weights=options["with_weights"]
                )
            else:
                try:
                    fh = open(out, "w", encoding="utf-8", newline="")
                except OSError as exc:
                    raise results.ValNovError(f"{out}:0: cannot write: {exc.strerror or exc}") from None
                with fh:
                    summary = results.export(
                        project, fh, fmt=fmt, labels=options["labels"], with_weights=options["with_weights"]
                    )
            msg = (
                f"{project.slug}: {summary['rows']} rows ({summary['crowd']} crowd, {summary['reference']} "
                f"imported labels)"
                + (f", {summary['left_out']} items without labels left out" if summary["left_out"] else "")
            )
            (self.stderr if out == "-" else self.stdout).write(msg)
        except (ImportFailed, results.ValNovError, services.ProjectInvalid) as exc:
            # `file:line: reason` (or the project problem) alone on stderr, exit 2 -- nothing was written
            sys.stderr.write(f"{exc}\n")
            sys.stderr.flush()
            raise SystemExit(2) from None
