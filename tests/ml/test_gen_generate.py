"""Generation without trained models (issue 12, items 5-6): penalised sampling, sentence splitting, ArgU
formatting at inference, input checking, stored runs, the evaluation of a run's outputs and the rating rows."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from ml.generation import corpora
from ml.generation import evaluate as ev
from ml.generation import generate as gen
from ml.generation import metrics as M

# --- penalised sampling (CTRL, Arg-CTRL §5.2) ----------------------------------------------------------------


def test_penalty_divides_positive_and_multiplies_negative_logits_of_generated_tokens_only():
    # vocabulary of 6; the prompt (the control code) is tokens [0, 4]; generated so far: [1, 3, 1]
    input_ids = torch.tensor([[0, 4, 1, 3, 1]])
    scores = torch.tensor([[2.0, 3.0, 0.5, -1.0, 4.0, -2.0]])
    out = gen.penalty_processor(1.2, prompt_length=2)(input_ids, scores.clone())
    expected = torch.tensor(
        [
            [
                2.0,  # 0: in the control code only -> not penalised
                3.0 / 1.2,  # 1: generated (twice), positive -> divided once
                0.5,  # 2: never generated
                -1.0 * 1.2,  # 3: generated, negative -> multiplied
                4.0,  # 4: control code -> not penalised
                -2.0,
            ]
        ]
    )  # 5: never generated
    assert torch.allclose(out, expected)
    # greedy choice before: token 4 (the code's own token, 4.0); after: still 4 -- the code is never pushed away
    assert int(out.argmax()) == 4
    # once the code's token has been generated too, it is penalised like any other: 3.3 / 1.2 = 2.75 < 3.0
    close = torch.tensor([[2.0, 3.0, 0.5, -1.0, 3.3, -2.0]])
    again = gen.penalty_processor(1.2, prompt_length=2)(torch.tensor([[0, 4, 4]]), close.clone())
    assert float(again[0, 4]) == pytest.approx(2.75) and int(close.argmax()) == 4 and int(again.argmax()) == 1
    # nothing generated yet, or theta 1: unchanged
    assert torch.equal(gen.penalty_processor(1.2, prompt_length=2)(input_ids[:, :2], scores.clone()), scores)
    assert torch.equal(gen.penalty_processor(1.0, prompt_length=2)(input_ids, scores.clone()), scores)


def test_sentence_splitting_drops_a_trailing_fragment():
    assert gen.split_sentences("Nuclear power is cheap.  It is also safe! and then the") == [
        "Nuclear power is cheap.",
        "It is also safe!",
    ]
    assert gen.split_sentences("only a fragment without end") == ["only a fragment without end"]
    assert gen.split_sentences("First one. Second one") == ["First one."]
    assert gen.split_sentences("First one. Second one", drop_fragment=False) == ["First one.", "Second one"]
    assert gen.split_sentences("   ") == []


# --- ArgU formatting at inference matches the training targets (ArgU §4.1) ------------------------------------

SPAN_ROW = {
    "argument_id": "a7",
    "topic": "nuclear energy",
    "stance": "pro",
    "schemes": ["From Consequence"],
    "text": "Reactors emit little carbon so climate targets are met",
    "variables": [{"id": 1, "text": "nuclear reactors"}, {"id": 2, "text": "climate targets"}],
    "spans": [[0, 8, 1], [33, 48, 2]],
}


def test_argu_inference_input_and_decoder_prefix_match_the_training_format():
    row = corpora.argu_input(SPAN_ROW, seed=13)
    variables = [v["text"] for v in row["variables"]]
    # the encoder input is rebuilt from topic + variables in tag order
    assert gen.argu_encoder_input("nuclear energy", variables) == row["encoder_input"]
    assert gen.argu_encoder_input("nuclear  energy", ["a b", "c"]) == "nuclear energy <VAR_0> a b <VAR_1> c"
    # the decoder prefix is the start of the Mono / Dual target: stance, scheme, then <argument> / <pattern>
    mono = gen.argu_decoder_prefix("pro", "From Consequence", "mono")
    dual = gen.argu_decoder_prefix("Argument_for", "<from_consequence>", "dual")
    assert mono == "<pro> <from_consequence> <argument>" and row["mono_target"].startswith(mono + " ")
    assert dual == "<pro> <from_consequence> <pattern>" and row["dual_target"].startswith(dual + " ")
    assert gen.argu_decoder_prefix("con", None, "mono") == "<con> <argument>"
    with pytest.raises(gen.GenerationError, match="^variables:"):
        gen.argu_encoder_input("t", ["a", "b", "c", "d", "e"])
    with pytest.raises(gen.GenerationError, match="^stance:"):
        gen.argu_decoder_prefix("neutral", None, "mono")


# --- inputs -------------------------------------------------------------------------------------------------


def test_parse_lines_per_mode_and_errors_name_the_line():
    assert gen.parse_lines("arguments", "# a comment\nnuclear energy | PRO | waste\n\n") == [
        {"topic": "nuclear energy", "stance": "pro", "aspect": "waste"}
    ]
    assert gen.parse_lines("counter", "uniforms | con | They cost money | a lot") == [
        {"topic": "uniforms", "stance": "con", "argument": "They cost money | a lot"}
    ]
    assert gen.parse_lines("argu", "energy | pro | From Consequence | coal; smog | coal causes smog") == [
        {
            "topic": "energy",
            "stance": "pro",
            "scheme": "From Consequence",
            "variables": ["coal", "smog"],
            "reference": "coal causes smog",
        }
    ]
    assert gen.parse_lines("debate", "Uniforms should be compulsory.") == [{"thesis": "Uniforms should be compulsory."}]
    with pytest.raises(gen.GenerationError, match=r"^inputs line 2: .*stance"):
        gen.parse_lines("arguments", "a | pro | b\na | maybe | b")
    with pytest.raises(gen.GenerationError, match=r"^inputs line 1: variables"):
        gen.parse_lines("argu", "energy | pro |  | ")
    with pytest.raises(gen.GenerationError, match="^inputs: give at least one line"):
        gen.parse_lines("responses", "\n# nothing\n")


def test_inputs_and_decoding_are_checked_before_any_model_runs():
    gen.check_inputs("arguments", [{"topic": "t", "stance": "con", "aspect": "a"}, "t|pro|a", ["t", "pro", "a"]])
    for mode, inputs, field in [
        ("arguments", [{"topic": "t", "stance": "maybe", "aspect": "a"}], r"inputs\[0\]\.stance"),
        (
            "arguments",
            [{"topic": "t", "stance": "pro", "aspect": "a"}, {"topic": "", "stance": "pro", "aspect": "a"}],
            r"inputs\[1\]\.topic",
        ),
        ("counter", [{"topic": "t", "stance": "pro"}], r"inputs\[0\]\.argument"),
        ("argu", [{"topic": "t", "stance": "pro", "variables": []}], r"inputs\[0\]\.variables"),
        ("argu", ["not an object"], r"inputs\[0\]: an object"),
        ("responses", [{"prompt": "  "}], r"inputs\[0\]\.prompt"),
        ("debate", [{"thesis": "x", "turns": 0}], r"inputs\[0\]\.turns"),
        ("debate", [], r"inputs: give at least one"),
    ]:
        with pytest.raises(gen.GenerationError, match="^" + field):
            gen.check_inputs(mode, inputs)
    assert gen.clean_decoding({"theta": 1.2, "max_new_tokens": 20.0, "do_sample": False}) == {
        "theta": 1.2,
        "max_new_tokens": 20,
        "do_sample": False,
    }
    for decoding, field in [
        ({"theta": "high"}, "decoding.theta"),
        ({"max_new_tokens": 0}, "decoding.max_new_tokens"),
        ({"beams": 5}, "decoding.beams: unknown"),
        ({"n": 2.5}, "decoding.n"),
        ({"do_sample": 1}, "decoding.do_sample"),
        ([1], "decoding: an object"),
    ]:
        with pytest.raises(gen.GenerationError, match="^" + field):
            gen.clean_decoding(decoding)
    with pytest.raises(gen.GenerationError, match="^options.argu"):
        gen.clean_options({"argu": "triple"})


# --- stored runs --------------------------------------------------------------------------------------------


def test_runs_are_stored_all_or_nothing(tmp_artifacts, monkeypatch):
    meta = gen.create_run(
        mode="arguments",
        outputs=[{"topic": "t", "stance": "pro", "aspect": "a", "text": "x."}],
        references=[{"topic": "t", "stance": "pro", "aspect": "a", "text": "y."}],
        name="one",
    )
    run = gen.get_run(meta["id"])
    assert run["outputs"] == [{"id": 0, "topic": "t", "stance": "pro", "aspect": "a", "text": "x."}]
    assert run["references_rows"][0]["text"] == "y." and run["metrics"] is None and run["name"] == "one"
    assert [r["id"] for r in gen.list_runs()] == [meta["id"]]

    real = gen.write_jsonl
    calls = []

    def failing(rows, path):  # the outputs are written, then the references fail half-way
        calls.append(path.name)
        if path.name == "references.jsonl":
            real(rows, path)
            raise OSError("disk full")
        return real(rows, path)

    monkeypatch.setattr(gen, "write_jsonl", failing)
    with pytest.raises(OSError):
        gen.create_run(mode="arguments", outputs=[{"text": "z."}], references=[{"text": "w."}])
    assert calls == ["outputs.jsonl", "references.jsonl"]
    assert [p.name for p in gen.runs_root().iterdir()] == [meta["id"]]  # no run, no temporary folder left
    with pytest.raises(gen.GenerationError, match="^run:"):
        gen.get_run("../../etc")
    with pytest.raises(gen.GenerationError, match="^mode:"):
        gen.create_run(mode="poems", outputs=[])


# --- evaluation of outputs ----------------------------------------------------------------------------------


def fake_encode(texts):
    """Bag of letters a-e: a deterministic stand-in for the sentence encoder."""
    return np.array([[t.lower().count(c) + 0.01 for c in "abcde"] for t in texts], dtype=float)


def test_distinct_n_worked_example():
    # tokens: [a b a b] [a c]: unigrams 6, distinct {a, b, c} = 3; bigrams ab ba ab ac = 4, distinct 3
    assert ev.distinct_n(["a b a b", "a c"], 1) == pytest.approx(3 / 6)
    assert ev.distinct_n(["a b a b", "a c"], 2) == pytest.approx(3 / 4)
    assert ev.distinct_n([], 2) == 0.0


def test_evaluate_outputs_of_arguments_against_references_and_the_retrieval_baseline():
    outputs = [
        {"id": 0, "topic": "energy", "stance": "pro", "aspect": "cost", "text": "the cost of power is low"},
        {"id": 1, "topic": "energy", "stance": "con", "aspect": "waste", "text": "it makes no sense"},
        {"id": 2, "topic": "energy", "stance": "con", "aspect": "waste", "text": ""},
    ]
    references = [
        {"topic": "energy", "stance": "pro", "aspects": ["costs"], "text": "the cost of power is high"},
        {"topic": "energy", "stance": "con", "aspect": "waste", "text": "waste stays toxic for ages"},
    ]
    training = [
        {"topic": "energy", "stance": "pro", "aspect": "cost", "text": "power costs are low"},
        {"topic": "energy", "stance": "con", "aspect": "waste", "text": "waste is dangerous"},
    ]
    result = ev.evaluate_outputs("arguments", outputs, references=references, training=training, encode=fake_encode)
    assert result["n_outputs"] == 3 and result["empty"] == 1 and result["mean_words"] == pytest.approx((6 + 4) / 2)
    assert result["aspect_present"] == [True, False] and result["aspect_presence"] == 0.5
    expected = M.reference_scores(outputs[:2], references)
    assert result["reference"]["meteor"] == pytest.approx(expected["meteor"])
    assert result["reference"]["rouge_l"] == pytest.approx(
        (M.rouge_l(outputs[0]["text"], references[0]["text"]) + M.rouge_l(outputs[1]["text"], references[1]["text"]))
        / 2
    )
    # retrieval baseline (§5.2): every training argument of the output's control code, scored the same way
    assert result["retrieval"]["n"] == 2 and result["retrieval"]["scored"] == 2
    assert result["retrieval"]["rouge_l"] == pytest.approx(
        (
            M.rouge_l("power costs are low", "the cost of power is high")
            + M.rouge_l("waste is dangerous", "waste stays toxic for ages")
        )
        / 2
    )
    nov = M.novelty([o["text"] for o in outputs[:2]], [t["text"] for t in training], encode=fake_encode)
    assert result["novelty"]["mean_cosine"] == pytest.approx(nov["mean_cosine"])
    assert len(result["novelty"]["pairs"]) == 2


def test_evaluate_outputs_of_argu_responses_and_debates():
    argu = [{"variables": ["coal", "smog"], "text": "coal causes smog", "reference": "coal leads to smog"}]
    result = ev.evaluate_outputs("argu", argu, encode=fake_encode)
    assert result["fact_faithfulness"] == pytest.approx(
        M.fact_faithfulness(["coal", "smog"], "coal causes smog", encode=fake_encode)
    )
    assert result["bleu"] == pytest.approx(M.bleu(["coal causes smog"], ["coal leads to smog"]))
    assert result["rouge_l"] == pytest.approx(M.rouge_l("coal causes smog", "coal leads to smog"))
    responses = ev.evaluate_outputs("responses", [{"prompt": "p", "text": "a b c", "reference": "a b d"}])
    assert responses["meteor"] == pytest.approx(M.meteor("a b c", "a b d")) and responses["n_references"] == 1
    debate = ev.evaluate_outputs(
        "debate",
        [{"turns": [{"speaker": "Alice", "text": "one two"}, {"speaker": "Bob", "text": "three four five six"}]}],
    )
    assert debate["debates"] == 1 and debate["mean_turns"] == 2 and debate["mean_words_per_turn"] == 3


def test_pair_rows_prefer_the_same_aspect_and_the_inputs_own_reference():
    run = {
        "id": "r1",
        "system": "generator-v3",
        "outputs": [
            {"id": 0, "topic": "Energy", "stance": "pro", "aspect": "costs", "text": "gen A."},
            {"id": 1, "topic": "energy", "stance": "con", "aspect": "waste", "text": "gen B."},
            {"id": 2, "topic": "energy", "stance": "pro", "text": "gen C.", "reference": "own reference."},
            {"id": 3, "topic": "other", "stance": "pro", "aspect": "x", "text": "gen D."},  # no reference: skipped
            {"id": 4, "topic": "energy", "stance": "pro", "aspect": "cost", "text": ""},
        ],
    }  # empty: skipped
    refs = [
        {"topic": "energy", "stance": "pro", "aspects": ["safety"], "text": "ref safety."},
        {"topic": "energy", "stance": "pro", "aspects": ["cost"], "text": "ref cost."},
        {"topic": "energy", "stance": "con", "aspect": "jobs", "text": "ref jobs."},
    ]
    rows = {r["id"]: r for r in ev.pair_rows(run, refs)}
    assert sorted(rows) == ["r1:0", "r1:1", "r1:2"]
    assert rows["r1:0"]["b"] == {"system": "reference", "text": "ref cost."}  # same stem "cost"
    assert rows["r1:0"]["a"] == {"system": "generator-v3", "text": "gen A."}
    assert rows["r1:1"]["b"]["text"] == "ref jobs."  # only one of that stance
    assert rows["r1:2"]["b"]["text"] == "own reference."
    debates = ev.debate_rows(
        {
            "id": "r2",
            "system": "seq2seq-v4",
            "outputs": [
                {"id": 0, "topic": "t", "turns": [{"speaker": "Alice", "text": "a"}, {"speaker": "Bob", "text": "b"}]},
                {"id": 1, "topic": "t", "turns": [{"speaker": "Alice", "text": "a"}]},
            ],
        }
    )
    assert [d["id"] for d in debates] == ["r2:0"] and json.dumps(debates[0]["turns"])
