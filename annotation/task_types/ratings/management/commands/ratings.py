"""``manage.py ratings``: human evaluation of generated arguments and debates.

    manage.py ratings pairwise --project P --file PAIRS.jsonl        # pairwise_preference items (+ HITs)
    manage.py ratings pairwise --project P --from-corpus CANDIDATES.jsonl [--system NAME] [--source SRC] [--seed N]
                                                                     # each candidate {topic, stance, text} against
                                                                     # a corpus argument of its topic and stance
    manage.py ratings debates  --project P --file DEBATES.jsonl      # likert_debate items from a generation run
    manage.py ratings debates  --project P --from-trees --length 10 [--tree ID ...] [--limit N]
                                                                     # human debates: root-to-leaf tree paths
    manage.py ratings results  --project P [--csv FILE] [--responses FILE]

``pairwise`` / ``debates`` create the project when there is none with slug P (draft; R = 2 pairs / 5 debates,
5 pairs / 1 debate per HIT unless ``--r`` / ``--items-per-hit`` say otherwise; ``--activate`` opens it). Every row is
checked before anything is written: a bad one prints ``file:line: reason`` on stderr and exits 2 with nothing
changed. Re-importing a file adds nothing (rows are keyed by their id, or a hash of their content).
``--from-corpus`` pairs each candidate with a reference sentence of the corpus (seeded; see
:func:`annotation.task_types.ratings.items.read_corpus_pairs`); a candidate whose topic or stance has no corpus argument is a
bad row. A ``likert_debate`` project with R outside 5-10 reviewers per debate gets a warning on stderr (not an error).
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

import annotation.task_types.likert_debate.task_type  # noqa: F401  (registers the task types)
import annotation.task_types.pairwise_preference.task_type  # noqa: F401
from annotation import services
from annotation.selectors import project_of_type
from annotation.task_types.likert_debate import likert
from annotation.task_types.ratings import LIKERT, PAIRWISE, RatingsError, items, results
from corpus.importers.base import ImportFailed
from corpus.models import DebateTree


class Command(BaseCommand):
    help = "Human evaluation: import pairs / debates as rating items, or print a rating project's results."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        for name, text in (
            ("pairwise", "pairs of arguments (JSONL) -> pairwise_preference items"),
            ("debates", "debates (JSONL, or debate-tree paths) -> likert_debate items"),
        ):
            p = sub.add_parser(name, help=text)
            p.add_argument("--project", required=True, help="project slug (created when missing)")
            p.add_argument("--file", help="JSONL file")
            p.add_argument("--name", help="project name for a new project (default: the slug)")
            p.add_argument("--r", type=int, default=None, help="annotators per item for a new project")
            p.add_argument("--items-per-hit", type=int, default=None)
            p.add_argument("--activate", action="store_true", help="set the project active (open to workers)")
            if name == "pairwise":
                p.add_argument(
                    "--from-corpus",
                    metavar="CANDIDATES",
                    dest="from_corpus",
                    help="JSONL of candidate arguments {topic, stance, text, id?, system?}: each is paired "
                    "with a corpus argument of the same topic and stance",
                )
                p.add_argument("--system", help="system name of candidates without one (default: candidate)")
                p.add_argument("--source", help="only corpus sentences with this source as references")
                p.add_argument("--seed", type=int, default=13, help="seed of the reference choice (default 13)")
            if name == "debates":
                p.add_argument("--from-trees", action="store_true", help="human debates from imported debate trees")
                p.add_argument("--length", type=int, default=10, help="turns per tree debate (default 10)")
                p.add_argument("--tree", type=int, action="append", help="only this DebateTree id (repeatable)")
                p.add_argument("--limit", type=int, default=None, help="at most this many tree debates")
        p = sub.add_parser("results", help="print the results tables of a rating project")
        p.add_argument("--project", required=True)
        p.add_argument("--csv", help="also write the tables as CSV to this file")
        p.add_argument("--responses", help="also write one CSV row per judgement to this file")

    def handle(self, *args, action, **options):
        try:
            if action == "results":
                project = project_of_type(options["project"], (PAIRWISE, LIKERT), error=RatingsError)
                res = results.project_results(project)
                self.stdout.write(results.text_report(res))
                for key, rows in (
                    ("csv", lambda: results.summary_rows(res)),
                    ("responses", lambda: results.response_rows(project)),
                ):
                    if options.get(key):
                        try:
                            with open(options[key], "w", encoding="utf-8", newline="") as fh:
                                results.write_csv(fh, rows())
                        except OSError as exc:
                            raise RatingsError(f"{options[key]}:0: cannot write: {exc.strerror or exc}") from None
                        self.stdout.write(f"wrote {options[key]}")
                return
            task_type = PAIRWISE if action == "pairwise" else LIKERT
            from_trees = options.get("from_trees") or options.get("from_corpus")
            other = "--from-trees" if action == "debates" else "--from-corpus"
            if from_trees and options.get("file"):
                raise RatingsError(f"give either --file or {other}, not both")
            if not from_trees and not options.get("file"):
                raise RatingsError(f"--file is required (or {other})")
            # read and check everything before creating or changing anything
            if action == "pairwise" and options.get("from_corpus"):
                payloads = items.read_corpus_pairs(
                    options["from_corpus"],
                    system=options.get("system"),
                    seed=options["seed"],
                    source=options.get("source"),
                )
            elif action == "pairwise":
                payloads = items.read_pairs(options["file"])
            elif options.get("file"):
                payloads = items.read_debates(options["file"])
            else:
                trees = None
                if options.get("tree"):
                    trees = list(DebateTree.objects.filter(pk__in=options["tree"]).order_by("id"))
                    missing = sorted(set(options["tree"]) - {t.pk for t in trees})
                    if missing:
                        raise RatingsError(f"no debate tree with id {', '.join(map(str, missing))}")
                payloads = items.tree_debates(trees, length=options["length"], limit=options.get("limit"))
                if not payloads:
                    raise RatingsError(f"no root-to-leaf path of {options['length']} turns in the debate trees")
            project = items.get_project(
                options["project"],
                task_type,
                create=True,
                name=options.get("name"),
                assignments_per_item=options.get("r"),
                items_per_hit=options.get("items_per_hit"),
            )
            summary = items.import_payloads(project, payloads)
            warning = likert.reviewer_warning(project)
            if warning:
                sys.stderr.write(f"warning: {warning}\n")
            if options.get("activate"):
                services.set_project_status(project, "active")
            self.stdout.write(
                f"{project.slug}: {summary['created']} items created, {summary['skipped']} already "
                f"present, {summary['hits']} HITs built ({project.status}); results at "
                f"/projects/{project.slug}/results/"
            )
        except (ImportFailed, RatingsError, services.ProjectInvalid) as exc:
            sys.stderr.write(f"{exc}\n")
            sys.stderr.flush()
            raise SystemExit(2) from None
