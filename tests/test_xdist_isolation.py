"""tests/xdist_isolation.py: each pytest-xdist process gets its own var/ folder and Redis databases."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.xdist_isolation import isolate, redis_url_for


def test_redis_database_counts_down_per_process_and_other_urls_stay():
    assert redis_url_for("redis://127.0.0.1:6379/15", 0) == "redis://127.0.0.1:6379/15"
    assert redis_url_for("redis://127.0.0.1:6379/15", 1) == "redis://127.0.0.1:6379/14"
    assert (
        redis_url_for("rediss://:pw@host:6380/3?ssl_cert_reqs=none", 2) == "rediss://:pw@host:6380/1?ssl_cert_reqs=none"
    )
    assert redis_url_for("filesystem://", 1) == "filesystem://"
    assert redis_url_for("amqp://guest@localhost//", 1) == "amqp://guest@localhost//"
    with pytest.raises(ValueError, match="no Redis database left for test process 2"):
        redis_url_for("redis://127.0.0.1:6379/1", 2)


def test_isolate_gives_each_process_its_own_var_dir_broker_and_cache(tmp_path):
    env = {
        "ARGORA_VAR_DIR": str(tmp_path),
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/15",
        "CACHE_URL": "redis://127.0.0.1:6379/13",
    }
    isolate(env, "gw1")
    assert Path(env["ARGORA_VAR_DIR"]) == tmp_path / "xdist" / "gw1"
    assert env["CELERY_BROKER_URL"].endswith("/14") and env["CACHE_URL"].endswith("/12")
    bare = {}
    isolate(bare, "gw0")
    assert bare["ARGORA_VAR_DIR"].endswith("var/xdist/gw0") and "CELERY_BROKER_URL" not in bare


def test_one_process_at_a_time_holds_a_lock_the_other_processes_share(tmp_path, monkeypatch):
    """The lock file lies in the processes' common folder; a second process (here: a child) cannot take it while
    the block runs, and can once it is left. Without xdist (no shared folder) the block just runs."""
    import subprocess
    import sys

    from tests.xdist_isolation import one_process_at_a_time

    env = {"ARGORA_VAR_DIR": str(tmp_path)}
    isolate(env, "gw0")
    assert env["ARGORA_XDIST_SHARED_DIR"] == str(tmp_path / "xdist")
    monkeypatch.setenv("ARGORA_XDIST_SHARED_DIR", env["ARGORA_XDIST_SHARED_DIR"])
    probe = (
        "import fcntl, sys\n"
        "with open(sys.argv[1], 'a') as f:\n"
        "    try:\n"
        "        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "    except BlockingIOError:\n"
        "        sys.exit(3)\n"
    )
    lock = tmp_path / "xdist" / "many-connections.lock"
    with one_process_at_a_time("many-connections"):
        assert subprocess.run([sys.executable, "-c", probe, str(lock)]).returncode == 3
    assert subprocess.run([sys.executable, "-c", probe, str(lock)]).returncode == 0
    monkeypatch.delenv("ARGORA_XDIST_SHARED_DIR")
    with one_process_at_a_time("many-connections"):
        pass


def test_modules_that_train_for_minutes_are_handed_out_first_then_the_long_ones():
    from tests.conftest import long_modules_first

    class Item:
        def __init__(self, nodeid, *markers):
            self.nodeid, self.markers = nodeid, set(markers)

        def get_closest_marker(self, name):
            return name if name in self.markers else None

    items = [
        Item("tests/a.py::t1"),
        Item("tests/b.py::t1", "browser"),
        Item("tests/b.py::t2"),
        Item("tests/c.py::t1"),
        Item("tests/c.py::t2", "slow", "minutes"),
        Item("tests/d.py::t1", "worker"),
    ]
    assert [i.nodeid for i in long_modules_first(items)] == [
        "tests/c.py::t1",
        "tests/c.py::t2",
        "tests/b.py::t1",
        "tests/b.py::t2",
        "tests/d.py::t1",
        "tests/a.py::t1",
    ]


def test_the_postgresql_half_leaves_out_model_training_but_keeps_database_behaviour():
    import types

    from tests.conftest import database_engine_matters

    class Item:
        def __init__(self, nodeid, *markers, fixtures=("db",), subprocess=False):
            self.nodeid, self.markers, self.fixturenames = nodeid, set(markers), list(fixtures)
            self.module = types.SimpleNamespace(**({"subprocess": subprocess} if subprocess else {}))

        def get_closest_marker(self, name):
            return name if name in self.markers else None

    assert database_engine_matters(Item("tests/a.py::allocation"))
    assert not database_engine_matters(Item("tests/ml/test_x.py::trains", "slow"))
    assert not database_engine_matters(Item("tests/ml/test_x.py::trains_long", "slow", "minutes"))
    assert not database_engine_matters(Item("tests/a.py::maths", "one_database"))
    assert database_engine_matters(Item("tests/ml/test_x.py::on_a_worker", "slow", "worker"))
    assert database_engine_matters(Item("tests/a.py::pg", "slow", "postgres"))
    assert database_engine_matters(Item("tests/browser/test_x.py::journey", "browser"))
    assert not database_engine_matters(Item("tests/browser/test_x.py::layout", "browser", "one_database"))
    assert database_engine_matters(Item("tests/a.py::worker_page", "browser", "worker", "one_database"))
    assert database_engine_matters(Item("tests/test_migrate_populated.py::t", "slow"))
    assert not database_engine_matters(Item("tests/a.py::no_db", fixtures=()))
    assert database_engine_matters(Item("tests/test_demo.py::t", fixtures=(), subprocess=True))  # children do
    assert not database_engine_matters(Item("tests/test_layout.py::t", fixtures=(), subprocess=True))
