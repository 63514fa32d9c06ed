"""Celery task for dataset releases: a one-line call into :func:`corpus.releases.build_release`."""
from __future__ import annotations

from celery import shared_task
from django.urls import reverse

from argora.jobs import result_link
from argora.progress import celery_progress
from corpus.releases import build_release, release_summary

__all__ = ["build_release_task"]


@shared_task(bind=True, name="corpus.build_release")
def build_release_task(self, name: str, version: str, kind: str = "sentences", config: dict | None = None,
                       creator_id: int | None = None) -> dict:
    """Build and publish a release; returns ``{"release_id", "files": {name: sha256}, ...}`` and a link to the
    release's admin page (``url``, ``link_text``: :func:`argora.jobs.result_link`).

    Safe to retry: a failed attempt is rebuilt from scratch, a published one is refused (ReleaseExists).
    """
    summary = release_summary(build_release(name, version, kind=kind, config=config, creator=creator_id,
                                            progress=celery_progress(self)))
    return {**summary, **result_link(reverse("admin:corpus_release_change", args=[summary["release_id"]]),
                                     f"Release {summary['name']} {summary['version']}")}
