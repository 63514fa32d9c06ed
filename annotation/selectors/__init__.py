"""Read side of the annotation engine (no writes), by concern:

- :mod:`.responses`: projects, workers, their counted responses, progress and exports;
- :mod:`.phases`: a study's phases (a worker's step, training, claims);
- :mod:`.ordering`: the order in which items enter work.

Every public name is re-exported here: callers ask ``annotation.selectors``.
"""
from __future__ import annotations

from .ordering import *  # noqa: F403
from .ordering import __all__ as _ordering
from .phases import *  # noqa: F403
from .phases import __all__ as _phases
from .responses import *  # noqa: F403
from .responses import __all__ as _responses

__all__ = [*_responses, *_phases, *_ordering]
