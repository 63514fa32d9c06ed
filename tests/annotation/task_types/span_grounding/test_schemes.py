from annotation.task_types.span_grounding.schemes import DEFAULT_SCHEMES, aggregate_schemes, control_code, match_scheme


def test_default_schemes_are_the_papers():
    assert DEFAULT_SCHEMES == [
        "Means for Goal",
        "Goal from Means",
        "From Consequence",
        "Source Knowledge",
        "Source Authority",
        "Rule or Principle",
        "Others",
    ]
    assert control_code("From Consequence") == "<from_consequence>"
    assert match_scheme("<rule_or_principle>", DEFAULT_SCHEMES) == "Rule or Principle"
    assert match_scheme("from  consequence", DEFAULT_SCHEMES) == "From Consequence"
    assert match_scheme("Appeal to pity", DEFAULT_SCHEMES) is None


def test_multilabel_majority():
    answers = [["From Consequence", "Rule or Principle"], ["From Consequence"], ["Rule or Principle", "Others"]]
    r = aggregate_schemes(answers, DEFAULT_SCHEMES)
    assert r["schemes"] == ["From Consequence", "Rule or Principle"]  # 2 of 3 each; Others has 1
    assert r["counts"] == {"From Consequence": 2, "Rule or Principle": 2, "Others": 1}
    assert r["top"] == "From Consequence"  # tie broken by the configured order
    assert aggregate_schemes([[], []], DEFAULT_SCHEMES) == {"schemes": [], "counts": {}, "n": 2, "top": None}
    assert aggregate_schemes(answers, DEFAULT_SCHEMES, threshold=1)["schemes"] == [
        "From Consequence",
        "Rule or Principle",
        "Others",
    ]
