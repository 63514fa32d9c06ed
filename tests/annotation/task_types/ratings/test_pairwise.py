"""Pairwise preference: placement (deterministic, both orders used), de-biasing (a swapped placement is counted for
the right system), aggregation, fluency rates, Cohen's kappa / percentage agreement by hand."""

import pytest

from annotation import agreement
from annotation.models import Worker
from annotation.task_types.pairwise_preference import pairwise
from annotation.task_types.pairwise_preference.pairwise import Invalid, clean_response, judgement, left_side, swapped
from annotation.task_types.ratings import results

from .helpers import PAIRS, pairwise_project, run_worker

P = {"topic": "t", "stance": "pro", "a": {"system": "gen", "text": "A text"}, "b": {"system": "ref", "text": "B text"}}


def test_placement_coin_and_slot_parity():
    from annotation.task_types.pairwise_preference.pairwise import item_coin, swapped_at

    assert item_coin(4) == item_coin("4") == item_coin(4)
    # consecutive slots alternate the order; which order comes first is the item's coin
    for item_id in range(1, 30):
        assert swapped_at(item_id, 0) == item_coin(item_id)
        assert [swapped_at(item_id, s) for s in range(4)] == [item_coin(item_id), not item_coin(item_id)] * 2
    assert {item_coin(i) for i in range(1, 30)} == {True, False}
    assert swapped(None, 4) is False and left_side(None, 4) == "a"  # no assignment (preview): the payload order
    assert (None in pairwise.SwapRule(9)) is False


def test_clean_response_records_placement_and_system():
    got = clean_response(P, {"left": "b", "choice": "left", "fluent_left": "yes", "fluent_right": "no"})
    assert got == {"left": "b", "left_system": "ref", "choice": "left", "fluent_left": True, "fluent_right": False}
    # a client may name the system shown on the left; booleans are accepted for fluency
    assert (
        clean_response(P, {"left": "gen", "choice": "equal", "fluent_left": True, "fluent_right": True})["left"] == "a"
    )
    assert clean_response(P, got) == got  # the stored form validates again (gold answers)


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"left": "a", "choice": "both", "fluent_left": "yes", "fluent_right": "yes"}, "choice"),
        ({"left": "a", "fluent_left": "yes", "fluent_right": "yes"}, "choice"),
        ({"left": "a", "choice": "left", "fluent_right": "yes"}, "fluent_left"),
        ({"left": "a", "choice": "left", "fluent_left": "maybe", "fluent_right": "yes"}, "fluent_left"),
        ({"choice": "left", "fluent_left": "yes", "fluent_right": "yes"}, "left"),
        ({"left": "c", "choice": "left", "fluent_left": "yes", "fluent_right": "yes"}, "left"),
        (
            {"left": "a", "left_system": "ref", "choice": "left", "fluent_left": "yes", "fluent_right": "yes"},
            "left_system",
        ),
        ({"left": "a", "choice": "left", "fluent_left": "yes", "fluent_right": "yes", "winner": "gen"}, "winner"),
        ([], "choice"),
    ],
)
def test_clean_response_refuses(bad, field):
    with pytest.raises(Invalid) as exc:
        clean_response(P, bad)
    assert exc.value.field == field


def test_judgement_maps_positions_back_to_systems():
    # the same preference ("ref is better, gen is not fluent") seen in both placements
    as_shown = judgement(P, {"left": "a", "choice": "right", "fluent_left": False, "fluent_right": True})
    swapped_ = judgement(P, {"left": "b", "choice": "left", "fluent_left": True, "fluent_right": False})
    for j in (as_shown, swapped_):
        assert j["winner"] == "ref" and j["fluent"] == {"gen": False, "ref": True}
    assert (as_shown["winner_position"], swapped_["winner_position"]) == ("right", "left")
    assert judgement(P, {"left": "b", "choice": "equal", "fluent_left": 1, "fluent_right": 1})["winner"] == "tie"


def test_system_table_counts_swapped_positions_for_the_right_system():
    pairs = [
        (P, {"left": "a", "choice": "right", "fluent_left": False, "fluent_right": True}),  # ref wins
        (P, {"left": "b", "choice": "left", "fluent_left": True, "fluent_right": True}),  # ref wins (swapped)
        (P, {"left": "b", "choice": "right", "fluent_left": True, "fluent_right": True}),  # gen wins (swapped)
        (P, {"left": "a", "choice": "equal", "fluent_left": True, "fluent_right": True}),
    ]  # tie
    rows = {r["system"]: r for r in pairwise.system_table(pairs)}
    assert (rows["ref"]["wins"], rows["ref"]["ties"], rows["ref"]["losses"]) == (2, 1, 1)
    assert (rows["gen"]["wins"], rows["gen"]["ties"], rows["gen"]["losses"]) == (1, 1, 2)
    assert rows["ref"]["win_share"] == 0.5 and rows["gen"]["win_or_tie_share"] == 0.5
    assert rows["gen"]["fluency_rate"] == 0.75 and rows["ref"]["fluency_rate"] == 1.0
    assert rows["gen"]["shown_left"] == 2 and rows["ref"]["shown_left"] == 2
    pos = pairwise.position_table(pairs)
    assert (pos["left"], pos["right"], pos["equal"]) == (1, 2, 1)
    agg = pairwise.aggregate(P, [d for _, d in pairs])
    assert agg["wins"] == {"gen": 1, "ref": 2} and agg["ties"] == 1 and agg["winner"] == "ref"
    assert pairwise.aggregate(P, [d for _, d in pairs[1:3]])["winner"] == "tie"  # 1 : 1


@pytest.mark.django_db
def test_end_to_end_debiasing_and_agreement(tmp_path):
    """Two annotators judge the same 4 pairs in their own random placements. Annotator 1 prefers the reference except
    on pair 3, annotator 2 except on pairs 3 and 4 ... the results are the same whatever the placement was."""
    project = pairwise_project(tmp_path, assignments_per_item=2, items_per_hit=4)
    by_text = {p["a"]["text"]: n for n, p in enumerate(PAIRS)}
    # winners per pair index, in system terms
    plans = {"w1": ["reference", "reference", "arg-ctrl", "tie"], "w2": ["reference", "arg-ctrl", "arg-ctrl", "tie"]}
    fluent_gen = {"w1": [True, True, True, False], "w2": [True, False, True, False]}
    placements = []

    def answer_for(name):
        def answer(item, a):
            n = by_text[item.payload["a"]["text"]]
            left = left_side(a.pk, item.pk)
            placements.append(left)
            left_system = item.payload[left]["system"]
            want = plans[name][n]
            choice = "equal" if want == "tie" else ("left" if want == left_system else "right")
            flu = {"arg-ctrl": fluent_gen[name][n], "reference": True}
            right_system = item.payload["b" if left == "a" else "a"]["system"]
            return {"left": left, "choice": choice, "fluent_left": flu[left_system], "fluent_right": flu[right_system]}

        return answer

    for name in plans:
        w = Worker.objects.create(source="prolific", external_id=name)
        assert len(run_worker(project, w, answer_for(name))) == 1
    assert len(placements) == 8
    res = results.pairwise_results(project)
    rows = {r["system"]: r for r in res["systems"]}
    # reference: wins w1 p0, p1; w2 p0 -> 3; ties 2; losses 3 (of 8)
    assert (rows["reference"]["wins"], rows["reference"]["ties"], rows["reference"]["losses"]) == (3, 2, 3)
    assert (rows["arg-ctrl"]["wins"], rows["arg-ctrl"]["ties"], rows["arg-ctrl"]["losses"]) == (3, 2, 3)
    assert rows["arg-ctrl"]["fluency_rate"] == 5 / 8 and rows["reference"]["fluency_rate"] == 1.0
    # persuasiveness agreement: w1 = [ref, ref, gen, tie], w2 = [ref, gen, gen, tie]
    # p_o = 3/4; margins w1 ref 2 gen 1 tie 1, w2 ref 1 gen 2 tie 1 -> p_e = (2 + 2 + 1) / 16; kappa = 7/11
    pers = res["agreement"]["persuasiveness"]
    assert pers["percent_agreement"] == pytest.approx(0.75)
    assert pers["kappa"] == pytest.approx((0.75 - 5 / 16) / (1 - 5 / 16)) == pytest.approx(7 / 11)
    w1 = ["reference", "reference", "arg-ctrl", "tie"]
    w2 = ["reference", "arg-ctrl", "arg-ctrl", "tie"]
    assert pers["kappa"] == pytest.approx(agreement.cohen_kappa(w1, w2))
    # fluency over 8 arguments: they disagree on one (pair 1, arg-ctrl) -> 7/8
    assert res["agreement"]["fluency"]["percent_agreement"] == pytest.approx(7 / 8)
    by_sys = {f["system"]: f["fluency"] for f in res["agreement"]["fluency_by_system"]}
    assert by_sys["arg-ctrl"]["percent_agreement"] == pytest.approx(3 / 4)
    assert by_sys["reference"]["kappa"] is None  # every label "fluent": kappa 0/0, reported as undefined
    text = results.text_report(res)
    assert "persuasiveness: Cohen's kappa 0.636" in text


@pytest.mark.django_db
def test_counterbalanced_per_item_with_r2_and_a_position_bias_cancels(tmp_path):
    """R = 2: each pair is shown once in each order (slot parity XOR the item's coin). Two annotators who always
    pick the left argument (pure position bias) then give every system the same number of wins, and each item ends
    in a tie; the results still name the right systems."""
    project = pairwise_project(tmp_path, assignments_per_item=2, items_per_hit=4)
    seen: dict[int, list[str]] = {}

    def always_left(item, a):
        seen.setdefault(item.pk, []).append(left_side(a, item))
        return {"choice": "left", "fluent_left": True, "fluent_right": True}  # "left" filled in by the server

    for name in ("w1", "w2"):
        assert len(run_worker(project, Worker.objects.create(source="prolific", external_id=name), always_left)) == 1
    assert len(seen) == 4 and all(sorted(orders) == ["a", "b"] for orders in seen.values()), seen
    from annotation.models import Response

    stored = {(r.item_id, r.data["left"]) for r in Response.objects.all()}
    assert stored == {(i, side) for i in seen for side in ("a", "b")}  # the placements were stored as shown
    res = results.pairwise_results(project)
    rows = {r["system"]: r for r in res["systems"]}
    assert set(rows) == {"arg-ctrl", "reference"}
    assert rows["arg-ctrl"]["wins"] == rows["reference"]["wins"] == 4 and rows["reference"]["ties"] == 0
    assert rows["arg-ctrl"]["shown_left"] == rows["reference"]["shown_left"] == 4
    from annotation.models import Item

    for item in Item.objects.filter(project=project):
        agg = pairwise.aggregate(item.payload, list(Response.objects.filter(item=item).values_list("data", flat=True)))
        assert agg["winner"] == "tie" and agg["wins"] == {"arg-ctrl": 1, "reference": 1}


@pytest.mark.django_db
def test_slot_counts_the_hits_earlier_assignments(tmp_path):
    project = pairwise_project(tmp_path, assignments_per_item=3, items_per_hit=4)
    from annotation import services

    slots = []
    for name in ("w1", "w2", "w3"):
        a = services.reserve_next_assignment(project, Worker.objects.create(source="prolific", external_id=name))
        slots.append(pairwise.assignment_slot(a))
        assert pairwise.assignment_slot(a.pk) == slots[-1]  # by id: the same
    assert slots == [0, 1, 2]
