"""The active bi-encoder (the ``pair_encoder`` slot of :mod:`annotation.providers`): what BWS pair sampling scores
pairs with when a project asks for cosine similarity.

Preference: the project's active ``augsbert`` version, the project's active ``biencoder`` version, the global active
``augsbert``, the global active ``biencoder`` -- the first that loads (a broken artifact is logged and skipped). AugSBERT
comes first because it is the bi-encoder trained on the gold and the silver pairs. None: the caller uses the default
encoder (:func:`ml.encoders.encode`).
"""

from __future__ import annotations

import logging

from . import registry

log = logging.getLogger(__name__)

ENCODER_KINDS = ("augsbert", "biencoder")  # registry kinds that are bi-encoders, preferred first


def active_encoder_versions(project=None) -> list:
    """Active bi-encoder versions in preference order (see the module doc)."""
    found = []
    for scope in ([project] if project is not None else []) + [None]:
        for kind in ENCODER_KINDS:
            version = registry.active_version(kind, scope, exact=True)
            if version is not None:
                found.append(version)
    return found


def active_encoder(project=None):
    """``(model, "<kind>#<version id>")`` of the active bi-encoder, or ``None``."""
    try:
        versions = active_encoder_versions(project)
    except Exception:  # noqa: BLE001 - no registry table (a fresh database): the default encoder
        log.exception("could not look up the active bi-encoder versions")
        return None
    for version in versions:
        try:
            return registry.load_model(version), f"{version.kind}#{version.pk}"
        except Exception:  # noqa: BLE001 - a broken artifact must not stop sampling
            log.exception("active %s version %s could not be loaded; trying the next", version.kind, version.pk)
    return None
