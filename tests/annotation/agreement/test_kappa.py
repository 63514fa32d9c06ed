"""Cohen's kappa, Fleiss' kappa and percentage agreement against textbook examples."""

import numpy as np
import pytest

from annotation.agreement import (
    AgreementError,
    AgreementUndefined,
    cohen_kappa,
    fleiss_kappa,
    fleiss_kappa_from_matrix,
    kappa_report,
    krippendorff_alpha,
    pairwise_cohen_kappa,
    percent_agreement,
)


def wikipedia_cohen():
    # Wikipedia "Cohen's kappa", worked example: 50 grant proposals, yes/yes 20, yes/no 5, no/yes 10, no/no 15:
    # p_o = 0.7, p_e = 0.5, kappa = 0.4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    return a, b


def test_cohen_2x2_textbook_example():
    a, b = wikipedia_cohen()
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert percent_agreement([a, b]) == pytest.approx(0.7)
    rep = kappa_report([a, b])
    assert rep == {"kappa": pytest.approx(0.4), "percent_agreement": pytest.approx(0.7), "n_units": 50, "n_coders": 2}


def test_krippendorff_1995_digitised_example_a():
    # DKPro Krippendorff1995Test.testDigitizedAgreement, example A (Bertha/Bill): kappa 0.385, alpha 0.329
    bertha = [0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    bill = [0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    assert cohen_kappa(bertha, bill) == pytest.approx(0.385, abs=0.001)
    assert krippendorff_alpha([bertha, bill], "nominal") == pytest.approx(0.329, abs=0.001)


def test_missing_units_are_skipped():
    assert cohen_kappa(["a", "b", None, "a"], ["a", "b", "a", ""]) == pytest.approx(1.0)


def test_cohen_edge_cases():
    with pytest.raises(AgreementUndefined, match="same label"):
        cohen_kappa([1, 1, 1], [1, 1, 1])
    with pytest.raises(AgreementError, match="no unit"):
        cohen_kappa([1, None], [None, 2])
    with pytest.raises(AgreementError, match="different numbers"):
        cohen_kappa([1, 2], [1])


def test_weighted_kappa():
    assert cohen_kappa([1, 2, 3, 4], [1, 2, 4, 4], weights="quadratic") > cohen_kappa([1, 2, 3, 4], [1, 2, 4, 4])


# Wikipedia "Fleiss' kappa", worked example: 10 subjects, 14 raters, 5 categories -> kappa = 0.210
FLEISS_WIKI = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_wikipedia_example():
    assert round(fleiss_kappa(FLEISS_WIKI), 3) == 0.210


def test_fleiss_from_matrix_equals_table():
    # expand the table into 14 coders x 10 units (any assignment of ratings to coders gives the same kappa)
    cols = [[c for c, k in enumerate(row) for _ in range(k)] for row in FLEISS_WIKI]
    matrix = np.array(cols).T
    assert fleiss_kappa_from_matrix(matrix) == pytest.approx(fleiss_kappa(FLEISS_WIKI))


def test_fleiss_errors():
    with pytest.raises(AgreementError, match="same number of ratings"):
        fleiss_kappa([[1, 1], [2, 1]])
    with pytest.raises(AgreementUndefined):
        fleiss_kappa([[3, 0], [3, 0]])
    with pytest.raises(AgreementError, match="every unit rated"):
        fleiss_kappa_from_matrix([[1, 2], [1, None]])


def test_pairwise_mean_and_report_for_three_coders():
    data = [["a", "b", "a", "b"], ["a", "b", "b", "b"], ["a", "a", "a", "b"]]
    pw = pairwise_cohen_kappa(data, coders=["x", "y", "z"])
    assert len(pw["pairs"]) == 3
    assert pw["kappa"] == pytest.approx(np.mean([p["kappa"] for p in pw["pairs"]]))
    rep = kappa_report(data, coders=["x", "y", "z"])
    assert rep["n_coders"] == 3 and "fleiss_kappa" in rep
    # percent agreement: units 1 and 4 all agree (1.0), units 2 and 3 one pair of three agrees (1/3)
    assert rep["percent_agreement"] == pytest.approx((1 + 1 / 3 + 1 / 3 + 1) / 4)
