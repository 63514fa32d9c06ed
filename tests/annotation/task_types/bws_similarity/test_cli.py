"""manage.py bws score|sample|build: JSON output, file:line errors with exit 2."""

import json
import subprocess
import sys

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import HIT, Item, Project

from .helpers import make_topics

HEADER = "tuple,annotator,topic,best,worst,items\n"


def run_cli(*args):
    return subprocess.run([sys.executable, "manage.py", "bws", *args], capture_output=True, text=True, timeout=120)


def write(tmp_path, body, name="a.csv"):
    path = tmp_path / name
    path.write_text(HEADER + body, encoding="utf-8")
    return str(path)


def test_score_json(tmp_path, capsys):
    body = "".join(f"t1,w{k},cloning,a,d,a|b|c|d\n" for k in range(4))
    body += "".join(f"t2,w{k},cloning,a,e,a|c|e|f\n" for k in range(4))
    body += "t3,w1,uniforms,x,y,x|y|z|q\nt3,w2,uniforms,x,y,x|y|z|q\n"
    call_command("bws", "score", "--file", write(tmp_path, body), "--splits", "25", "--seed", "0", "--json")
    out = json.loads(capsys.readouterr().out)
    assert out["scores"]["a"] == 1.0 and out["scores"]["e"] == 0.0 and out["scores"]["b"] == 0.5
    assert out["scores"]["d"] == 0.0
    assert out["counts"]["a"] == {"best": 8, "worst": 0, "appearances": 8, "topic": "cloning"}
    assert set(out["split_half"]) == {"cloning", "uniforms", "all"}
    assert out["split_half"]["cloning"] == pytest.approx(1.0)
    assert out["split_half"]["all"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "body, line, reason",
    [
        ("t1,w1,T,a,a,a|b|c|d\n", 2, "must differ"),
        ("t1,w1,T,a,b,a|b|c|d\nt1,w2,T,z,b,a|b|c|d\n", 3, "best: 'z' is not one of the tuple's pairs"),
        ("t1,w1,T,a,b,a|b|c|d\nt1,w1,T,a,c,a|b|c|d\n", 3, "judged tuple 't1' twice"),
        ("t1,w1,T,a,b,a|b|c|d\nt2,w1,T,a,b,a|b|c\n", 3, "every tuple must have 4 pairs"),
        ("t1,w1,T,a,b,a||c|d\n", 2, "empty pair id"),
        ("t1,w1,,a,b,a|b|c|d\n", 2, "topic: empty"),
        ("", 2, "no judgements"),
    ],
)
def test_score_bad_input_exits_2_with_file_line_reason(tmp_path, body, line, reason):
    path = write(tmp_path, body)
    r = run_cli("score", "--file", path, "--json")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().startswith(f"{path}:{line}: ")
    assert reason in r.stderr
    assert r.stdout == ""


def test_score_missing_column_and_missing_file(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("tuple,annotator,best,worst,items\n", encoding="utf-8")
    r = run_cli("score", "--file", str(path))
    assert r.returncode == 2 and f"{path}:1: missing column(s) topic" in r.stderr
    r = run_cli("score", "--file", str(tmp_path / "none.csv"))
    assert r.returncode == 2 and "none.csv:0: cannot open" in r.stderr


@pytest.mark.django_db
def test_sample_and_build(capsys):
    make_topics()
    with pytest.raises(CommandError) as exc:
        call_command("bws", "sample", "--project", "sim", "--topic", "cloning", "--pairs", "6")
    assert exc.value.returncode == 2
    call_command(
        "bws",
        "sample",
        "--project",
        "sim",
        "--topic",
        "cloning",
        "--pairs",
        "6",
        "--seed",
        "3",
        "--scorer",
        "jaccard",
        "--create",
    )
    call_command(
        "bws", "sample", "--project", "sim", "--topic", "school uniforms", "--pairs", "5", "--scorer", "jaccard"
    )
    out = capsys.readouterr().out
    assert "cloning: 6 pairs of 15" in out and "school uniforms: 5 pairs of 15" in out
    project = Project.objects.get(slug="sim")
    assert project.task_type == "bws_similarity" and project.assignments_per_item == 4
    with pytest.raises(CommandError, match="unknown scorer"):
        call_command("bws", "sample", "--project", "sim", "--topic", "cloning", "--pairs", "6", "--scorer", "x")
    call_command("bws", "build", "--project", "sim")
    out = capsys.readouterr().out
    assert "cloning: 12 tasks of 4 over 6 pairs (each pair in 8-8 tasks), 2 attention checks" in out
    assert "sim: status draft: workers cannot start yet" in out  # it says so, and how to open it
    assert Item.objects.filter(project=project, is_gold=False).count() == 22
    assert HIT.objects.filter(project=project).count() == 5
    call_command("bws", "build", "--project", "sim", "--activate")
    out = capsys.readouterr().out
    assert "nothing to build" in out and f"status active: workers join at /invite/{project.invite_token}/" in out
