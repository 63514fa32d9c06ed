"""Loaded before Django reads its settings (``-p tests.xdist_isolation`` in pytest.ini): under pytest-xdist each
test process (``PYTEST_XDIST_WORKER`` = ``gw0``, ``gw1``, ...) gets its own ``$ARGORA_VAR_DIR`` (the SQLite test
database, the filesystem broker's folders, the file cache, artifacts) and its own Redis database for the broker
and the cache, so one process's ``cache.clear()`` or ``celery worker`` never reaches another's. pytest-django gives
each process its own test database name (``..._gw0``). The children a test starts inherit these variables.
Without xdist this module does nothing."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from pathlib import Path

REDIS_DB = re.compile(r"(rediss?://[^/?#]*)/(\d+)(.*)")


def redis_url_for(url: str, worker_index: int) -> str:
    """``redis://host:port/N`` -> database ``N - worker_index`` (15, 14, ... for ``make test``'s ``/15``), else
    ``url`` unchanged. Raises ValueError when the database number would go below 0."""
    match = REDIS_DB.fullmatch(url or "")
    if not match:
        return url
    db = int(match[2]) - worker_index
    if db < 0:
        raise ValueError(f"{url}: no Redis database left for test process {worker_index} (use a higher /N)")
    return f"{match[1]}/{db}{match[3]}"


def isolate(environ, worker: str) -> None:
    index = int(worker.removeprefix("gw"))
    base = Path(environ.get("ARGORA_VAR_DIR") or Path(__file__).resolve().parent.parent / "var")
    environ["ARGORA_VAR_DIR"] = str(base / "xdist" / worker)
    environ["ARGORA_XDIST_SHARED_DIR"] = str(base / "xdist")
    for name in ("CELERY_BROKER_URL", "CACHE_URL"):
        if environ.get(name):
            environ[name] = redis_url_for(environ[name], index)


@contextlib.contextmanager
def one_process_at_a_time(name: str):
    """Hold a lock shared by the test processes while the block runs (a file lock under the processes' common
    folder); without xdist it does nothing. For what the machine has once only: PostgreSQL's 100 connections, which
    two tests running 50 connected threads each would exceed ("sorry, too many clients already")."""
    shared = os.environ.get("ARGORA_XDIST_SHARED_DIR")
    if not shared:
        yield
        return
    Path(shared).mkdir(parents=True, exist_ok=True)
    with open(Path(shared) / f"{name}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


if os.environ.get("PYTEST_XDIST_WORKER"):
    isolate(os.environ, os.environ["PYTEST_XDIST_WORKER"])
