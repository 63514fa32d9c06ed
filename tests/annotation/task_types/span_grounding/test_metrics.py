"""Span detection F1 and grounding accuracy (ArgU Figure 7), pure functions."""

import pytest

from annotation.task_types.span_grounding import metrics

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
    r = metrics.evaluate(
        [{"text": FIG7, "reference": human, "predicted": model}, {"text": FIG7, "reference": human, "predicted": human}]
    )
    assert r["n"] == 2 and r["f1"] == pytest.approx((20 / 23 + 1) / 2)
    assert r["micro_f1"] == pytest.approx(2 * 22 / (2 * 22 + 1 + 2))  # 10 + 12 shared tokens
    assert (r["label_correct"], r["label_total"]) == (5, 6)


def test_span_level_partial_full_exact_f1_by_hand():
    """ArgU §3.2.2: partial (>= 50% of a predicted span's tokens in a reference span), full (all of them), exact.

    Tokens of FIG7: Criminologists(0) familiar(1) with(2) the(3) effects(4) of(5) the(6) DP(7) on(8) crime(9)
    assert(10) that(11) the(12) DP(13) does(14) not(15) deter(16) crime(17) .(18)
    human (0,1) (4,10) (13,18); model (0,1) (6,10) (12,18).
    partial: all three predictions qualify (1/1, 4/4, 5/6 of their tokens) and find all three references: F1 1.
    full: (12,18) has "the" outside (13,18): P = R = 2/3. exact: only (0,1): P = R = 1/3."""
    human, model = fig7_spans()
    tokens = metrics.token_offsets(FIG7)
    assert metrics.token_spans(tokens, human) == [(0, 1), (4, 10), (13, 18)]
    assert metrics.token_spans(tokens, model) == [(0, 1), (6, 10), (12, 18)]
    r = metrics.evaluate([{"text": FIG7, "reference": human, "predicted": model}])
    assert (r["span_partial_precision"], r["span_partial_recall"], r["span_partial_f1"]) == (1.0, 1.0, 1.0)
    assert r["span_full_precision"] == pytest.approx(2 / 3) and r["span_full_recall"] == pytest.approx(2 / 3)
    assert r["span_full_f1"] == pytest.approx(2 / 3)
    assert r["span_exact_f1"] == pytest.approx(1 / 3)
    # a prediction with only 1 of its 4 tokens in a reference span ("familiar with the effects") misses in
    # partial mode; pooled with the example above: partial P = 3/4, R = 3/3 -> F1 = 6/7
    wide = [span(FIG7, "familiar with the effects", None)]
    r = metrics.evaluate(
        [{"text": FIG7, "reference": human, "predicted": model}, {"text": FIG7, "reference": [], "predicted": wide}]
    )
    assert r["span_partial_precision"] == pytest.approx(3 / 4) and r["span_partial_recall"] == 1.0
    assert r["span_partial_f1"] == pytest.approx(6 / 7)
    # nothing predicted, nothing referenced: agreement
    assert metrics.evaluate([{"text": FIG7, "reference": [], "predicted": []}])["span_full_f1"] == 1.0


def test_the_argspan_trainer_shares_the_span_f1():
    from ml.trainers import argspan

    assert argspan.span_f1 is metrics.span_f1


def test_metrics_command_prints_span_level_f1(tmp_path, capsys):
    import json

    from django.core.management import call_command

    human, model = fig7_spans()
    path = tmp_path / "eval.jsonl"
    path.write_text(json.dumps({"text": FIG7, "reference": human, "predicted": model}) + "\n")
    call_command("spans", "metrics", "--file", str(path))
    out = capsys.readouterr().out
    assert "span detection F1 0.870" in out and "label accuracy 0.667 (2/3)" in out
    assert "span-level F1 partial 1.000, full 0.667, exact 0.333" in out
    call_command("spans", "metrics", "--file", str(path), "--json")
    r = json.loads(capsys.readouterr().out)
    assert r["span_full_f1"] == pytest.approx(2 / 3) and r["span_partial_f1"] == 1.0
