"""Celery task for dataset releases: a one-line call into :func:`corpus.releases.build_release`."""

from __future__ import annotations

from celery import shared_task
from django.urls import reverse

from argora.jobs import result_link
from argora.progress import celery_progress
from corpus.releases import build_release, release_summary

__all__ = ["build_release_task"]


@shared_task(bind=True, name="corpus.build_release")
def build_release_task(
    self,
    name: str,
    version: str,
    kind: str = "sentences",
    config: dict | None = None,
    creator_id: int | None = None,
    card: dict | None = None,
    result_url: str | None = None,
) -> dict:
    """Build and publish a release; returns ``{"release_id", "files": {name: sha256}, ...}`` and a link
    (``url``, ``link_text``: :func:`argora.jobs.result_link`) to ``result_url`` (a path on this site where the
    release is listed with its downloads, e.g. the studio's Release page; ``#release-<id>`` is added) or else to
    the release's admin page. ``card``: the dataset card's license / citation / description.

    Safe to retry: a failed attempt is rebuilt from scratch, a published one is refused (ReleaseExists).
    """
    summary = release_summary(
        build_release(
            name, version, kind=kind, config=config, creator=creator_id, card=card, progress=celery_progress(self)
        )
    )
    url = (
        f"{result_url}#release-{summary['release_id']}"
        if result_url
        else reverse("admin:corpus_release_change", args=[summary["release_id"]])
    )
    return {**summary, **result_link(url, f"Release {summary['name']} {summary['version']}")}
