"""Aspect ranker trainers (kinds ``ranker`` and ``span_ranker``), their adapters and ``ml.rankers.active_ranker``.

Learning tests use synthetic App. F-like data with a planted signal (:func:`ml.data.synthetic_appf`: the aspects
are phrases of a fixed lexicon among recurring filler nouns) and must beat the baseline ranker and random scores on
held-out sentences in recall@10. Plumbing tests use a tiny BERT built from a config with the MiniLM tokenizer.
"""

from __future__ import annotations

import json
import shutil

import pytest

from annotation.task_types.aspect.candidates import candidates as make_candidates
from ml import rankers, registry, versions
from ml.data import group_sentences, split_by_sentence, synthetic_appf, synthetic_ranker_rows
from ml.errors import TrainerError
from ml.metrics import RandomScorer, baseline_scorer, evaluate_scorer, ranking_order
from ml.registry import TrainRequest

TINY_HP = {"max_steps": 40, "batch_size": 8, "max_length": 48, "lr": 1e-3, "warmup_ratio": 0.0}


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """A 2-layer, 64-wide BERT (random weights) with the packaged MiniLM's tokenizer, saved as a model folder."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from ml.encoders import default_encoder_path

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny-bert")
    tokenizer = AutoTokenizer.from_pretrained(default_encoder_path())
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=128,
    )
    BertModel(config).save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return str(path)


def train_direct(kind, rows_train, rows_dev, tmp_path, *, base_model=None, hp=None, seed=13):
    spec = registry.get_trainer(kind)
    out = tmp_path / f"{kind}-{seed}"
    out.mkdir()
    result = spec.train(
        TrainRequest(
            kind=kind,
            rows_train=rows_train,
            rows_dev=rows_dev,
            base_model=base_model,
            seed=seed,
            hyperparameters=dict(hp or {}),
            output_dir=out,
        )
    )
    return result, spec.load(out), out


@pytest.fixture(scope="module")
def planted():
    rows = synthetic_ranker_rows(64, seed=3)
    return split_by_sentence(rows, dev_fraction=0.25, seed=1)


# --- registration and data ---------------------------------------------------------------------------


def test_both_kinds_are_registered_with_recall_at_10_and_file_and_project_readers():
    for kind in ("ranker", "span_ranker"):
        spec = registry.get_trainer(kind)
        assert spec.primary_metric == "recall@10" and spec.higher_is_better
        assert spec.rows_from_file is not None and spec.rows_from_project is not None and spec.evaluate is not None


def test_unknown_hyperparameters_are_refused(tmp_path):
    rows = synthetic_ranker_rows(4)
    for kind in ("ranker", "span_ranker"):
        with pytest.raises(TrainerError, match="unknown .*learning_rate"):
            registry.get_trainer(kind).train(
                TrainRequest(
                    kind=kind,
                    rows_train=rows,
                    rows_dev=rows,
                    base_model=None,
                    seed=1,
                    hyperparameters={"learning_rate": 1},
                    output_dir=tmp_path,
                )
            )


def test_environment_hyperparameters_sit_between_defaults_and_the_request(monkeypatch):
    from ml.trainers.ranker import DEFAULTS
    from ml.training import resolve_hyperparameters

    monkeypatch.setenv("ARGORA_TRAINER_HYPERPARAMETERS", json.dumps({"ranker": {"max_steps": 7, "lr": 1e-4}}))
    hp = resolve_hyperparameters("ranker", DEFAULTS, {"lr": 2e-5})
    assert hp["max_steps"] == 7 and hp["lr"] == 2e-5 and hp["batch_size"] == DEFAULTS["batch_size"]


# --- span -> token mapping -----------------------------------------------------------------------------


def test_character_spans_map_to_token_spans_through_offsets(tiny_bert):
    from transformers import AutoTokenizer

    from ml.trainers.span_ranker import encode_sentences

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    text = "We need background checks for anti-abortion buyers."
    enc = encode_sentences(tok, [text], 64)[0]
    tokens = tok.convert_ids_to_tokens(enc.ids)
    b = text.index("background checks")
    s, e = enc.span(b, len("background checks"))
    assert tokens[s : e + 1] == ["background", "checks"]
    b = text.index("anti-abortion")
    s, e = enc.span(b, len("anti-abortion"))
    assert "".join(t.replace("##", "") for t in tokens[s : e + 1]) == "anti-abortion"
    assert tokens[0] == "[CLS]" and enc.span(0, 2)[0] == 1  # special tokens are never part of a span
    short = encode_sentences(tok, [text], 5)[0]  # [CLS] we need background [SEP]
    assert short.span(text.index("buyers"), 6) is None


def test_span_ranker_scores_all_candidates_of_a_sentence_in_one_encoder_pass(tiny_bert, planted, tmp_path):
    rows_train, rows_dev = planted
    _, model, _ = train_direct(
        "span_ranker", rows_train[:300], rows_dev, tmp_path, base_model=tiny_bert, hp={**TINY_HP, "max_steps": 2}
    )
    calls = []
    handle = model.module.encoder.register_forward_hook(lambda *a: calls.append(1))
    try:
        text = synthetic_appf(1, seed=99)[0]["sentence"]
        cands = make_candidates(text)
        assert len(cands) > 10
        scores = model.score(text, "gun control", cands)
        assert len(scores) == len(cands) and len(calls) == 1
        calls.clear()
        groups = group_sentences(rows_dev)
        model.score_groups(groups)
        assert len(calls) == -(-len(groups) // model.batch_size)  # one pass per batch of sentences
    finally:
        handle.remove()


# --- learning a planted signal -------------------------------------------------------------------------


@pytest.mark.slow
def test_span_ranker_learns_the_planted_signal(tiny_bert, planted, tmp_path):
    rows_train, rows_dev = planted
    result, model, out = train_direct(
        "span_ranker",
        rows_train,
        rows_dev,
        tmp_path,
        base_model=tiny_bert,
        hp={**TINY_HP, "max_steps": 60, "head_lr": 3e-3},
    )
    base = evaluate_scorer(baseline_scorer(rows_train), rows_dev)["recall@10"]
    rand = evaluate_scorer(RandomScorer(5), rows_dev)["recall@10"]
    loaded = evaluate_scorer(model, rows_dev)
    assert result.metrics["recall@10"] == pytest.approx(loaded["recall@10"])  # the artifact is the trained model
    assert result.metrics["baseline_recall@10"] == pytest.approx(base)
    assert loaded["recall@10"] > base and loaded["recall@10"] > rand + 0.3, (loaded, base, rand)
    assert {"encoder", "head.pt", "span_ranker.json"} <= {p.name for p in out.iterdir()}


@pytest.mark.slow
def test_cross_encoder_learns_the_planted_signal_with_the_real_minilm(planted, tmp_path):
    rows_train, rows_dev = planted
    dev_sentences = list(dict.fromkeys(r["sentence"] for r in rows_dev))[:8]
    rows_dev = [r for r in rows_dev if r["sentence"] in dev_sentences]
    result, model, out = train_direct(
        "ranker",
        rows_train,
        rows_dev,
        tmp_path,
        hp={"max_steps": 30, "batch_size": 16, "max_length": 40, "lr": 1e-4, "warmup_ratio": 0.1},
    )
    base = evaluate_scorer(baseline_scorer(rows_train), rows_dev)["recall@10"]
    rand = evaluate_scorer(RandomScorer(5), rows_dev)["recall@10"]
    loaded = evaluate_scorer(model, rows_dev)
    assert loaded["recall@10"] == pytest.approx(result.metrics["recall@10"], abs=1e-6)
    assert loaded["recall@10"] > base and loaded["recall@10"] > rand + 0.3, (loaded, base, rand)
    assert (out / "model").is_dir() and (out / "ranker.json").is_file()


@pytest.mark.slow
def test_seed_optimisation_probes_every_seed_and_keeps_the_best(tiny_bert, planted, tmp_path):
    rows_train, rows_dev = planted
    result, _, _ = train_direct(
        "span_ranker",
        rows_train[:800],
        rows_dev,
        tmp_path,
        base_model=tiny_bert,
        hp={**TINY_HP, "max_steps": 10, "seeds": [1, 2, 3]},
    )
    probes = {int(k): v for k, v in result.info["seed_probes"].items()}
    assert set(probes) == {1, 2, 3}
    assert result.info["seed"] == max(probes, key=lambda s: (probes[s], -s))
    assert result.info["steps"] == 10


# --- registry versions, active_ranker, item building ---------------------------------------------------


@pytest.fixture
def aspect_project(db):
    import annotation.task_types.aspect.task_type  # noqa: F401
    from annotation import services

    return services.create_project(
        name="rank", slug="rank", task_type="aspect", status="active", assignments_per_item=1, items_per_hit=2
    )


@pytest.mark.slow
@pytest.mark.django_db
def test_active_ranker_prefers_project_then_global_and_span_ranker_then_ranker(
    tiny_bert, planted, tmp_artifacts, aspect_project, caplog
):
    from annotation.task_types.aspect.items import build_payload
    from annotation.task_types.aspect.rankers import get_active_ranker, rank

    rows_train, rows_dev = planted
    rows_train = rows_train[:400]
    assert rankers.active_ranker(aspect_project) is None
    assert get_active_ranker(aspect_project).name == "baseline"

    def version(kind, project=None):
        v = versions.train_version(
            kind,
            rows_train=rows_train,
            rows_dev=rows_dev,
            project=project,
            base_model=tiny_bert,
            hyperparameters={**TINY_HP, "max_steps": 2},
        )
        assert v.status == "ready" and v.metrics["primary_metric"] == "recall@10"
        assert registry.activate(v)
        return v

    g_ranker = version("ranker")
    assert rankers.active_ranker(aspect_project).name == f"ranker#{g_ranker.pk}"
    g_span = version("span_ranker")
    assert rankers.active_ranker(aspect_project).name == f"span_ranker#{g_span.pk}"
    assert rankers.active_ranker(None).name == f"span_ranker#{g_span.pk}"
    p_ranker = version("ranker", aspect_project)
    assert rankers.active_ranker(aspect_project).name == f"ranker#{p_ranker.pk}"  # the project's own comes first
    p_span = version("span_ranker", aspect_project)
    active = rankers.active_ranker(aspect_project)
    assert active.name == f"span_ranker#{p_span.pk}" and active.version.pk == p_span.pk

    # item building ranks with it: payload names it, the first list is its top-k by its own scores
    text = synthetic_appf(1, seed=123)[0]["sentence"]
    payload = build_payload(text, "gun control", project=aspect_project, top_k=5)
    assert payload["ranker"] == f"span_ranker#{p_span.pk}"
    cands = make_candidates(text)
    scores = active.score(text, "gun control", cands)
    expected = [c.id for c, _ in rank(active, text, "gun control", cands)[:5]]
    assert [c["id"] for c in payload["candidates"]] == expected
    order = ranking_order([(c.begin, c.length) for c in cands], scores, [c.n for c in cands])
    assert [cands[i].id for i in order[:5]] == expected  # the metrics' tie-break is the workers' order

    # a broken artifact is skipped (logged): the next version in line is used
    shutil.rmtree(p_span.artifact_path)
    registry.clear_model_cache()
    assert rankers.active_ranker(aspect_project).name == f"ranker#{p_ranker.pk}"
    assert "could not be loaded" in caplog.text


# --- cross-topic (leave-one-topic-out) recall@k ---------------------------------------------------------------


def test_cross_topic_metrics_are_the_mean_over_held_out_topics():
    """``eval = cross-topic`` through the shared helper, with the baseline ranker as the fold "model": each held-out
    topic is scored by a scorer trained on the other topics only, the figure is the mean over topics."""
    from ml.metrics import cross_topic
    from ml.trainers.ranker import cross_topic_metrics

    rows = synthetic_ranker_rows(24, seed=5, topics=("abortion", "cloning", "gun control"))
    train, dev = split_by_sentence(rows, dev_fraction=0.25, seed=1)
    seen = []

    def fold(rows_other, topic):
        assert topic not in {r["topic"] for r in rows_other}  # never trained on the held-out topic
        seen.append(topic)
        return baseline_scorer(rows_other)

    request = TrainRequest(
        kind="ranker", rows_train=train, rows_dev=dev, base_model=None, seed=1, hyperparameters={}, output_dir=None
    )
    flat, info = cross_topic_metrics(request, {}, fold)
    assert seen == ["abortion", "cloning", "gun control"] and info["topics"] == 3
    expected = cross_topic(lambda tr, te: baseline_scorer(tr), rows)
    for k in (5, 10, 15, 20):
        per = [m[f"recall@{k}"] for m in info["per_topic"].values()]
        assert flat[f"cross_topic_recall@{k}"] == pytest.approx(sum(per) / 3)
        assert flat[f"cross_topic_recall@{k}"] == pytest.approx(expected[f"recall@{k}"])
    one = [r for r in rows if r["topic"] == "cloning"]
    with pytest.raises(TrainerError, match="at least 2 topics"):
        cross_topic_metrics(
            TrainRequest(
                kind="ranker", rows_train=one, rows_dev=[], base_model=None, seed=1, hyperparameters={}, output_dir=None
            ),
            {},
            fold,
        )
    for kind in ("ranker", "span_ranker"):
        with pytest.raises(TrainerError, match="eval must be one of"):
            registry.get_trainer(kind).train(
                TrainRequest(
                    kind=kind,
                    rows_train=rows,
                    rows_dev=[],
                    base_model=None,
                    seed=1,
                    hyperparameters={"eval": "sideways"},
                    output_dir=None,
                )
            )


@pytest.mark.slow
@pytest.mark.django_db
def test_train_cli_reports_in_and_cross_topic_recall(tiny_bert, tmp_path, tmp_artifacts):
    """``manage.py train span_ranker --eval cross-topic --json`` (and ``ranker``) on tiny App. F data of 3 topics."""
    from io import StringIO

    from django.core.management import CommandError, call_command

    rows = synthetic_appf(24, seed=4, topics=("abortion", "cloning", "gun control"))
    data = tmp_path / "appf.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for kind in ("span_ranker", "ranker"):
        buf = StringIO()
        call_command(
            "train",
            kind,
            "--data",
            str(data),
            "--base-model",
            tiny_bert,
            "--eval",
            "cross-topic",
            "--hp",
            "max_steps=3",
            "--hp",
            "batch_size=4",
            "--hp",
            "max_length=48",
            "--json",
            stdout=buf,
        )
        outcome = json.loads(buf.getvalue())
        dev = outcome["metrics"]["dev"]
        assert outcome["status"] == "ready"
        for k in (5, 10, 15, 20):
            assert 0.0 <= dev[f"recall@{k}"] <= 1.0 and 0.0 <= dev[f"cross_topic_recall@{k}"] <= 1.0
        info = outcome["metrics"]["info"]["cross_topic"]
        assert set(info["per_topic"]) == {"abortion", "cloning", "gun control"}
        per = [m["recall@10"] for m in info["per_topic"].values()]
        assert dev["cross_topic_recall@10"] == pytest.approx(sum(per) / len(per))
    text = StringIO()
    call_command(
        "train",
        "span_ranker",
        "--data",
        str(data),
        "--base-model",
        tiny_bert,
        "--eval",
        "cross-topic",
        "--hp",
        "max_steps=2",
        "--hp",
        "batch_size=4",
        "--hp",
        "max_length=48",
        stdout=text,
    )
    assert "in-topic recall @5" in text.getvalue() and "cross-topic recall @5" in text.getvalue()
    with pytest.raises(CommandError) as exc:
        call_command("train", "argspan", "--data", str(data), "--eval", "cross-topic")
    assert exc.value.returncode == 2 and "--eval" in str(exc.value)
