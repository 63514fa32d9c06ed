"""A hung Redis (argora.budget): a TCP server that accepts connections and never answers stands in for it.

In-process: cache reads are misses, writes dropped, locks and counters raise, each within the request's budget; the
budget is shared by the calls of one request; the breaker skips the server's calls for a while, per server and only
inside requests; a publish through the broker transport gives up within the budget. End to end: a gunicorn process
with CACHE_URL and CELERY_BROKER_URL on the silent server serves a worker's whole flow (invite, HIT page, submit +
next, done) and a staff job page, every request within the budget (generous bound), and stores every answer.
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
from kombu.exceptions import OperationalError

from argora import budget
from argora.celery import app
from argora.tasks import ping
from tests.worker_utils import free_port, subprocess_env

GENEROUS = 1.5  # seconds on top of a budget that a request may take (a busy 2-core machine)


class Silent:
    """The silent Redis of the ``hung_redis`` fixture (tests/conftest.py): its port and its URLs."""

    def __init__(self, url: str):
        self.port = urlsplit(url).port

    def url(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"


@pytest.fixture
def silent(hung_redis):
    budget.reset_breakers()
    try:
        yield Silent(hung_redis)
    finally:
        budget.reset_breakers()


def silent_cache(server, timeout=0.4):
    return budget.RedisCache(server.url(1), {"OPTIONS": {"socket_timeout": timeout, "socket_connect_timeout": timeout}})


def timed(fn, *args, **kwargs):
    start = time.monotonic()
    try:
        return fn(*args, **kwargs), time.monotonic() - start
    except Exception as exc:  # noqa: BLE001 - the caller asserts on it
        return exc, time.monotonic() - start


def test_reads_miss_writes_drop_and_locks_raise_within_the_budget(silent, settings):
    settings.ARGORA_SERVICE_BREAKER_SECONDS = 5
    cache = silent_cache(silent)
    with budget.limit(1.0):
        value, first = timed(cache.get, "progress", "none")
        assert value == "none" and first < 0.4 + GENEROUS
        # the breaker is open now: every further call of this request and the next is skipped at once
        assert timed(cache.set, "progress", {"done": 1})[0] is None
        assert timed(cache.get_many, ["a", "b"])[0] == {}
        lock, _ = timed(cache.add, "argora:debounce", 1, 60)
        assert isinstance(lock, budget.ServiceSkipped)
        counter, _ = timed(cache.incr, "argora:unconfirmed")
        assert isinstance(counter, budget.ServiceSkipped)
    with budget.limit(1.0) as b:
        assert cache.get("progress", "none") == "none"
        assert b.left == 1.0  # skipped before it could wait: nothing of the budget was spent


def test_one_request_shares_one_budget_between_its_calls(silent, settings):
    settings.ARGORA_SERVICE_BREAKER_SECONDS = 0  # no breaker: only the budget stops the calls
    cache = silent_cache(silent, timeout=0.4)
    with budget.limit(1.0) as b:
        start = time.monotonic()
        results = [cache.get(f"k{i}", "miss") for i in range(6)]  # 6 x 0.4 s without a budget
        assert time.monotonic() - start < 1.0 + GENEROUS
        assert results == ["miss"] * 6
        assert b.left < budget.MIN_CALL_SECONDS  # spent: the last calls were never started
        assert isinstance(timed(cache.add, "lock", 1, 60)[0], budget.ServiceSkipped)


def test_the_breaker_is_per_server_and_closes_again(silent, settings, caplog):
    settings.ARGORA_SERVICE_BREAKER_SECONDS = 0.3
    cache = silent_cache(silent, timeout=0.2)
    server = ("127.0.0.1", silent.port)
    with caplog.at_level(logging.WARNING, logger="argora.budget"):
        with budget.limit(2.0):
            cache.get("a")
        assert budget.breaker_open(server) and not budget.breaker_open(("127.0.0.1", silent.port + 1))
        time.sleep(0.4)  # the breaker's 0.3 s are over: the server is tried again (and trips it again)
        assert not budget.breaker_open(server)
        with budget.limit(2.0):
            cache.get("a")
        assert budget.breaker_open(server)
    trips = [r.message for r in caplog.records if r.message.startswith(f"Redis 127.0.0.1:{silent.port} did not answer")]
    assert len(trips) == 2 and all(m.endswith("its cache and broker calls are skipped for 0.3 s") for m in trips)


def test_outside_a_request_calls_keep_their_own_timeout_and_no_breaker(silent, settings):
    settings.ARGORA_SERVICE_BREAKER_SECONDS = 5
    cache = silent_cache(silent, timeout=0.2)
    assert cache.get("a", "miss") == "miss" and cache.get("b", "miss") == "miss"
    assert not budget.breaker_open(("127.0.0.1", silent.port))  # a worker's calls never open it


def test_a_publish_to_a_hung_broker_gives_up_within_the_budget(silent, settings):
    settings.ARGORA_SERVICE_BREAKER_SECONDS = 5
    options = {"socket_timeout": 2.0, "socket_connect_timeout": 2.0}
    with app.connection_for_write(
        silent.url(0), transport="argora.broker:Transport", transport_options=options
    ) as connection:
        with budget.limit(1.0):
            error, took = timed(ping.apply_async, queue="default", connection=connection)
        assert isinstance(error, (OperationalError, budget.ServiceSkipped)), error
        assert took < 1.0 + GENEROUS
        with budget.limit(1.0) as b:  # the next request: skipped at once while the breaker is open
            error, _ = timed(ping.apply_async, queue="default", connection=connection)
        assert isinstance(error, (OperationalError, budget.ServiceSkipped)), error
        assert b.left == 1.0


# --- end to end: gunicorn on a silent Redis --------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parent.parent
GUNICORN = Path(sys.executable).with_name("gunicorn")
BUDGET = 2.0  # ARGORA_SERVICE_TIMEOUT, the default


@pytest.fixture
def hung_redis_site(silent, transactional_db, tmp_path):
    port = free_port()
    env = subprocess_env(
        CACHE_URL=silent.url(1),
        CELERY_BROKER_URL=silent.url(0),
        ARGORA_SERVICE_TIMEOUT=str(BUDGET),
        ARGORA_SERVICE_BREAKER_SECONDS="600",
        DJANGO_DEBUG="0",
        ARGORA_LOG_LEVEL="WARNING",
    )
    log = tmp_path / "gunicorn.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(GUNICORN), "argora.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1", "--timeout", "120"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, log.read_text(errors="replace")
            try:
                if requests.get(f"{base}/healthz", timeout=5).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, "gunicorn did not start"
            time.sleep(0.2)
        yield base, log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        print(log.read_text(errors="replace"))  # shown when the test failed


def test_a_workers_flow_and_a_job_page_stay_within_the_budget(hung_redis_site, django_user_model):
    site, log = hung_redis_site
    from annotation import services
    from annotation.models import Assignment, Response

    project = services.create_project(
        name="Hung",
        slug="hung",
        task_type="sentence_label",
        status="active",
        config={"labels": ["pro", "con"]},
        items_per_hit=2,
        assignments_per_item=1,
    )
    services.add_items(project, [{"text": f"Sentence {i}.", "topic": "t"} for i in range(6)])
    services.build_hits(project)
    django_user_model.objects.create_superuser("root", "root@example.org", "pw-root-123")
    times: list[tuple[str, float]] = []

    def call(session, method, url, **kwargs):
        start = time.monotonic()
        response = session.request(method, site + url, allow_redirects=False, timeout=60, **kwargs)
        times.append((f"{method} {url}", time.monotonic() - start))
        assert response.status_code < 400, (url, response.status_code, response.text[:2000])
        return response

    worker = requests.Session()
    r = call(worker, "GET", f"/invite/{project.invite_token}/")
    assert r.status_code == 302
    page = call(worker, "GET", r.headers["Location"]).text  # the HIT page
    assignment = re.search(r'data-assignment="(\d+)"', page).group(1)
    submit_url = re.search(r'data-submit-url="([^"]+)"', page).group(1)
    items = re.findall(r'data-item-id="(\d+)"', page)
    headers = {"X-CSRFToken": worker.cookies["csrftoken"]}
    submitted = 0
    while True:
        body = {"responses": {item: {"label": "pro"} for item in items}}
        hit = call(worker, "POST", f"{submit_url}?next=1", json=body, headers=headers).json()
        assert hit["status"] == "submitted" and hit["assignment"] == int(assignment)
        submitted += 1
        if hit["next"] is None:
            break
        assignment = str(hit["next"]["assignment"])
        submit_url = f"/api/assignments/{assignment}/submit/"
        items = [str(i["id"]) for i in hit["next"]["items"]]
    call(worker, "GET", f"/work/{project.slug}/done/")
    # a rate limit that cannot count holds closed and says so: "try again", never a 500 (argora.counters)
    anonymous = requests.Session()
    call(anonymous, "GET", "/work/recover/")
    start = time.monotonic()
    refused = anonymous.post(
        site + "/work/recover/",
        data={"code": "W1-AAAA-BBBB-CCCC", "csrfmiddlewaretoken": anonymous.cookies["csrftoken"]},
        timeout=60,
    )
    times.append(("POST /work/recover/", time.monotonic() - start))
    assert refused.status_code == 429 and "try again in a minute" in refused.text

    staff = requests.Session()
    call(staff, "GET", "/accounts/login/")
    r = call(
        staff,
        "POST",
        "/accounts/login/",
        data={"username": "root", "password": "pw-root-123", "csrfmiddlewaretoken": staff.cookies["csrftoken"]},
    )
    assert r.status_code == 302  # logged in
    task_id = str(uuid.uuid4())  # a job still waiting: its progress is read from the (silent) cache
    assert "waiting" in call(staff, "GET", f"/jobs/{task_id}/").text
    assert call(staff, "GET", f"/api/jobs/{task_id}/").json()["progress"] is None

    print("\n".join(f"{took:6.2f} s  {what}" for what, took in times))
    slow = [(what, round(took, 2)) for what, took in times if took >= BUDGET + GENEROUS]
    assert not slow, slow
    # the flow waited on the silent Redis once: then its breaker was open (600 s here) and every call was skipped
    assert log.read_text(errors="replace").count(" did not answer (") == 1
    # no answer lost: every HIT submitted, every item answered once
    assert submitted == 3
    assert Assignment.objects.filter(project=project, status="submitted").count() == 3
    assert Response.objects.filter(assignment__project=project).count() == 6
