"""``manage.py import_corpus PATH [PATH ...] --format FMT [--topic T] [--source S]``: import corpus files.

A PATH is a file, a folder (its files with the format's extension) or a quoted glob pattern (``'crawl/**/*.txt'``).
Formats: ``ukp-tsv``, ``jsonl``, ``kialo``, ``facts-jsonl``, ``facts-csv``, and the public corpora ``ibm-argq``
(IBM ArgQ-Rank-30k CSV), ``ibm-argkp`` (IBM ArgKP: ``ArgKP-2021_dataset.csv`` or ``arguments_<set>.csv`` with its
``key_points_<set>.csv`` and ``labels_<set>.csv`` beside it) and ``argsme-json`` (args.me JSON); see
:mod:`corpus.importers.public`. Every file is all or nothing on its own: a refused file prints ``file:line: reason``
to stderr and writes nothing, the other files still import. One file: one line of what it created. Several: a summary table (files, rows per
table, rows already present, time, refused files). Exit status 2 when any file was refused (or a PATH names
nothing), else 0.
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from argora.progress import cli_progress
from corpus.importers import FORMATS, ImportFailed, expand_paths, import_file, import_paths


class Command(BaseCommand):
    help = (
        "Import corpus files, folders or glob patterns (UKP TSV, JSONL arguments, Kialo exports, fact KB, IBM "
        "ArgQ-Rank-30k and ArgKP CSV, args.me JSON). Re-importing adds nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "paths",
            nargs="+",
            metavar="PATH",
            help="a file, a folder (its files with the format's extension) or a quoted glob",
        )
        parser.add_argument("--format", "-f", dest="fmt", required=True, choices=FORMATS)
        parser.add_argument(
            "--topic",
            default=None,
            help="kialo: topic to link the debate trees to; other formats: topic of rows without one",
        )
        parser.add_argument("--source", default=None, help="source stored on rows that name none")

    def handle(self, *args, paths, fmt, topic=None, source=None, **options):
        try:
            files = expand_paths(paths, fmt)
        except ImportFailed as exc:
            raise CommandError(str(exc), returncode=2) from None
        if len(paths) == 1 and Path(paths[0]).is_file():
            self._one(files[0], fmt, topic, source)
            return
        with cli_progress(f"import {fmt}") as progress:
            batch = import_paths(files, fmt, topic=topic, source=source, progress=progress)
        total = len(batch.files) + len(batch.refused)
        new = len(batch.files) - batch.unchanged
        rows = [
            (
                "files",
                f"{total}: {new} imported, {batch.unchanged} already imported (nothing new), "
                f"{len(batch.refused)} refused",
            )
        ]
        rows += [(key.replace("_", " "), str(n)) for key, n in batch.created.items() if n]
        rows += [("rows already present", str(batch.skipped))]
        if batch.updated:
            rows.append(("of them given this corpus's metadata", str(batch.updated)))
        rows.append(("time", f"{batch.seconds:.1f} s"))
        width = max(len(label) for label, _ in rows)
        for label, value in rows:
            self.stdout.write(f"{label:<{width}}  {value}")
        if not new and not batch.refused:
            self.stdout.write("nothing new: every file was imported before")
        if batch.refused:
            for exc in batch.refused:
                self.stderr.write(str(exc))
            raise CommandError(
                f"{len(batch.refused)} of {total} files refused (each listed above as "
                f"file:line: reason); the other files were imported",
                returncode=2,
            )

    def _one(self, path, fmt, topic, source):
        try:
            with cli_progress(f"import {fmt}") as progress:
                summary = import_file(path, fmt, topic=topic, source=source, progress=progress)
        except ImportFailed as exc:
            raise CommandError(str(exc), returncode=2) from None
        self.stdout.write(f"{path}: {summary}")
