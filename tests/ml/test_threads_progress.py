"""CPU threads of a training run (``train --threads N``, ``$ARGORA_TORCH_THREADS``, one by default on CPU), plain
progress lines when stderr is not a terminal, and killed runs marked ``interrupted`` at once (SIGTERM / Ctrl-C in
the run's own process) or by the next ``train`` / ``models list`` / ``/ml/models/`` (a run killed outright)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
import torch
from django.core.management import CommandError, call_command
from django.utils import timezone

from argora.progress import LineProgress, cli_progress
from ml import errors, registry, training, versions
from ml.models import ModelVersion
from ml.registry import TrainerSpec
from tests.ml.fakes import fake_load, register_fake

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake_kind(tmp_artifacts):
    register_fake("fake")
    yield
    registry.unregister_trainer("fake")


@pytest.fixture
def torch_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def data_file(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"text": f"t{i}", "label": i % 2}) + "\n" for i in range(10)))
    return path


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


# --- threads ---------------------------------------------------------------------------------------


def test_thread_count_default_env_and_option(monkeypatch):
    monkeypatch.delenv(training.ENV_THREADS, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert training.thread_count() == 1  # CPU: one per worker process
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert training.thread_count() is None  # CUDA: torch's own choice
    monkeypatch.setenv(training.ENV_THREADS, "3")
    assert training.thread_count() == 3 and training.thread_count(2) == 2
    monkeypatch.setenv(training.ENV_THREADS, "auto")
    assert training.thread_count() is None
    for bad in ("two", "-1"):
        monkeypatch.setenv(training.ENV_THREADS, bad)
        with pytest.raises(errors.TrainerError, match=training.ENV_THREADS):
            training.thread_count()
    with pytest.raises(errors.TrainerError, match="threads: must be >= 1"):
        training.thread_count(0)


@pytest.mark.django_db
def test_training_runs_on_the_env_threads_and_records_them(fake_kind, torch_threads, monkeypatch):
    monkeypatch.setenv(training.ENV_THREADS, "2")
    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    v = versions.train_version("fake", rows_train=[{"label": 1}], rows_dev=[{"label": 1}])
    assert torch.get_num_threads() == 2 and os.environ["OMP_NUM_THREADS"] == "2"
    assert v.metrics["info"]["torch_threads"] == 2
    monkeypatch.delenv(training.ENV_THREADS)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    v = versions.train_version("fake", rows_train=[{"label": 1}], rows_dev=[{"label": 1}])
    assert torch.get_num_threads() == 1 and v.metrics["info"]["torch_threads"] == 1


@pytest.mark.django_db
def test_train_threads_option(fake_kind, torch_threads, tmp_path, monkeypatch):
    monkeypatch.delenv(training.ENV_THREADS, raising=False)
    out = json.loads(run("train", "fake", "--data", str(data_file(tmp_path)), "--threads", "2", "--json"))
    assert out["metrics"]["info"]["torch_threads"] == 2 and torch.get_num_threads() == 2
    for args, message in (
        (("--threads", "0"), "--threads: must be >= 1"),
        (("--threads", "2", "--queue"), "--threads: sets this process's threads"),
    ):
        with pytest.raises(CommandError) as err:
            run("train", "fake", "--data", str(data_file(tmp_path)), *args)
        assert err.value.returncode == 2 and message in str(err.value)


# --- progress lines --------------------------------------------------------------------------------


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_line_progress_writes_a_line_every_interval_and_a_last_one():
    clock, out = Clock(), StringIO()
    lines = LineProgress("train tagger", out, every=30, clock=clock)
    for step in range(1, 101):
        clock.now = step * 1.0  # one step a second
        lines(step, 100, f"epoch 1/1 loss {1 / step:.4f}")
    lines.close()
    text = out.getvalue().splitlines()
    assert text == [
        "[0:00:30] train tagger: 30/100 (30%) epoch 1/1 loss 0.0333",
        "[0:01:00] train tagger: 60/100 (60%) epoch 1/1 loss 0.0167",
        "[0:01:30] train tagger: 90/100 (90%) epoch 1/1 loss 0.0111",
        "[0:01:40] train tagger: 100/100 (100%) epoch 1/1 loss 0.0100",
    ]
    quiet, out = LineProgress("import", StringIO(), every=30, clock=Clock()), None
    quiet(5, 10, "rows")
    quiet.close()
    assert quiet.stream.getvalue() == ""  # a command that ends within the interval stays quiet


def test_cli_progress_writes_lines_when_stderr_is_no_terminal(monkeypatch):
    monkeypatch.setenv("ARGORA_PROGRESS_SECONDS", "0")
    out = StringIO()  # isatty() is False
    with cli_progress("gencorpus", stream=out) as progress:
        progress(1, 4, "first")
        progress(4, 4, "")
    assert out.getvalue().splitlines()[0].endswith("gencorpus: 1/4 (25%) first")
    assert "gencorpus: 4/4 (100%) first" in out.getvalue()


@pytest.mark.django_db
def test_train_prints_progress_lines_to_a_log(fake_kind, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ARGORA_PROGRESS_SECONDS", "0")
    run("train", "fake", "--data", str(data_file(tmp_path)))
    assert "train fake: 1/1 (100%) done" in capsys.readouterr().err


# --- interrupted runs ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_stale_training_version_is_swept_to_interrupted_by_list_and_page(fake_kind, client, staff_user):
    dead = ModelVersion.objects.create(kind="fake", status="training", heartbeat_at=timezone.now() - timedelta(hours=1))
    alive = ModelVersion.objects.create(kind="fake", status="training", heartbeat_at=timezone.now())
    [first, second] = json.loads(run("models", "list", "--json"))
    assert (first["id"], first["status"]) == (dead.pk, "interrupted") and second["status"] == "training"
    dead.refresh_from_db()
    assert dead.status == "failed" and dead.error.startswith("interrupted: no sign of life")
    other = ModelVersion.objects.create(
        kind="fake", status="training", heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    client.force_login(staff_user)
    page = client.get("/ml/models/").content.decode()
    assert (
        page.count('<span class="status-interrupted"') == 2
        and ModelVersion.objects.get(pk=alive.pk).status == "training"
    )
    assert ModelVersion.objects.get(pk=other.pk).status == "failed"


@pytest.mark.django_db
def test_ctrl_c_marks_the_version_interrupted_at_once(tmp_artifacts, tmp_path):
    def train(req):
        (req.output_dir / "weights.json").write_text("{}")
        raise KeyboardInterrupt

    registry.register_trainer(TrainerSpec(kind="stopped", train=train, load=fake_load, primary_metric="acc"))
    try:
        with pytest.raises(SystemExit) as stop:
            run("train", "stopped", "--data", str(data_file(tmp_path)))
    finally:
        registry.unregister_trainer("stopped")
    assert stop.value.code == 130
    v = ModelVersion.objects.get()
    assert (
        v.status == "failed" and v.error.startswith("interrupted: stopped by SIGINT") and v.task_id.startswith("cli-")
    )
    assert versions.status_of(v) == "interrupted" and not v.artifact_path
    assert list((tmp_artifacts / "models").glob(".tmp-*")) == []


@pytest.mark.django_db(transaction=True)
def test_sigterm_marks_the_version_interrupted_at_once(tmp_path, settings):
    from tests.worker_utils import subprocess_env

    artifacts, gate, pid_file = tmp_path / "artifacts", tmp_path / "gate", tmp_path / "pid"
    artifacts.mkdir()
    script = (
        "import os, django; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'argora.settings'); django.setup(); "
        "import tests.ml.worker_fake; from django.core.management import call_command; "
        f"call_command('train', 'fake_worker', '--data', {str(data_file(tmp_path))!r}, "
        f"'--hp', 'block_until={gate}', '--hp', 'pid_file={pid_file}')"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=subprocess_env(ARGORA_ARTIFACT_ROOT=str(artifacts)),
    )
    try:
        deadline = time.monotonic() + 90
        while not pid_file.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pid_file.exists(), proc.communicate(timeout=5)[0].decode(errors="replace")[-3000:]
        assert ModelVersion.objects.get().status == "training"
        proc.send_signal(signal.SIGTERM)
        output = proc.communicate(timeout=60)[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, output[-3000:]
    v = ModelVersion.objects.get()
    assert v.status == "failed" and v.error.startswith("interrupted: stopped by SIGTERM"), v.error
    assert not gate.exists() and list((artifacts / "models").glob(".tmp-*")) == []
