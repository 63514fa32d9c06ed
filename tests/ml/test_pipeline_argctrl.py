"""``manage.py pipeline argctrl`` (issue 21.2): raw documents -> import -> relevance -> argument/stance silver run ->
aspect silver run -> aspect-docs release, resumable. Tiny argument and tagger models are trained here on planted
phrases (the same phrases the documents use), so the real silver path predicts real pro / con stances and aspects.
The end-to-end test kills a ``manage.py pipeline argctrl`` subprocess with SIGKILL while the argument stage runs and
checks that the re-run completes with exactly one silver label per selected sentence, and that another re-run adds
nothing."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import OperationalError
from django.urls import reverse

from corpus.models import Document, Release, Sentence
from corpus.releases import release_path
from ml import pipeline as service
from ml.generation.corpora import build_aspect_documents
from ml.models import ModelVersion, PipelineRun, SilverLabel, SilverRun
from ml.versions import train_version
from tests.worker_utils import subprocess_env

ROOT = Path(__file__).resolve().parents[2]
TINY = {
    "from_config": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64},
    "lr": 3e-3,
    "head_lr": 3e-3,
    "batch_size": 16,
    "max_length": 40,
}
TOPICS = {
    "nuclear energy": ["costs", "radioactive waste", "safety"],
    "school uniforms": ["discipline", "freedom", "prices"],
}
PRO = ["is good", "helps everyone", "should be supported", "benefits society"]
CON = ["is bad", "hurts everyone", "should be opposed", "damages society"]
NONE = ["was discussed at the meeting", "appeared in the news", "was mentioned in a report", "came up in class"]
OFF_TOPIC = [
    "The weather was mild on Sunday afternoon.",
    "My neighbour bought a red bicycle last week.",
    "The train to the coast was late again.",
    "She read three novels during the holidays.",
]
FILLER = "today many people say that indeed in fact really clearly surely".split()


def sentence(rng, topic, label, aspect=None):
    left = " ".join(rng.choice(FILLER) for _ in range(rng.randint(1, 3)))
    if label == "none":
        return f"{left} {topic} {rng.choice(NONE)}.".capitalize()
    phrase = rng.choice(PRO if label == "pro" else CON)
    right = " ".join(rng.choice(FILLER) for _ in range(rng.randint(0, 2)))
    return f"{left} {topic} {phrase} because of {aspect} {right}".strip().capitalize() + "."


def argument_rows(n, seed):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        topic = list(TOPICS)[i % 2]
        label = ("pro", "con", "none")[rng.randrange(3)]
        rows.append(
            {"topic": topic, "sentence": sentence(rng, topic, label, rng.choice(TOPICS[topic])), "label": label}
        )
    return rows


def tagger_rows(n, seed):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        topic = list(TOPICS)[i % 2]
        aspect = rng.choice(TOPICS[topic])
        text = sentence(rng, topic, rng.choice(["pro", "con"]), aspect)
        begin = text.lower().index(" because of ") + len(" because of ")
        rows.append(
            {
                "sentence": text,
                "aspect_pos": [f"({begin},{len(aspect)})"],
                "aspect_pos_string": [aspect],
                "topic": topic,
                "stance": "Argument_for",
            }
        )
    return rows


def write_documents(folder: Path, topic: str, seed: int, n_files: int = 4) -> dict:
    """``n_files`` documents: per file one argument per (stance, aspect), one no-argument sentence and one
    off-topic sentence (removed by the relevance filter). Returns the planted counts."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    seen: set = set()
    planted = Counter()
    for f in range(n_files):
        lines = []
        for stance in ("pro", "con"):
            for aspect in TOPICS[topic]:
                text = sentence(rng, topic, stance, aspect)
                while text in seen:
                    text = sentence(rng, topic, stance, aspect)
                seen.add(text)
                lines.append(text)
                planted[stance] += 1
        text = sentence(rng, topic, "none")
        while text in seen:
            text = sentence(rng, topic, "none")
        seen.add(text)
        lines.append(text)
        planted["none"] += 1
        lines.append(OFF_TOPIC[f % len(OFF_TOPIC)])
        planted["off_topic"] += 1
        rng.shuffle(lines)
        (folder / f"doc{f}.txt").write_text(" ".join(lines) + "\n", encoding="utf-8")
    return planted


@pytest.fixture
def models(tmp_artifacts):
    argument = train_version(
        "argument",
        rows_train=argument_rows(240, 1),
        rows_dev=argument_rows(48, 2),
        seed=3,
        hyperparameters=dict(TINY, epochs=4),
    )
    assert argument.status == "ready", argument.error
    tagger = train_version(
        "tagger",
        rows_train=tagger_rows(160, 3),
        rows_dev=tagger_rows(40, 4),
        seed=3,
        hyperparameters=dict(TINY, epochs=3, max_length=48),
    )
    assert tagger.status == "ready", tagger.error
    return argument, tagger


def args_for(folder, topic, versions, *extra):
    argument, tagger = versions
    return [
        "pipeline",
        "argctrl",
        "--documents",
        str(folder),
        "--topic",
        topic,
        "--argument-version",
        str(argument.pk),
        "--tagger-version",
        str(tagger.pk),
        "--batch-size",
        "4",
        "--min-args",
        "3",
        *extra,
    ]


def run_json(capsys, *args) -> dict:
    capsys.readouterr()
    call_command(*args, "--json")
    return json.loads(capsys.readouterr().out)


def counts() -> dict:
    return {
        "sentences": Sentence.objects.count(),
        "documents": Document.objects.count(),
        "runs": SilverRun.objects.count(),
        "labels": SilverLabel.objects.count(),
        "releases": Release.objects.count(),
        "pipelines": PipelineRun.objects.count(),
    }


def wait_for_argument_batches(proc, minimum: int, timeout: float = 240.0) -> int:
    """Poll the database until the subprocess's argument run has committed ``minimum`` labels."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        try:
            run_id = (
                PipelineRun.objects.filter(argument_run__isnull=False).values_list("argument_run_id", flat=True).first()
            )
            done = SilverLabel.objects.filter(run_id=run_id).count() if run_id else 0
        except OperationalError:  # the subprocess holds the SQLite write lock for a moment
            done = 0
        if done >= minimum:
            return done
        time.sleep(0.1)
    raise AssertionError("the argument stage did not start in time")


def check_run_labels(run: SilverRun, selected: set):
    labelled = list(SilverLabel.objects.filter(run=run).values_list("sentence_id", flat=True))
    assert len(labelled) == len(set(labelled)) == len(selected)  # no duplicate
    assert set(labelled) == selected  # none missing
    assert run.status == "done" and run.processed == len(selected)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_documents_to_training_documents_killed_and_resumed(tmp_path, tmp_artifacts, models, capsys):
    nuclear = tmp_path / "docs" / "nuclear"
    planted = write_documents(nuclear, "nuclear energy", 11)

    # 1. a subprocess runs the pipeline and is SIGKILLed while the argument stage runs
    env = subprocess_env(ARGORA_PIPELINE_STAGE_DELAY="1.0", ARGORA_ARTIFACT_ROOT=str(tmp_artifacts))
    proc = subprocess.Popen(
        [sys.executable, "manage.py", *args_for(nuclear, "nuclear energy", models)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        done = wait_for_argument_batches(proc, 8)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    pipeline = PipelineRun.objects.get()
    argument_run = pipeline.argument_run
    assert pipeline.stages["import"]["status"] == pipeline.stages["relevance"]["status"] == "done"
    assert pipeline.stages["argument"]["status"] == "running" and argument_run.status == "running"
    assert done < argument_run.total and pipeline.aspect_run_id is None
    relevance = pipeline.stages["relevance"]["counts"]
    assert relevance["dropped"] == planted["off_topic"]  # the off-topic sentences
    assert relevance["kept"] == planted["pro"] + planted["con"] + planted["none"]
    topic_sentences = set(Sentence.objects.filter(topic__name="nuclear energy").values_list("pk", flat=True))
    assert len(topic_sentences) == relevance["kept"]

    # 2. the same command again: continues the argument run after its checkpoint, then the later stages
    first = run_json(capsys, *args_for(nuclear, "nuclear energy", models, "--out", str(tmp_path / "docs.jsonl")))
    assert first["status"] == "done" and first["pipeline"] == pipeline.pk
    pipeline.refresh_from_db()
    argument_run.refresh_from_db()
    assert pipeline.argument_run_id == argument_run.pk  # the same run, resumed
    check_run_labels(argument_run, topic_sentences)
    stances = Counter(SilverLabel.objects.filter(run=argument_run).values_list("stance", flat=True))
    assert stances["pro"] and stances["con"] and stances["none"]  # the tiny model learnt the planted phrases
    arguments = set(
        SilverLabel.objects.filter(run=argument_run, stance__in=("pro", "con")).values_list("sentence_id", flat=True)
    )
    check_run_labels(pipeline.aspect_run, arguments)  # the tagger ran over the arguments only
    assert SilverLabel.objects.filter(run=pipeline.aspect_run).exclude(spans=[]).count() > len(arguments) // 2

    # 3. the release: one document per (topic, PRO|CON, aspect), as written to --out
    release = pipeline.release
    assert release.kind == "aspect-docs" and release.status == "published"
    docs = [json.loads(line) for line in (tmp_path / "docs.jsonl").read_text().splitlines()]
    assert docs and first["rows"] == len(docs)
    codes = {d["control_code"] for d in docs}
    assert {code.split(" ")[2] for code in codes} == {"PRO", "CON"}
    for d in docs:
        assert d["control_code"] == f"nuclear energy {d['stance'].upper()} {d['aspect']}"
        assert d["n_arguments"] >= 3 and d["source"] == "silver"
    planted_aspects = set(TOPICS["nuclear energy"])
    assert sum(d["aspect"] in planted_aspects for d in docs) >= len(docs) - 1
    figures = first["stages"]["documents"]["counts"]
    assert figures["dropped"]["not_argument"] == stances["none"]
    assert figures["documents"] == len(docs)

    # 4. re-running the finished pipeline adds nothing
    before = counts()
    again = run_json(capsys, *args_for(nuclear, "nuclear energy", models))
    assert counts() == before
    assert again["stages"] == first["stages"] and again["release"] == first["release"]

    # 5. gencorpus reads the same runs and says what each filter dropped
    out = tmp_path / "gencorpus.jsonl"
    capsys.readouterr()
    call_command(
        "gencorpus",
        "aspect-docs",
        "--silver-stance",
        str(argument_run.pk),
        "--silver-aspects",
        str(pipeline.aspect_run_id),
        "--min-args",
        "3",
        "--out",
        str(out),
        "--json",
    )
    summary = json.loads(capsys.readouterr().out)
    assert [json.loads(line) for line in out.read_text().splitlines()] == docs
    assert summary["stats"]["dropped"] == figures["dropped"]

    # 6. the second topic, in one go; a new pipeline over the first folder imports nothing new
    uniforms = tmp_path / "docs" / "uniforms"
    write_documents(uniforms, "school uniforms", 12)
    second = run_json(capsys, *args_for(uniforms, "school uniforms", models))
    assert second["status"] == "done" and second["pipeline"] != pipeline.pk
    rows = Release.objects.get(pk=second["release"])
    codes = [
        json.loads(line)["control_code"] for line in (release_path(rows) / "aspect-docs.jsonl").read_text().splitlines()
    ]
    assert codes and all(c.startswith("school uniforms ") and c.split(" ")[2] in ("PRO", "CON") for c in codes)
    sentences = Sentence.objects.count()
    third = run_json(capsys, *args_for(nuclear, "nuclear energy", models, "--new", "--release-version", "again"))
    assert third["stages"]["import"]["counts"]["sentences"] == 0 and Sentence.objects.count() == sentences
    assert third["stages"]["import"]["counts"]["documents_already_stored"] == 4


@pytest.mark.django_db
def test_bad_requests_exit_2_naming_the_option(tmp_path):
    with pytest.raises(CommandError, match="--documents") as err:
        call_command("pipeline", "argctrl", "--documents", str(tmp_path / "missing"), "--topic", "t")
    assert err.value.returncode == 2
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("Nuclear energy is good because of costs.", encoding="utf-8")
    with pytest.raises(CommandError, match="--argument-version: no model version 999") as err:
        call_command(
            "pipeline", "argctrl", "--documents", str(folder), "--topic", "nuclear energy", "--argument-version", "999"
        )
    assert err.value.returncode == 2
    with pytest.raises(CommandError, match="--argument-version: no active 'argument' model") as err:
        call_command("pipeline", "argctrl", "--documents", str(folder), "--topic", "nuclear energy")
    arg = ModelVersion.objects.create(kind="argument", status="ready", artifact_path="/x", is_active=True)
    with pytest.raises(CommandError, match="--tagger-version: model version") as err:
        call_command(
            "pipeline",
            "argctrl",
            "--documents",
            str(folder),
            "--topic",
            "nuclear energy",
            "--tagger-version",
            str(arg.pk),
        )
    tagger = ModelVersion.objects.create(kind="tagger", status="ready", artifact_path="/x", is_active=True)
    with pytest.raises(CommandError, match="--min-args") as err:
        call_command(
            "pipeline",
            "argctrl",
            "--documents",
            str(folder),
            "--topic",
            "nuclear energy",
            "--min-args",
            "5",
            "--max-args",
            "2",
        )
    assert err.value.returncode == 2 and not PipelineRun.objects.exists()
    with pytest.raises(CommandError, match="--silver-aspects: no silver run 42") as err:
        call_command("gencorpus", "aspect-docs", "--silver-aspects", "42", "--out", str(tmp_path / "o.jsonl"))
    assert err.value.returncode == 2 and tagger.pk


def test_drop_counts_per_filter():
    rows = (
        [{"topic": "t", "stance": "pro", "sentence": f"a{i}", "aspects": ["cost"]} for i in range(4)]
        + [{"topic": "t", "stance": "pro", "sentence": f"b{i}", "aspects": ["waste"]} for i in range(2)]
        + [
            {"topic": "t", "stance": "none", "sentence": "c", "aspects": ["cost"]},
            {"topic": "t", "stance": "con", "sentence": "d", "aspects": []},
        ]
    )
    stats = build_aspect_documents(rows, min_args=3, max_args=3, dropped_rows=Counter(not_argument=5)).stats
    assert stats["dropped"] == {
        "not_argument": 5,
        "no_stance": 1,
        "no_aspect": 1,
        "too_small": 2,
        "max_args": 1,
        "cap": 0,
    }
    assert stats["arguments"] == 3


@pytest.mark.django_db
def test_admin_action_runs_the_chain_with_silver_stages_queued(
    tmp_path, client, admin_user_obj, django_capture_on_commit_callbacks
):
    for kind in ("argument", "tagger"):
        ModelVersion.objects.create(kind=kind, status="ready", artifact_path="/x", is_active=True)
    folder = tmp_path / "docs"
    write_documents(folder, "school uniforms", 5, n_files=2)
    row, created = service.find_or_create(service.prepare(folder, "school uniforms"))
    assert created
    client.force_login(admin_user_obj)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:  # the broker is not needed here
        response = client.post(
            reverse("admin:ml_pipelinerun_changelist"),
            {"action": "continue_selected", "_selected_action": [row.pk]},
            follow=True,
        )
    assert response.status_code == 200 and b"waiting at stage argument" in response.content
    row.refresh_from_db()
    assert row.stages["relevance"]["counts"] == {**row.stages["relevance"]["counts"], "kept": 14, "dropped": 2}
    assert row.argument_run.status == "pending" and row.stages["argument"]["queued"] is True
    assert len(callbacks) == 1  # the run's task, sent on commit
    # the same again: the run is queued already, nothing new is started or sent
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        client.post(
            reverse("admin:ml_pipelinerun_changelist"), {"action": "continue_selected", "_selected_action": [row.pk]}
        )
    assert not callbacks and SilverRun.objects.count() == 1
