"""alpha_u against DKPro Agreement's unitizing test cases (Krippendorff 1995 / 2004 worked examples) and the naive
segment-sweep reference. Expected values and tolerances are DKPro's (dkpro-statistics-agreement,
src/test/java/org/dkpro/statistics/agreement/unitizing/{Krippendorff2004Test,Krippendorff1995Test,
UnitizingAgreementTest}.java)."""

import numpy as np
import pytest

from annotation.agreement import (
    AgreementError,
    AgreementInputError,
    AgreementUndefined,
    spans_on_continuum,
    unitized_alpha,
)
from annotation.agreement.reference import naive_unitized_alpha


def krippendorff_2004():
    # Krippendorff (2004: p. 254): 2 observers, continuum [150, 450)
    spans = [
        (0, 225, 70, "c"),
        (0, 370, 30, "c"),
        (1, 220, 80, "c"),
        (1, 355, 20, "c"),
        (1, 400, 20, "c"),
        (0, 180, 60, "k"),
        (0, 300, 50, "k"),
        (1, 180, 60, "k"),
        (1, 300, 50, "k"),
    ]
    return unitized_alpha(spans, 300, continuum_begin=150)


def test_krippendorff_2004_overall_and_per_category():
    r = krippendorff_2004()
    assert r.alpha_u == pytest.approx(0.8591, abs=0.0005)
    c, k = r.per_category["c"], r.per_category["k"]
    assert c["observed_disagreement"] == pytest.approx(0.0144, abs=0.0001)
    assert c["expected_disagreement"] == pytest.approx(0.0532, abs=0.0001)
    assert c["alpha_u"] == pytest.approx(0.7286, abs=0.0001)
    assert k["observed_disagreement"] == pytest.approx(0.0, abs=0.0001)
    assert k["expected_disagreement"] == pytest.approx(0.0490, abs=0.0001)
    assert k["alpha_u"] == pytest.approx(1.0, abs=0.0001)
    assert (r.n_coders, r.n_spans) == (2, 9)


def krippendorff_1995(stretch):
    s = lambda x: int(x * stretch)  # noqa: E731
    rows = {
        "A": [(0, 2, 8), (0, 14, 6), (1, 4, 4), (1, 15, 2)],
        "B": [(0, 0, 18), (1, 0, 2), (1, 2, 1), (1, 3, 1), (1, 4, 1), (1, 5, 1), (1, 6, 3), (1, 9, 1)],
        "C": [(0, 2, 6), (0, 10, 2), (0, 14, 4), (0, 20, 2), (1, 0, 2), (1, 4, 4), (1, 10, 4), (1, 16, 2), (1, 20, 2)],
        "D": [
            (0, 0, 2),
            (0, 2, 8),
            (0, 10, 4),
            (0, 14, 6),
            (0, 20, 4),
            (1, 0, 4),
            (1, 4, 4),
            (1, 8, 7),
            (1, 15, 2),
            (1, 17, 7),
        ],
    }
    spans = [(c, s(b), s(ln), cat) for cat, units in rows.items() for c, b, ln in units]
    return unitized_alpha(spans, s(24))


def test_krippendorff_1995_observed_disagreement():
    per = krippendorff_1995(1).per_category
    for cat, d_o in {"A": 0.03125, "B": 2.26736, "C": 0.02777, "D": 0.38715}.items():
        assert per[cat]["observed_disagreement"] == pytest.approx(d_o, abs=0.00001)


def test_krippendorff_1995_expected_disagreement_and_alpha():
    per = krippendorff_1995(1200000 / 24).per_category
    for cat, d_e in {"A": 0.06990, "B": 1.17731, "C": 0.08642, "D": 0.41445}.items():
        assert per[cat]["expected_disagreement"] == pytest.approx(d_e, abs=0.005)
    for cat, a in {"A": 0.553, "B": -0.926, "C": 0.679, "D": 0.066}.items():
        assert per[cat]["alpha_u"] == pytest.approx(a, abs=0.02)


@pytest.mark.parametrize(
    "stretch,d_e,alpha",
    [
        (120 / 24, 0.08234, 0.663),
        (1200 / 24, 0.08600, 0.677),
        (12000 / 24, 0.08638, 0.678),
        (120000 / 24, 0.08642, 0.679),
    ],
)
def test_krippendorff_1995_varying_lengths(stretch, d_e, alpha):
    c = krippendorff_1995(stretch).per_category["C"]
    assert c["observed_disagreement"] == pytest.approx(0.02777, abs=0.00001)
    assert c["expected_disagreement"] == pytest.approx(d_e, abs=0.005)
    assert c["alpha_u"] == pytest.approx(alpha, abs=0.02)


def test_dkpro_unitizing_example():
    # r0: -11111111-   r1: --1-1-1---
    r = unitized_alpha([(0, 1, 8, "A"), (1, 2, 1, "A"), (1, 4, 1, "A"), (1, 6, 1, "A")], 10)
    a = r.per_category["A"]
    assert a["observed_disagreement"] == pytest.approx(0.9100, abs=0.0001)
    assert a["expected_disagreement"] == pytest.approx(0.5351, abs=0.0001)
    assert a["alpha_u"] == pytest.approx(-0.7003, abs=0.0001)


def test_single_span_gives_zero():
    assert unitized_alpha([(0, 0, 1, "X")], 20, coders=[0, 1, 2]).alpha_u == 0.0


def test_no_spans_is_undefined_not_nan():
    with pytest.raises(AgreementUndefined, match="no spans"):
        unitized_alpha([], 20, coders=["a", "b", "c"])


def test_identical_spans_give_one():
    spans = [(c, b, 3, "asp") for c in "abc" for b in (2, 10)]
    assert unitized_alpha(spans, 20).alpha_u == pytest.approx(1.0)


def test_errors():
    with pytest.raises(AgreementError, match="at least 2 coders"):
        unitized_alpha([("a", 0, 2, "x")], 10)
    with pytest.raises(AgreementInputError, match="outside the continuum") as e:
        unitized_alpha([("a", 0, 2, "x"), ("b", 9, 2, "x")], 10)
    assert e.value.span_indices == (1,)
    with pytest.raises(AgreementInputError, match="overlap") as e:
        unitized_alpha([("a", 0, 4, "x"), ("b", 0, 2, "x"), ("a", 3, 2, "x")], 10)
    assert sorted(e.value.span_indices) == [0, 2]
    with pytest.raises(AgreementInputError, match="positive"):
        unitized_alpha([("a", 0, 0, "x"), ("b", 0, 2, "x")], 10)
    with pytest.raises(AgreementError, match="not among"):
        unitized_alpha([("z", 0, 1, "x")], 10, coders=["a", "b"])


def test_same_coder_may_overlap_across_categories():
    r = unitized_alpha([("a", 0, 4, "x"), ("a", 2, 4, "y"), ("b", 0, 4, "x"), ("b", 2, 4, "y")], 10)
    assert r.alpha_u == pytest.approx(1.0)


def test_coders_without_spans_count():
    with_silent = unitized_alpha([("a", 0, 4, "x"), ("b", 0, 4, "x")], 20, coders=["a", "b", "c"])
    assert with_silent.n_coders == 3
    assert with_silent.alpha_u < unitized_alpha([("a", 0, 4, "x"), ("b", 0, 4, "x")], 20).alpha_u


def test_matches_naive_reference_on_random_studies():
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(150):
        R, L = int(rng.integers(2, 6)), int(rng.integers(5, 50))
        spans = []
        for c in range(R):
            for cat in "ab":
                pos = 0
                while True:
                    pos += int(rng.integers(0, 6))
                    ln = int(rng.integers(1, 9))
                    if pos + ln > L:
                        break
                    if rng.random() < 0.6:
                        spans.append((c, pos, ln, cat))
                    pos += ln
        if not spans:
            continue
        ours = unitized_alpha(spans, L, coders=range(R))
        ref = naive_unitized_alpha(spans, L, 0, list(range(R)))
        assert ours.alpha_u == pytest.approx(ref["alpha_u"], abs=1e-9)
        for cat, a in ref["per_category"].items():
            assert ours.per_category[str(cat)]["alpha_u"] == pytest.approx(a, abs=1e-9)
        checked += 1
    assert checked > 100


def test_spans_on_continuum_offsets_items_in_order():
    spans, total = spans_on_continuum([("a", "s2", 1, 2, "x"), ("b", "s1", 0, 3, "x")], [("s1", 5), ("s2", 4)])
    assert total == 9
    assert spans == [("a", 6, 2, "x"), ("b", 0, 3, "x")]
    with pytest.raises(AgreementInputError, match="leaves item"):
        spans_on_continuum([("a", "s2", 3, 2, "x")], [("s1", 5), ("s2", 4)])
    with pytest.raises(AgreementInputError, match="no length"):
        spans_on_continuum([("a", "s3", 0, 1, "x")], [("s1", 5)])
