"""``manage.py aspects import|export|labels|convert``: App. F aspect datasets and ranker training labels.

    manage.py aspects import FILE --project SLUG [--as-gold] [--create] [--build-hits] [--activate]
    manage.py aspects import FILE.conll|FILE.txt|FOLDER --format conll --project SLUG [--topic T]
                             [--stance pro|con|unknown]
    manage.py aspects convert FILE.conll|FILE.txt|FOLDER --out FILE.jsonl [--topic T] [--stance pro|con|unknown]
    manage.py aspects export --project SLUG --out FILE.jsonl [--split cross-topic|in-topic --out-dir DIR] [--seed N]
    manage.py aspects export --project SLUG --split cross-topic|in-topic --out-dir DIR [--seed N]
    manage.py aspects export --project SLUG --split cross-topic --test T1,T2 --dev T3 --out-dir DIR
    manage.py aspects labels (--project SLUG | --appf FILE) --out FILE.jsonl

Import is all or nothing: on a problem it prints ``file:line: reason`` to stderr, exits 2 and writes nothing.
``--format conll`` reads the argument-aspect span corpus (CoNLL, one token and its label a line, numbered and with
aspect categories as published or plain BIO; a file or a folder of ``.conll`` / ``.txt`` files, one per topic:
:mod:`annotation.task_types.aspect.conll`) as App. F rows -- the topic from each file's name unless ``--topic``, the
stance from the sentence's own ``# stance = pro|con|unknown`` line, else the corpus's copy of the sentence, else
``--stance``, else unknown (App. F ``"stance": null``; never invented) -- and imports them as an App. F file would
be; ``convert`` writes those rows as an App. F file instead. ``--as-gold``: every row is a gold item (expected
answer: its aspects).
Export: ``--out`` is the unsplit App. F file; ``--split`` + ``--out-dir`` write train/dev/test.jsonl into DIR
(either or both); cross-topic holds out App. F's topics unless ``--test T1,T2 --dev T3`` name others, and
exits 2 writing nothing when a test / dev topic is not in the project (the message lists its topics). A wrong
combination (``--split`` without ``--out-dir``, ``--out-dir`` without ``--split``,
neither ``--out`` nor ``--split``, ``--out`` naming a folder) exits 2 and writes nothing. Sentences that are not
arguments (stance none) and unresolved items are left out and counted.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

import annotation.task_types.aspect.task_type  # noqa: F401  (registers the task type)
from annotation import services
from annotation.models import Project
from annotation.selectors import project_of_type, status_note
from annotation.task_types.aspect import appf, conll, labels
from annotation.task_types.aspect.appf import parse_appf
from annotation.task_types.base import GoldShare
from argora.jsonl import write_jsonl
from argora.progress import cli_progress
from corpus.importers import ImportFailed
from corpus.releases import check_export_args


class Command(BaseCommand):
    help = "Aspect datasets (Arg-CTRL App. F): import into a project, export with splits, write ranker labels."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        p = sub.add_parser("import", help="import an App. F JSONL file (or CoNLL spans) into an aspect project")
        p.add_argument("file", help="the App. F file; with --format conll a .conll / .txt file or a folder of them")
        p.add_argument(
            "--format",
            dest="fmt",
            choices=["appf", "conll"],
            default="appf",
            help="appf (default): Arg-CTRL App. F JSONL; conll: [number<TAB>]token<TAB>label lines "
            "(BIO or aspect categories), one file a topic",
        )
        p.add_argument("--topic", help="conll: the topic of every sentence (default: each file's name)")
        p.add_argument(
            "--stance",
            choices=conll.STANCE_CHOICES,
            help="conll: the stance of sentences with no '# stance' line that the corpus does not have "
            "(default: unknown, App. F stance null)",
        )
        p.add_argument("--project", required=True, help="slug of the aspect project")
        p.add_argument("--as-gold", action="store_true", help="create gold items (expected = the file's aspects)")
        p.add_argument("--create", action="store_true", help="create the project (task type aspect) if missing")
        p.add_argument("--build-hits", action="store_true", help="put the new items into HITs")
        p.add_argument(
            "--activate", action="store_true", help="open the project to workers after the import (builds the HITs)"
        )
        p = sub.add_parser("export", help="write a project's aspects as App. F JSONL")
        p.add_argument("--project", required=True)
        p.add_argument("--out", help="the unsplit App. F file, e.g. aspects.jsonl")
        p.add_argument(
            "--split",
            default=None,
            choices=["none", "cross-topic", "in-topic"],
            help="also write the fixed split (App. F) as train/dev/test.jsonl into --out-dir",
        )
        p.add_argument("--out-dir", dest="out_dir", help="folder for the split files (with --split)")
        p.add_argument("--seed", type=int, default=13, help="seed of the in-topic split")
        p.add_argument(
            "--test",
            default=None,
            help="cross-topic: comma-separated test topics (default App. F's: gun control, school uniforms)",
        )
        p.add_argument(
            "--dev",
            default=None,
            help="cross-topic: comma-separated dev topics (default App. F's: "
            "death penalty); every other topic is train",
        )
        p = sub.add_parser("convert", help="write CoNLL aspect spans as an App. F JSONL file")
        p.add_argument("file", help="a .conll / .txt file or a folder of them")
        p.add_argument("--out", required=True, help="the App. F file to write")
        p.add_argument("--topic", help="the topic of every sentence (default: each file's name)")
        p.add_argument(
            "--stance",
            choices=conll.STANCE_CHOICES,
            help="the stance of sentences with no '# stance' line that the corpus does not have "
            "(default: unknown, App. F stance null)",
        )
        p = sub.add_parser("labels", help="write Step 2a ranker labels (sentence, candidate, score) as JSONL")
        src = p.add_mutually_exclusive_group(required=True)
        src.add_argument("--project")
        src.add_argument("--appf", help="an App. F file instead of a project")
        p.add_argument("--out", required=True)

    def _project(self, slug: str, *, create: bool = False):
        def make():
            return services.create_project(name=slug, slug=slug, task_type="aspect")

        return project_of_type(
            slug,
            "aspect",
            error=lambda reason: CommandError(reason, returncode=2),
            create=make if create else None,
            hint=" (use --create to make one)",
        )

    def handle(self, *args, action, **options):
        try:
            if action == "import":
                stats: dict = {}
                if options["fmt"] == "conll":
                    rows = conll.appf_rows(
                        options["file"], topic=options["topic"], stance=options["stance"], stats=stats
                    )
                else:
                    rows = parse_appf(options["file"])  # validate before creating anything
                project = self._project(options["project"], create=options["create"])
                with cli_progress("import aspects") as progress:
                    summary = appf.import_appf(
                        options["file"],
                        project,
                        gold=GoldShare("all") if options["as_gold"] else None,
                        progress=progress,
                        rows=rows,
                    )
                if stats.get("duplicates"):
                    summary["duplicate_sentences"] = stats["duplicates"]
                if stats.get("stance_unknown"):
                    summary["stance_unknown"] = stats["stance_unknown"]
                if options["build_hits"] or options["activate"]:
                    summary["hits_created"] = services.build_hits(project)
                if options["activate"]:
                    services.set_project_status(project, Project.Status.ACTIVE)
                self.stdout.write(
                    f"{options['file']}: "
                    + ", ".join(f"{k} {v}" for k, v in summary.items())
                    + f"; {status_note(project)}"
                )
            elif action == "export":
                problem = check_export_args(
                    options["out"], options["split"], options["out_dir"], file_name="aspects.jsonl"
                )
                if problem:
                    raise CommandError(problem, returncode=2)
                topics = {
                    part: [t.strip() for t in options[part].split(",") if t.strip()]
                    for part in ("test", "dev")
                    if options.get(part) is not None
                }
                if topics and options["split"] != "cross-topic":
                    raise CommandError(f"--{' and --'.join(topics)}: only with --split cross-topic", returncode=2)
                project = self._project(options["project"])
                stats: dict = {}
                files = appf.export_appf(
                    project,
                    options["out"],
                    split=options["split"],
                    out_dir=options["out_dir"],
                    seed=options["seed"],
                    stats=stats,
                    **topics,
                )
                self.stdout.write(", ".join(f"{name}: {n} rows" for name, n in files.items()))
                self.stdout.write(
                    f"left out: {stats['non_arguments']} non-argument sentence(s) (stance none; App. F "
                    f"has arguments only), {stats['unresolved']} unresolved item(s)"
                )
            elif action == "convert":
                stats = {}
                rows = conll.appf_rows(options["file"], topic=options["topic"], stance=options["stance"], stats=stats)
                n = write_jsonl([conll.appf_dict(r) for r in rows], options["out"])
                self.stdout.write(
                    f"{options['out']}: {n} App. F rows ({stats['stance_from_file']} stance(s) from "
                    f"the file, {stats['stance_from_corpus']} from the corpus, "
                    f"{stats['stance_unknown']} unknown, {stats['duplicates']} repeated sentence(s) "
                    f"kept once)"
                )
            else:
                if options["appf"]:
                    rows = list(labels.appf_label_rows(options["appf"]))  # validate the whole file first
                else:
                    rows = labels.project_label_rows(self._project(options["project"]))
                n = write_jsonl(rows, options["out"])
                self.stdout.write(f"{options['out']}: {n} label rows")
        except (ImportFailed, services.ProjectInvalid) as exc:
            raise CommandError(str(exc), returncode=2) from None
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2) from None
