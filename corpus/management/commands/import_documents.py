"""``manage.py import_documents DIR --topic T [--no-relevance-filter]``: import a folder of ``*.txt`` documents.

Every file becomes a Document; its sentences (split offline, short fragments and duplicates dropped, and
filtered for topic relevance as in Arg-CTRL §4) become Sentences with stance none. All or nothing: on a problem
it prints ``file:line: reason`` to stderr, exits with status 2 and writes nothing.
"""

from django.core.management.base import BaseCommand, CommandError

from argora.progress import cli_progress
from corpus.importers import ImportFailed, import_documents


class Command(BaseCommand):
    help = "Import every *.txt file of a folder as documents and topic-relevant sentences."

    def add_arguments(self, parser):
        parser.add_argument("directory", help="folder holding the *.txt files")
        parser.add_argument("--topic", required=True, help="topic of the documents (created if missing)")
        parser.add_argument(
            "--no-relevance-filter",
            dest="relevance_filter",
            action="store_false",
            help="keep sentences that mention neither the topic nor its synonyms",
        )

    def handle(self, *args, directory, topic, relevance_filter=True, **options):
        try:
            with cli_progress("import documents") as progress:
                summary = import_documents(directory, topic, progress=progress, relevance_filter=relevance_filter)
        except ImportFailed as exc:
            raise CommandError(str(exc), returncode=2) from None
        self.stdout.write(f"{directory}: {summary}")
