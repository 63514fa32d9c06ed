"""``manage.py bws score|sample|build``: Best-Worst Scaling argument similarity (AugSBERT sec. 4.1).

    manage.py bws score --file A.csv [--splits 25] [--seed 0] [--json]
    manage.py bws sample --project P --topic T --pairs N [--seed S] [--scorer cosine|jaccard] [--create]
    manage.py bws build --project P [--seed S] [--activate]
    manage.py bws export --project P --out FILE.jsonl [--split cross-topic|in-topic --out-dir DIR]
                         [--train T,... --dev T --test T,...] [--seed S]

``export``: the pairs with their counting scores and counts as JSONL (:mod:`annotation.task_types.bws_similarity.export`, the same rows
and splits as the ``bws`` release kind): ``--out`` the unsplit file, ``--split`` + ``--out-dir`` train/dev/test.jsonl
(cross-topic: the topics of ``--train/--dev/--test`` or of the project's ``config.splits``; in-topic: seeded, the
paper's 2471 / 478 / 451 proportions). A wrong combination or an unknown topic exits 2 and writes nothing.

``score``: A.csv has the columns ``tuple,annotator,topic,best,worst,items`` (items = the tuple's pair ids joined by
``|``); prints counting scores and the split-half table (``--json``: ``{"scores": {pair: score}, "split_half":
{topic: rho, "all": rho}, "counts": {pair: {...}}}``). Bad input: ``file:line: reason`` on stderr, exit 2.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

import annotation.task_types.bws_similarity.task_type  # noqa: F401  (registers the task type)
from annotation import services
from annotation.models import Project
from annotation.selectors import project_of_type, status_note
from annotation.task_types.bws_similarity import project as bws
from annotation.task_types.bws_similarity.csvio import BWSInputError, read_csv
from annotation.task_types.bws_similarity.project import BWSProjectError
from annotation.task_types.bws_similarity.reliability import ALL, split_half, table
from annotation.task_types.bws_similarity.scoring import counting_scores, encode
from corpus.releases import check_export_args


class Command(BaseCommand):
    help = "BWS argument similarity: score judgements (CSV), sample pairs for a topic, build tuples into HITs."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        p = sub.add_parser("score", help="counting scores + split-half reliability of a judgements CSV")
        p.add_argument("--file", required=True)
        p.add_argument("--splits", type=int, default=25)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--json", action="store_true")
        p = sub.add_parser("sample", help="sample argument pairs of a topic into a bws_similarity project")
        p.add_argument("--project", required=True)
        p.add_argument("--topic", required=True)
        p.add_argument("--pairs", type=int, required=True)
        p.add_argument("--seed", type=int, default=None)
        p.add_argument("--scorer", default=None, help="cosine (default: the active bi-encoder) or jaccard")
        p.add_argument("--create", action="store_true", help="create the project (R=4) if it does not exist")
        p = sub.add_parser("build", help="tuples -> items (+ attention checks) -> HITs for the sampled topics")
        p.add_argument("--project", required=True)
        p.add_argument("--seed", type=int, default=None)
        p.add_argument("--activate", action="store_true", help="open the project to workers once its HITs are built")
        p = sub.add_parser("export", help="write the scored pairs as JSONL, unsplit and/or in fixed splits")
        p.add_argument("--project", required=True)
        p.add_argument("--out", help="the unsplit file, e.g. bws.jsonl")
        p.add_argument(
            "--split",
            choices=["cross-topic", "in-topic"],
            default=None,
            help="also write train/dev/test.jsonl into --out-dir",
        )
        p.add_argument("--out-dir", dest="out_dir", help="folder for the split files (with --split)")
        for part in ("train", "dev", "test"):
            p.add_argument(
                f"--{part}",
                default=None,
                help=f"cross-topic: comma-separated {part} topics (default: the project's config.splits)",
            )
        p.add_argument("--seed", type=int, default=None, help="in-topic: the seed (default: the project's seed)")

    def handle(self, *args, action, **options):
        try:
            if action == "score":
                return self._score(options)
            if action == "export":
                return self._export(options)
            project = self._project(options["project"], create=action == "sample" and options["create"])

            if action == "sample":
                if options["pairs"] < 1:
                    raise CommandError("--pairs: at least 1", returncode=2)
                r = bws.sample(
                    project, options["topic"], options["pairs"], seed=options["seed"], scorer=options["scorer"]
                )
                self.stdout.write(
                    f"{project.slug}: {r['topic']}: {r['pairs']} pairs of {r['candidates']} "
                    f"({r['arguments']} arguments; top 1% {r['bins']['top1']}, top 2-50% "
                    f"{r['bins']['top2_50']}, rest {r['bins']['rest']}; scorer {r['scorer']}, "
                    f"seed {r['seed']}); next: `manage.py bws build --project {project.slug}`"
                )
            else:
                s = bws.build(project, seed=options["seed"])
                if not s["topics"]:
                    self.stdout.write(f"{project.slug}: nothing to build (every sampled topic has tasks)")
                for topic, t in s["topics"].items():
                    self.stdout.write(
                        f"{project.slug}: {topic}: {t['tuples']} tasks of 4 over {t['pairs']} pairs "
                        f"(each pair in {t['min_freq']}-{t['max_freq']} tasks), "
                        f"{t['attention_checks']} attention checks"
                    )
                if s["topics"]:
                    self.stdout.write(f"{project.slug}: {s['hits']} HITs created")
                if options["activate"]:
                    services.set_project_status(project, Project.Status.ACTIVE)
                self.stdout.write(f"{project.slug}: {status_note(project)}")
        except (BWSProjectError, services.ProjectInvalid) as exc:
            raise CommandError(str(exc), returncode=2) from None
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2) from None

    def _project(self, slug: str, *, create: bool = False):
        return project_of_type(
            slug,
            bws.TASK_TYPE,
            error=lambda reason: CommandError(reason, returncode=2),
            hint=" (sample --create makes one)",
            create=(lambda: bws.create_project(name=slug, slug=slug)) if create else None,
        )

    def _export(self, options):
        problem = check_export_args(options["out"], options["split"], options["out_dir"], file_name="bws.jsonl")
        given = [part for part in ("train", "dev", "test") if options[part]]
        if not problem and given and options["split"] != "cross-topic":
            problem = f"--{given[0]} names cross-topic topics: it needs --split cross-topic"
        if not problem and given and len(given) != 3:
            problem = "--train, --dev and --test go together (or none: the project's config.splits)"
        if problem:
            raise CommandError(problem, returncode=2)
        project = self._project(options["project"])
        splits = {part: [t.strip() for t in options[part].split(",") if t.strip()] for part in given} or None
        files = bws.export_files(
            project,
            options["out"],
            split=options["split"],
            out_dir=options["out_dir"],
            splits=splits,
            seed=options["seed"],
        )
        self.stdout.write(", ".join(f"{name}: {n} rows" for name, n in files.items()))

    def _score(self, options):
        if options["splits"] < 1:
            raise CommandError("--splits: at least 1", returncode=2)
        try:
            js = read_csv(options["file"])
        except BWSInputError as exc:
            sys.stderr.write(f"{exc}\n")
            sys.stderr.flush()
            raise SystemExit(2) from None
        data = encode(js)
        scores = counting_scores(data)
        sh = split_half(data, n_splits=options["splits"], seed=options["seed"])
        if options["json"]:
            out = {
                "scores": {pid: round(s["score"], 6) for pid, s in scores.items()},
                "split_half": {**{t: r["rho"] for t, r in sh["topics"].items()}, ALL: sh[ALL]["rho"]},
                "counts": {
                    pid: {k: s[k] for k in ("best", "worst", "appearances", "topic")} for pid, s in scores.items()
                },
                "n_splits": options["splits"],
                "seed": options["seed"],
                "judgements": len(js),
            }
            self.stdout.write(json.dumps(out, ensure_ascii=False, sort_keys=True))
            return
        self.stdout.write(f"{len(js)} judgements, {len(scores)} pairs, {len(data.tuples)} tuples")
        self.stdout.write(
            f"split-half reliability (mean Spearman rho over {options['splits']} splits, seed {options['seed']}):"
        )
        for topic, rho, n in table(sh):
            self.stdout.write(f"  {topic:<30} {'-' if rho is None else f'{rho:.3f}':>7}  ({n} pairs)")
        self.stdout.write("scores:")
        for pid, s in sorted(scores.items(), key=lambda kv: (-kv[1]["score"], str(kv[0]))):
            self.stdout.write(
                f"  {pid}\t{s['score']:.4f}\tbest {s['best']} worst {s['worst']} of {s['appearances']}\t{s['topic']}"
            )
