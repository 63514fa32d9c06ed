"""Read side of the annotation engine (no writes), by concern:

- :mod:`.responses`: projects, workers, their counted responses, progress and exports;
- :mod:`.phases`: a study's phases (a worker's step, training, claims);
- :mod:`.ordering`: the order in which items enter work.

Every public name is re-exported here: callers ask ``annotation.selectors``.
"""

from __future__ import annotations

from .ordering import *  # noqa: F403 (each module's __all__)
from .phases import *  # noqa: F403
from .responses import *  # noqa: F403
