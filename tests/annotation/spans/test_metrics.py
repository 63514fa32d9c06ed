"""Span detection F1 and grounding accuracy (ArgU Figure 7), pure functions."""
import pytest

from annotation.spans import metrics

from .helpers import FIG7, fig7_spans, span


def test_figure7_worked_example():
    human, model = fig7_spans()
    r = metrics.evaluate_example(FIG7, human, model)
    assert (r["tp"], r["fp"], r["fn"]) == (10, 1, 2)
    assert r["tp_tokens"] == ["Criminologists", "the", "DP", "on", "crime", "DP", "does", "not", "deter", "crime"]
    assert r["fp_tokens"] == ["the"] and r["fn_tokens"] == ["effects", "of"]
    assert r["f1"] == pytest.approx(20 / 23) and round(r["f1"], 2) == 0.87
    assert (r["label_correct"], r["label_total"]) == (2, 3)
    assert r["label_accuracy"] == pytest.approx(2 / 3)


def test_perfect_empty_and_disjoint():
    human, _ = fig7_spans()
    assert metrics.evaluate_example(FIG7, human, human)["f1"] == 1.0
    assert metrics.evaluate_example(FIG7, human, human)["label_accuracy"] == 1.0
    both_empty = metrics.evaluate_example(FIG7, [], [])
    assert both_empty["f1"] == 1.0 and both_empty["label_accuracy"] is None
    missed = metrics.evaluate_example(FIG7, human, [])
    assert missed["f1"] == 0.0 and missed["label_accuracy"] == 0.0
    wrong_place = metrics.evaluate_example(FIG7, [span(FIG7, "Criminologists", 1)], [span(FIG7, "assert", 1)])
    assert wrong_place["f1"] == 0.0 and wrong_place["label_accuracy"] == 0.0


def test_others_labels_compare_equal():
    ref = [span(FIG7, "Criminologists", None)]
    assert metrics.label_accuracy(FIG7, ref, [span(FIG7, "Criminologists", "other")])["accuracy"] == 1.0
    assert metrics.label_accuracy(FIG7, ref, [span(FIG7, "Criminologists", 4)])["accuracy"] == 0.0


def test_corpus_figures_average_per_example():
    human, model = fig7_spans()
    r = metrics.evaluate([{"text": FIG7, "reference": human, "predicted": model},
                          {"text": FIG7, "reference": human, "predicted": human}])
    assert r["n"] == 2 and r["f1"] == pytest.approx((20 / 23 + 1) / 2)
    assert r["micro_f1"] == pytest.approx(2 * 22 / (2 * 22 + 1 + 2))  # 10 + 12 shared tokens
    assert (r["label_correct"], r["label_total"]) == (5, 6)
