"""Celery tasks for corpus imports: one-line calls into :mod:`corpus.importers`."""

from urllib.parse import urlencode

from celery import shared_task
from django.urls import reverse

from argora.jobs import result_link
from argora.progress import celery_progress
from corpus.importers import import_file

__all__ = ["import_corpus_file"]

# what an import made -> the admin list that shows it (the first kind the import created wins)
IMPORTED_LISTS = (
    ("debate_trees", "admin:corpus_debatetree_changelist", "Imported debate trees"),
    ("facts", "admin:corpus_factvariable_changelist", "Fact KB"),
    ("documents", "admin:corpus_document_changelist", "Imported documents"),
    ("sentences", "admin:corpus_sentence_changelist", "Imported sentences"),
)


def imported_link(summary: dict, source: str | None) -> dict:
    """The job's link (:func:`argora.jobs.result_link`) to the admin list of what the import created."""
    created = summary.get("created") or {}
    for kind, route, text in IMPORTED_LISTS:
        if created.get(kind):
            url = reverse(route)
            if kind == "sentences" and source:
                url += "?" + urlencode({"source": source})
            return result_link(url, text)
    return {}


@shared_task(bind=True, name="corpus.import_corpus_file")
def import_corpus_file(self, path, fmt, topic=None, source=None) -> dict:
    """Import one file (see :func:`corpus.importers.import_file`); PROGRESS states as it parses and writes.
    Returns the import summary plus a link to what it created."""
    summary = import_file(path, fmt, topic=topic, source=source, progress=celery_progress(self)).as_dict()
    return {**summary, **imported_link(summary, source)}
