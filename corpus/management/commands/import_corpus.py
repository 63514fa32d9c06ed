"""``manage.py import_corpus FILE --format FMT [--topic T] [--source S]``: import one corpus file.

All or nothing: on a problem it prints ``file:line: reason`` to stderr, exits with status 2 and writes nothing.
"""
from django.core.management.base import BaseCommand, CommandError

from argora.progress import cli_progress
from corpus.importers import FORMATS, ImportFailed, import_file


class Command(BaseCommand):
    help = "Import a corpus file (UKP TSV, JSONL arguments, Kialo export, fact KB). Re-importing adds nothing."

    def add_arguments(self, parser):
        parser.add_argument("file", help="path of the file to import")
        parser.add_argument("--format", "-f", dest="fmt", required=True, choices=FORMATS)
        parser.add_argument("--topic", default=None,
                            help="kialo: topic to link the debate tree to; other formats: topic of rows without one")
        parser.add_argument("--source", default=None, help="source stored on rows that name none")

    def handle(self, *args, file, fmt, topic=None, source=None, **options):
        try:
            with cli_progress(f"import {fmt}") as progress:
                summary = import_file(file, fmt, topic=topic, source=source, progress=progress)
        except ImportFailed as exc:
            raise CommandError(str(exc), returncode=2) from None
        self.stdout.write(f"{file}: {summary}")
