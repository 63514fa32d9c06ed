"""The aspect task type: refusals through the JSON API (400, nothing written) and a valid submission."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Assignment, Item, Response
from annotation.task_types import ResponseInvalid, get_task_type
from annotation.task_types.aspect.candidates import parse_span

from .helpers import aspect_project, span

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="pw-alice-123")


def client_for(user):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return c


def reserve(client, slug="asp"):
    r = client.post(f"/api/projects/{slug}/next/", format="json")
    assert r.status_code == 200, r.content
    return r.json()


def good(item):
    text = item["payload"]["text"]
    phrase = "background checks" if "background" in text else "expensive"
    return {"aspects": [span(text, phrase)]}


def test_payload_shape():
    project = aspect_project()
    payload = Item.objects.filter(project=project).first().payload
    assert set(payload) >= {"sentence_id", "text", "topic", "stance", "candidates", "more", "check", "ranker"}
    assert len(payload["candidates"]) == 3 and {"id", "begin", "length", "text", "score"} <= set(
        payload["candidates"][0]
    )
    ids = [c["id"] for c in payload["candidates"]] + [c["id"] for c in payload["more"]]
    assert len(ids) == len(set(ids))
    assert payload["more"] == sorted(payload["more"], key=lambda c: (c["begin"], c["length"]))


def cases(item):
    text = item["payload"]["text"]
    check = item["payload"]["check"]
    total = check["a"] + check["b"]
    first = item["payload"]["candidates"][0]
    overlapping = next(
        c
        for c in item["payload"]["candidates"] + item["payload"]["more"]
        if c["id"] != first["id"]
        and c["begin"] < first["begin"] + first["length"]
        and first["begin"] < c["begin"] + c["length"]
    )
    return [
        ({"aspects": [f"{len(text) - 2}:5"]}, "aspects", "outside the sentence"),
        ({"aspects": ["0:2"]}, "aspects", "not offered"),  # "Gu" / "Nu": inside, but not a candidate
        ({"aspects": [first["id"], overlapping["id"]]}, "aspects", "overlap"),
        ({"no_aspect": True, "check": str(total + 1)}, "check", "not right"),
        ({"no_aspect": True}, "check", "solve the sum"),
        ({"not_in_lists": True, "check": "seven"}, "check", "digits only"),
        ({}, "aspects", "choose at least one"),
        ({"aspects": [first["id"]], "no_aspect": True, "check": str(total)}, "no_aspect", "also chose"),
        ({"aspects": [first["id"]], "colour": "red"}, "colour", "unknown field"),
    ]


def test_refusals_through_the_api_answer_400_and_write_nothing(alice):
    aspect_project()
    c = client_for(alice)
    body = reserve(c)
    first, second = body["items"]
    for bad, field, reason in cases(first):
        responses = {str(first["id"]): bad, str(second["id"]): good(second)}
        r = c.post(f"/api/assignments/{body['assignment']}/submit/", {"responses": responses}, format="json")
        assert r.status_code == 400, (bad, r.content)
        errors = r.json()["errors"]
        assert reason in errors[f"responses.{first['id']}.{field}"], (bad, errors)
        assert Response.objects.count() == 0
        assert Assignment.objects.get(pk=body["assignment"]).status == "reserved"
    check = first["payload"]["check"]
    responses = {
        str(first["id"]): {"no_aspect": True, "check": str(check["a"] + check["b"])},
        str(second["id"]): good(second),
    }
    r = c.post(f"/api/assignments/{body['assignment']}/submit/", {"responses": responses}, format="json")
    assert r.status_code == 200, r.content
    stored = {resp.item_id: resp.data for resp in Response.objects.all()}
    assert stored[first["id"]] == {"aspects": [], "no_aspect": True, "not_in_lists": False}
    (chosen,) = stored[second["id"]]["aspects"]
    assert chosen["text"] == "expensive" and chosen["list"] in ("ranked", "more")


def test_form_style_values_and_span_spellings():
    project = aspect_project()
    item = Item.objects.filter(project=project).order_by("position").first()
    tt = get_task_type("aspect")
    text = item.payload["text"]
    b = text.index("background checks")
    for spelling in ([f"{b}:17"], [[b, 17]], [{"begin": b, "length": 17}], f"{b}:17"):
        data = tt.validate_response(project, item, {"aspects": spelling, "no_aspect": "", "not_in_lists": "off"})
        assert [a["text"] for a in data["aspects"]] == ["background checks"]
    assert parse_span("(3, 4)") == (3, 4) and parse_span("x") is None and parse_span([True, 1]) is None
    with pytest.raises(ResponseInvalid) as info:
        tt.validate_response(project, item, {"aspects": [f"{b}:17"], "not_in_lists": "maybe"})
    assert info.value.field == "not_in_lists"


def test_config_is_checked():
    tt = get_task_type("aspect")
    assert tt.clean_config({}) == {"top_k": 10, "top_k_cross_topic": 15, "ranker": "baseline"}
    for bad, field in (
        ({"top_k": 0}, "top_k"),
        ({"threshold": "3"}, "threshold"),
        ({"ranker": "nope"}, "ranker"),
        ({"top_k_cross_topic": 0}, "top_k_cross_topic"),
        ({"study": "both"}, "study"),
        ({"gold_instructions": "yes"}, "gold_instructions"),
    ):
        with pytest.raises(ResponseInvalid) as info:
            tt.clean_config(bad)
        assert info.value.field == field
