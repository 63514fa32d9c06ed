"""``manage.py gencorpus``: write a generation training corpus as JSONL (see :mod:`ml.generation.corpora`).

::

    manage.py gencorpus aspect-docs (--projects SLUG[,SLUG] | --rows FILE | --silver-aspects RUN
        [--silver-stance RUN]) [--source gold|silver]
        [--min-args 15] [--max-args 1500] [--max-per-topic-stance 100000] [--seed 13] --out FILE [--json]
    manage.py gencorpus debate-paths [--tree ID ...] [--topic NAME ...] [--strategy supportive|contradicting|
        complex|multi-turn|all ...] [--seed 13] [--fractions 0.9,0.05,0.05] [--anchor root|any] --out FILE [--json]
    manage.py gencorpus argu-inputs (--projects SLUG[,SLUG] | --rows spans.jsonl) [--filters] [--seed 13]
        [--max-variables 4] [--min-variables 1] [--require-scheme] [--keep-goal-from-means] --out FILE [--json]

``--rows`` for aspect-docs: silver rows ``{topic, stance, sentence, aspects}`` or App. F rows; for argu-inputs: the
span-grounding export (``spans.jsonl``). ``--silver-aspects RUN`` reads a done ``tagger`` silver run's spans as the
aspects and ``--silver-stance RUN`` a done ``argument`` silver run's predicted stance (a sentence's own pro / con
stance wins); ``stats.dropped`` says how many rows / arguments each filter left out (not_argument,
no_stance_label, no_stance, no_aspect, too_small, max_args, cap). The output is written through a temporary file: a failure leaves no
partial FILE. ``--json`` prints ``{"corpus", "out", "rows", ...statistics}``. Exit 2 with ``FILE:LINE: reason``
(bad input rows) or the option and reason (bad options).
"""

from __future__ import annotations

import json
from collections import Counter

from django.core.management.base import BaseCommand, CommandError

from argora.jsonl import write_jsonl
from argora.progress import cli_progress
from ml.generation import corpora, exporters


def _split_list(values) -> list[str]:
    out: list[str] = []
    for value in values or []:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


# config keys named in the exporters' errors -> the options that set them
OPTION_OF = {"config.silver_runs.aspects": "--silver-aspects", "config.silver_runs.stance": "--silver-stance"}


class Command(BaseCommand):
    help = "Write a generation training corpus (aspect-control documents, debate paths, ArgU inputs) as JSONL."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="corpus", required=True, metavar="aspect-docs|debate-paths|argu-inputs")

        def common(p):
            p.add_argument("--seed", type=int, default=13)
            p.add_argument("--out", required=True, help="output JSONL file")
            p.add_argument("--json", action="store_true", help="print a JSON summary")

        a = sub.add_parser("aspect-docs", help="Arg-CTRL §4 training documents")
        a.add_argument("--projects", action="append", help="aspect project slug(s) (gold final answers)")
        a.add_argument("--rows", help="JSONL of {topic, stance, sentence, aspects} (silver) or App. F rows")
        a.add_argument(
            "--silver-aspects",
            dest="silver_aspects",
            type=int,
            help="a done tagger silver run: its spans are the aspects",
        )
        a.add_argument(
            "--silver-stance",
            dest="silver_stance",
            type=int,
            help="a done argument silver run: its predicted stance (a sentence's own pro/con wins)",
        )
        a.add_argument("--source", choices=["gold", "silver"], help="label of the documents (default by input)")
        a.add_argument("--min-args", dest="min_args", type=int, default=15)
        a.add_argument("--max-args", dest="max_args", type=int, default=1500)
        a.add_argument("--max-per-topic-stance", dest="max_per_topic_stance", type=int, default=100_000)
        common(a)

        d = sub.add_parser("debate-paths", help="debate-trees §2.2 prompt/response pairs")
        d.add_argument("--tree", action="append", type=int, help="debate tree id (repeatable; default all)")
        d.add_argument("--topic", action="append", help="only trees of this topic (repeatable)")
        d.add_argument(
            "--strategy",
            action="append",
            help="supportive, contradicting, complex, multi-turn or all (repeatable; default all)",
        )
        d.add_argument("--fractions", default="0.9,0.05,0.05", help="train,dev,test shares of the debates")
        d.add_argument(
            "--anchor", choices=["root", "any"], default="root", help="paths start at the thesis (root) or at any node"
        )
        common(d)

        g = sub.add_parser("argu-inputs", help="ArgU §4.1 encoder inputs and decoder targets")
        g.add_argument("--projects", action="append", help="span_grounding project slug(s)")
        g.add_argument("--rows", help="span-grounding export JSONL (spans.jsonl)")
        g.add_argument("--filters", action="store_true", help="apply ArgU §3.2.4's corpus filters")
        g.add_argument("--max-variables", dest="max_variables", type=int, default=4)
        g.add_argument("--min-variables", dest="min_variables", type=int, default=1)
        g.add_argument("--require-scheme", dest="require_scheme", action="store_true")
        g.add_argument(
            "--keep-goal-from-means",
            dest="keep_goal_from_means",
            action="store_true",
            help="do not merge 'Goal from Means' into 'Means for Goal'",
        )
        common(g)

    def handle(self, *args, **opts):
        corpus = opts["corpus"]
        try:
            if corpus == "aspect-docs":
                silver_runs = None
                if opts["silver_aspects"] is not None or opts["silver_stance"] is not None:
                    if opts["silver_aspects"] is None:
                        raise ValueError("--silver-aspects: the tagger silver run is required with --silver-stance")
                    silver_runs = {"aspects": opts["silver_aspects"], "stance": opts["silver_stance"]}
                config = exporters.prepare_aspect_docs(
                    _drop_none(
                        {
                            "silver_runs": silver_runs,
                            "projects": _split_list(opts["projects"]) or None,
                            "rows_file": opts["rows"],
                            "source": opts["source"],
                            "min_args": opts["min_args"],
                            "max_args": opts["max_args"],
                            "max_per_topic_stance": opts["max_per_topic_stance"],
                            "seed": opts["seed"],
                        }
                    )
                )
            elif corpus == "debate-paths":
                strategies = _split_list(opts["strategy"])
                if not strategies or "all" in strategies:
                    strategies = list(corpora.STRATEGIES)
                config = exporters.prepare_debate_paths(
                    _drop_none(
                        {
                            "trees": opts["tree"],
                            "topics": opts["topic"],
                            "strategies": strategies,
                            "seed": opts["seed"],
                            "fractions": corpora.clean_fractions(opts["fractions"]),
                            "anchor": opts["anchor"],
                        }
                    )
                )
            else:
                config = exporters.prepare_argu_inputs(
                    _drop_none(
                        {
                            "projects": _split_list(opts["projects"]) or None,
                            "rows_file": opts["rows"],
                            "filters": True if opts["filters"] else None,
                            "seed": opts["seed"],
                            "max_variables": opts["max_variables"],
                            "min_variables": opts["min_variables"],
                            "require_scheme": opts["require_scheme"],
                            "merge_goal_from_means": not opts["keep_goal_from_means"],
                        }
                    )
                )
        except ValueError as exc:
            message = str(exc)
            for key, option in OPTION_OF.items():
                message = message.replace(key, option)
            raise CommandError(f"gencorpus {corpus}: {message}", returncode=2) from None

        summary: dict = {"corpus": corpus, "out": opts["out"]}
        try:
            with cli_progress(f"gencorpus {corpus}") as progress:
                if corpus == "aspect-docs":
                    docs = exporters.build_docs(config, progress=progress)
                    summary["rows"] = write_jsonl((d.as_row() for d in docs.documents), opts["out"])
                    summary["stats"] = docs.stats
                elif corpus == "debate-paths":
                    counts: Counter = Counter()

                    def rows():
                        for row in corpora.debate_path_rows(
                            config["trees"],
                            strategies=config["strategies"],
                            topics=config["topics"],
                            seed=config["seed"],
                            fractions=config["fractions"],
                            anchor=config["anchor"],
                            node_sep=config["node_sep"],
                            turn_sep=config["turn_sep"],
                            progress=progress,
                        ):
                            counts[f"{row['strategy']}|{row['split']}"] += 1
                            yield row

                    summary["rows"] = write_jsonl(rows(), opts["out"])
                    summary["counts"] = dict(sorted(counts.items()))
                else:
                    skipped: Counter = Counter()
                    summary["rows"] = write_jsonl(exporters.argu_rows(config, skipped), opts["out"])
                    summary["skipped"] = dict(skipped)
        except (corpora.RowError, ValueError, KeyError) as exc:
            raise CommandError(str(exc), returncode=2) from None
        if opts["json"]:
            self.stdout.write(json.dumps(summary, sort_keys=True))
        else:
            self.stdout.write(f"wrote {summary['rows']} rows to {opts['out']}")
            dropped = {k: v for k, v in (summary.get("stats") or {}).get("dropped", {}).items() if v}
            if dropped:
                self.stdout.write("dropped: " + ", ".join(f"{k} {v}" for k, v in dropped.items()))


def _drop_none(config: dict) -> dict:
    return {k: v for k, v in config.items() if v is not None}
