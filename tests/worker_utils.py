"""A real ``celery worker`` subprocess against the current test database and broker.

Use the fixture from any test module (tests/conftest.py registers this module as a plugin)::

    @pytest.mark.worker
    @pytest.mark.django_db(transaction=True)
    def test_something(celery_worker_proc):
        result = my_task.delay(...)
        assert result.get(timeout=60) == ...

The worker gets the environment of the test process with ``DATABASE_URL`` pointing at pytest-django's test
database (the SQLite file ``$ARGORA_VAR_DIR/test_argora.sqlite3``, or ``test_<name>`` on PostgreSQL), so it
sees the rows the test committed and writes task results where the test reads them. It consumes the
``default`` and ``gpu`` queues with a one-thread pool (``--pool threads --concurrency 1``, as ``make demo``'s
worker but with one thread: one task at a time, an ETA task included; the solo pool runs a countdown task in its
timer thread beside the task in its main thread), is ready once it has answered ``argora.ping``, and serves every
test of the module that asks for it (stopped, SIGTERM then SIGKILL, after the module's last test; between tests its
queues are purged, the countdown tasks it holds revoked and its running task waited for: :class:`ModuleWorker`). The part of its log written during a test is printed at that test's
teardown, which pytest shows only when the test failed.

For other set-ups (only ``-Q gpu``, another pool) call :func:`start_worker` directly; it is a context manager.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest

ROOT = Path(__file__).resolve().parent.parent
CELERY = Path(sys.executable).with_name("celery")
READY_TIMEOUT = float(os.environ.get("ARGORA_TEST_WORKER_READY_TIMEOUT", "120"))
STOP_TIMEOUT = 20.0


def database_url(settings_dict: dict) -> str:
    """A dj-database-url URL for a Django connection's ``settings_dict`` (the test database once set up)."""
    engine = settings_dict["ENGINE"]
    name = str(settings_dict["NAME"])
    if engine.endswith("sqlite3"):
        if name in ("", ":memory:") or name.startswith("file:"):
            raise RuntimeError("a worker subprocess cannot share an in-memory SQLite database; set TEST NAME to a file")
        return f"sqlite:///{Path(name).resolve()}"
    if engine.endswith("postgresql"):
        user = quote(settings_dict.get("USER") or "", safe="")
        password = settings_dict.get("PASSWORD") or ""
        auth = f"{user}:{quote(password, safe='')}@" if password else (f"{user}@" if user else "")
        host = settings_dict.get("HOST") or "127.0.0.1"
        port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
        return f"postgres://{auth}{host}{port}/{quote(name, safe='')}"
    raise RuntimeError(f"no DATABASE_URL for engine {engine}")


def current_database_url() -> str:
    from django.db import connection

    return database_url(connection.settings_dict)


def subprocess_env(**extra: str) -> dict:
    """Environment for a child process (worker, gunicorn, manage.py) that must use the current test database."""
    from django.conf import settings

    env = dict(os.environ)
    env.update(
        DATABASE_URL=current_database_url(),
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        ARGORA_VAR_DIR=str(settings.VAR_DIR),
        ARGORA_ARTIFACT_ROOT=str(settings.ARTIFACT_ROOT),  # a test's tmp_artifacts (asked for before the worker)
        CELERY_TASK_ALWAYS_EAGER="0",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 now (for a server a test starts: gunicorn, a private redis-server)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the child gets SIGTERM when the test process dies, so no orphan worker eats later messages."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001
        pass


class WorkerProcess:
    def __init__(self, proc: subprocess.Popen, log_path: Path, hostname: str, queues: tuple[str, ...]):
        self.proc = proc
        self.log_path = log_path
        self.hostname = hostname
        self.queues = queues

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = STOP_TIMEOUT) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # warm shutdown: finishes the current task
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout)
        return self.proc.returncode


def send_ping(queue: str, broker_url: str | None = None):
    """``argora.ping`` to ``queue`` through the test process's broker, or through ``broker_url`` (a private one)."""
    from argora.celery import app
    from argora.tasks import ping

    if broker_url is None:
        return ping.apply_async(queue=queue)
    with app.connection_for_write(broker_url) as connection:
        return ping.apply_async(queue=queue, connection=connection)


def wait_until_ready(worker: WorkerProcess, timeout: float = READY_TIMEOUT, broker_url: str | None = None) -> dict:
    """Send ``argora.ping`` to the worker's first queue until it answers (bounded by ``timeout``)."""
    from celery.exceptions import TimeoutError as CeleryTimeout

    deadline = time.monotonic() + timeout
    result = send_ping(worker.queues[0], broker_url)
    while True:
        if not worker.alive():
            raise RuntimeError(
                f"celery worker exited with {worker.proc.returncode} before it was ready:\n{worker.log()}"
            )
        try:
            answer = result.get(timeout=1.0, interval=0.2)
        except CeleryTimeout:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"celery worker did not answer argora.ping within {timeout:.0f} s:\n{worker.log()}"
                ) from None
            continue
        if answer.get("worker") == worker.hostname:
            return answer
        # an answer from some other worker: ask again until ours answers
        result = send_ping(worker.queues[0], broker_url)


@contextlib.contextmanager
def start_worker(
    queues: tuple[str, ...] = ("default", "gpu"),
    pool: str = "threads",
    purge: bool = True,
    ready_timeout: float = READY_TIMEOUT,
    extra_args: tuple[str, ...] = (),
    broker_url: str | None = None,
    env_extra: dict[str, str] | None = None,
    _module: bool = False,
):
    """Start ``celery -A argora worker`` on ``queues`` against the current (test) database; yield it ready.
    ``broker_url``: the worker's broker instead of the test process's (a private redis-server; nothing is purged).
    ``env_extra``: more environment variables for the worker. A test that starts its own worker has the queues to
    itself: the module's shared worker (:class:`ModuleWorker`), if one runs, is stopped first."""
    from argora.celery import app

    if not _module and broker_url is None and ModuleWorker.current is not None:
        ModuleWorker.current.close()

    if purge and broker_url is None:  # stale messages of an earlier, interrupted run must not run against this database
        app.control.purge()
    hostname = f"argora-test-{uuid.uuid4().hex[:8]}@%h"
    log_dir = Path(tempfile.mkdtemp(prefix="argora-worker-"))
    log_path = log_dir / "worker.log"
    cmd = [
        str(CELERY),
        "-A",
        "argora",
        "worker",
        "-Q",
        ",".join(queues),
        "--pool",
        pool,
        "--concurrency",
        "1",
        "-n",
        hostname,
        "-l",
        "info",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--prefetch-multiplier",
        "1",
        *extra_args,
    ]
    with open(log_path, "wb") as log_file:
        env = subprocess_env(**({"CELERY_BROKER_URL": broker_url} if broker_url else {}), **(env_extra or {}))
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )
    worker = WorkerProcess(proc, log_path, hostname.replace("%h", socket.gethostname()), tuple(queues))
    try:
        wait_until_ready(worker, timeout=ready_timeout, broker_url=broker_url)
        yield worker
    finally:
        worker.stop()


class ModuleWorker:
    """The one ``celery worker`` of a test module (:func:`celery_worker_proc`): started on first use, kept for the
    module's next tests (a start costs seconds: a fresh interpreter importing Django, Celery and the apps), started
    again when a test left it dead or busy. Its artifacts folder is its own; each test starts with it empty."""

    def __init__(self, artifact_root: Path):
        self.artifact_root = artifact_root
        self.worker: WorkerProcess | None = None
        self._running: contextlib.ExitStack | None = None

    current: ModuleWorker | None = None  # the one running in this test process, if any

    def get(self) -> WorkerProcess:
        if self.worker is None or not self.worker.alive():
            self.close()
            self._running = contextlib.ExitStack()
            self.worker = self._running.enter_context(
                start_worker(env_extra={"ARGORA_ARTIFACT_ROOT": str(self.artifact_root)}, _module=True)
            )
            ModuleWorker.current = self
        return self.worker

    def quiesce(self) -> None:
        """Between two tests: drop the messages still queued, revoke the countdown (ETA) tasks the worker holds (a
        debounced retrain or agreement recompute of this test would otherwise run in the next one, on its rows: the
        database is flushed after this and ids are used again), then wait until the task the worker may be running
        has finished (a ping queues behind it on the one-thread pool). A worker that does not answer is stopped; the
        next test starts another."""
        from argora.celery import app

        if self.worker is None:
            return
        app.control.purge()
        try:
            held = app.control.inspect(destination=[self.worker.hostname], timeout=5).scheduled()
            if held is None:  # no reply: the next test gets a fresh worker
                raise RuntimeError(f"{self.worker.hostname} did not answer inspect().scheduled()")
            ids = [entry["request"]["id"] for entry in held.get(self.worker.hostname, [])]
            if ids:
                app.control.revoke(ids, destination=[self.worker.hostname])
            wait_until_ready(self.worker, timeout=STOP_TIMEOUT * 3)
        except RuntimeError:
            self.close()

    def close(self) -> None:
        if self._running is not None:
            self._running.close()
        self._running, self.worker = None, None
        if ModuleWorker.current is self:
            ModuleWorker.current = None


@pytest.fixture(scope="module")
def module_celery_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    """The module's :class:`ModuleWorker` (the worker itself is started by the first test that asks for it)."""
    shared = ModuleWorker(tmp_path_factory.mktemp("worker-artifacts"))
    try:
        yield shared
    finally:
        with django_db_blocker.unblock():
            shared.close()


@pytest.fixture
def celery_worker_proc(transactional_db, module_celery_worker, settings, request):
    """A running worker on ``default,gpu`` against the test DB. Needs ``django_db(transaction=True)``:
    the worker is another process and only sees committed rows. One worker serves every test of a module
    (:class:`ModuleWorker`): each test starts with no queued message, no task running and an empty artifacts
    folder that ``settings.ARTIFACT_ROOT`` (and :func:`tests.conftest.tmp_artifacts`) points at, as the worker's."""
    from argora.celery import app

    root = module_celery_worker.artifact_root
    if "tmp_artifacts" not in request.fixturenames:  # else that fixture empties it (before or after this one)
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        settings.ARTIFACT_ROOT = root
    app.control.purge()  # what an earlier test (or an interrupted run) left queued
    worker = module_celery_worker.get()
    log_start = len(worker.log())
    try:
        yield worker
    finally:
        print(f"---- celery worker log ({worker.hostname}, this test) ----\n{worker.log()[log_start:]}")
        module_celery_worker.quiesce()


@contextlib.contextmanager
def eager_celery(settings):
    """Run Celery tasks in the test process (``.delay()`` runs at once), for tests that need no real worker."""
    from argora.celery import app

    before = app.conf.task_always_eager
    settings.CELERY_TASK_ALWAYS_EAGER = True
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = before
