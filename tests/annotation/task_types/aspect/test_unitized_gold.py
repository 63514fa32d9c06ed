"""alpha_u input (per-coder spans per item) and gold scoring."""

import pytest

from annotation import services
from annotation.agreement.records import load_responses
from annotation.models import GoldItem, Item
from annotation.task_types import get_task_type
from annotation.task_types.aspect.unitized import reliability_data

from .helpers import aspect_project, span

pytestmark = pytest.mark.django_db


def unitized_data_of(project) -> dict:
    """What the agreement engine computes alpha_u from: the aspect task type's reliability data."""
    return reliability_data(project, load_responses(project))["unitized"]


def test_the_unitized_data_lists_items_and_each_coders_spans():
    project = aspect_project(r=2)
    items = {i.position: i for i in Item.objects.filter(project=project)}
    gun, nuclear = items[0], items[1]
    answers = {
        "w1": {
            gun.pk: {"aspects": [span(gun.payload["text"], "background checks")]},
            nuclear.pk: {
                "aspects": [span(nuclear.payload["text"], "expensive"), span(nuclear.payload["text"], "clean")]
            },
        },
        "w2": {
            gun.pk: {"aspects": [span(gun.payload["text"], "background checks")]},
            nuclear.pk: {
                "no_aspect": True,
                "check": str(nuclear.payload["check"]["a"] + nuclear.payload["check"]["b"]),
            },
        },
    }
    workers = {}
    for name, responses in answers.items():
        worker = workers[name] = services.worker_for_external_id(name, source="prolific")
        assignment = services.reserve_next_assignment(project, worker)
        services.submit_assignment(assignment, worker, responses)
    data = unitized_data_of(project)
    w1, w2 = (f"worker:{workers[n].pk}" for n in ("w1", "w2"))
    assert data["items"] == [(gun.pk, len(gun.payload["text"])), (nuclear.pk, len(nuclear.payload["text"]))]
    b = gun.payload["text"].index("background checks")
    n = nuclear.payload["text"]
    assert data["spans"] == [
        (w1, gun.pk, b, 17, "aspect"),
        (w2, gun.pk, b, 17, "aspect"),
        (w1, nuclear.pk, n.index("clean"), 5, "aspect"),
        (w1, nuclear.pk, n.index("expensive"), 9, "aspect"),
    ]
    assert data["item_coders"][nuclear.pk] == [w1, w2]  # w2 answered "no aspect": a gap, not a missing coder


def test_score_gold():
    tt = get_task_type("aspect")
    gold = GoldItem(expected={"aspects": [{"begin": 0, "length": 5}, {"begin": 10, "length": 4}], "no_aspect": False})
    assert tt.score_gold(None, gold, {"aspects": [{"begin": 0, "length": 5}, {"begin": 10, "length": 4}]}) == 1.0
    assert tt.score_gold(None, gold, {"aspects": [{"begin": 0, "length": 5}]}) == pytest.approx(2 / 3)
    assert tt.score_gold(None, gold, {"aspects": [{"begin": 1, "length": 4}]}) == 0.0
    gold.tolerance = 0.5  # any overlap counts
    assert tt.score_gold(None, gold, {"aspects": [{"begin": 1, "length": 4}]}) == pytest.approx(2 / 3)
    none = GoldItem(expected={"aspects": [], "no_aspect": True})
    assert tt.score_gold(None, none, {"aspects": [], "no_aspect": True}) == 1.0
    assert tt.score_gold(None, none, {"aspects": [{"begin": 0, "length": 5}], "no_aspect": False}) == 0.0


def test_unconfirmed_answers_stay_out_of_alpha_u_aggregation_and_agreement_until_the_platform_confirms_them():
    """A provisional worker (a platform id claimed in a URL: it could be a made-up MTurk assignmentId/workerId pair)
    counts nowhere; once the platform confirms the assignment it counts everywhere, as the real worker's."""
    from annotation.agreement.records import coder_name, load_responses
    from annotation.task_types.aspect.aggregation import item_responses

    project = aspect_project(r=2)
    gun = Item.objects.get(project=project, position=0)
    answer = {"aspects": [span(gun.payload["text"], "background checks")]}
    local = services.worker_for_external_id("p1", source="prolific")
    turker = services.provisional_worker("mturk", "A1TURKER")
    assignments = {}
    for worker in (local, turker):
        a = assignments[worker.pk] = services.reserve_next_assignment(project, worker)
        services.submit_assignment(
            a,
            worker,
            {
                i.pk: answer if i.pk == gun.pk else {"aspects": [span(i.payload["text"], "expensive")]}
                for i in services.assignment_items(a)
            },
        )

    def coders():
        return sorted({c for c, *_ in unitized_data_of(project)["spans"]})

    assert coders() == [coder_name(local.pk)]
    assert len(item_responses(gun)) == 1
    assert {r["assignment_id"] for r in load_responses(project)} == {assignments[local.pk].pk}

    confirmed = services.confirm_assignment(assignments[turker.pk], source="mturk", external_id="A1TURKER")
    real = confirmed.worker
    assert real.external_id == "A1TURKER" and not real.claimed_external_id
    assert coders() == sorted([coder_name(local.pk), coder_name(real.pk)])
    assert len(item_responses(gun)) == 2
    assert {r["assignment_id"] for r in load_responses(project)} == {a.pk for a in assignments.values()}
