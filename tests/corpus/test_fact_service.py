"""A fact's status changes in one place (corpus.services.change_fact_status): the API, the admin and the KB review
page all check the same merge rules and all re-point the spans of a proposal (span grounding's receiver)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation import services
from annotation.task_types.span_grounding.models import SpanNormalisation
from corpus import services as corpus_services
from corpus.hashing import fact_hash
from corpus.models import FactVariable, Topic

pytestmark = pytest.mark.django_db


@pytest.fixture
def kb():
    topic = Topic.objects.create(name="Nuclear energy", slug="nuclear-energy")
    other = Topic.objects.create(name="Abortion", slug="abortion")
    active = FactVariable.objects.create(topic=topic, text="Reactors make waste.", content_hash="a")
    retired = FactVariable.objects.create(topic=topic, text="Old fact.", content_hash="r", status="rejected")
    foreign = FactVariable.objects.create(topic=other, text="Other topic.", content_hash="f")
    proposal = FactVariable.objects.create(
        topic=topic, text="reactors produce waste", content_hash="p", origin="proposed", status="pending"
    )
    project = services.create_project(name="Spans", slug="spans", task_type="span_grounding")
    item = services.add_items(
        project,
        [
            {
                "argument_id": None,
                "text": "Reactors produce waste.",
                "topic": topic.name,
                "stance": "con",
                "tokens": [[0, 8]],
                "variables": [],
                "suggestions": [],
            }
        ],
    )[0]
    spans = SpanNormalisation.objects.create(item=item, begin=0, end=8, text="Reactors", proposal=proposal)
    return topic, active, retired, foreign, proposal, spans


def test_api_merge_follows_the_rules_and_repoints_spans(kb, staff_user):
    _topic, active, retired, foreign, proposal, spans = kb
    api = APIClient()
    api.force_authenticate(staff_user)
    for target, needle in (
        (retired, "merge into an active variable"),
        (foreign, "another topic"),
        (proposal, "no other fact variable"),
    ):
        r = api.patch(f"/api/facts/{proposal.pk}/", {"status": "merged", "merged_into": target.pk}, format="json")
        assert r.status_code == 400 and needle in r.json()["merged_into"], r.content
    proposal.refresh_from_db()
    assert proposal.status == "pending"
    r = api.patch(f"/api/facts/{proposal.pk}/", {"status": "merged", "merged_into": active.pk}, format="json")
    assert r.status_code == 200, r.content
    proposal.refresh_from_db()
    spans.refresh_from_db()
    assert (proposal.status, proposal.merged_into_id) == ("merged", active.pk)
    assert proposal.metadata["review"]["action"] == "merge" and proposal.metadata["review"]["by"] == "expert"
    assert (spans.variable_id, spans.method) == (active.pk, "merged")  # as the review page's merge does


def test_admin_merge_is_checked_and_repoints_spans(kb, admin_user_obj, client):
    topic, active, retired, _foreign, proposal, spans = kb
    client.force_login(admin_user_obj)
    url = reverse("admin:corpus_factvariable_change", args=[proposal.pk])
    form = {"topic": topic.pk, "text": proposal.text, "origin": "proposed", "status": "merged", "metadata": "{}"}
    r = client.post(url, {**form, "merged_into": retired.pk})
    assert r.status_code == 200 and "merge into an active variable" in r.content.decode()
    assert FactVariable.objects.get(pk=proposal.pk).status == "pending"
    r = client.post(url, {**form, "merged_into": active.pk})
    assert r.status_code == 302
    spans.refresh_from_db()
    assert FactVariable.objects.get(pk=proposal.pk).merged_into_id == active.pk
    assert (spans.variable_id, spans.method) == (active.pk, "merged")


def test_accepting_a_proposal_anywhere_maps_its_spans_to_it(kb):
    _topic, _active, _retired, _foreign, proposal, spans = kb
    corpus_services.change_fact_status(proposal.pk, "active")
    spans.refresh_from_db()
    assert (spans.variable_id, spans.method) == (proposal.pk, "new")
    with pytest.raises(corpus_services.FieldError, match="not pending review"):
        corpus_services.change_fact_status(proposal.pk, "rejected", only_pending=True)


def test_create_fact_sets_the_hash_and_refuses_a_duplicate(kb):
    topic, _active, *_ = kb
    made = corpus_services.create_fact(topic=topic, text="Uranium is finite.")
    assert made.content_hash == fact_hash(topic.name, "Uranium is finite.")
    with pytest.raises(corpus_services.FieldError) as exc:
        corpus_services.create_fact(topic=topic, text="Uranium is finite.")
    assert exc.value.field == "text"
