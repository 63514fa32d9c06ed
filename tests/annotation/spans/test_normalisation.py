"""KB normalisation (ArgU §3.2.4): direct mapping at cosine >= 0.85, indirect through community detection,
proposals for unmapped communities; the review actions and the staff page."""
import json

import numpy as np
import pytest
from django.core.management import call_command

from annotation import services
from annotation.spans import normalisation, review
from corpus.models import FactVariable

from .helpers import make_kb, make_project

pytestmark = pytest.mark.django_db

VECTORS = {  # a fixed toy encoder: exact cosines
    "KB one": [1, 0, 0], "KB two": [0, 1, 0],
    "same as one": [1, 0, 0],              # cos 1.0 to KB one -> direct
    "near one": [0.8, 0.6, 0],             # cos 0.8 to KB one (< 0.85), 0.8 to "same as one" -> indirect
    "brand new": [0, 0, 1],                # nothing near -> a new community
    "brand new too": [0, 0.28, 0.96],      # cos 0.96 to "brand new" -> same new community
}


def toy_encoder(texts):
    return np.array([VECTORS[t] for t in texts], dtype=np.float32)


def test_direct_indirect_and_new():
    r = normalisation.normalise_spans(["same as one", "near one", "brand new", "brand new too"],
                                      [(1, "KB one"), (2, "KB two")], encoder=toy_encoder)
    by = {s["text"]: s for s in r["spans"]}
    assert (by["same as one"]["variable"], by["same as one"]["method"]) == (1, "direct")
    assert (by["near one"]["variable"], by["near one"]["method"]) == (1, "indirect")
    assert by["near one"]["score"] == pytest.approx(0.8)
    assert by["brand new"]["variable"] is None and by["brand new too"]["variable"] is None
    assert by["brand new"]["community"] == by["brand new too"]["community"] != by["near one"]["community"]
    assert len(r["new"]) == 1 and r["new"][0]["text"] in {"brand new", "brand new too"}
    # a stricter community threshold separates "near one" from the mapped span: unmapped, a second new fact
    r = normalisation.normalise_spans(["same as one", "near one"], [(1, "KB one")], encoder=toy_encoder,
                                      cluster_threshold=0.9)
    assert r["spans"][1]["method"] is None and [n["text"] for n in r["new"]] == ["near one"]


def test_real_encoder_direct_mapping():
    kb = [(1, "Nuclear power plants produce radioactive waste."), (2, "School uniforms reduce bullying.")]
    r = normalisation.normalise_spans(["nuclear power plants produce radioactive waste"], kb)
    assert r["spans"][0]["variable"] == 1 and r["spans"][0]["method"] == "direct"


@pytest.fixture
def project_with_others(tmp_artifacts):
    topic, _ = make_kb(0, "Toy")
    one = FactVariable.objects.create(topic=topic, text="KB one", content_hash="k1")
    FactVariable.objects.create(topic=topic, text="KB two", content_hash="k2")
    project = make_project()
    items = []
    for text in ("same as one", "near one", "brand new", "brand new too"):
        items.append({"argument_id": None, "text": text, "topic": "Toy", "stance": "pro", "tokens": [],
                      "variables": [{"id": one.pk, "text": one.text}],
                      "suggestions": [{"begin": 0, "end": len(text), "variable": None, "source": "silver"}]})
    services.add_items(project, items)
    return project, one


def test_normalise_project_proposes_and_writes_artifact(project_with_others, monkeypatch):
    project, one = project_with_others
    monkeypatch.setattr(normalisation, "_encode", lambda texts, encoder: toy_encoder(texts))
    r = normalisation.normalise_project(project)
    assert (r["spans"], r["direct"], r["indirect"], r["unmapped"], r["proposed"]) == (4, 1, 1, 2, 1)
    proposal = FactVariable.objects.get(status=FactVariable.Status.PENDING)
    assert proposal.origin == "proposed" and proposal.text in {"brand new", "brand new too"}
    assert proposal.metadata["community_size"] == 2
    saved = json.loads(open(r["path"]).read())
    assert {m["text"]: m["variable"] for m in saved["mapping"]}["near one"] == one.pk
    assert normalisation.normalise_project(project)["proposed"] == 0  # idempotent
    assert FactVariable.objects.filter(status=FactVariable.Status.PENDING).count() == 1


def test_normalise_pending_suggests_merges(monkeypatch):
    topic, _ = make_kb(0, "Toy")
    one = FactVariable.objects.create(topic=topic, text="KB one", content_hash="k1")
    near = FactVariable.objects.create(topic=topic, text="same as one", content_hash="p1", origin="proposed",
                                       status="pending")
    new = FactVariable.objects.create(topic=topic, text="brand new", content_hash="p2", origin="proposed",
                                      status="pending")
    monkeypatch.setattr(normalisation, "_encode", lambda texts, encoder: toy_encoder(texts))
    call_command("spans", "normalise", "--pending")
    near.refresh_from_db()
    new.refresh_from_db()
    assert near.metadata["normalisation"]["action"] == "merge" and near.metadata["normalisation"]["into"] == one.pk
    assert new.metadata["normalisation"]["action"] == "accept"
    assert near.status == "pending"  # only a suggestion


@pytest.fixture
def proposals():
    topic, facts = make_kb(2)
    other_topic, other_facts = make_kb(1, "Abortion")
    p = [FactVariable.objects.create(topic=topic, text=f"proposal {i}", content_hash=f"p{i}", origin="proposed",
                                     status="pending", metadata={"normalisation": {"into": facts[1].pk}})
         for i in range(3)]
    return facts, other_facts, p


def test_review_actions(proposals, staff_user):
    facts, other_facts, (a, b, c) = proposals
    review.do_accept_variable(a.pk, user=staff_user)
    review.do_merge_variable(b.pk, facts[1].pk, user=staff_user)
    review.do_reject_variable(c.pk)
    a.refresh_from_db(), b.refresh_from_db(), c.refresh_from_db()
    assert (a.status, b.status, b.merged_into_id, c.status) == ("active", "merged", facts[1].pk, "rejected")
    assert a.metadata["review"]["by"] == "expert" and b.metadata["review"]["into"] == facts[1].pk
    with pytest.raises(review.ReviewError, match="not pending"):
        review.do_reject_variable(a.pk)


def test_merge_refusals(proposals):
    facts, other_facts, (a, b, c) = proposals
    for into, needle in [(other_facts[0].pk, "another topic"), (c.pk, "pending; merge into an active"),
                         (a.pk, "no other"), ("x", "choose")]:
        with pytest.raises(review.ReviewError, match=needle):
            review.do_merge_variable(a.pk, into)
    a.refresh_from_db()
    assert a.status == "pending"


def test_review_page_staff_only_and_actions(client, proposals, staff_user, django_user_model):
    facts, _, (a, b, c) = proposals
    from django.urls import reverse

    url = reverse("annotation:spans-kb-review")
    assert client.get(url).status_code == 302  # anonymous -> login
    django_user_model.objects.create_user("crowd", password="pw-crowd-123")
    client.login(username="crowd", password="pw-crowd-123")
    assert client.get(url).status_code == 403
    assert client.post(reverse("annotation:spans-kb-review-action", args=[a.pk]), {"action": "accept"}).status_code == 403
    a.refresh_from_db()
    assert a.status == "pending"
    client.force_login(staff_user)
    page = client.get(url)
    assert page.status_code == 200 and "proposal 0" in page.content.decode()
    assert f'value="{facts[1].pk}" selected' in page.content.decode()  # the suggested merge is preselected
    act = lambda v, **data: client.post(reverse("annotation:spans-kb-review-action", args=[v.pk]), data)  # noqa
    assert act(a, action="accept").status_code == 302
    assert act(b, action="merge", into=str(facts[0].pk)).status_code == 302
    bad = act(c, action="merge", into="")
    assert bad.status_code == 400 and "into" in bad.content.decode()
    assert act(c, action="explode").status_code == 400
    assert act(c, action="reject").status_code == 302
    assert dict(FactVariable.objects.filter(pk__in=[a.pk, b.pk, c.pk]).values_list("pk", "status")) == {
        a.pk: "active", b.pk: "merged", c.pk: "rejected"}
    assert "No proposals" in client.get(url).content.decode()
