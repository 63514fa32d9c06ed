"""``manage.py augment valnov --data FILE --target-size N``: clone&mutate augmentation with class balancing.

::

    manage.py augment valnov --data train.csv --target-size 1000 [--out FILE] [--seed 13]
        [--paraphrase-model PATH] [--summary-model PATH] [--synthetic-factor 0.5] [--max-unknown-share 0.2] [--json]

Reads the ArgMining 2022 ValNov CSV layout (or the same keys as JSONL), balances the four validity x novelty classes
to ``N`` rows with synthetic rows made by the Table 1 operations (:mod:`ml.valnov.augment`) and writes the result in
the same layout plus the columns ``Instance-Weight``, ``Synthetic``, ``Mutation`` and ``Source-Line`` (default
``--out``: ``<name>.augmented<ext>`` beside the input). Paraphrase / summarise need a local seq2seq model
(``--paraphrase-model`` / ``--summary-model`` or ``ARGORA_VALNOV_PARAPHRASE_MODEL`` / ``ARGORA_VALNOV_SUMMARY_MODEL``);
without one they are skipped and listed under ``skipped_operations``. Exit 2 with ``FILE:LINE: reason`` for bad data.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from argora.progress import cli_progress
from corpus.importers.base import ImportFailed
from ml.valnov.augment import augment_file

KINDS = ("valnov",)


class Command(BaseCommand):
    help = "Augment a training file with synthetic rows (clone&mutate) and balance its classes to a target size."

    def add_arguments(self, parser):
        parser.add_argument("kind", help=f"what to augment ({', '.join(KINDS)})")
        parser.add_argument("--data", required=True, help="ValNov CSV (ArgMining 2022 layout) or JSONL")
        parser.add_argument("--target-size", dest="target_size", type=int, required=True, help="rows in the output")
        parser.add_argument("--out", help="output file (.csv or .jsonl); default <name>.augmented<ext>")
        parser.add_argument("--seed", type=int, default=13)
        parser.add_argument("--paraphrase-model", dest="paraphrase_model", help="local seq2seq paraphrase model")
        parser.add_argument("--summary-model", dest="summary_model", help="local seq2seq summarisation model")
        parser.add_argument(
            "--synthetic-factor",
            dest="synthetic_factor",
            type=float,
            default=0.5,
            help="a synthetic row's weight = its source's weight x this (default 0.5)",
        )
        parser.add_argument(
            "--max-unknown-share",
            dest="max_unknown_share",
            type=float,
            default=0.2,
            help="at most this share of the output has an unknown validity or novelty (default 0.2)",
        )
        parser.add_argument("--json", action="store_true", help="print the summary as JSON")

    def handle(self, *args, **opts):
        if opts["kind"] not in KINDS:
            raise CommandError(f"kind: unknown {opts['kind']!r} (known: {', '.join(KINDS)})", returncode=2)
        if opts["target_size"] < 1:
            raise CommandError("--target-size: must be >= 1", returncode=2)
        if not 0 <= opts["max_unknown_share"] <= 1 or opts["synthetic_factor"] < 0:
            raise CommandError("--max-unknown-share must be in [0, 1] and --synthetic-factor >= 0", returncode=2)
        try:
            with cli_progress(f"augment {opts['kind']}") as progress:
                summary = augment_file(
                    opts["data"],
                    opts["target_size"],
                    out=opts["out"],
                    seed=opts["seed"],
                    paraphrase_model=opts["paraphrase_model"],
                    summary_model=opts["summary_model"],
                    synthetic_factor=opts["synthetic_factor"],
                    max_unknown_share=opts["max_unknown_share"],
                    progress=progress,
                )
        except ImportFailed as exc:
            raise CommandError(str(exc), returncode=2) from None
        except OSError as exc:
            raise CommandError(f"{opts['out'] or opts['data']}:0: {exc.strerror or exc}", returncode=2) from None
        if opts["json"]:
            self.stdout.write(json.dumps(summary, sort_keys=True, ensure_ascii=False))
            return
        self.stdout.write(f"{summary['output_rows']} rows ({summary['synthetic']} synthetic) -> {summary['out']}")
        self.stdout.write("per class: " + ", ".join(f"{k} {v}" for k, v in summary["per_class_after"].items()))
        if summary["shortfall"]:
            self.stdout.write(f"short of the target: {summary['shortfall']}")
        for op, why in summary["skipped_operations"].items():
            self.stdout.write(f"skipped {op}: {why}")
        self.stdout.write(f"WordNet: {summary['wordnet']}")
