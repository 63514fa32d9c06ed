"""``manage.py aspects export --split cross-topic --test T1,T2 --dev T3`` on any topics; topics that do not match the
corpus exit 2 and write nothing (they used to write empty dev/test files and exit 0)."""

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from annotation.task_types.aspect.appf import split_rows
from tests.ml.aspect_data import aspect_rows
from tests.worker_utils import subprocess_env

pytestmark = pytest.mark.django_db

TOPICS = ("veganism", "space travel", "remote work", "tax reform", "public transport")


@pytest.fixture
def corpus(tmp_path):
    """An App. F file of 5 topics none of which is an App. F topic, imported into project "own"."""
    path = tmp_path / "own.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in aspect_rows(20, seed=5, topics=TOPICS)))
    call_command("aspects", "import", str(path), "--project", "own", "--create", stdout=StringIO())
    return path


def read(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def test_cross_topic_export_with_named_topics(corpus, tmp_path):
    out = StringIO()
    call_command(
        "aspects",
        "export",
        "--project",
        "own",
        "--split",
        "cross-topic",
        "--test",
        "Veganism, space travel",
        "--dev",
        "remote work",
        "--out-dir",
        str(tmp_path / "x"),
        stdout=out,
    )
    parts = {p: read(tmp_path / "x" / f"{p}.jsonl") for p in ("train", "dev", "test")}
    assert {r["topic"] for r in parts["test"]} == {"veganism", "space travel"}
    assert {r["topic"] for r in parts["dev"]} == {"remote work"}
    assert {r["topic"] for r in parts["train"]} == {"tax reform", "public transport"}
    assert sum(len(v) for v in parts.values()) == 20
    assert f"{tmp_path / 'x' / 'test.jsonl'}: 8 rows" in out.getvalue()


@pytest.mark.parametrize(
    "args, reason",
    [
        ([], "App. F's default test topic(s) 'gun control', 'school uniforms' are not among the rows"),
        (["--test", "veganism", "--dev", "death penalty"], "dev topic(s) 'death penalty' are not among the rows"),
        (["--test", "veganism,nope", "--dev", "tax reform"], "test topic(s) 'nope' are not among the rows"),
        (["--test", "veganism", "--dev", ","], "needs at least one dev topic"),
        (
            ["--test", "veganism,space travel,remote work", "--dev", "tax reform,public transport"],
            "no topic is left for train",
        ),
        (["--test", "veganism", "--dev", "veganism"], "in both test and dev"),
    ],
)
def test_topics_that_do_not_match_exit_2_and_write_nothing(corpus, tmp_path, args, reason):
    with pytest.raises(CommandError) as info:
        call_command(
            "aspects",
            "export",
            "--project",
            "own",
            "--split",
            "cross-topic",
            *args,
            "--out-dir",
            str(tmp_path / "x"),
            "--out",
            str(tmp_path / "all.jsonl"),
            stdout=StringIO(),
        )
    assert info.value.returncode == 2 and reason in str(info.value), str(info.value)
    if "not among" in reason or "at least" in reason or "left for train" in reason:
        assert "'public transport'" in str(info.value)  # the message lists the corpus's topics
    assert not (tmp_path / "x").exists() and not (tmp_path / "all.jsonl").exists()


def test_topic_options_need_the_cross_topic_split(corpus, tmp_path):
    with pytest.raises(CommandError) as info:
        call_command(
            "aspects",
            "export",
            "--project",
            "own",
            "--split",
            "in-topic",
            "--test",
            "veganism",
            "--out-dir",
            str(tmp_path / "x"),
            stdout=StringIO(),
        )
    assert info.value.returncode == 2 and "--test: only with --split cross-topic" in str(info.value)
    assert not (tmp_path / "x").exists()


def test_split_rows_default_topics_still_split_app_f_corpora():
    rows = [
        {"hash": f"h{i}", "topic": t}
        for i, t in enumerate(("gun control", "School Uniforms", "death penalty", "abortion", "cloning"))
    ]
    parts = split_rows(rows, "cross-topic")
    assert [len(parts[p]) for p in ("train", "dev", "test")] == [2, 1, 2]


@pytest.mark.django_db(transaction=True)
def test_exit_status_2_from_the_shell(corpus, tmp_path):
    """What a user sees: exit status 2, the reason on stderr, no files."""
    result = subprocess.run(
        [
            sys.executable,
            str(Path(settings.BASE_DIR) / "manage.py"),
            "aspects",
            "export",
            "--project",
            "own",
            "--split",
            "cross-topic",
            "--out-dir",
            str(tmp_path / "x"),
        ],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=300,
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "are not among the rows" in result.stderr and "--test T1,T2 --dev T3" in result.stderr
    assert not (tmp_path / "x").exists()
