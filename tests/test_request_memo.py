"""Roles are looked up once per request (argora.request_memo) and never read stale: outside a request every call asks
the database; within one, a team change made by the team services is seen at once."""

from __future__ import annotations

import pytest
from django.db import connection
from django.http import HttpResponse
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext

from annotation import access, teams
from argora.request_memo import RequestMemoMiddleware, forget, remembered
from tests.factories import ProjectFactory, UserFactory


def in_request(view):
    """Run ``view()`` inside the middleware, as Django runs a view."""
    out = {}

    def get_response(request):
        out["value"] = view()
        return HttpResponse("ok")

    RequestMemoMiddleware(get_response)(RequestFactory().get("/"))
    return out["value"]


def test_outside_a_request_nothing_is_remembered():
    calls = []
    for _ in range(3):
        remembered("k", lambda: calls.append(1) or len(calls))
    assert calls == [1, 1, 1]


def test_within_a_request_a_key_is_computed_once_and_forget_drops_it():
    calls = []

    def view():
        first = [remembered("k", lambda: calls.append(1) or len(calls)) for _ in range(3)]
        forget()
        return first, remembered("k", lambda: calls.append(1) or len(calls))

    assert in_request(view) == ([1, 1, 1], 2)
    # the next request starts empty
    assert in_request(lambda: remembered("k", lambda: "fresh")) == "fresh"


@pytest.mark.django_db
def test_a_role_is_one_query_per_request_and_project():
    owner, viewer = UserFactory(), UserFactory()
    project = ProjectFactory(created_by=owner)
    teams.add_member(project, viewer.username, "viewer", by=owner)

    def view():
        with CaptureQueriesContext(connection) as queries:
            answers = [access.can(viewer, project, access.VIEW) for _ in range(5)]
            answers += [access.can(viewer, project, access.CHANGE) for _ in range(5)]
        return answers, len(queries)

    answers, n_queries = in_request(view)
    assert answers == [True] * 5 + [False] * 5
    assert n_queries == 1


@pytest.mark.django_db
def test_a_role_changed_is_read_fresh_outside_and_inside_a_request():
    owner, member = UserFactory(), UserFactory()
    project = ProjectFactory(created_by=owner)
    assert access.role_of(member, project) is None
    teams.add_member(project, member.username, "viewer", by=owner)
    assert access.role_of(member, project) == "viewer"  # the same user object: no stale answer

    def view():
        before = access.role_of(member, project)
        teams.set_role(project.members.get(user=member), "editor", by=owner)
        return before, access.role_of(member, project), access.can(member, project, access.CHANGE)

    assert in_request(view) == ("viewer", "editor", True)
