"""Django's SQLite backend with a queue for writers (``ENGINE = "argora.sqlite3"``; settings.py picks it for SQLite).

Argora's SQLite transactions are IMMEDIATE: each takes the database's write lock at ``BEGIN``. SQLite's own wait for a
busy lock sleeps and retries in growing steps (up to 100 ms each), so with many concurrent writers a transaction of a
few milliseconds often waited hundreds: in ``bench/allocation.py`` the median request took 3-7 ms and the p99 near a
second. Here a transaction queues for the lock before ``BEGIN`` instead: first in its process (a thread lock, handed
on at once), then between processes (an advisory file lock beside the database, polled every millisecond). Both waits
together are bounded by the database's ``timeout`` option, after which the transaction fails as SQLite's own wait
does: ``OperationalError("database is locked")``, nothing written. Statements outside a transaction and in-memory
databases are left to SQLite.
"""

from __future__ import annotations

import os
import threading
import time

from django.db.backends.sqlite3 import base
from django.db.utils import OperationalError
from filelock import FileLock, Timeout

_queues: dict[str, tuple[threading.Lock, FileLock]] = {}
_queues_lock = threading.Lock()
POLL_SECONDS = 0.001


def _forget_queues() -> None:
    """In a forked child (a Celery pool process, a gunicorn worker): the parent's locks, held or not, are not the
    child's; it starts with its own."""
    global _queues, _queues_lock
    _queues, _queues_lock = {}, threading.Lock()


os.register_at_fork(after_in_child=_forget_queues)


def _queue(name: str) -> tuple[threading.Lock, FileLock]:
    """This process's thread lock and file lock for the database file ``name``."""
    with _queues_lock:
        if name not in _queues:
            _queues[name] = (threading.Lock(), FileLock(f"{name}-writers.lock", thread_local=False))
        return _queues[name]


class DatabaseWrapper(base.DatabaseWrapper):
    _holding = None  # the (thread lock, file lock) this connection's open transaction holds
    # Django's (from OPTIONS["transaction_mode"]), as are the private methods overridden here: django-stubs has none
    # of them, hence the `type: ignore[misc]` on their super() calls
    transaction_mode: str | None

    def _start_transaction_under_autocommit(self):
        if self.transaction_mode != "IMMEDIATE" or self.is_in_memory_db():
            return super()._start_transaction_under_autocommit()  # type: ignore[misc]
        local, shared = _queue(str(self.settings_dict["NAME"]))
        timeout = float(self.settings_dict["OPTIONS"].get("timeout", 5))
        deadline = time.monotonic() + timeout
        if not local.acquire(timeout=timeout):
            raise OperationalError("database is locked")
        try:
            shared.acquire(timeout=max(0.0, deadline - time.monotonic()), poll_interval=POLL_SECONDS)
        except Timeout:
            local.release()
            raise OperationalError("database is locked") from None
        except BaseException:  # e.g. the lock file cannot be opened
            local.release()
            raise
        self._holding = (local, shared)
        try:
            super()._start_transaction_under_autocommit()  # type: ignore[misc]
        except BaseException:
            self._release_writer()
            raise

    def _set_autocommit(self, autocommit):
        try:
            super()._set_autocommit(autocommit)  # type: ignore[misc]
        finally:
            if autocommit:  # the transaction is over: committed or rolled back
                self._release_writer()

    def close(self):
        try:
            super().close()
        finally:
            if self.connection is None or self.closed_in_transaction:
                self._release_writer()

    def _release_writer(self):
        if self._holding is not None:
            local, shared = self._holding
            self._holding = None
            try:
                shared.release()
            finally:
                local.release()
