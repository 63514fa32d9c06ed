"""argora.sqlite3: Django's SQLite backend with a queue for writers. A transaction waits for the one open in another
thread or another process and enters once that one has ended (committed, rolled back or closed); past the database's
``timeout`` it fails as SQLite's own wait does, with nothing written. SQLite only (skipped on PostgreSQL)."""

import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import OperationalError, connection, connections, transaction

from annotation.models import Worker
from argora.sqlite3.base import DatabaseWrapper

ROOT = Path(__file__).resolve().parent.parent
WAIT = 30  # seconds an event may take on a slow machine; the waits below end as soon as it is set

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def sqlite_only():
    if connection.vendor != "sqlite":
        pytest.skip("the writer queue is SQLite's")
    assert isinstance(connections["default"], DatabaseWrapper)  # settings.py picks argora.sqlite3 for SQLite


def in_thread(target):
    """Run ``target`` in a thread with its own connection; returns (thread, errors)."""
    errors = []

    def body():
        try:
            target()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connections.close_all()

    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t, errors


@contextmanager
def timeout(seconds: float):
    """The database's ``timeout`` option set to ``seconds`` for the transactions begun inside (read at each BEGIN)."""
    options = connection.settings_dict["OPTIONS"]
    saved = options.get("timeout")
    options["timeout"] = seconds
    try:
        yield
    finally:
        options["timeout"] = saved


@contextmanager
def held_by(script: str, arg: str):
    """Another process running ``script`` with ``arg``, once it has printed "holding"; it lets go when its stdin
    gets a line (``process.stdin``), and is killed when the block ends."""
    process = subprocess.Popen(
        [sys.executable, "-c", script, arg], cwd=ROOT, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert process.stdout.readline().strip() == "holding"
        yield process
    finally:
        process.kill()
        process.wait(WAIT)


def let_go(process) -> None:
    process.stdin.write("\n")
    process.stdin.flush()


def test_a_transaction_waits_for_another_threads_and_sees_what_it_committed():
    holding, release, entered = threading.Event(), threading.Event(), threading.Event()
    seen = []

    def first():
        with transaction.atomic():
            Worker.objects.create(external_id="first")
            holding.set()
            assert release.wait(WAIT)

    def second():
        assert holding.wait(WAIT)
        with transaction.atomic():
            entered.set()
            seen.append(sorted(Worker.objects.values_list("external_id", flat=True)))
            Worker.objects.create(external_id="second")

    t1, e1 = in_thread(first)
    t2, e2 = in_thread(second)
    assert holding.wait(WAIT)
    assert not entered.wait(0.5)  # the first transaction is open: the second cannot have begun
    release.set()
    t1.join(WAIT), t2.join(WAIT)
    assert not e1 and not e2, (e1, e2)
    assert entered.is_set() and seen == [["first"]]
    assert sorted(Worker.objects.values_list("external_id", flat=True)) == ["first", "second"]


def test_the_queue_is_free_again_after_a_rollback_and_after_a_close_inside_a_transaction():
    with pytest.raises(ZeroDivisionError), transaction.atomic():  # noqa: PT012 - a write, then the error that rolls it back
        Worker.objects.create(external_id="rolled back")
        1 / 0  # noqa: B018
    with transaction.atomic():
        Worker.objects.create(external_id="closed")
        connection.close()  # e.g. a dropped connection: the transaction is gone, and with it its place
    connection.close()

    done = []

    def other():
        with transaction.atomic():
            done.append(Worker.objects.count())

    with timeout(5):  # a place never given back would fail this thread after 5 s
        t, errors = in_thread(other)
        t.join(WAIT)
    assert not errors and done == [0], errors
    assert not Worker.objects.filter(external_id__in=["rolled back", "closed"]).exists()


HOLDER = """
import os, sys
os.environ["DATABASE_URL"] = sys.argv[1]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argora.settings")
import django
django.setup()
from django.db import transaction
from annotation.models import Worker
with transaction.atomic():
    Worker.objects.create(external_id="other process")
    print("holding", flush=True)
    sys.stdin.readline()
print("done", flush=True)
"""


def test_a_writer_in_another_process_holds_the_queue_past_the_timeout_then_lets_it_go():
    name = Path(connection.settings_dict["NAME"]).resolve()
    with held_by(HOLDER, f"sqlite:///{name}") as holder:
        with timeout(0.3), pytest.raises(OperationalError, match="database is locked"), transaction.atomic():
            Worker.objects.create(external_id="too late")
        let_go(holder)
        assert holder.stdout.readline().strip() == "done"
        with transaction.atomic():  # the thread's and the file's places were both given back
            Worker.objects.create(external_id="after")
    assert sorted(Worker.objects.values_list("external_id", flat=True)) == ["after", "other process"]


FILE_HOLDER = """
import sys
from filelock import FileLock
with FileLock(sys.argv[1]):
    print("holding", flush=True)
    sys.stdin.readline()
"""


def test_the_queue_between_processes_is_the_lock_file_beside_the_database():
    """A process that holds ``<database>-writers.lock`` (and no SQLite lock at all) keeps this process's
    transactions out until it lets go: the queue, not SQLite's own wait, decides who writes next."""
    name = Path(connection.settings_dict["NAME"]).resolve()
    with held_by(FILE_HOLDER, f"{name}-writers.lock") as holder:
        Worker.objects.create(external_id="outside a transaction")  # SQLite itself is free
        with timeout(0.3), pytest.raises(OperationalError, match="database is locked"), transaction.atomic():
            Worker.objects.create(external_id="queued too long")
        let_go(holder)
        assert holder.wait(WAIT) == 0
        with transaction.atomic():
            Worker.objects.create(external_id="after")
    assert sorted(Worker.objects.values_list("external_id", flat=True)) == ["after", "outside a transaction"]


def test_a_lock_file_that_cannot_be_opened_fails_the_transaction_and_frees_the_queue():
    """The lock file's path is taken by a directory: the transaction fails with that error and writes nothing, and
    once the path is a file again the next transaction gets in (the thread's place was given back)."""
    lock = Path(f"{Path(connection.settings_dict['NAME']).resolve()}-writers.lock")
    moved = lock.with_name(lock.name + ".moved")
    lock.touch()
    lock.rename(moved)
    lock.mkdir()
    try:
        with pytest.raises(OSError), transaction.atomic():
            Worker.objects.create(external_id="never")
    finally:
        lock.rmdir()
        moved.rename(lock)
    with transaction.atomic():
        Worker.objects.create(external_id="after")
    assert list(Worker.objects.values_list("external_id", flat=True)) == ["after"]
