"""Decisions on suggested spans (model-in-the-loop): rejected suggestions are validated, stored, exported per
suggestion and summed into a project's acceptance rate (shown on the KB review page)."""

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation import services
from annotation.models import Response
from annotation.task_types import ResponseInvalid, get_task_type
from annotation.task_types.span_grounding.export import project_rows
from annotation.task_types.span_grounding.suggestions import project_suggestion_stats, suggestion_rows

from .helpers import FIG7, fig7_payload, make_kb, make_project, span

pytestmark = pytest.mark.django_db
TT = get_task_type("span_grounding")


@pytest.fixture
def suggested():
    """Two items; the first offers two suggestions: "Criminologists" -> facts[0], "DP does not deter crime" -> Others."""
    _, facts = make_kb(3)
    project = make_project(items_per_hit=2, assignments_per_item=3)
    payload = fig7_payload(facts)
    payload["suggestions"] = [
        dict(span(FIG7, "Criminologists", facts[0].pk), source="model:4"),
        dict(span(FIG7, "DP does not deter crime", None, 60), source="model:4"),
    ]
    first, second = services.add_items(project, [payload, fig7_payload(facts)])
    return project, first, second, facts


def test_rejected_suggestions_are_validated_and_stored(suggested):
    project, item, other, facts = suggested
    crim, dp = (0, 14), (76, 99)
    assert FIG7[dp[0] : dp[1]] == "DP does not deter crime"
    taken = dict(span(FIG7, "Criminologists", facts[1].pk), from_suggestion=True)
    for rejected in ([{"begin": 76, "end": 99}], ["76:99"], [[76, 99]], "76:99"):
        cleaned = TT.validate_response(project, item, {"spans": [taken], "rejected": rejected})
        assert cleaned["rejected"] == [{"begin": 76, "end": 99}]
        assert cleaned["spans"][0]["from_suggestion"] is True
    # the no-JS page: every suggestion is in suggested[]; one taken through its menu, the other left
    form = {"spans": [f"0:14:{facts[0].pk}"], "suggested": ["0:14", "76:99"]}
    assert TT.validate_response(project, item, form)["rejected"] == [{"begin": 76, "end": 99}]
    assert TT.validate_response(project, item, form)["spans"][0]["from_suggestion"] is True
    # both rejected
    both = TT.validate_response(project, item, {"spans": [], "rejected": ["76:99", "0:14"]})
    assert both["rejected"] == [{"begin": 0, "end": 14}, {"begin": 76, "end": 99}]
    for bad, needle in [
        (["33:59"], "not one of this item's suggestions"),
        (["0:14"], "both taken as a span and rejected"),
        (["zero"], "is not begin:end"),
        ([{"begin": "a", "end": 3}], "whole numbers"),
        (7, "expected a list"),
    ]:
        with pytest.raises(ResponseInvalid) as exc:
            TT.validate_response(project, item, {"spans": [taken], "rejected": bad})
        assert exc.value.field == "rejected" and needle in exc.value.reason
    # nothing rejected: no "rejected" key (the suggestion is undecided unless taken)
    assert "rejected" not in TT.validate_response(project, item, {"spans": [taken]})
    # an item without suggestions has nothing to reject
    with pytest.raises(ResponseInvalid) as exc:
        TT.validate_response(project, other, {"spans": [], "rejected": ["0:14"]})
    assert exc.value.field == "rejected"
    assert TT.validate_response(project, other, {"spans": []}) == {"spans": []}
    assert crim == (0, 14)


def test_api_stores_the_rejections_and_refuses_a_foreign_one(suggested, django_user_model):
    project, item, other, facts = suggested
    services.build_hits(project)
    user = django_user_model.objects.create_user("alice", password="pw-alice-123")
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    body = c.post(f"/api/projects/{project.slug}/next/", format="json").json()
    url = f"/api/assignments/{body['assignment']}/submit/"
    taken = dict(span(FIG7, "Criminologists", facts[0].pk), from_suggestion=True)
    r = c.post(
        url,
        {
            "responses": {
                str(item.pk): {"spans": [taken], "rejected": [{"begin": 33, "end": 59}]},
                str(other.pk): {"spans": []},
            }
        },
        format="json",
    )
    assert r.status_code == 400 and list(r.json()["errors"]) == [f"responses.{item.pk}.rejected"]
    assert Response.objects.count() == 0
    r = c.post(
        url,
        {
            "responses": {
                str(item.pk): {"spans": [taken], "rejected": [{"begin": 76, "end": 99}]},
                str(other.pk): {"spans": []},
            }
        },
        format="json",
    )
    assert r.status_code == 200, r.content
    stored = Response.objects.get(item=item).data
    assert stored["rejected"] == [{"begin": 76, "end": 99}] and stored["spans"][0]["from_suggestion"] is True


def test_suggestion_counts_acceptance_rate_export_and_review_page(suggested, client, staff_user):
    project, item, other, facts = suggested
    crim_same = dict(span(FIG7, "Criminologists", facts[0].pk), from_suggestion=True)
    crim_regrounded = dict(span(FIG7, "Criminologists", facts[2].pk), from_suggestion=True)
    responses = [
        {"spans": [crim_same], "rejected": [{"begin": 76, "end": 99}]},  # accept (same variable), reject
        {"spans": [crim_regrounded], "rejected": [{"begin": 76, "end": 99}]},  # accept (re-grounded), reject
        {
            "spans": [dict(span(FIG7, "DP does not deter crime", None, 60), from_suggestion=True)],
            "rejected": [{"begin": 0, "end": 14}],
        },  # reject, accept (same: Others)
    ]
    rows = suggestion_rows(item.payload, responses + [{"spans": []}])  # + one without decisions (older response)
    assert [(r["text"], r["accepted"], r["accepted_same_variable"], r["rejected"], r["undecided"]) for r in rows] == [
        ("Criminologists", 2, 1, 1, 1),
        ("DP does not deter crime", 1, 1, 2, 1),
    ]
    # stored through the task type (validated), counted per project
    services.build_hits(project)
    for n, data in enumerate(responses):
        worker = services.worker_for_user(staff_user.__class__.objects.create_user(f"w{n}", password="pw-123456789"))
        a = services.reserve_next_assignment(project, worker)
        services.submit_assignment(a, worker, {item.pk: data, other.pk: {"spans": []}})
    stats = project_suggestion_stats(project)
    assert (stats["items"], stats["suggestions"], stats["accepted"], stats["rejected"], stats["undecided"]) == (
        1,
        2,
        3,
        3,
        0,
    )
    assert stats["acceptance_rate"] == pytest.approx(0.5) and stats["grounding_kept"] == pytest.approx(2 / 3)
    assert stats["by_source"]["model:4"]["decisions"] == 6
    row = next(r for r in project_rows(project) if r["item_id"] == item.pk)
    assert [(s["accepted"], s["rejected"]) for s in row["suggestions"]] == [(2, 1), (1, 2)]
    assert [a["rejected"] for a in row["annotations"]] == [
        [{"begin": 76, "end": 99}],
        [{"begin": 76, "end": 99}],
        [{"begin": 0, "end": 14}],
    ]
    client.force_login(staff_user)
    page = client.get(reverse("annotation:spans-kb-review")).content.decode()
    assert f'id="kb-suggestions-{project.slug}"' in page
    part = page.split(f'id="kb-suggestions-{project.slug}"')[1].split("</tr>")[0]
    assert '<td class="kb-acceptance">50% <small>(n = 6)</small>' in part
    assert "too few ratings: 6 accept / reject decisions (minimum 10)" in part  # the rate states its n
