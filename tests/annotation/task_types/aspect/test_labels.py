"""§3.1 Step 2a: # aspect tokens in the n-gram / N, on worked examples."""

from fractions import Fraction

from annotation.task_types.aspect.labels import label_rows, ngram_scores

SENTENCE = "We need background checks for buyers"
ASPECT = (8, len("background checks"))


def scores():
    return {c.text: s for c, s in ngram_scores(SENTENCE, [ASPECT])}


def test_worked_example_background_checks():
    assert SENTENCE[ASPECT[0] : sum(ASPECT)] == "background checks"
    s = scores()
    assert s["background checks"] == 1.0
    assert s["background"] == 1.0 and s["checks"] == 1.0
    assert Fraction(s["need background checks"]).limit_denominator() == Fraction(2, 3)
    assert Fraction(s["background checks for"]).limit_denominator() == Fraction(2, 3)
    assert s["We need background checks"] == 0.5
    assert s["need background"] == 0.5
    assert s["for buyers"] == 0.0 and s["We"] == 0.0
    # every 1..4-gram, unfiltered: 6 tokens -> 6 + 5 + 4 + 3
    assert len(s) == 18


def test_two_aspects_and_no_aspect():
    s = {c.text: v for c, v in ngram_scores("Clean but expensive energy", [(0, 5), (10, 9)])}
    assert s["Clean but expensive"] == 2 / 3 and s["Clean but expensive energy"] == 0.5
    assert all(v == 0.0 for _, v in ngram_scores("No aspect here", []))


def test_label_rows_have_sentence_candidate_score():
    rows = label_rows(SENTENCE, [ASPECT], topic="gun control")
    row = next(r for r in rows if r["candidate"] == "background checks")
    assert row == {
        "sentence": SENTENCE,
        "candidate": "background checks",
        "score": 1.0,
        "begin": 8,
        "length": 17,
        "topic": "gun control",
    }
