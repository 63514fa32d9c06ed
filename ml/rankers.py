"""Trained aspect rankers as :mod:`annotation.task_types.aspect.rankers` Rankers, and the hook that picks the active one.

``active_ranker(project)`` (called by :func:`annotation.task_types.aspect.rankers.get_active_ranker` whenever items are
built) returns the active trained ranker wrapped as a Ranker, looking in this order and taking the first that
loads:

1. the project's active ``span_ranker`` version, 2. the project's active ``ranker`` version,
3. the global active ``span_ranker``, 4. the global active ``ranker``;

else ``None`` (annotation then falls back to the ranker named in the project's config, the baseline). A version
whose artifact cannot be loaded is logged and skipped. Models are loaded once per process
(:func:`ml.registry.load_model`).

The loaded models (:class:`ml.trainers.ranker.CrossEncoderRanker`, :class:`ml.trainers.span_ranker.SpanRanker`)
already have ``score(sentence_text, topic, candidates)`` and a batched ``score_groups(groups)``;
:class:`TrainedRanker` adds the name workers' payloads record (``"<kind>#<version id>"``, e.g. ``"span_ranker#7"``,
payload key ``"ranker"``) and the version. Batching for inference is :func:`ml.inference.length_sorted_batches`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from . import registry

log = logging.getLogger(__name__)

KINDS = ("span_ranker", "ranker")  # preference order within a scope


class TrainedRanker:
    """A loaded ranker model as a Ranker (``name``, ``score``), plus ``score_groups`` and ``version``."""

    def __init__(self, model, *, name: str, version=None):
        self.model = model
        self.name = name
        self.version = version
        self.kind = getattr(version, "kind", getattr(model, "kind", ""))

    def score(self, sentence_text: str, topic: str, candidates: Sequence) -> list[float]:
        return [float(s) for s in self.model.score(sentence_text, topic, candidates)]

    def score_groups(self, groups) -> list[list[float]]:
        return self.model.score_groups(groups)

    def __repr__(self) -> str:
        return f"<TrainedRanker {self.name}>"


def wrap(version, model=None) -> TrainedRanker:
    """A registry version as a Ranker (loads its artifact through the registry cache unless ``model`` is given)."""
    model = model if model is not None else registry.load_model(version)
    return TrainedRanker(model, name=f"{version.kind}#{version.pk}", version=version)


def active_versions(project=None) -> list:
    """The active ranker versions in preference order (project's span_ranker, ranker, then global ones)."""
    found = []
    scopes = ([project] if project is not None else []) + [None]
    for scope in scopes:
        for kind in KINDS:
            version = registry.active_version(kind, scope, exact=True)
            if version is not None:
                found.append(version)
    return found


def active_ranker(project=None) -> TrainedRanker | None:
    """The active trained ranker for ``project`` (see the module docstring), or ``None``."""
    try:
        versions = active_versions(project)
    except Exception:  # noqa: BLE001 - no registry table yet (a fresh database): fall back to the baseline
        log.exception("could not look up the active ranker versions")
        return None
    for version in versions:
        try:
            return wrap(version)
        except Exception:  # noqa: BLE001 - an unloadable artifact must not stop item building
            log.exception("active %s version %s could not be loaded; trying the next", version.kind, version.pk)
    return None
