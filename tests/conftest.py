"""Shared fixtures. The suite runs on whatever DATABASE_URL / CELERY_BROKER_URL say (SQLite + filesystem
broker by default; `make test` runs it again on PostgreSQL + Redis when they answer)."""
from __future__ import annotations

import os

import pytest

pytest_plugins = ["tests.worker_utils"]  # the real `celery worker` fixture: celery_worker_proc

# Playwright's sync API runs an event loop in the test thread; Django's ORM refuses that unless told.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(config, items):
    from django.db import connection

    if connection.vendor != "postgresql":
        skip = pytest.mark.skip(reason="needs PostgreSQL (DATABASE_URL=postgres://...)")
        for item in items:
            if "postgres" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Each test starts with an empty cache: rate limits and debounce windows are per test, whatever ids the
    database hands out again."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def staff_user(django_user_model):
    return django_user_model.objects.create_user("expert", "expert@example.org", "pw-expert-123", is_staff=True)


@pytest.fixture
def admin_user_obj(django_user_model):
    return django_user_model.objects.create_superuser("root", "root@example.org", "pw-root-123")


@pytest.fixture
def tmp_artifacts(settings, tmp_path):
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    settings.ARTIFACT_ROOT.mkdir()
    return settings.ARTIFACT_ROOT
