"""Schemathesis against ``/api/schema/`` (issue 22): generated requests to every operation, as staff and as a
worker, give no server error and only responses the schema documents: their status code, content type and body.
Bounded: a few examples per operation (about two minutes on two busy cores)."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from annotation import services
from argora.wsgi import application
from corpus.models import FactVariable, Sentence, Topic

schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
FUZZ = settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


@pytest.fixture(autouse=True)
def _keep_the_test_database_open():
    """Calling the WSGI app directly closes the database connection at the end of each request (Django's test
    client switches that off the same way)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def corpus_and_study(django_user_model):
    topic = Topic.objects.create(name="Nuclear energy")
    Sentence.objects.create(topic=topic, text="Reactors make waste.", stance="con", content_hash="s1")
    FactVariable.objects.create(topic=topic, text="Waste lasts long.", content_hash="f1")
    project = services.create_project(
        name="Fuzz",
        slug="fuzz",
        task_type="sentence_label",
        status="active",
        config={"labels": ["pro", "con"]},
        items_per_hit=2,
    )
    services.add_items(project, [{"text": f"s{i}", "topic": "t"} for i in range(4)])
    services.build_hits(project)


def _token(user) -> dict:
    return {"Authorization": f"Token {Token.objects.get_or_create(user=user)[0].key}"}


@pytest.mark.django_db
@schema.parametrize()
@FUZZ
def test_api_as_staff(case, corpus_and_study, staff_user):
    case.call_and_validate(headers=_token(staff_user), checks=CHECKS)


@pytest.mark.django_db
@schema.parametrize()
@FUZZ
def test_api_as_a_worker(case, corpus_and_study, django_user_model):
    worker, _ = django_user_model.objects.get_or_create(username="fuzz-worker")
    case.call_and_validate(headers=_token(worker), checks=CHECKS)
