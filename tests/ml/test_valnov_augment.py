"""clone&mutate (ValNov paper §3.2, Table 1): worked examples of the mutations, the Table 1 operation choice, class
balancing, the WordNet source, and ``manage.py augment valnov --json``."""

from __future__ import annotations

import csv
import io
import json
import random
from collections import Counter

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from ml.valnov import augment as A
from ml.valnov.score import CLASSES, NOT_VALID_NOT_NOVEL, NOT_VALID_NOVEL, VALID_NOT_NOVEL, VALID_NOVEL
from ml.valnov.wordnet import FALLBACK, WordNet, load_wordnet

PREMISE = (
    "Twin Towers reconstruction: Pentagon, hardly a symbol of peace, has been rebuilt. Twin towers weren't. "
    "The message that this sends to the public is hardly positive."
)
CONCLUSION = "Pentagon rebuild sends wrong message of peace"
HEADER = "topic,Premise,Conclusion,Validity,Validity-Confidence,Novelty,Novelty-Confidence\n"


@pytest.fixture(scope="module")
def wordnet():
    return load_wordnet()


@pytest.fixture
def mutator(wordnet):
    return A.Mutator(rng=random.Random(3), wordnet=wordnet)


# --- negation ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("Year-round schools are cost-effective.", "Year-round schools are not cost-effective."),
        ("Year-round schools are not cost-effective.", "Year-round schools are cost-effective."),
        ("Twin towers weren't rebuilt.", "Twin towers were rebuilt."),
        ("We should ban telemarketing", "We should not ban telemarketing"),
        ("We can't afford it.", "We can afford it."),
        ("Pentagon has been rebuilt", "Pentagon has not been rebuilt"),
        ("Pentagon has a budget", "Pentagon does not have a budget"),
        ("It is not the case that offshore drilling is valuable.", "Offshore drilling is valuable."),
    ],
)
def test_negation_worked_examples(text, expected, mutator):
    assert mutator.negate(text) == expected


def test_negation_of_a_plain_verb_uses_do_support(wordnet, mutator):
    if wordnet.source == "fallback-table":
        pytest.skip("needs the WordNet verb list")
    assert mutator.negate(CONCLUSION) == "Pentagon rebuild does not send wrong message of peace"
    assert mutator.negate("Offshore drilling harmed the economy") == "Offshore drilling did not harm the economy"


def test_negation_without_a_verb_falls_back_to_a_grammatical_prefix():
    out = A.negate("Wind power for everyone!")
    assert out == "It is not the case that wind power for everyone!"
    assert A.negate(out) == "Wind power for everyone!"  # removing it again


def test_negation_twice_gives_the_text_back(mutator):
    for text in ("Year-round schools are cost-effective.", "We should ban telemarketing"):
        assert mutator.negate(mutator.negate(text)) == text


# --- move-premise / copy-conclusion ------------------------------------------------------------------
def test_move_premise_worked_example():
    m = A.move_premise(PREMISE, CONCLUSION)
    assert m.premise == (
        "Twin Towers reconstruction: Pentagon, hardly a symbol of peace, has been rebuilt. Twin towers weren't."
    )
    assert m.conclusion == (
        "The message that this sends to the public is hardly positive. Pentagon rebuild sends wrong message of peace"
    )
    assert m.operation == A.MOVE_PREMISE


def test_move_premise_needs_two_sentences(mutator):
    assert A.move_premise("Only one sentence here.", CONCLUSION) is None
    assert mutator.apply(A.MOVE_PREMISE, "Only one sentence here.", CONCLUSION) is None


def test_copy_conclusion_worked_examples(mutator):
    m = mutator.apply(A.COPY_NEGATED_CONCLUSION, "Year-round schools cost a lot", "Year-round schools are cheap")
    assert m.premise == "Year-round schools cost a lot. Year-round schools are not cheap"
    assert m.conclusion == "Year-round schools are cheap"
    assert A.copy_conclusion("Dogs bark.", "Dogs are loud") == "Dogs bark. Dogs are loud"
    m = mutator.apply(A.COPY_CONCLUSION, "Dogs bark a lot at night.", "Dogs are loud animals")
    assert m.premise.startswith("Dogs bark a lot at night. ") and m.premise != "Dogs bark a lot at night."
    assert m.conclusion == "Dogs are loud animals" and m.how == "substitute"


def test_negate_conclusion_operation(mutator):
    m = mutator.apply(A.NEGATE_CONCLUSION, PREMISE, "Year-round schools are cheap")
    assert (m.premise, m.conclusion) == (PREMISE, "Year-round schools are not cheap")


# --- substitution ------------------------------------------------------------------------------------
def test_wordnet_comes_from_an_installed_package_or_the_documented_table(wordnet):
    if wordnet.source == "fallback-table":
        assert wordnet.synonyms("ban") == list(FALLBACK["ban"][0])
    else:
        assert "package" in wordnet.source or "NLTK data" in wordnet.source or "ARGORA_WORDNET_DIR" in wordnet.source
        assert "domestic dog" in wordnet.synonyms("dog")
        assert "canine" in wordnet.hypernyms("dog")


def test_substitution_uses_synonyms_or_hypernyms_and_always_changes_the_text(wordnet):
    for seed in range(5):
        out, details = A.substitute(PREMISE, random.Random(seed), wordnet, phrase_probability=0, cue_probability=0)
        assert out != PREMISE
        assert details["replaced"], details
        for r in details["replaced"]:
            assert r["relation"] in ("synonym", "hypernym")
            assert r["by"] in out
    out, details = A.substitute("Xyzzy plugh.", random.Random(0), wordnet, phrase_probability=0, cue_probability=0)
    assert details["replaced"] == [] and details["phrase"] and out.endswith("plugh.")  # a non-content phrase


def test_substitution_with_a_small_table():
    table = WordNet(source="fallback-table")
    out, details = A.substitute(
        "The government should ban cars!", random.Random(1), table, phrase_probability=1, cue_probability=1
    )
    assert details["phrase"] in [p.strip(" ,") for p in A.NON_CONTENT_PHRASES]
    assert "!" not in out and out.endswith(".")
    assert details["replaced"]


# --- Table 1 -----------------------------------------------------------------------------------------
def test_table1_operation_choice():
    assert A.operations_for(VALID_NOVEL, VALID_NOT_NOVEL) == (A.CONCLUSION_FROM_PREMISE,)
    assert A.operations_for(VALID_NOVEL, NOT_VALID_NOVEL) == (A.NEGATE_CONCLUSION,)
    assert A.operations_for(VALID_NOVEL, NOT_VALID_NOT_NOVEL) == (A.COPY_NEGATED_CONCLUSION,)
    assert A.operations_for(VALID_NOT_NOVEL, NOT_VALID_NOT_NOVEL) == (A.NEGATE_CONCLUSION,)
    assert set(A.operations_for(NOT_VALID_NOVEL, VALID_NOT_NOVEL)) == {A.CONCLUSION_FROM_PREMISE, A.COPY_CONCLUSION}
    assert A.operations_for(NOT_VALID_NOVEL, NOT_VALID_NOT_NOVEL) == (A.COPY_NEGATED_CONCLUSION,)
    assert set(A.operations_for(NOT_VALID_NOT_NOVEL, VALID_NOT_NOVEL)) == {A.CONCLUSION_FROM_PREMISE, A.COPY_CONCLUSION}
    assert A.operations_for(NOT_VALID_NOT_NOVEL, NOT_VALID_NOVEL) == (A.MOVE_PREMISE,)
    for c in CLASSES:  # the diagonal: paraphrase / substitute the premise or the conclusion
        assert set(A.operations_for(c, c)) == {A.REPHRASE_PREMISE, A.REPHRASE_CONCLUSION}
    # the empty cells: nothing turns another class into valid&novel; v/¬n -> v/n or ¬v/n neither
    for source in (VALID_NOT_NOVEL, NOT_VALID_NOVEL, NOT_VALID_NOT_NOVEL):
        assert A.operations_for(source, VALID_NOVEL) == ()
    assert A.operations_for(VALID_NOT_NOVEL, NOT_VALID_NOVEL) == ()
    assert A.choose_operation(VALID_NOT_NOVEL, VALID_NOVEL, random.Random(0)) is None
    rng = random.Random(0)
    drawn = Counter(A.choose_operation(NOT_VALID_NOVEL, VALID_NOT_NOVEL, rng) for _ in range(200))
    assert set(drawn) == {A.CONCLUSION_FROM_PREMISE, A.COPY_CONCLUSION}  # a random one of the cell
    assert (
        A.choose_operation(NOT_VALID_NOVEL, VALID_NOT_NOVEL, rng, available=lambda op: op != A.COPY_CONCLUSION)
        == A.CONCLUSION_FROM_PREMISE
    )


def test_paraphrase_and_summary_are_skipped_and_reported_without_a_model(mutator):
    assert set(mutator.skipped) == {"paraphrase", "summarise"}
    for _ in range(10):
        assert mutator.rephrase(PREMISE, allow_summary=True)[1] == "substitute"


def test_a_configured_seq2seq_model_is_used(mutator):
    calls = []

    def paraphraser(text):
        calls.append(text)
        return "PARAPHRASED " + text

    m = A.Mutator(rng=random.Random(0), wordnet=mutator.wordnet, paraphraser=paraphraser)
    assert "paraphrase" not in m.skipped and "summarise" in m.skipped
    hows = Counter(m.apply(A.REPHRASE_CONCLUSION, PREMISE, CONCLUSION).how for _ in range(30))
    assert hows["paraphrase"] > 0 and calls


# --- balancing + CLI ---------------------------------------------------------------------------------
def _write(path, rows):
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(HEADER)
        w = csv.writer(fh, lineterminator="\n")
        for row in rows:
            w.writerow(row)


def _imbalanced_rows():
    rows = []
    for i in range(12):  # valid & not novel (the majority class)
        rows.append(
            [
                f"topic {i % 3}",
                f"Cities grow fast in region {i}. Housing gets expensive there.",
                f"Housing in region {i} gets expensive",
                1,
                "very confident",
                -1,
                "very confident",
            ]
        )
    for i in range(4):  # not valid & not novel
        rows.append(
            [
                f"topic {i % 3}",
                f"Parks are green in town {i}. Children play outside.",
                f"Parks are grey in town {i}",
                -1,
                "majority",
                -1,
                "confident",
            ]
        )
    for i in range(2):  # valid & novel
        rows.append(
            [
                f"topic {i}",
                f"Buses are cheap in city {i}. Many people ride buses.",
                f"City {i} should expand its bus lines",
                1,
                "confident",
                1,
                "majority",
            ]
        )
    rows.append(["topic 9", "A tie premise. Nobody knows.", "Unclear conclusion", 0, "defeasible", 1, "majority"])
    return rows


def test_balance_to_target_size(tmp_path):
    src = tmp_path / "train.csv"
    _write(src, _imbalanced_rows())
    summary = A.augment_file(src, 40, out=tmp_path / "out.csv", seed=5)
    assert summary["output_rows"] == 40
    # 1 unknown row kept (<= 20 % of 40), the other 39 shared 10/10/10/9 in the order of CLASSES
    assert summary["per_class_after"] == {
        VALID_NOVEL: 10,
        VALID_NOT_NOVEL: 10,
        NOT_VALID_NOVEL: 10,
        NOT_VALID_NOT_NOVEL: 9,
        "unknown": 1,
    }
    assert summary["per_class_before"] == {
        VALID_NOVEL: 2,
        VALID_NOT_NOVEL: 12,
        NOT_VALID_NOVEL: 0,
        NOT_VALID_NOT_NOVEL: 4,
        "unknown": 1,
    }
    assert summary["unknown_kept"] == 1 and summary["shortfall"] == {}
    assert summary["undersampled"] == {VALID_NOT_NOVEL: 2}
    assert summary["synthetic"] == 8 + 10 + 5 and summary["originals_kept"] == 2 + 10 + 4 + 1
    assert set(summary["skipped_operations"]) == {"paraphrase", "summarise"}
    rows = list(csv.DictReader(open(tmp_path / "out.csv", encoding="utf-8")))
    assert len(rows) == 40
    synthetic = [r for r in rows if r["Synthetic"] == "1"]
    assert len(synthetic) == summary["synthetic"]
    for r in synthetic:
        op = r["Mutation"].split(" ")[0]
        src_class = r["Mutation"].rsplit(" from ", 1)[1]
        target = {
            (1, 1): VALID_NOVEL,
            (1, -1): VALID_NOT_NOVEL,
            (-1, 1): NOT_VALID_NOVEL,
            (-1, -1): NOT_VALID_NOT_NOVEL,
        }[(int(r["Validity"]), int(r["Novelty"]))]
        assert op in A.operations_for(src_class, target)
        source_row = _imbalanced_rows()[int(r["Source-Line"]) - 2]
        from annotation.task_types.validity_novelty.weights import instance_weight

        assert float(r["Instance-Weight"]) == pytest.approx(0.5 * instance_weight(source_row[4], source_row[6]))
    # not-valid & novel can only come from negating a v/n conclusion or moving a ¬v/¬n premise sentence
    assert {r["Mutation"].split(" ")[0] for r in synthetic if (r["Validity"], r["Novelty"]) == ("-1", "1")} <= {
        A.NEGATE_CONCLUSION,
        A.MOVE_PREMISE,
    }
    assert sum(summary["operations"].values()) == summary["synthetic"]
    # the result reads back as training rows, synthetic rows marked
    from ml.valnov.data import read_rows

    back = read_rows(tmp_path / "out.csv")
    assert sum(r["synthetic"] for r in back) == len(synthetic)


def test_a_class_without_sources_is_reported_short(tmp_path):
    src = tmp_path / "train.csv"
    _write(src, [r for r in _imbalanced_rows() if not (r[3] == 1 and r[5] == 1)])  # no valid&novel at all
    summary = A.augment_file(src, 20, out=tmp_path / "out.csv", seed=1)
    assert summary["shortfall"] == {VALID_NOVEL: 5}  # Table 1 has no way into v/n from another class
    assert summary["per_class_after"][VALID_NOVEL] == 0


def test_augment_command_json(tmp_path):
    src = tmp_path / "train.jsonl"
    with open(src, "w", encoding="utf-8") as fh:
        for r in _imbalanced_rows():
            fh.write(json.dumps(dict(zip(HEADER.strip().split(","), r))) + "\n")
    out = io.StringIO()
    call_command("augment", "valnov", "--data", str(src), "--target-size", "24", "--json", "--seed", "2", stdout=out)
    summary = json.loads(out.getvalue())
    assert summary["output_rows"] == 24 and summary["out"].endswith("train.augmented.jsonl")
    assert summary["skipped_operations"]["paraphrase"].startswith("no seq2seq paraphrase model")
    assert summary["wordnet"]
    lines = [json.loads(x) for x in open(summary["out"], encoding="utf-8")]
    assert len(lines) == 24 and sum(1 for x in lines if x["Synthetic"] == 1) == summary["synthetic"] > 0


def test_augment_command_errors(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "t,p,c,2,very confident,1,majority\n", encoding="utf-8")
    with pytest.raises(CommandError) as err:
        call_command("augment", "valnov", "--data", str(bad), "--target-size", "10")
    assert err.value.returncode == 2 and f"{bad}:2:" in str(err.value)
    with pytest.raises(CommandError) as err:
        call_command("augment", "other", "--data", str(bad), "--target-size", "10")
    assert err.value.returncode == 2
