"""Threshold voting (t = strict majority of R unless configured), ties, "no aspect", overrides."""

import pytest

from annotation.models import GoldItem, Item
from annotation.task_types import ResponseInvalid
from annotation.task_types.aspect.aggregation import (
    adjudicate,
    aggregate_responses,
    default_threshold,
    final_answer,
)

from .helpers import aspect_project

TEXT = "We need background checks for buyers"
BC = {"begin": 8, "length": 17}  # background checks
CHECKS = {"begin": 19, "length": 6}  # checks (overlaps BC)
BUYERS = {"begin": 30, "length": 6}  # buyers


def resp(*aspects, no_aspect=False):
    return {"aspects": list(aspects), "no_aspect": no_aspect, "not_in_lists": False}


def test_default_threshold_is_a_strict_majority():
    assert [default_threshold(r) for r in (1, 2, 3, 4, 5, 8)] == [1, 2, 2, 3, 3, 5]


def test_r4_two_votes_are_not_enough_three_are():
    two = [resp(BC), resp(BC), resp(BUYERS), resp(no_aspect=True)]
    agg = aggregate_responses(two, threshold=default_threshold(4), text=TEXT)
    assert agg["aspects"] == [] and agg["resolved"] is False and agg["votes"]["8:17"] == 2
    three = [resp(BC), resp(BC), resp(BC, BUYERS), resp(no_aspect=True)]
    agg = aggregate_responses(three, threshold=default_threshold(4), text=TEXT)
    assert agg["aspects"] == [{"begin": 8, "length": 17, "text": "background checks"}] and agg["resolved"]
    # a configured lower threshold accepts 2 of 4
    assert aggregate_responses(two, threshold=2, text=TEXT)["aspects"][0]["text"] == "background checks"


def test_overlapping_accepted_spans_ties_go_to_the_shorter():
    rs = [resp(BC), resp(BC), resp(CHECKS), resp(CHECKS)]
    agg = aggregate_responses(rs, threshold=2, text=TEXT)
    assert [a["text"] for a in agg["aspects"]] == ["checks"] and agg["dropped"] == ["8:17"]
    rs.append(resp(BC))  # more votes win over shortness
    agg = aggregate_responses(rs, threshold=2, text=TEXT)
    assert [a["text"] for a in agg["aspects"]] == ["background checks"] and agg["dropped"] == ["19:6"]


def test_no_aspect_needs_the_threshold_too():
    rs = [resp(no_aspect=True)] * 3 + [resp(BC)]
    agg = aggregate_responses(rs, threshold=3, text=TEXT)
    assert agg["no_aspect"] is True and agg["aspects"] == [] and agg["no_aspect_votes"] == 3
    agg = aggregate_responses(rs[1:], threshold=3, text=TEXT)
    assert agg["no_aspect"] is False and agg["resolved"] is False


@pytest.mark.django_db
def test_project_threshold_adjudication_and_gold_override():
    project = aspect_project(r=4, sentences=[(TEXT, "gun control", "pro")])
    item = Item.objects.get(project=project)
    rs = [resp(BC), resp(BC), resp(BUYERS), resp(BUYERS)]
    assert final_answer(project, item, rs)["aspects"] == []  # 2 of 4
    project.config["threshold"] = 2
    assert len(final_answer(project, item, rs)["aspects"]) == 2
    adjudicate(item, ["30:6"], by="expert")
    item.refresh_from_db()
    answer = final_answer(project, item, rs)
    assert answer["source"] == "adjudicated" and [a["text"] for a in answer["aspects"]] == ["buyers"]
    with pytest.raises(ResponseInvalid):
        adjudicate(item, ["8:17", "19:6"])
    with pytest.raises(ResponseInvalid):
        adjudicate(item, ["30:60"])
    # gold overrides the crowd on a gold item
    gold_item = Item.objects.create(
        project=project, payload=dict(item.payload, adjudicated=None), is_gold=True, position=99
    )
    GoldItem.objects.create(item=gold_item, expected={"aspects": [BC], "no_aspect": False})
    answer = final_answer(project, gold_item, rs)
    assert answer["source"] == "gold" and [a["text"] for a in answer["aspects"]] == ["background checks"]
