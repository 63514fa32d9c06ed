"""Celery tasks of the corpus app: one-line calls into services (imports, releases)."""

from .imports import *  # noqa: F401,F403
from .releases import *  # noqa: F401,F403
