"""Shared fixtures. The suite runs on whatever DATABASE_URL / CELERY_BROKER_URL say (SQLite + filesystem
broker by default; `make test` runs it again on PostgreSQL + Redis when they answer)."""

from __future__ import annotations

import os
import shutil
import socket
import threading

import pytest

pytest_plugins = ["tests.worker_utils"]  # the real `celery worker` fixture: celery_worker_proc

# Playwright's sync API runs an event loop in the test thread; Django's ORM refuses that unless told.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


# `make test` sets this for its second run (PostgreSQL + Redis): the tests that cannot reach a database or the
# broker, and those whose outcome does not depend on the database engine (:func:`database_engine_matters`), already
# ran in the first (SQLite) run.
ENV_DATABASE_ONLY = "ARGORA_TESTS_DATABASE_ONLY"
DATABASE_FIXTURES = {
    "db",
    "transactional_db",
    "live_server",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
}


def reaches_database_or_broker(item) -> bool:
    """Whether a test can touch the database or the broker: it is marked ``django_db`` or asks for a database
    fixture (pytest-django blocks the database for every other test), it is a worker / PostgreSQL / browser test, or
    its module starts processes (a subprocess reads DATABASE_URL and CELERY_BROKER_URL itself)."""
    if item.get_closest_marker("django_db") or DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    if any(item.get_closest_marker(name) for name in ("worker", "postgres", "browser")):
        return True
    module = getattr(item, "module", None)
    return module is None or "subprocess" in vars(module)


# Modules whose slow tests are about the database itself (they run in both halves, slow or not): the migrations
# applied to a populated database of an older release.
DATABASE_BEHAVIOUR_MODULES = frozenset({"tests/test_migrate_populated.py"})
# Modules that start subprocesses which reach no database or broker: the layout check reads the source tree only.
NO_DATABASE_MODULES = frozenset({"tests/test_layout.py"})


def database_engine_matters(item) -> bool:
    """Whether a test's outcome can depend on the database engine, so that the PostgreSQL half must run it too.
    Not so for a test marked ``one_database``, nor for one that trains or loads real models (``slow`` /
    ``minutes``): it reads its training rows through the ORM, but what it checks is the model (68 model-training
    tests that the PostgreSQL half re-ran without testing PostgreSQL). A worker or PostgreSQL test, and every test
    of :data:`DATABASE_BEHAVIOUR_MODULES`, still runs on both; so does a browser test unless it is marked
    ``one_database`` (what it checks is the page itself: its layout, accessibility, sanitised text or touch input);
    a module of :data:`NO_DATABASE_MODULES` (subprocesses that reach no database) in the SQLite half only."""
    if not reaches_database_or_broker(item) or item.nodeid.split("::")[0] in NO_DATABASE_MODULES:
        return False
    if any(item.get_closest_marker(name) for name in ("worker", "postgres")):
        return True
    if item.nodeid.split("::")[0] in DATABASE_BEHAVIOUR_MODULES:
        return True
    if item.get_closest_marker("one_database"):
        return False
    if item.get_closest_marker("browser"):
        return True
    return not any(item.get_closest_marker(name) for name in ("slow", "minutes"))


TEST_PASSWORD_HASHERS = (
    "django.contrib.auth.hashers.MD5PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
)
LONG_MARKERS = ("slow", "browser", "worker")
# A test that trains for minutes (one core, CI's busy 2 cores): twice pytest.ini's per-test timeout.
MINUTES_TIMEOUT_S = 1200


def long_modules_first(items: list) -> list:
    """``items`` with every module that has a ``minutes`` test first, then those with a ``slow`` / ``browser`` /
    ``worker`` test, then the rest, each module's tests in their order: ``--dist loadfile`` hands whole modules out
    in this order, so the longest start first and the two processes finish together instead of one waiting on the
    last model-training module."""

    def module(item):
        return item.nodeid.split("::")[0]

    longest = {module(item) for item in items if item.get_closest_marker("minutes")}
    long = {module(item) for item in items if any(item.get_closest_marker(m) for m in LONG_MARKERS)}
    return sorted(items, key=lambda item: (module(item) not in longest, module(item) not in long))


def pytest_configure(config):
    """pytest-xdist (3.x) re-sorts the modules of ``--dist loadfile`` by their number of tests unless told not to,
    which undid :func:`long_modules_first`: the model-training modules, a few tests each, went out last and one
    process trained alone for minutes at the end of the run. Keep the order this file gives."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    from django.conf import settings

    # Users and logins of the tests hash their passwords with a fast hasher: PBKDF2's 1,000,000 rounds (Django's
    # default, kept in production) cost 0.23 s of CPU per hash, and fixtures make several users per test. Set here
    # and in the environment, so the servers and workers a test starts (gunicorn, celery, manage.py) check the same
    # hashes; PBKDF2 stays in the list for a hash made before.
    os.environ["ARGORA_PASSWORD_HASHERS"] = ",".join(TEST_PASSWORD_HASHERS)
    settings.PASSWORD_HASHERS = list(TEST_PASSWORD_HASHERS)


def pytest_collection_modifyitems(config, items):
    from django.db import connection

    if connection.vendor != "postgresql":
        skip = pytest.mark.skip(reason="needs PostgreSQL (DATABASE_URL=postgres://...)")
        for item in items:
            if "postgres" in item.keywords:
                item.add_marker(skip)
    for item in items:
        if item.get_closest_marker("minutes") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(MINUTES_TIMEOUT_S))
    if hasattr(config, "workerinput"):  # a pytest-xdist process: the long modules first (tests/xdist_isolation.py)
        items[:] = long_modules_first(items)
    if os.environ.get(ENV_DATABASE_ONLY) == "1":
        kept, dropped = [], []
        for item in items:
            (kept if database_engine_matters(item) else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Each test starts with an empty cache: rate limits and debounce windows are per test, whatever ids the
    database hands out again."""
    from django.core.cache import cache

    cache.clear()


def join_every_project(user, role: str = "owner"):
    """Put ``user`` in the team (with ``role``) of every project there is and every project made until the returned
    function is called: the feature tests' researcher, who works on the projects the test makes. What a user outside
    a team may do is tested on its own (tests/annotation/test_teams.py)."""
    from django.db.models.signals import post_save

    from annotation.models import Project, ProjectMember

    uid = f"tests.join_every_project.{user.pk}"

    def join(sender, instance, created, **kwargs):
        if created:
            ProjectMember.objects.get_or_create(project=instance, user=user, defaults={"role": role})

    for project in Project.objects.all():
        join(Project, project, True)
    post_save.connect(join, sender=Project, dispatch_uid=uid, weak=False)
    return lambda: post_save.disconnect(sender=Project, dispatch_uid=uid)


@pytest.fixture
def staff_user(django_user_model):
    """A researcher (staff, the Researcher role) on the team (as owner) of every project the test has or makes
    (:func:`join_every_project`)."""
    from django.contrib.auth.models import Group

    from argora.roles import RESEARCHER_GROUP

    user = django_user_model.objects.create_user("expert", "expert@example.org", "pw-expert-123", is_staff=True)
    user.groups.add(Group.objects.get(name=RESEARCHER_GROUP))
    leave = join_every_project(user)
    yield user
    leave()


@pytest.fixture
def admin_user_obj(django_user_model):
    return django_user_model.objects.create_superuser("root", "root@example.org", "pw-root-123")


@pytest.fixture
def store_eager(monkeypatch):
    """Tasks run eagerly (``.apply()``, or ``.delay()`` under :func:`tests.worker_utils.eager_celery`) store their
    state and result like a worker's (the job pages read them). Celery copies ``task_store_eager_result`` onto each
    task class when the task is first used, so an earlier test that ran the task fixed it there: set it on every
    task, not only in the config."""
    from argora.celery import app

    before = app.conf.task_store_eager_result
    app.conf.task_store_eager_result = True
    for task in list(app.tasks.values()):
        monkeypatch.setattr(type(task), "store_eager_result", True)
    yield
    app.conf.task_store_eager_result = before


@pytest.fixture
def tmp_artifacts(settings, tmp_path, request):
    """An empty ``settings.ARTIFACT_ROOT`` of the test's own. With a real worker (``celery_worker_proc``) it is the
    module worker's artifacts folder, emptied for this test: the worker was started with it and writes there."""
    if "celery_worker_proc" in request.fixturenames:
        root = request.getfixturevalue("module_celery_worker").artifact_root
        shutil.rmtree(root, ignore_errors=True)
    else:
        root = tmp_path / "artifacts"
    root.mkdir(parents=True)
    settings.ARTIFACT_ROOT = root
    return root


@pytest.fixture
def hung_redis():
    """A TCP server that accepts connections and never answers (a hung Redis, not a down one): its ``redis://`` URL
    (database 0; tests/test_hardening.py, tests/test_service_budget.py)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(50)
    held = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()
