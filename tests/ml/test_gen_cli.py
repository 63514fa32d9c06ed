"""``manage.py train generator|seq2seq``, ``manage.py generate run|evaluate|ratings|list|demo`` (issue 12)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from ml import registry
from ml.generation import generate as gen
from ml.models import ModelVersion
from tests.ml.test_gen_models import TINY, aspect_rows, seq2seq_rows

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


HP = ["--hp", "from_config=" + json.dumps(TINY), "--hp", "max_steps=3", "--hp", "lr=0.003"]


def test_train_generator_and_seq2seq_from_files_print_json(tmp_path, tmp_artifacts):
    data = write(tmp_path / "aspects.jsonl", aspect_rows())
    out = json.loads(
        run("train", "generator", "--data", str(data), "--json", *HP, "--hp", "min_args=2", "--hp", "block_size=32")
    )
    assert out["kind"] == "generator" and out["status"] == "ready" and out["activated"] is True
    assert out["metrics"]["primary_metric"] == "perplexity" and out["metrics"]["dev"]["n_dev"] > 0
    assert out["metrics"]["info"]["steps"] == 3
    version = ModelVersion.objects.get(pk=out["version"])
    assert version.data_snapshot == str(data.resolve()) and version.hyperparameters["min_args"] == 2
    rows = registry.load_model(version).generate_arguments(["nuclear energy|pro|cost"], {"max_new_tokens": 4})
    assert rows[0]["prompt"] == "nuclear energy PRO cost ."

    s_data = write(
        tmp_path / "seq2seq.jsonl",
        [dict(r, split="dev" if i % 4 == 0 else "train") for i, r in enumerate(seq2seq_rows())],
    )
    out = json.loads(run("train", "seq2seq", "--data", str(s_data), "--json", *HP, "--hp", "argu=mono"))
    assert out["kind"] == "seq2seq" and out["status"] == "ready" and out["metrics"]["dev"]["n_dev"] == 4
    assert out["metrics"]["info"]["tasks"] == ["argu-mono", "debate"]
    # the Mono model was given "<stance> <scheme> <argument> text" targets
    examples = gen.read_meta(ModelVersion.objects.get(pk=out["version"]).artifact_path)["examples"]
    assert any(
        e["target"].startswith(("<pro> <from_consequence> <argument> ", "<con> <from_consequence> <argument> "))
        for e in examples
    )
    assert registry.active_version("seq2seq").pk == out["version"]


@pytest.mark.parametrize(
    "kind, lines, line, reason",
    [
        (
            "generator",
            ['{"topic": "t", "stance": "pro", "sentence": "s.", "aspects": ["a"]}', "not json"],
            2,
            "invalid JSON",
        ),
        (
            "generator",
            ['{"topic": "t", "stance": "pro", "sentence": "s.", "aspects": ["a"]}', '{"topic": "t"}'],
            2,
            '"sentence"',
        ),
        ("generator", ['{"control_code": "t PRO a", "arguments": "one string"}'], 1, '"arguments" must be a list'),
        ("generator", ["[1, 2]"], 1, "expected a JSON object"),
        ("seq2seq", ['{"prompt": "p", "response": "r"}', '{"prompt": "p"}'], 2, "a seq2seq row needs"),
        ("seq2seq", ['{"encoder_input": "t <VAR_0> v", "mono_target": ""}'], 1, "mono_target"),
    ],
)
def test_bad_data_exits_2_with_file_line_and_trains_nothing(tmp_path, tmp_artifacts, kind, lines, line, reason):
    bad = write(tmp_path / "bad.jsonl", lines)
    with pytest.raises(CommandError) as err:
        run("train", kind, "--data", str(bad), "--json")
    assert err.value.returncode == 2
    assert str(err.value).startswith(f"{bad}:{line}: ") and reason in str(err.value)
    assert ModelVersion.objects.count() == 0


def test_too_little_data_for_a_dev_split_exits_2(tmp_path, tmp_artifacts):
    one = write(tmp_path / "one.jsonl", [{"topic": "t", "stance": "pro", "sentence": "s.", "aspects": ["a"]}])
    with pytest.raises(CommandError) as err:
        run("train", "generator", "--data", str(one))
    assert err.value.returncode == 2 and str(err.value).startswith(f"{one}:0: no dev rows")


def test_generate_run_evaluate_ratings_and_list(tmp_path, tmp_artifacts):
    data = write(tmp_path / "aspects.jsonl", aspect_rows())
    version = json.loads(
        run("train", "generator", "--data", str(data), "--json", *HP, "--hp", "min_args=2", "--hp", "block_size=32")
    )["version"]
    out = json.loads(
        run(
            "generate",
            "run",
            "--mode",
            "arguments",
            "--input",
            "nuclear energy | pro | cost",
            "--input",
            "school uniforms | con | bullying",
            "--decoding",
            "max_new_tokens=6",
            "--evaluate",
            "--json",
        )
    )  # the active generator
    assert [o["control_code"] for o in out["outputs"]] == ["nuclear energy PRO cost", "school uniforms CON bullying"]
    assert out["metrics"]["n_outputs"] == 2 and out["url"] == f"/ml/generation/runs/{out['run']}/"
    assert gen.get_run(out["run"])["model_version"] == version
    text = run("generate", "evaluate", out["run"])
    assert "distinct_1:" in text and "n_outputs: 2.0000" in text

    refs = write(
        tmp_path / "refs.jsonl",
        [
            {"topic": r["topic"], "stance": r["stance"], "aspects": r["aspects"], "text": r["sentence"]}
            for r in aspect_rows()
        ],
    )
    outcome = json.loads(
        run("generate", "ratings", out["run"], "--references", str(refs), "--project", "gen-pairs", "--json")
    )
    assert (
        outcome["project"] == "gen-pairs" and outcome["task_type"] == "pairwise_preference" and outcome["created"] == 2
    )
    listing = json.loads(run("generate", "list", "--json"))
    assert [r["id"] for r in listing] == [out["run"]] and listing[0]["evaluated"] is True

    with pytest.raises(CommandError) as err:
        run("generate", "run", "--mode", "arguments", "--input", "nuclear energy | maybe | cost")
    assert err.value.returncode == 2 and str(err.value).startswith("inputs line 1:")
    with pytest.raises(CommandError) as err:
        run("generate", "run", "--mode", "arguments", "--input", "a | pro | b", "--decoding", "theta=0")
    assert err.value.returncode == 2 and str(err.value).startswith("decoding.theta:")
    bad_refs = write(tmp_path / "bad_refs.jsonl", ['{"topic": "t"}', "{oops"])
    with pytest.raises(CommandError) as err:
        run("generate", "ratings", out["run"], "--references", str(bad_refs))
    assert err.value.returncode == 2 and str(err.value).startswith(f"{bad_refs}:2:")
    with pytest.raises(CommandError) as err:
        run("generate", "evaluate", "20000101-000000-abcdef")
    assert err.value.returncode == 2 and "no run" in str(err.value)
    assert len(gen.list_runs()) == 1  # the failed calls stored nothing


def test_demo_trains_generates_and_shows_an_evaluation_page(tmp_artifacts, client, staff_user):
    out = json.loads(run("generate", "demo", "--steps", "20", "--user", "expert", "--json"))
    for kind in ("generator", "seq2seq"):
        first, last = out["train_loss"][kind]
        assert last < first, (kind, first, last)
        assert ModelVersion.objects.get(pk=out["versions"][kind]).status == "ready"
    arguments = gen.get_run(out["runs"]["arguments"])
    assert len(arguments["outputs"]) >= 4 and all(o["text"].strip() for o in arguments["outputs"])
    assert {o["topic"] for o in arguments["outputs"]} <= {
        "abortion",
        "cloning",
        "death penalty",
        "gun control",
        "marijuana legalization",
        "minimum wage",
        "nuclear energy",
        "school uniforms",
    }
    assert arguments["metrics"]["reference"]["scored"] >= 1 and "retrieval" in arguments["metrics"]
    counter = gen.get_run(out["runs"]["counter"])
    assert counter["outputs"] and all(o["stance"] != o["input_stance"] for o in counter["outputs"] if o.get("text"))
    debate = gen.get_run(out["runs"]["debate"])
    assert [len(o["turns"]) for o in debate["outputs"]] == [4, 4]

    client.login(username="expert", password="pw-expert-123")
    page = client.get(out["urls"]["evaluation"]).content.decode()
    for run_id in out["runs"].values():
        assert f'data-run="{run_id}"' in page
    assert 'data-column="ref_meteor"' in page and 'data-column="mean_turns"' in page
    # a retrieval column only when some retrieved training argument had a reference of its code to be scored on
    # (in the demo corpus no control code is in both the train and the dev split)
    retrieval = arguments["metrics"]["retrieval"]
    assert ('data-column="retrieval_rouge_l"' in page) == (retrieval["scored"] > 0)
    run_page = client.get(out["urls"]["arguments"]).content.decode()
    assert 'id="reference-scores"' in run_page and arguments["outputs"][0]["text"][:20] in run_page
    assert arguments["created_by"] == staff_user.pk and arguments["status"] == "done"
    with pytest.raises(CommandError, match="^--user: no user 'nobody'"):
        run("generate", "demo", "--user", "nobody")
