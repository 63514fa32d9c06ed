"""Free-span mode (``config["free_spans"]``, Arg-CTRL §3.1 Step 1): any span of whole tokens is an aspect, of any
length; spans that cut a token, lie outside the sentence or overlap are refused (also through the API: 400 naming
"aspects", nothing written); normal mode still refuses spans that were not offered. Free spans go through the vote,
the App. F export and the unitized (alpha_u) data like any other span."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.agreement.records import load_responses
from annotation.models import Assignment, Item, Response
from annotation.task_types import ResponseInvalid, get_task_type
from annotation.task_types.aspect.aggregation import aggregate_responses
from annotation.task_types.aspect.appf import appf_row
from annotation.task_types.aspect.candidates import tokenize
from annotation.task_types.aspect.task_type import token_span_error
from annotation.task_types.aspect.unitized import reliability_data

from .helpers import aspect_project

pytestmark = pytest.mark.django_db


def unitized_data_of(project) -> dict:
    """What the agreement engine computes alpha_u from: the aspect task type's reliability data."""
    return reliability_data(project, load_responses(project))["unitized"]


GUN = "Gun control needs background checks, not bans."


def free_project(slug="asp-free"):
    return aspect_project(slug, config={"free_spans": True})


def gun_item(project):
    return next(i for i in Item.objects.filter(project=project) if i.payload["text"] == GUN)


def at(phrase, text=GUN):
    return f"{text.index(phrase)}:{len(phrase)}"


def offered_ids(item):
    return {c["id"] for c in item.payload["candidates"] + item.payload["more"]}


def refused(project, item, data):
    with pytest.raises(ResponseInvalid) as info:
        get_task_type("aspect").validate_response(project, item, data)
    assert info.value.field == "aspects"
    return info.value.reason


def test_config_and_payload_tokens():
    tt = get_task_type("aspect")
    assert tt.clean_config({"free_spans": True})["free_spans"] is True
    assert "free_spans" not in tt.clean_config({})
    with pytest.raises(ResponseInvalid) as info:
        tt.clean_config({"free_spans": "yes"})
    assert info.value.field == "free_spans"
    item = gun_item(free_project())
    assert item.payload["tokens"] == [[t.begin, t.end] for t in tokenize(GUN)]
    assert [GUN[b:e] for b, e in item.payload["tokens"]][:4] == ["Gun", "control", "needs", "background"]


def test_free_mode_accepts_whole_token_spans_of_any_length():
    project = free_project()
    item = gun_item(project)
    tt = get_task_type("aspect")
    long_span = at("control needs background checks, not")  # 6 tokens, with a comma and a stopword at its edge
    assert long_span not in offered_ids(item)
    offered = at("background checks")
    assert offered in offered_ids(item)
    single = at("bans.")  # two tokens: a word and its full stop
    data = tt.validate_response(project, item, {"aspects": [single, long_span]})
    assert [(a["text"], a["list"]) for a in data["aspects"]] == [
        ("control needs background checks, not", "free"),
        ("bans.", "free"),
    ]
    # an offered candidate keeps its list, also in free mode
    data = tt.validate_response(project, item, {"aspects": [offered, at("Gun")]})
    lists = {a["text"]: a["list"] for a in data["aspects"]}
    assert lists["background checks"] in ("ranked", "more") and lists["Gun"] in ("ranked", "more", "free")
    # the whole sentence is one span of whole tokens
    whole = tt.validate_response(project, item, {"aspects": [[0, len(GUN)]]})
    assert whole["aspects"][0]["text"] == GUN


def test_free_mode_refuses_cut_tokens_outside_and_overlap():
    project = free_project()
    item = gun_item(project)
    b = GUN.index("control")
    assert "start" in refused(project, item, {"aspects": [f"{b + 1}:6"]})  # "ontrol"
    assert "end" in refused(project, item, {"aspects": [f"0:{len('Gun contr')}"]})  # "Gun contr"
    assert "word" in refused(project, item, {"aspects": ["3:1"]})  # a space only
    assert "whole words" in refused(project, item, {"aspects": [f"{b}:8"]})  # "control " (a trailing space)
    assert "outside" in refused(project, item, {"aspects": [f"{len(GUN) - 1}:5"]})
    assert "outside" in refused(project, item, {"aspects": [[-3, 6]]})
    assert "outside" in refused(project, item, {"aspects": ["0:0"]})
    # two free spans that overlap, and a free span overlapping a candidate
    assert "overlap" in refused(
        project, item, {"aspects": [at("control needs background"), at("background checks, not")]}
    )
    assert "overlap" in refused(
        project, item, {"aspects": [at("needs background checks, not bans"), at("background checks")]}
    )
    assert "overlap" in refused(project, item, {"aspects": [at("Gun control"), at("Gun control")]})


def test_normal_mode_still_refuses_spans_that_were_not_offered():
    project = aspect_project("asp-normal")
    item = gun_item(project)
    assert "not offered" in refused(project, item, {"aspects": [at("control needs background checks, not")]})
    assert "not offered" in refused(project, item, {"aspects": ["0:2"]})


def test_the_api_answers_400_for_a_span_off_token_boundaries(django_user_model):
    project = free_project()
    user = django_user_model.objects.create_user("erin", password="pw-erin-123")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    r = client.post(f"/api/projects/{project.slug}/next/", format="json")
    assert r.status_code == 200, r.content
    body = r.json()
    by_text = {i["payload"]["text"]: i for i in body["items"]}
    gun, other = by_text[GUN], next(i for t, i in by_text.items() if t != GUN)
    assert gun["payload"]["tokens"][0] == [0, 3]
    b = GUN.index("background")
    responses = {
        str(gun["id"]): {"aspects": [f"{b}:13"]},  # "background ch": ends inside "checks"
        str(other["id"]): {"aspects": [at("expensive", other["payload"]["text"])]},
    }
    r = client.post(f"/api/assignments/{body['assignment']}/submit/", {"responses": responses}, format="json")
    assert r.status_code == 400, r.content
    assert "whole words" in r.json()["errors"][f"responses.{gun['id']}.aspects"]
    assert Response.objects.count() == 0
    assert Assignment.objects.get(pk=body["assignment"]).status == "reserved"
    responses[str(gun["id"])] = {"aspects": [at("control needs background checks, not")]}
    r = client.post(f"/api/assignments/{body['assignment']}/submit/", {"responses": responses}, format="json")
    assert r.status_code == 200, r.content
    stored = Response.objects.get(item_id=gun["id"]).data
    assert stored["aspects"] == [
        {"begin": 4, "length": 36, "text": "control needs background checks, not", "list": "free"}
    ]


def test_free_spans_go_through_vote_export_and_unitized_data(django_user_model):
    project = free_project()
    long_span = at("control needs background checks, not")
    b, l = map(int, long_span.split(":"))
    free = {
        "aspects": [{"begin": b, "length": l, "text": GUN[b : b + l], "list": "free"}],
        "no_aspect": False,
        "not_in_lists": False,
    }
    result = aggregate_responses([free, free, {"aspects": [], "no_aspect": True}], threshold=2, text=GUN)
    assert result["aspects"] == [{"begin": b, "length": l, "text": GUN[b : b + l]}] and result["resolved"]
    item = gun_item(project)
    row = appf_row(item, result)
    assert row["aspect_pos"] == [f"({b},{l})"] and row["aspect_pos_string"] == [GUN[b : b + l]]

    # through the API: the stored free span shows up in the per-annotator spans for alpha_u
    user = django_user_model.objects.create_user("finn", password="pw-finn-123")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    body = client.post(f"/api/projects/{project.slug}/next/", format="json").json()
    responses = {}
    for i in body["items"]:
        text = i["payload"]["text"]
        responses[str(i["id"])] = {"aspects": [long_span] if text == GUN else [at("is clean but expensive.", text)]}
    r = client.post(f"/api/assignments/{body['assignment']}/submit/", {"responses": responses}, format="json")
    assert r.status_code == 200, r.content
    data = unitized_data_of(project)
    assert (item.pk, b, l) in {(s[1], s[2], s[3]) for s in data["spans"]}
    assert {a["list"] for r in Response.objects.all() for a in r.data["aspects"]} == {"free"}


def test_token_span_error_reasons():
    assert token_span_error(GUN, 0, 3) is None
    assert token_span_error(GUN, 0, len(GUN)) is None
    assert "start" in token_span_error(GUN, 1, 2)
    assert "end" in token_span_error(GUN, 0, 2)
    assert "neither" in token_span_error(GUN, 1, 1)
