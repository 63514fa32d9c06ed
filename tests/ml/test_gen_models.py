"""Tiny end-to-end runs of the argument generators (issue 12, items 4-6).

One Arg-CTRL causal LM and one seq2seq model (ArgU Dual + debate responses) are trained once for the module
(tiny BERT configs, the packaged MiniLM tokenizer, a few dozen steps) through the registry; the tests reload them
with ``ml.registry.load_model`` and generate, evaluate, rate and serve them (API and pages).
"""

from __future__ import annotations

import itertools
import json
import shutil

import pytest
import torch
from django.contrib.auth.models import Group
from django.test import override_settings
from rest_framework.test import APIClient

from argora.roles import RESEARCHER_GROUP
from ml import registry, splits, versions
from ml.generation import corpora, runs
from ml.generation import evaluate as ev
from ml.generation import generate as gen
from ml.generation.train import TRAIN_ARGUMENTS, read_meta
from ml.models import ModelVersion
from tests.worker_utils import eager_celery

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
TOPICS = {
    "nuclear energy": {"cost": ("cheap", "expensive"), "safety": ("safe", "dangerous")},
    "school uniforms": {"cost": ("affordable", "costly"), "bullying": ("reduce teasing", "invite teasing")},
}


def aspect_rows() -> list[dict]:
    rows = []
    for topic, aspects in TOPICS.items():
        for aspect, (good, bad) in aspects.items():
            for stance, word in (("pro", good), ("con", bad)):
                for i in range(5):
                    rows.append(
                        {
                            "topic": topic,
                            "stance": stance,
                            "aspects": [aspect],
                            "sentence": f"The {aspect} of {topic} is {word} in case {i}.",
                        }
                    )
    return rows


def span_row(i: int, stance: str, a: str, b: str) -> dict:
    text = f"{a} leads to {b} as experts agree"
    return {
        "argument_id": f"s{i}",
        "topic": "energy",
        "stance": stance,
        "schemes": ["From Consequence"],
        "text": text,
        "variables": [{"id": 1, "text": a}, {"id": 2, "text": b}],
        "spans": [[0, len(a), 1], [len(a) + 10, len(a) + 10 + len(b), 2]],
    }


def seq2seq_rows() -> list[dict]:
    pairs = [("nuclear power", "low emissions"), ("coal", "smog"), ("wind farms", "rural jobs"), ("taxes", "schools")]
    rows = [corpora.argu_input(span_row(i, "pro" if i % 2 else "con", a, b)) for i, (a, b) in enumerate(pairs * 2)]
    for i in range(6):
        rows.append(
            {
                "prompt": f"School uniforms should be mandatory. <turn> They cost families money {i}.",
                "response": f"Uniforms are cheaper than fashionable clothes {i}.",
            }
        )
    return rows


HP = {"from_config": TINY, "lr": 3e-3, "warmup_ratio": 0.0, "max_evals": 1, "patience": 100}


@pytest.fixture(scope="module")
def models(django_db_setup, django_db_blocker, tmp_path_factory):
    """Both kinds trained through ``versions.train_version`` into a module folder; the rows are deleted after."""
    root = tmp_path_factory.mktemp("gen-models")
    rows = aspect_rows()
    train, dev = splits.stable_split(rows, key="sentence", dev_fraction=0.2)
    s_rows = seq2seq_rows()
    with override_settings(ARTIFACT_ROOT=root), django_db_blocker.unblock():
        from django.db import transaction

        with transaction.atomic():  # no heartbeat thread; committed at the end
            causal = versions.train_version(
                "generator",
                rows_train=train,
                rows_dev=dev,
                seed=13,
                hyperparameters=dict(HP, min_args=2, max_steps=24, batch_size=4, block_size=48),
            )
            seq = versions.train_version(
                "seq2seq",
                rows_train=s_rows,
                rows_dev=s_rows[:3] + s_rows[-2:],
                seed=13,
                hyperparameters=dict(HP, argu="dual", max_steps=20, batch_size=7),
            )
    yield {"causal": causal, "seq2seq": seq, "train": train, "dev": dev, "root": root}
    with django_db_blocker.unblock():
        ModelVersion.objects.filter(pk__in=[causal.pk, seq.pk]).delete()
    registry.clear_model_cache()
    shutil.rmtree(root, ignore_errors=True)


def first_vs_last(history: list[dict], k: int = 4) -> tuple[float, float]:
    losses = [h["loss"] for h in history]
    return sum(losses[:k]) / k, sum(losses[-k:]) / k


class GenerateSpy:
    """Wraps ``model.generate``: records the keyword arguments and the returned ids of every call."""

    def __init__(self, model):
        self.model, self.real, self.calls = model, model.generate, []

    def __call__(self, *args, **kwargs):
        out = self.real(*args, **kwargs)
        self.calls.append({"args": args, "kwargs": kwargs, "out": out})
        return out

    def __enter__(self):
        self.model.generate = self
        return self

    def __exit__(self, *exc):
        del self.model.generate  # the instance attribute goes; the class method is back


# --- the causal LM (Arg-CTRL) -------------------------------------------------------------------------------


def test_causal_lm_trains_saves_to_the_registry_and_reloads(models):
    version = ModelVersion.objects.get(pk=models["causal"].pk)
    assert version.status == "ready" and version.kind == "generator"
    assert version.metrics["primary_metric"] == "perplexity"
    dev = version.metrics["dev"]
    assert dev["n_dev"] == sum(len(r["aspects"]) for r in models["dev"]) and dev["perplexity"] > 1
    info = version.metrics["info"]
    assert info["steps"] == 24 and len(info["history"]) == 24 and info["architecture"] == "bert-decoder (from config)"
    first, last = first_vs_last(info["history"])
    assert last < first - 1.0, (first, last)  # the training loss goes down
    meta = read_meta(version.artifact_path)
    assert meta["architecture"] == "causal" and meta["code_suffix"] == " ."
    assert set(meta["control_codes"]) == {
        corpora.control_code(t, s, a) for t, aspects in TOPICS.items() for a in aspects for s in ("pro", "con")
    }
    stored = [json.loads(line) for line in open(f"{version.artifact_path}/{TRAIN_ARGUMENTS}")]
    assert {r["text"] for r in stored} == {r["sentence"] for r in models["train"]}

    generator = registry.load_model(version)
    assert isinstance(generator, gen.CausalGenerator) and registry.load_model(version) is generator
    # the reloaded model scores the dev rows as training did
    again = generator.dev_metrics(models["dev"])
    assert again["perplexity"] == pytest.approx(dev["perplexity"], rel=1e-3)


def test_causal_generation_starts_from_the_control_code_with_penalised_near_greedy_decoding(models):
    generator = registry.load_model(models["causal"])
    tok = generator.tokenizer
    with GenerateSpy(generator.model) as spy:
        rows = generator.generate_arguments(
            [{"topic": "nuclear energy", "stance": "con", "aspect": "safety"}, "school uniforms|pro|cost"],
            {"max_new_tokens": 12},
        )
    assert [r["control_code"] for r in rows] == ["nuclear energy CON safety", "school uniforms PRO cost"]
    assert [r["prompt"] for r in rows] == ["nuclear energy CON safety .", "school uniforms PRO cost ."]
    # the model was given exactly the control code + "." and continued it (greedy, penalty over generated only)
    prompts = [tok.decode(row) for call in spy.calls for row in call["kwargs"]["input_ids"].tolist()]
    assert sorted(prompts) == ["nuclear energy con safety.", "school uniforms pro cost."]
    for call in spy.calls:
        kwargs = call["kwargs"]
        ids = kwargs["input_ids"]
        assert kwargs["do_sample"] is False and kwargs["max_new_tokens"] == 12
        assert call["out"].shape[1] == ids.shape[1] + 12 and call["out"][:, : ids.shape[1]].tolist() == ids.tolist()
        (penalty,) = kwargs["logits_processor"]
        code_token = int(ids[0, 0])
        scores = torch.ones((1, len(tok)))
        after = penalty(torch.cat([ids[:1], ids[:1, :1]], dim=1), scores.clone())
        assert float(after[0, code_token]) == pytest.approx(1 / 1.2)  # penalised once generated ...
        assert float(penalty(ids[:1], scores.clone())[0, code_token]) == 1.0  # ... never for being in the code
    for row in rows:
        assert row["raw"].strip() and row["text"] and row["sentences"] == gen.split_sentences(row["raw"])
    # several samples per code sample at a temperature
    sampled = generator.generate_arguments(["nuclear energy|pro|cost"], {"n": 2, "max_new_tokens": 6})
    assert [r["sample"] for r in sampled] == [0, 1]


class FakeTagger:
    """Marks the words of a fixed vocabulary as aspects (the shape of ml.inference.TokenTagger.predict)."""

    VOCAB = ("waste", "accidents", "costs")

    def predict(self, texts, **kwargs):
        out = []
        for text in texts:
            spans = []
            for word in self.VOCAB:
                at = text.find(word)
                if at >= 0:
                    spans.append({"begin": at, "end": at + len(word), "text": word, "confidence": 0.9})
            out.append({"spans": spans, "tags": [], "confidence": 0.9})
        return out


@pytest.fixture
def active_tagger(tmp_path):
    previous = registry._TRAINERS.get("tagger")
    registry.register_trainer(
        registry.TrainerSpec(
            kind="tagger", train=lambda r: None, load=lambda p: FakeTagger(), primary_metric="f1_macro"
        )
    )
    version = ModelVersion.objects.create(kind="tagger", status="ready", is_active=True, artifact_path=str(tmp_path))
    yield version
    registry.clear_model_cache()
    registry.unregister_trainer("tagger")
    if previous is not None:
        registry.register_trainer(previous)


def test_counter_arguments_flip_the_stance_with_one_argument_per_detected_aspect(models, active_tagger):
    generator = registry.load_model(models["causal"])
    argument = "Reactor accidents are rare, and the costs of waste storage are small."
    result = generator.counter_arguments(argument, "nuclear energy", "pro", decoding={"max_new_tokens": 8})
    assert result["aspect_source"] == f"tagger #{active_tagger.pk}"
    assert result["aspects"] == ["accidents", "costs", "waste"]  # in text order, not the tagger's
    assert result["stance"] == "pro" and result["counter_stance"] == "con"
    assert [r["control_code"] for r in result["arguments"]] == [
        "nuclear energy CON accidents",
        "nuclear energy CON costs",
        "nuclear energy CON waste",
    ]
    assert all(r["stance"] == "con" and r["text"] for r in result["arguments"])
    capped = generator.counter_arguments(
        argument, "nuclear energy", "con", max_aspects=2, decoding={"max_new_tokens": 4}
    )
    assert capped["aspects"] == ["accidents", "costs"] and [r["stance"] for r in capped["arguments"]] == ["pro", "pro"]
    # no tagger span in the argument: the baseline candidates take over, still one argument per aspect
    fallback = generator.counter_arguments(
        "Solar panels are getting cheaper.", "nuclear energy", "pro", decoding={"max_new_tokens": 4}
    )
    assert fallback["aspect_source"] == "baseline" and fallback["aspects"]
    assert [r["aspect"] for r in fallback["arguments"]] == fallback["aspects"]
    assert {r["stance"] for r in fallback["arguments"]} == {"con"}


def test_counter_arguments_fall_back_to_baseline_aspect_candidates_without_a_tagger(models):
    aspects, source = gen.detect_aspects("Nuclear waste stays radioactive for thousands of years.", "nuclear energy")
    assert source == "baseline" and 1 <= len(aspects) <= 3
    assert all(a in "nuclear waste stays radioactive for thousands of years." for a in aspects)


# --- the seq2seq model (ArgU, debates) ----------------------------------------------------------------------


def test_seq2seq_trains_with_the_control_tokens_and_reloads(models):
    version = ModelVersion.objects.get(pk=models["seq2seq"].pk)
    assert version.status == "ready" and version.kind == "seq2seq" and version.metrics["dev"]["n_dev"] == 5
    info = version.metrics["info"]
    assert info["tasks"] == ["argu-dual", "debate"] and info["architecture"] == "bert2bert (from config)"
    first, last = first_vs_last(info["history"])
    assert last < first - 1.0, (first, last)
    generator = registry.load_model(version)
    assert isinstance(generator, gen.Seq2SeqGenerator)
    tok = generator.tokenizer
    for token in corpora.special_tokens() + ["<turn>"]:  # ArgU Table 6 tokens + the turn separator
        assert len(tok.encode(token, add_special_tokens=False)) == 1, token
    assert tok.encode("<VAR_0> coal", add_special_tokens=False)[0] == tok.convert_tokens_to_ids("<VAR_0>")
    assert generator.model.decoder.get_input_embeddings().num_embeddings == len(tok)
    assert read_meta(version.artifact_path)["argu"] == "dual"
    assert generator.dev_metrics(seq2seq_rows()[:3])["loss"] > 0


def test_argu_generation_beam_search_with_trigram_blocking_mono_and_dual(models):
    generator = registry.load_model(models["seq2seq"])
    items = [
        {
            "topic": "energy",
            "stance": "pro",
            "scheme": "From Consequence",
            "variables": ["coal", "smog"],
            "reference": "coal leads to smog",
        },
        {"topic": "energy", "stance": "con", "variables": "wind farms; rural jobs"},
    ]
    with GenerateSpy(generator.model) as spy:
        dual = generator.argu(items, mode="dual", decoding={"max_new_tokens": 16})
        mono = generator.argu(items[:1], mode="mono", decoding={"max_new_tokens": 16})
    for call in spy.calls:
        kw = call["kwargs"]
        assert kw["num_beams"] == 5 and kw["no_repeat_ngram_size"] == 3
        for row in call["out"].tolist():  # no token trigram repeats
            trigrams = [tuple(row[i : i + 3]) for i in range(len(row) - 2)]
            assert len(trigrams) == len(set(trigrams))
    tok = generator.tokenizer
    decoder_prefixes = sorted(tok.decode(r) for c in spy.calls for r in c["kwargs"]["decoder_input_ids"].tolist())
    assert decoder_prefixes == [
        "[CLS] <con> <pattern>",
        "[CLS] <pro> <from_consequence> <argument>",
        "[CLS] <pro> <from_consequence> <pattern>",
    ]
    encoder_inputs = [
        tok.decode(r, skip_special_tokens=False).replace(" [PAD]", "")
        for c in spy.calls
        for r in c["kwargs"]["input_ids"].tolist()
    ]
    assert "[CLS] energy <VAR_0> coal <VAR_1> smog [SEP]" in encoder_inputs
    assert dual[0]["encoder_input"] == "energy <VAR_0> coal <VAR_1> smog"
    assert dual[1]["encoder_input"] == "energy <VAR_0> wind farms <VAR_1> rural jobs"
    assert dual[0]["output"].startswith("<pro> <from_consequence> <pattern>") and dual[0]["mode"] == "dual"
    assert dual[1]["output"].startswith("<con> <pattern>") and dual[1]["stance"] == "con"
    assert mono[0]["output"].startswith("<pro> <from_consequence> <argument>") and mono[0]["template"] is None
    for row in dual + mono:  # the argument text carries no control token
        assert not any(t in row["text"] for t in corpora.special_tokens())
    assert dual[0]["reference"] == "coal leads to smog"


def test_debate_alternates_speakers_and_feeds_each_response_back(models):
    generator = registry.load_model(models["seq2seq"])
    seen = []
    real = generator.respond

    def respond(prompts, decoding=None):
        seen.extend(prompts)
        return real(prompts, decoding)

    generator.respond = respond
    try:
        debate = generator.debate("School uniforms should be mandatory.", turns=4, decoding={"max_new_tokens": 10})
        two = generator.debate("Homework should be banned.", turns=3, context_turns=2, decoding={"max_new_tokens": 6})
    finally:
        del generator.respond
    turns = debate["turns"]
    assert [t["speaker"] for t in turns] == ["Alice", "Bob", "Alice", "Bob"]
    assert turns[0]["prompt"] == "School uniforms should be mandatory."
    for before, after in itertools.pairwise(turns):
        assert after["prompt"] == before["text"] and before["text"]
    assert seen[:4] == [t["prompt"] for t in turns]
    # two turns of context: the last two turns joined by the turn separator
    t = two["turns"]
    assert t[1]["prompt"] == "Homework should be banned. <turn> " + t[0]["text"]
    assert t[2]["prompt"] == t[0]["text"] + " <turn> " + t[1]["text"]
    responses = generator.respond(
        ["School uniforms should be mandatory. <turn> They cost money."], {"max_new_tokens": 8}
    )
    assert len(responses) == 1 and responses[0] and "<turn>" not in responses[0]


# --- runs, evaluation, human evaluation ---------------------------------------------------------------------


def _references(rows):
    return [{"topic": r["topic"], "stance": r["stance"], "aspects": r["aspects"], "text": r["sentence"]} for r in rows]


def test_evaluate_run_stores_the_metrics_and_send_to_ratings_creates_pairwise_items(models, tmp_artifacts):
    from annotation.models import Item, Project

    codes = [
        {"topic": "nuclear energy", "stance": "pro", "aspect": "cost"},
        {"topic": "school uniforms", "stance": "con", "aspect": "bullying"},
    ]
    run = gen.run_generation(
        "arguments",
        codes,
        version=models["causal"],
        decoding={"max_new_tokens": 12},
        references=_references(models["train"]),
        name="t",
    )
    assert gen.get_run(run["id"])["metrics"] is None
    metrics = ev.evaluate_run(run["id"])
    stored = gen.get_run(run["id"])["metrics"]
    assert stored == json.loads(json.dumps(metrics))
    assert metrics["n_outputs"] == 2 and metrics["training_arguments"] == len(models["train"])
    assert metrics["model_dev"]["perplexity"] == pytest.approx(models["causal"].metrics["dev"]["perplexity"])
    assert set(metrics["reference"]) >= {"meteor", "rouge_l", "scored"} and metrics["reference"]["scored"] == 2
    # the retrieval baseline returns every training argument of the code; here the references are those very
    # arguments, so it scores ROUGE-L 1 (the upper bound of Table 5)
    train_codes = [
        r
        for r in models["train"]
        if (r["topic"], r["stance"], r["aspects"][0]) in {(c["topic"], c["stance"], c["aspect"]) for c in codes}
    ]
    assert metrics["retrieval"]["scored"] == metrics["retrieval"]["n"] == len(train_codes)
    assert metrics["retrieval"]["rouge_l"] == pytest.approx(1.0)
    assert len(metrics["novelty"]["pairs"]) == 2 and 0 <= metrics["aspect_presence"] <= 1

    outcome = ev.send_to_ratings(run["id"])
    project = Project.objects.get(slug=outcome["project"])
    assert project.task_type == "pairwise_preference" and outcome["created"] == 2 and outcome["hits"] >= 1
    items = list(Item.objects.filter(project=project))
    texts = {o["text"] for o in run["outputs"]}
    assert len(items) == 2 and {i.payload["a"]["text"] for i in items} == texts
    assert all(i.payload["b"]["system"] == "reference" for i in items)
    assert gen.get_run(run["id"])["ratings"] == {"pairwise_preference": project.slug}
    assert ev.send_to_ratings(run["id"])["skipped"] == 2  # idempotent

    # without references a run stores the model's held-out dev arguments as its references
    default = gen.run_generation("arguments", codes, version=models["causal"], decoding={"max_new_tokens": 4})
    stored_refs = gen.get_run(default["id"])["references_rows"]
    assert {r["text"] for r in stored_refs} == {r["sentence"] for r in models["dev"]}
    assert default["config"]["references_source"] == "model dev split"
    dev_codes = {(r["topic"], r["stance"], r["aspects"][0]) for r in models["dev"]}
    scored = ev.evaluate_run(default["id"])["reference"]["scored"]
    assert scored == sum((c["topic"], c["stance"], c["aspect"]) in dev_codes for c in codes)
    # a run with no reference of its topic and stance cannot be rated; nothing is created
    lonely = gen.run_generation(
        "arguments", ["space travel|pro|cost"], version=models["causal"], decoding={"max_new_tokens": 4}
    )
    before = Project.objects.count()
    with pytest.raises(gen.GenerationError, match="^references:"):
        ev.send_to_ratings(lonely["id"])
    assert Project.objects.count() == before


def test_debate_runs_go_to_likert_items(models, tmp_artifacts):
    from annotation.models import Item

    run = gen.run_generation(
        "debate",
        [{"thesis": "School uniforms should be mandatory.", "turns": 3}],
        version=models["seq2seq"],
        decoding={"max_new_tokens": 8},
    )
    metrics = ev.evaluate_run(run["id"])
    assert metrics["debates"] == 1 and metrics["mean_turns"] == 3
    outcome = ev.send_to_ratings(run["id"], project_slug="debate-ratings")
    assert outcome["task_type"] == "likert_debate" and outcome["created"] == 1
    item = Item.objects.get(project__slug="debate-ratings")
    assert [t["speaker"] for t in item.payload["turns"]] == ["Alice", "Bob", "Alice"]


# --- API and pages ------------------------------------------------------------------------------------------


@pytest.fixture
def api(staff_user):
    client = APIClient()
    client.force_authenticate(staff_user)
    return client


def test_api_generates_for_staff_and_stores_the_run(models, tmp_artifacts, api, django_user_model, settings):
    body = {
        "mode": "arguments",
        "model_version": models["causal"].pk,
        "decoding": {"max_new_tokens": 8},
        "inputs": [{"topic": "nuclear energy", "stance": "con", "aspect": "safety"}, "school uniforms|pro|cost"],
    }
    with eager_celery(settings):  # the task runs in this process (tests/ml/test_gen_worker.py: a real worker)
        resp = api.post("/api/generate/", body, format="json")
    assert resp.status_code == 202, resp.content
    data = resp.json()
    assert data["status"] == "queued" and data["model_version"] == models["causal"].pk
    assert data["url"] == f"/ml/generation/runs/{data['run']}/" and data["job"].startswith("/jobs/")
    assert [r["id"] for r in gen.list_runs()] == [data["run"]]
    detail = api.get(f"/api/generate/runs/{data['run']}/").json()
    assert detail["status"] == "done" and detail["progress"] == {"done": 2, "total": 2, "percent": 100.0}
    assert detail["config"]["decoding"] == {"max_new_tokens": 8} and len(detail["outputs"]) == 2
    assert [o["input"] for o in detail["outputs"]] == [0, 1]
    assert detail["outputs"][1]["control_code"] == "school uniforms PRO cost" and detail["outputs"][0]["text"]
    assert detail["references"] > 0 and detail["config"]["references_source"] == "model dev split"
    assert api.get("/api/generate/runs/").json()["runs"][0]["id"] == data["run"]
    evaluated = api.post(f"/api/generate/runs/{data['run']}/evaluate/", format="json")
    assert evaluated.status_code == 200 and evaluated.json()["n_outputs"] == 2
    # lines and the active model of the mode's kind; "store": false is refused (every request is a stored run)
    registry.activate(models["seq2seq"])
    with eager_celery(settings):
        resp = api.post(
            "/api/generate/",
            {"mode": "responses", "lines": "Uniforms are good. | They are not.", "decoding": {"max_new_tokens": 6}},
            format="json",
        )
    assert resp.status_code == 202
    assert api.get(resp.json()["state"]).json()["outputs"][0]["reference"] == "They are not."
    assert api.post("/api/generate/", dict(body, store=False), format="json").json()["errors"].keys() == {"store"}
    assert len(gen.list_runs()) == 2

    django_user_model.objects.create_user("crowd", "c@example.org", "pw-crowd-123")
    other = APIClient()
    other.force_authenticate(django_user_model.objects.get(username="crowd"))
    assert other.post("/api/generate/", body, format="json").status_code == 403
    assert other.get("/api/generate/runs/").status_code == 403
    assert APIClient().post("/api/generate/", body, format="json").status_code in (401, 403)


def test_a_failing_run_is_marked_failed_with_the_error(models, tmp_artifacts, api, staff_user):
    version = ModelVersion.objects.get(pk=models["causal"].pk)
    meta = gen.create_run(
        mode="arguments",
        outputs=[],
        version=version,
        status="queued",
        created_by=staff_user.pk,
        config={"inputs": [{"topic": "t", "stance": "pro", "aspect": "a"}]},
        extra={"n_inputs": 1, "inputs_done": 0},
    )
    real = version.artifact_path
    registry.clear_model_cache()
    ModelVersion.objects.filter(pk=version.pk).update(artifact_path=str(tmp_artifacts / "gone"))
    try:  # the artifact went missing after the request was checked: the worker's task fails
        with pytest.raises(gen.GenerationError, match="^model_version: .*could not be loaded"):
            runs.execute_run(meta["id"])
    finally:
        ModelVersion.objects.filter(pk=version.pk).update(artifact_path=real)
        registry.clear_model_cache()
    run = api.get(f"/api/generate/runs/{meta['id']}/").json()
    assert run["status"] == "failed" and "could not be loaded" in run["error"] and run["outputs"] == []
    assert api.post(f"/api/generate/runs/{meta['id']}/evaluate/").json()["errors"].keys() == {"run"}
    with pytest.raises(gen.GenerationError):  # a redelivered task of a failed run does not run it again
        runs.execute_run(meta["id"])


@pytest.mark.parametrize(
    "body, field",
    [
        ({"mode": "poems", "inputs": [{"thesis": "x"}]}, "mode"),
        ({"mode": "arguments", "inputs": [{"topic": "t", "stance": "maybe", "aspect": "a"}]}, "inputs"),
        ({"mode": "arguments", "inputs": []}, "inputs"),
        ({"mode": "arguments", "lines": "t | pro"}, "lines"),
        ({"mode": "arguments", "inputs": ["t|pro|a"], "decoding": {"theta": "much"}}, "decoding"),
        ({"mode": "arguments", "inputs": ["t|pro|a"], "decoding": {"beams": 3}}, "decoding"),
        ({"mode": "debate", "inputs": [{"thesis": "x"}], "options": {"turns": 99}}, "options"),
        ({"mode": "arguments", "inputs": ["t|pro|a"], "model_version": 999999}, "model_version"),
        ({"mode": "arguments", "inputs": ["t|pro|a"], "model_version": "seq2seq"}, "model_version"),
        (
            {"mode": "argu", "inputs": [{"topic": "t", "stance": "pro", "variables": ["a"]}], "kind": "generator"},
            "model_version",
        ),
        ({"mode": "arguments", "inputs": ["t|pro|a"], "references": "nope"}, "references"),
    ],
)
def test_api_bad_input_is_400_naming_the_field_and_writes_no_run(models, tmp_artifacts, api, body, field):
    body = dict(body)
    if field != "model_version" and "model_version" not in body and body.get("mode") == "arguments":
        body["model_version"] = models["causal"].pk
    if body.get("kind") == "generator":
        registry.activate(models["causal"])  # an argu request served by the causal LM: the wrong kind
    resp = api.post("/api/generate/", body, format="json")
    assert resp.status_code == 400, resp.content
    errors = resp.json()["errors"]
    assert list(errors) == [field], errors
    assert not gen.runs_root().exists() or not any(gen.runs_root().iterdir())


def test_generation_pages_render_for_staff(models, tmp_artifacts, client, staff_user, django_user_model, settings):
    assert client.get("/ml/generation/").status_code == 302  # anonymous -> login
    django_user_model.objects.create_user("crowd", "c@example.org", "pw-crowd-123")
    client.login(username="crowd", password="pw-crowd-123")
    assert client.get("/ml/generation/").status_code == 403
    client.login(username="expert", password="pw-expert-123")
    page = client.get("/ml/generation/").content.decode()
    assert 'id="generate-form"' in page and f'value="{models["causal"].pk}"' in page and 'id="no-runs"' in page

    bad = client.post(
        "/ml/generation/",
        {"mode": "arguments", "inputs": "nuclear energy | maybe | cost", "model_version": models["causal"].pk},
    )
    assert bad.status_code == 400 and 'data-field="inputs"' in bad.content.decode() and not gen.list_runs()
    bad = client.post(
        "/ml/generation/",
        {
            "mode": "arguments",
            "inputs": "nuclear energy | pro | cost",
            "model_version": models["causal"].pk,
            "theta": "0.5",
        },
    )
    assert bad.status_code == 400 and 'data-field="theta"' in bad.content.decode() and not gen.list_runs()

    form = {
        "mode": "arguments",
        "inputs": "nuclear energy | pro | cost\nschool uniforms | con | bullying",
        "model_version": models["causal"].pk,
        "max_new_tokens": "10",
        "name": "page run",
    }
    with eager_celery(settings):  # the worker's task runs in this process
        resp = client.post("/ml/generation/", form)
    assert resp.status_code == 302
    (run,) = gen.list_runs()
    assert resp.url == f"/ml/generation/runs/{run['id']}/" and run["name"] == "page run"
    page = client.get(resp.url).content.decode()
    assert "nuclear energy PRO cost" in page and 'id="not-evaluated"' in page and 'data-status="done"' in page
    assert "<script" not in page.split('id="outputs"')[1]  # done: nothing polls
    stored = gen.get_run(run["id"])
    for o in stored["outputs"]:
        assert f'data-output="{o["id"]}"' in page
    assert client.post(f"/ml/generation/runs/{run['id']}/evaluate/").status_code == 302
    page = client.get(resp.url).content.decode()
    assert 'id="metrics"' in page and 'data-metric="distinct_2"' in page and 'id="novelty"' in page
    evaluation = client.get("/ml/generation/evaluation/").content.decode()
    assert f'data-run="{run["id"]}"' in evaluation and "dev_perplexity" in evaluation
    assert client.get("/ml/generation/runs/20000101-000000-abcdef/").status_code == 404

    # a queued run (no worker here): the page polls its JSON and shows no evaluation yet
    resp = client.post("/ml/generation/", dict(form, name="waiting"))
    waiting = next(r for r in gen.list_runs() if r["name"] == "waiting")
    page = client.get(resp.url).content.decode()
    assert waiting["status"] == "queued" and 'data-status="queued"' in page and 'id="evaluate"' not in page
    assert f'data-url="/api/generate/runs/{waiting["id"]}/"' in page and '<script nonce="' in page
    assert client.post(f"/ml/generation/runs/{waiting['id']}/evaluate/").status_code == 302
    assert gen.get_run(waiting["id"])["metrics"] is None

    # another researcher sees none of these runs
    other = django_user_model.objects.create_user("other", "o@example.org", "pw-other-123", is_staff=True)
    other.groups.add(Group.objects.get(name=RESEARCHER_GROUP))
    client.login(username="other", password="pw-other-123")
    assert client.get(f"/ml/generation/runs/{run['id']}/").status_code == 404
    assert client.post(f"/ml/generation/runs/{run['id']}/evaluate/").status_code == 404
    assert 'id="no-runs"' in client.get("/ml/generation/").content.decode()
    assert f'data-run="{run["id"]}"' not in client.get("/ml/generation/evaluation/").content.decode()
