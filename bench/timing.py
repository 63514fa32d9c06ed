"""What the bench scripts print beside their figures: the machine's load and min / median / max of a series."""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence


def load_line() -> str:
    """``load average 1m 5m 15m on N CPUs``."""
    return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg()) + f" on {os.cpu_count()} CPUs"


def spread(values: Sequence[float], fmt: str = ".1f", scale: float = 1.0) -> str:
    """``min / median / max`` of ``values`` (times ``scale``), each formatted with ``fmt``."""
    values = [v * scale for v in values]
    return " / ".join(format(v, fmt) for v in (min(values), statistics.median(values), max(values)))
