"""Candidates and the App. A filters, checked by hand on a few sentences; the ranker interface and registry."""

from annotation.task_types.aspect import rankers
from annotation.task_types.aspect.candidates import candidates, ngrams, tokenize
from annotation.task_types.aspect.rankers import BaselineRanker, get_active_ranker, rank


def texts(sentence):
    return [c.text for c in candidates(sentence)]


def test_hand_checked_simple_sentence():
    # tokens: Nuclear energy is clean .  ("is" is a stopword, "." punctuation)
    assert texts("Nuclear energy is clean.") == [
        "Nuclear",
        "Nuclear energy",
        "Nuclear energy is clean",
        "energy",
        "energy is clean",
        "clean",
    ]


def test_hand_checked_digits_and_punctuation():
    # tokens: It costs $ 5 billion , and 2 reactors failed .
    assert texts("It costs $5 billion, and 2 reactors failed.") == [
        "costs",
        "billion",
        "reactors",
        "reactors failed",
        "failed",
    ]


def test_hand_checked_stopwords_at_the_edges_only():
    # "don't" and "at" are stopwords: allowed inside a candidate, never at its first or last token
    assert texts("School uniforms don't stop bullying at school.") == [
        "School",
        "School uniforms",
        "School uniforms don't stop",
        "uniforms",
        "uniforms don't stop",
        "uniforms don't stop bullying",
        "stop",
        "stop bullying",
        "stop bullying at school",
        "bullying",
        "bullying at school",
        "school",
    ]


def test_offsets_hyphens_and_curly_apostrophes():
    sentence = "Anti-abortion  laws don’t  protect women."
    for c in candidates(sentence):
        assert sentence[c.begin : c.begin + c.length] == c.text and c.id == f"{c.begin}:{c.length}"
    assert [t.text for t in tokenize(sentence)][:2] == ["Anti-abortion", "laws"]
    assert "Anti-abortion  laws" in texts(sentence)  # inner whitespace kept as written
    assert "laws don’t" not in texts(sentence)  # ’ counts as '
    assert max(c.n for c in ngrams(sentence)) == 4 and len(ngrams("a b c d e")) == 5 + 4 + 3 + 2


def test_baseline_ranker_scores_every_candidate_and_prefers_topic_recurring_phrases():
    topic_sentences = {
        "gun control": [
            "Background checks save lives.",
            "Universal background checks work.",
            "Gun owners oppose background checks.",
        ]
    }
    ranker = BaselineRanker(topic_sentences, load_from_db=False)
    sentence = "Gun control needs background checks, not bans."
    cands = candidates(sentence)
    scores = ranker.score(sentence, "gun control", cands)
    assert len(scores) == len(cands) and all(isinstance(s, float) for s in scores)
    ranked = [c.text for c, _ in rank(ranker, sentence, "gun control", cands)]
    assert ranked[0] == "background checks"
    assert ranked.index("background checks") < ranked.index("Gun control")  # the topic is not its own aspect


def test_ties_go_to_the_longer_ngram_then_the_earlier():
    class Flat:
        name = "flat"

        def score(self, sentence_text, topic, cands):
            return [0.5] * len(cands)

    ranked = [c.text for c, _ in rank(Flat(), "Nuclear energy is clean.", "t", candidates("Nuclear energy is clean."))]
    assert ranked == ["Nuclear energy is clean", "energy is clean", "Nuclear energy", "Nuclear", "energy", "clean"]


def test_get_active_ranker_falls_back_to_the_baseline(monkeypatch):
    class P:
        config = {}

    import types

    from annotation import providers

    monkeypatch.setattr(providers.ranker, "provider", None)  # no ML side
    assert isinstance(get_active_ranker(P()), BaselineRanker)
    trained = types.SimpleNamespace(name="trained", score=lambda s, t, c: [0.0] * len(c))
    monkeypatch.setattr(providers.ranker, "provider", lambda project: trained)
    assert get_active_ranker(P()) is trained
    monkeypatch.setattr(providers.ranker, "provider", lambda project: None)  # the ML side has no trained ranker
    assert isinstance(get_active_ranker(P()), BaselineRanker)
    assert "baseline" in rankers.ranker_names()
