"""Trainer kinds: one module per kind (``ranker.py``, ``tagger.py``, ...), each calling
:func:`ml.registry.register_trainer` at import. Every module of this package is imported when the package is
(``ml.registry.get_trainer`` / ``trainer_kinds`` import it), so adding a kind touches no other file.
A module that fails to import (a missing optional dependency) is logged and skipped; the others still register.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil

log = logging.getLogger(__name__)


def _discover() -> None:
    for module in pkgutil.iter_modules(__path__):
        if module.name.startswith("_"):
            continue
        try:
            importlib.import_module(f"{__name__}.{module.name}")
        except ImportError:
            log.exception("trainer module ml.trainers.%s could not be imported; its kind is not available", module.name)


_discover()
