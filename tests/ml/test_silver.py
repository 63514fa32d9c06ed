"""Silver annotation runs (ml.silver): batches, checkpoint + resume without duplicates, cancel, filters, release."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.models import Sentence, Topic
from ml import silver
from ml.models import ModelVersion, SilverLabel, SilverRun

pytestmark = pytest.mark.django_db


class FakeTagger:
    """Marks the word "costs" as an aspect; raises on call number ``crash_on`` (a worker dying mid-batch)."""

    def __init__(self, crash_on=None):
        self.calls, self.crash_on = 0, crash_on

    def predict(self, texts, variables=None, *, batch_size=64):
        self.calls += 1
        if self.crash_on is not None and self.calls == self.crash_on:
            raise RuntimeError("worker lost")
        out = []
        for t in texts:
            spans = []
            if "costs" in t:
                b = t.index("costs")
                spans.append({"begin": b, "end": b + 5, "text": "costs", "confidence": 0.9})
            out.append({"tags": [], "spans": spans, "confidence": 0.95})
        return out


@pytest.fixture
def corpus():
    nuclear = Topic.objects.create(name="nuclear energy")
    other = Topic.objects.create(name="school uniforms")
    for i in range(23):
        Sentence.objects.create(
            topic=nuclear,
            text=f"Sentence {i} about {'costs' if i % 2 else 'safety'}.",
            stance="pro",
            source="cc" if i < 20 else "reddit",
            content_hash=f"n{i}",
        )
    for i in range(5):
        Sentence.objects.create(topic=other, text=f"Uniform sentence {i}.", stance="con", content_hash=f"u{i}")
    return nuclear


@pytest.fixture
def version(tmp_path):
    return ModelVersion.objects.create(kind="tagger", status="ready", artifact_path=str(tmp_path), is_active=True)


def test_run_labels_the_selection_in_batches(corpus, version):
    run = silver.start("tagger", topic="nuclear-energy", source="cc", batch_size=8)
    assert run.model_version == version  # the active tagger
    seen = []
    result = silver.process(run.pk, model=FakeTagger(), progress=lambda d, t, desc="": seen.append((d, t)))
    assert result["status"] == "done" and result["processed"] == 20 and result["batches"] == 3
    assert SilverLabel.objects.filter(run=run).count() == 20
    assert result["labelled"] == 10  # the odd sentences mention costs
    assert seen[-1] == (20, 20)
    label = next(lab for lab in SilverLabel.objects.filter(run=run) if lab.spans)
    assert label.spans[0]["text"] == "costs" and label.confidence == pytest.approx(0.95)
    # gold and crowd labels are untouched: silver lives in its own table
    assert not Sentence.objects.filter(topic=corpus, metadata__has_key="spans").exists()


def test_crash_after_two_batches_then_resume_never_duplicates(corpus, version):
    run = silver.start("tagger", topic=corpus, batch_size=5)
    with pytest.raises(RuntimeError, match="worker lost"):
        silver.process(run.pk, model=FakeTagger(crash_on=3))  # batches 1 and 2 commit, batch 3 dies
    run.refresh_from_db()
    ids = list(Sentence.objects.filter(topic=corpus).order_by("pk").values_list("pk", flat=True))
    assert run.status == "failed" and "worker lost" in run.error
    assert run.processed == 10 and run.last_sentence_id == ids[9]
    assert SilverLabel.objects.filter(run=run).count() == 10
    silver.resume(run)
    result = silver.process(run.pk, model=FakeTagger())
    assert result["status"] == "done" and result["processed"] == 23
    labelled = list(SilverLabel.objects.filter(run=run).values_list("sentence_id", flat=True))
    assert sorted(labelled) == ids  # every sentence exactly once
    # a redelivered task for a finished run does nothing
    assert silver.process(run.pk, model=FakeTagger(crash_on=1))["processed"] == 23


def test_a_worker_killed_without_cleanup_resumes_from_the_checkpoint(corpus, version):
    run = silver.start("tagger", all_sentences=True, batch_size=4)
    with pytest.raises(RuntimeError):
        silver.process(run.pk, model=FakeTagger(crash_on=2))
    SilverRun.objects.filter(pk=run.pk).update(status="running")  # as if SIGKILLed: still "running"
    result = silver.process(run.pk, model=FakeTagger())  # the redelivered task
    assert result["processed"] == 28 and SilverLabel.objects.filter(run=run).count() == 28


def test_cancel_is_checked_between_batches(corpus, version):
    run = silver.start("tagger", topic=corpus, batch_size=6)

    def progress(done, total, desc=""):
        if done == 6:
            silver.cancel(run)  # e.g. `manage.py silver cancel <run>` from another process

    result = silver.process(run.pk, model=FakeTagger(), progress=progress)
    assert result["status"] == "cancelled" and result["processed"] == 6
    assert SilverLabel.objects.filter(run=run).count() == 6
    pending = silver.start("tagger", topic=corpus)
    assert silver.cancel(pending).status == "cancelled"  # not running: cancelled at once


def test_start_refuses_without_a_model_or_a_selection(corpus):
    with pytest.raises(silver.SilverError, match="no active 'tagger' model"):
        silver.start("tagger", topic=corpus)
    ModelVersion.objects.create(kind="tagger", status="ready", artifact_path="/x", is_active=True)
    with pytest.raises(silver.SilverError, match="selection"):
        silver.start("tagger")
    with pytest.raises(silver.SilverError, match="no topic"):
        silver.start("tagger", topic="no-such-topic")
    with pytest.raises(CommandError) as err:
        call_command("silver", "cancel", "999")
    assert err.value.returncode == 2


def test_scheme_filter_keeps_schemes_above_a_fifth_of_their_mean_and_drops_others():
    means = {"From Consequence": 0.5, "Source Authority": 0.2, "Others": 0.3}
    opts = {"scheme_ratio": 0.2, "discard_others": True}
    spans, kept, keep = silver.filter_label(
        None, [], {"From Consequence": 0.6, "Source Authority": 0.03, "Others": 0.1}, means, opts
    )
    # .6 >= .1 kept; .03 < .04 dropped; Others .1 >= .06 kept as a label but not the top scheme
    assert kept == ["From Consequence", "Others"] and keep
    _, _, keep = silver.filter_label(None, [], {"From Consequence": 0.2, "Others": 0.7}, means, opts)
    assert not keep  # top scheme Others: discarded
    _, _, keep = silver.filter_label(
        None, [], {"From Consequence": 0.2, "Others": 0.7}, means, dict(opts, discard_others=False)
    )
    assert keep
    spans, _, _ = silver.filter_label(None, [{"confidence": 0.3}, {"confidence": 0.8}], {}, {}, {"min_confidence": 0.5})
    assert spans == [{"confidence": 0.8}]


def test_silver_release_is_its_own_kind(corpus, version, tmp_artifacts):
    from corpus.releases import build_release, release_path

    run = silver.start("tagger", topic=corpus, batch_size=10)
    with pytest.raises(ValueError, match="only a done run"):
        build_release("silver-nuclear", "v1", kind="silver", config={"runs": [run.pk]})
    silver.process(run.pk, model=FakeTagger())
    release = build_release("silver-nuclear", "v2", kind="silver", config={"runs": [run.pk]})
    rows = [json.loads(line) for line in (release_path(release) / "silver.jsonl").read_text().splitlines()]
    assert len(rows) == 23 and all(r["silver"] and r["source"] == f"model:{version.pk}" for r in rows)
    with_aspect = [r for r in rows if r["spans"]]
    assert with_aspect[0]["aspect_pos_string"] == ["costs"]  # App. F shape for tagger runs
    b, n = map(int, with_aspect[0]["aspect_pos"][0].strip("()").split(","))
    assert with_aspect[0]["sentence"][b : b + n] == "costs"
    assert "Silver labels" in (release_path(release) / "README.md").read_text()


@pytest.mark.slow
def test_end_to_end_with_a_trained_tagger_and_the_cli(corpus, tmp_artifacts, capsys):
    from ml.registry import activate
    from ml.versions import train_version
    from tests.ml.test_taggers import TINY, planted_tagger_rows

    version = train_version(
        "tagger",
        rows_train=planted_tagger_rows(160, 1),
        rows_dev=planted_tagger_rows(50, 2),
        seed=3,
        hyperparameters=dict(TINY, epochs=3),
    )
    assert activate(version)
    Sentence.objects.create(
        topic=corpus, text="We oppose it because of safety really.", stance="con", content_hash="planted", source="cc"
    )
    call_command(
        "silver", "start", "--kind", "tagger", "--topic", "nuclear energy", "--source", "cc", "--batch-size", "7"
    )
    run = SilverRun.objects.get()
    assert run.status == "done" and run.processed == 21 and run.model_version == version
    label = SilverLabel.objects.get(run=run, sentence__content_hash="planted")
    assert [s["text"] for s in label.spans] == ["safety"]
    call_command("silver", "status", str(run.pk))
    assert '"status": "done"' in capsys.readouterr().out


# --- --json and recovery of runs left "running" ------------------------------------------------------------------


def _cmd_json(*args):
    from io import StringIO

    out = StringIO()
    call_command("silver", *[str(a) for a in args], stdout=out)
    text = out.getvalue()
    return json.loads(text), text  # json.loads fails on anything but one JSON document


def test_silver_cli_json_start_resume_status(corpus, version, monkeypatch, django_capture_on_commit_callbacks):
    from unittest import mock

    fake = FakeTagger()
    monkeypatch.setattr("ml.registry.load_model", lambda v, **kw: fake)
    out, _ = _cmd_json(
        "start", "--kind", "tagger", "--topic", "nuclear-energy", "--source", "cc", "--batch-size", 8, "--json"
    )
    run = SilverRun.objects.get()
    assert out["run"] == run.pk and out["status"] == "done" and out["processed"] == 20 and out["batches"] == 3
    assert out["model_version"] == version.pk
    # a crashed run, resumed with --json
    crashed = silver.start("tagger", topic=corpus, batch_size=5)
    with pytest.raises(RuntimeError):
        silver.process(crashed.pk, model=FakeTagger(crash_on=2))
    out, _ = _cmd_json("resume", crashed.pk, "--json")
    assert (out["run"], out["status"], out["processed"]) == (crashed.pk, "done", 23)
    # status: one object with a run id, a list without
    out, _ = _cmd_json("status", run.pk, "--json")
    assert out["run"] == run.pk and out["status"] == "done"
    out, _ = _cmd_json("status", "--json")
    assert sorted(r["run"] for r in out) == sorted([run.pk, crashed.pk])
    # --queue --json: the pending run's summary, enqueued after the commit
    with mock.patch("ml.tasks.silver.apply_async") as send, django_capture_on_commit_callbacks(execute=True):
        out, _ = _cmd_json("start", "--kind", "tagger", "--all", "--queue", "--json")
    assert out["queued"] is True and out["status"] == "pending"
    send.assert_called_once_with(args=[out["run"]])
    # errors still exit 2 (nothing on stdout)
    with pytest.raises(CommandError) as err:
        _cmd_json("resume", 999, "--json")
    assert err.value.returncode == 2


def _stale(run, seconds):
    from datetime import timedelta

    from django.utils import timezone

    SilverRun.objects.filter(pk=run.pk).update(
        status="running", heartbeat_at=timezone.now() - timedelta(seconds=seconds)
    )


def test_recover_interrupted_marks_stale_running_runs_and_requeues_from_the_checkpoint(
    corpus, version, django_capture_on_commit_callbacks
):
    from unittest import mock

    from ml import tasks

    dead = silver.start("tagger", topic=corpus, batch_size=5)
    with pytest.raises(RuntimeError):
        silver.process(dead.pk, model=FakeTagger(crash_on=3))  # 10 sentences committed
    _stale(dead, 600)  # as if the worker was SIGKILLed 10 minutes ago: still "running"
    alive = silver.start("tagger", topic=corpus, batch_size=5)
    _stale(alive, 5)  # a heartbeat 5 s ago: left alone
    checkpoint = SilverRun.objects.get(pk=dead.pk).last_sentence_id
    assert silver.recover_interrupted(older_than=60) == [
        {"run": dead.pk, "kind": "tagger", "processed": 10, "last_sentence_id": checkpoint, "requeued": False}
    ]
    dead.refresh_from_db()
    assert dead.status == "failed" and dead.error.startswith("interrupted: no sign of life")
    assert SilverRun.objects.get(pk=alive.pk).status == "running"
    assert silver.recover_interrupted(older_than=60) == []  # taken once
    # the beat task: requeue -> pending + ml.tasks.silver sent again; the run continues after its checkpoint
    _stale(dead, 600)
    with (
        mock.patch("ml.versions.recover_interrupted", return_value=[]),
        mock.patch("ml.tasks.silver.apply_async") as send,
        django_capture_on_commit_callbacks(execute=True),
    ):
        found = tasks.recover_interrupted()
    assert [f["run"] for f in found] == [dead.pk] and found[0]["requeued"] is True
    send.assert_called_once_with(args=[dead.pk])
    dead.refresh_from_db()
    assert dead.status == "pending" and dead.error == ""
    result = silver.process(dead.pk, model=FakeTagger())  # what the requeued task does
    assert result["status"] == "done" and result["processed"] == 23
    assert SilverLabel.objects.filter(run=dead).count() == 23  # no sentence twice
    # the CLI does the same sweep
    _stale(alive, 600)
    out, _ = _cmd_json("recover", "--older-than", 60, "--json")
    assert [r["run"] for r in out["recovered"]] == [alive.pk] and out["recovered"][0]["requeued"] is False
