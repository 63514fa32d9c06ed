"""Celery tasks for corpus imports: one-line calls into :mod:`corpus.importers`."""
from celery import shared_task

from argora.progress import celery_progress
from corpus.importers import import_file

__all__ = ["import_corpus_file"]


@shared_task(bind=True, name="corpus.import_corpus_file")
def import_corpus_file(self, path, fmt, topic=None, source=None) -> dict:
    """Import one file (see :func:`corpus.importers.import_file`); PROGRESS states as it parses and writes."""
    return import_file(path, fmt, topic=topic, source=source, progress=celery_progress(self)).as_dict()
