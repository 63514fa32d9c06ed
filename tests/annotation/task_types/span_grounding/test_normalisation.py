"""KB normalisation (ArgU §3.2.4): direct mapping at cosine >= 0.85, indirect through community detection,
proposals for unmapped communities; the review actions and the staff page."""

import json

import numpy as np
import pytest
from django.core.management import call_command

from annotation import services
from annotation.task_types.span_grounding import normalisation, review
from argora.errors import FieldError
from corpus.models import FactVariable

from .helpers import make_kb, make_project

pytestmark = pytest.mark.django_db

VECTORS = {  # a fixed toy encoder: exact cosines
    "KB one": [1, 0, 0],
    "KB two": [0, 1, 0],
    "same as one": [1, 0, 0],  # cos 1.0 to KB one -> direct
    "near one": [0.8, 0.6, 0],  # cos 0.8 to KB one (< 0.85), 0.8 to "same as one" -> indirect
    "brand new": [0, 0, 1],  # nothing near -> a new community
    "brand new too": [0, 0.28, 0.96],  # cos 0.96 to "brand new" -> same new community
}


def toy_encoder(texts):
    return np.array([VECTORS[t] for t in texts], dtype=np.float32)


def test_direct_indirect_and_new():
    r = normalisation.normalise_spans(
        ["same as one", "near one", "brand new", "brand new too"], [(1, "KB one"), (2, "KB two")], encoder=toy_encoder
    )
    by = {s["text"]: s for s in r["spans"]}
    assert (by["same as one"]["variable"], by["same as one"]["method"]) == (1, "direct")
    assert (by["near one"]["variable"], by["near one"]["method"]) == (1, "indirect")
    assert by["near one"]["score"] == pytest.approx(0.8)
    assert by["brand new"]["variable"] is None and by["brand new too"]["variable"] is None
    assert by["brand new"]["community"] == by["brand new too"]["community"] != by["near one"]["community"]
    assert len(r["new"]) == 1 and r["new"][0]["text"] in {"brand new", "brand new too"}
    # a stricter community threshold separates "near one" from the mapped span: unmapped, a second new fact
    r = normalisation.normalise_spans(
        ["same as one", "near one"], [(1, "KB one")], encoder=toy_encoder, cluster_threshold=0.9
    )
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
        items.append(
            {
                "argument_id": None,
                "text": text,
                "topic": "Toy",
                "stance": "pro",
                "tokens": [],
                "variables": [{"id": one.pk, "text": one.text}],
                "suggestions": [{"begin": 0, "end": len(text), "variable": None, "source": "silver"}],
            }
        )
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
    near = FactVariable.objects.create(
        topic=topic, text="same as one", content_hash="p1", origin="proposed", status="pending"
    )
    new = FactVariable.objects.create(
        topic=topic, text="brand new", content_hash="p2", origin="proposed", status="pending"
    )
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
    _other_topic, other_facts = make_kb(1, "Abortion")
    p = [
        FactVariable.objects.create(
            topic=topic,
            text=f"proposal {i}",
            content_hash=f"p{i}",
            origin="proposed",
            status="pending",
            metadata={"normalisation": {"into": facts[1].pk}},
        )
        for i in range(3)
    ]
    return facts, other_facts, p


def test_review_actions(proposals, staff_user):
    facts, _other_facts, (a, b, c) = proposals
    review.do_accept_variable(a.pk, user=staff_user)
    review.do_merge_variable(b.pk, facts[1].pk, user=staff_user)
    review.do_reject_variable(c.pk)
    a.refresh_from_db(), b.refresh_from_db(), c.refresh_from_db()
    assert (a.status, b.status, b.merged_into_id, c.status) == ("active", "merged", facts[1].pk, "rejected")
    assert a.metadata["review"]["by"] == "expert" and b.metadata["review"]["into"] == facts[1].pk
    with pytest.raises(FieldError, match="not pending"):
        review.do_reject_variable(a.pk)


def test_merge_refusals(proposals):
    _facts, other_facts, (a, _b, c) = proposals
    for into, needle in [
        (other_facts[0].pk, "another topic"),
        (c.pk, "pending; merge into an active"),
        (a.pk, "no other"),
        ("x", "choose"),
    ]:
        with pytest.raises(FieldError, match=needle):
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
    assert (
        client.post(reverse("annotation:spans-kb-review-action", args=[a.pk]), {"action": "accept"}).status_code == 403
    )
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
        a.pk: "active",
        b.pk: "merged",
        c.pk: "rejected",
    }
    assert "No proposals" in client.get(url).content.decode()


# --- the mapping is stored per span, re-pointed by the review, and reaches the export ----------------------------


def _mapping(project):
    from annotation.task_types.span_grounding.models import SpanNormalisation

    return {
        m.text: (m.variable_id, m.method, m.proposal_id)
        for m in SpanNormalisation.objects.filter(item__project=project)
    }


def test_normalise_project_stores_the_mapping_per_span(project_with_others, monkeypatch):
    from annotation.task_types.span_grounding.models import SpanNormalisation

    project, one = project_with_others
    monkeypatch.setattr(normalisation, "_encode", lambda texts, encoder: toy_encoder(texts))
    normalisation.normalise_project(project)
    proposal = FactVariable.objects.get(status=FactVariable.Status.PENDING)
    assert _mapping(project) == {
        "same as one": (one.pk, "direct", None),
        "near one": (one.pk, "indirect", None),
        "brand new": (None, "", proposal.pk),
        "brand new too": (None, "", proposal.pk),
    }
    assert SpanNormalisation.objects.get(text="near one").score == pytest.approx(0.8)
    saved = json.loads(open(normalisation.artifact_path(project)).read())
    assert {m["text"]: m["proposal"] for m in saved["mapping"]}["brand new"] == proposal.pk
    normalisation.normalise_project(project)  # a rerun replaces the rows, it does not add to them
    assert SpanNormalisation.objects.filter(item__project=project).count() == 4
    normalisation.normalise_project(project, propose=False)
    assert _mapping(project)["brand new"] == (None, "", None)


@pytest.mark.parametrize("action", ["accept", "merge", "reject"])
def test_review_actions_re_point_the_spans_of_the_proposal(project_with_others, monkeypatch, action):
    from annotation.task_types.span_grounding.export import project_rows

    project, one = project_with_others
    monkeypatch.setattr(normalisation, "_encode", lambda texts, encoder: toy_encoder(texts))
    normalisation.normalise_project(project)
    proposal = FactVariable.objects.get(status=FactVariable.Status.PENDING)
    two = FactVariable.objects.get(text="KB two")
    review.review(proposal.pk, action, into=two.pk)
    expected = {"accept": (proposal.pk, "new"), "merge": (two.pk, "merged"), "reject": (None, "")}[action]
    assert _mapping(project)["brand new"] == (*expected, proposal.pk)
    assert _mapping(project)["brand new too"] == (*expected, proposal.pk)
    assert _mapping(project)["near one"] == (one.pk, "indirect", None)  # other spans untouched
    rows = {r["text"]: r for r in project_rows(project, include_unannotated=True)}
    assert rows["brand new"]["spans"] == [[0, 9, expected[0]]]
    detail = rows["brand new"]["span_details"][0]
    assert (detail["annotated_variable"], detail["normalised"]) == (None, expected[1] or None)
    assert rows["near one"]["spans"] == [[0, 8, one.pk]]
    assert rows["near one"]["span_details"][0]["normalised"] == "indirect"
    # a rerun keeps what the review decided
    normalisation.normalise_project(project)
    if action == "accept":  # the accepted variable is in the KB now: the spans map to it directly
        assert _mapping(project)["brand new"][:2] == (proposal.pk, "direct")
    else:
        assert _mapping(project)["brand new"] == (*expected, proposal.pk)


def test_real_minilm_maps_a_paraphrase_directly_and_clusters_the_rest(tmp_artifacts):
    """The packaged all-MiniLM-L6-v2: a passive-voice paraphrase of a KB variable maps directly (cos ~0.94 >= 0.85);
    "atomic reactors create nuclear waste" (cos ~0.79 to the variable) joins its community and maps indirectly; two
    paraphrases about uranium mining (cos ~0.91 to each other, < 0.5 to the KB) form one proposal."""
    from annotation.task_types.span_grounding.export import project_rows
    from annotation.task_types.span_grounding.models import SpanNormalisation

    from .helpers import span

    topic, _ = make_kb(0, "Nuclear energy")
    waste = FactVariable.objects.create(
        topic=topic, text="Nuclear power plants generate radioactive waste.", content_hash="w"
    )
    cost = FactVariable.objects.create(topic=topic, text="Nuclear energy is expensive.", content_hash="c")
    texts = [
        "Radioactive waste is produced by nuclear power plants, and uranium mining harms indigenous communities.",
        "Atomic reactors create nuclear waste; mining uranium damages native communities.",
    ]
    phrases = [
        ["Radioactive waste is produced by nuclear power plants", "uranium mining harms indigenous communities"],
        ["Atomic reactors create nuclear waste", "mining uranium damages native communities"],
    ]
    project = make_project()
    services.add_items(
        project,
        [
            {
                "argument_id": None,
                "text": t,
                "topic": "Nuclear energy",
                "stance": "con",
                "tokens": [],
                "variables": [{"id": waste.pk, "text": waste.text}, {"id": cost.pk, "text": cost.text}],
                "suggestions": [dict(span(t, p, None), source="silver") for p in ps],
            }
            for t, ps in zip(texts, phrases)
        ],
    )
    r = normalisation.normalise_project(project)
    assert (r["spans"], r["direct"], r["indirect"], r["unmapped"], r["proposed"]) == (4, 1, 1, 2, 1)
    got = {m.text: m for m in SpanNormalisation.objects.filter(item__project=project)}
    direct = got["Radioactive waste is produced by nuclear power plants"]
    assert (direct.variable_id, direct.method) == (waste.pk, "direct") and direct.score >= 0.9
    indirect = got["Atomic reactors create nuclear waste"]
    assert (indirect.variable_id, indirect.method) == (waste.pk, "indirect") and indirect.score < 0.85
    proposal = FactVariable.objects.get(status=FactVariable.Status.PENDING)
    assert proposal.text in phrases[0][1:] + phrases[1][1:] and proposal.metadata["community_size"] == 2
    assert {got[p[1]].proposal_id for p in phrases} == {proposal.pk}
    review.do_accept_variable(proposal.pk)
    rows = list(project_rows(project, include_unannotated=True))
    assert [[v for _, _, v in row["spans"]] for row in rows] == [[waste.pk, proposal.pk], [waste.pk, proposal.pk]]
    assert [[d["normalised"] for d in row["span_details"]] for row in rows] == [["direct", "new"], ["indirect", "new"]]
    assert {"id": proposal.pk, "text": proposal.text} in rows[0]["variables"]
    assert rows[0]["offered_variables"] == [waste.pk, cost.pk] and rows[0]["n_unnormalised"] == 1
