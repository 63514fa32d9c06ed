"""A celery worker outlives its broker: a private redis-server is killed (SIGKILL) under a real worker that holds an
unacknowledged message (a late-ack task running), then started again on the same port; the worker is still there and
runs a task sent after the restart (argora.broker; celery 5.7 + kombu 5.7 exited with ``Unrecoverable error:
AttributeError('NoneType' object has no attribute 'hostname')``)."""

from __future__ import annotations

import re
import shutil
import subprocess
import time

import pytest
import redis
from kombu import Connection

from argora.celery import app
from tests.worker_utils import free_port, send_ping, start_worker

REDIS_SERVER = shutil.which("redis-server")
pytestmark = [
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server on PATH"),
]


def start_redis(port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            redis.Redis(port=port, socket_timeout=1).ping()
            return proc
        except redis.exceptions.ConnectionError:
            assert proc.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@pytest.fixture
def private_redis():
    port = free_port()
    procs = [start_redis(port)]
    try:
        yield port, procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


def test_the_worker_survives_a_broker_killed_and_restarted(private_redis):
    port, procs = private_redis
    url = f"redis://127.0.0.1:{port}/0"
    # two processes: while one runs the late-ack task the consumer waits (BRPOP) for a message for the other, which is
    # when a lost connection closed the channel half-way and the worker exited
    with start_worker(
        queues=("default",),
        pool="prefork",
        broker_url=url,
        ready_timeout=120,
        extra_args=("-I", "tests.fixtures.slow_tasks", "--concurrency", "2"),
    ) as worker:
        assert send_ping("default", url).get(timeout=30)["worker"] == worker.hostname
        with app.connection_for_write(url) as connection:
            app.send_task("tests.sleep_late_ack", args=[3], queue="default", connection=connection)
        wait_for(
            lambda: re.search(r"Task tests\.sleep_late_ack\[[^]]+\] received", worker.log()),
            30,
            "the late-ack task never reached the worker",
        )
        procs[0].kill()  # SIGKILL while the task holds its message unacknowledged
        procs[0].wait(timeout=10)
        wait_for(
            lambda: "Connection to broker lost" in worker.log() or not worker.alive(),
            30,
            "the worker never noticed that its broker died",
        )
        time.sleep(1)
        procs.append(start_redis(port))
        wait_for(
            lambda: worker.log().count("Connected to") >= 2 or not worker.alive(), 60, "the worker did not reconnect"
        )
        assert worker.alive(), worker.log()
        assert "Unrecoverable error" not in worker.log()
        answer = send_ping("default", url).get(timeout=60)  # a task sent after the restart
        assert answer["worker"] == worker.hostname and answer["pong"] is True
        assert worker.alive()


def test_a_channel_closed_after_its_transport_was_detached_raises_a_connection_error(private_redis):
    """The step that killed the worker, on its own: kombu's ``collect()`` detached the transport, then the channel is
    closed again with a message unacknowledged; that must be a connection error (ignored while reconnecting), not
    kombu's AttributeError."""
    port, _ = private_redis
    connection = Connection(f"redis://127.0.0.1:{port}/0", transport="argora.broker:Transport")
    channel = connection.default_channel
    channel.qos._delivered["a-delivery-tag"] = None  # an unacknowledged message: closing requeues it
    connection._do_close_transport()  # what Connection.collect() does after a failed close
    with pytest.raises(redis.exceptions.ConnectionError):
        channel.close()
