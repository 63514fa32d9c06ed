"""Submitting span answers through /api/assignments/<id>/submit/: bad answers are HTTP 400 naming the field and
write nothing; a good one is stored cleaned."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation import services
from annotation.models import Assignment, Response

from .helpers import FIG7, fig7_payload, make_kb, make_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(django_user_model):
    _, facts = make_kb(4)
    project = make_project(config={"ask_schemes": True})
    services.add_items(project, [fig7_payload(facts[:2]), fig7_payload(facts[2:])])
    services.build_hits(project)
    user = django_user_model.objects.create_user("alice", password="pw-alice-123")
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    r = c.post(f"/api/projects/{project.slug}/next/", format="json")
    assert r.status_code == 200, r.content
    return c, r.json(), facts


def _submit(c, body, responses):
    return c.post(f"/api/assignments/{body['assignment']}/submit/", {"responses": responses}, format="json")


@pytest.mark.parametrize(
    "bad,field,needle",
    [
        (
            {"spans": [{"begin": 0, "end": 28, "variable": None}, {"begin": 15, "end": 23, "variable": None}]},
            "spans",
            "spans overlap",
        ),
        ({"spans": [{"begin": 0, "end": len(FIG7) + 5, "variable": None}]}, "spans", "outside"),
        ({"spans": [{"begin": 0, "end": 14, "variable": "FOREIGN"}]}, "variable", "not offered"),
        ({"spans": [], "schemes": ["Appeal to pity"]}, "schemes", "unknown scheme"),
    ],
)
def test_bad_submission_is_400_and_writes_nothing(setup, bad, field, needle):
    c, body, facts = setup
    first, second = body["items"]
    if bad["spans"] and bad["spans"][0]["variable"] == "FOREIGN":
        bad = {"spans": [{"begin": 0, "end": 14, "variable": facts[3].pk}]}  # offered to the other item only
    good = {"spans": [], "schemes": []}
    r = _submit(c, body, {str(first["id"]): bad, str(second["id"]): good})
    assert r.status_code == 400, r.content
    errors = r.json()["errors"]
    assert list(errors) == [f"responses.{first['id']}.{field}"] and needle in errors[f"responses.{first['id']}.{field}"]
    assert Response.objects.count() == 0
    assert Assignment.objects.get(pk=body["assignment"]).status == Assignment.Status.RESERVED


def test_good_submission_is_stored_cleaned(setup):
    c, body, facts = setup
    first, second = body["items"]
    assert first["payload"]["variables"][0]["id"] == facts[0].pk
    r = _submit(
        c,
        body,
        {
            str(first["id"]): {
                "spans": [
                    {"begin": 33, "end": 59, "variable": facts[1].pk, "from_suggestion": False},
                    {"begin": 0, "end": 14, "variable": facts[0].pk, "from_suggestion": False},
                ],
                "schemes": ["From Consequence"],
            },
            str(second["id"]): {"spans": [], "schemes": []},
        },
    )
    assert r.status_code == 200, r.content
    stored = Response.objects.get(item_id=first["id"]).data
    assert [s["text"] for s in stored["spans"]] == ["Criminologists", "effects of the DP on crime"]
    assert stored["schemes"] == ["From Consequence"]
    assert Response.objects.get(item_id=second["id"]).data == {"spans": [], "schemes": []}
