"""manage.py agreement: JSON and table output, exit 2 with file:line on bad input."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

ROOT = Path(__file__).resolve().parents[3]
MATRIX = """coder,u1,u2,u3,u4,u5,u6,u7,u8,u9,u10,u11,u12
A,1,2,3,3,2,1,4,1,2,,,
B,1,2,3,3,2,2,4,1,2,5,,3
C,,3,3,3,2,3,4,2,2,5,1,
D,1,2,3,3,2,4,4,1,2,5,1,
"""


def run(*args):
    out = io.StringIO()
    call_command("agreement", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def matrix(tmp_path):
    p = tmp_path / "M.csv"
    p.write_text(MATRIX)
    return str(p)


@pytest.mark.parametrize(
    "level,expected", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_alpha_json(matrix, level, expected):
    res = json.loads(run("alpha", "--file", matrix, "--level", level, "--json"))
    assert round(res["alpha"], 3) == expected
    assert (res["n_units"], res["n_coders"]) == (11, 4)


def test_alpha_table_with_ci(matrix):
    text = run("alpha", "--file", matrix, "--level", "interval", "--bootstrap", "200", "--seed", "1")
    assert "Krippendorff's alpha (interval)" in text and "0.8491" in text and "ci" in text


def test_alpha_u_json_and_table(tmp_path):
    (tmp_path / "S.csv").write_text(
        "coder,item,begin,length,category\na,s1,0,3,asp\nb,s1,0,3,asp\na,s2,2,4,asp\nb,s2,2,4,asp\nb,s2,0,1,other\n"
    )
    (tmp_path / "L.csv").write_text("item,length\ns1,10\ns2,8\n")
    args = ["alpha-u", "--spans", str(tmp_path / "S.csv"), "--lengths", str(tmp_path / "L.csv")]
    res = json.loads(run(*args, "--json"))
    assert {"alpha_u", "n_units", "n_coders"} <= set(res)
    # overall alpha_u = 1 - mean D_o / mean D_e over the categories ("asp" agrees exactly, "other" is b's alone)
    per = res["per_category"]
    d_o = (per["asp"]["observed_disagreement"] + per["other"]["observed_disagreement"]) / 2
    d_e = (per["asp"]["expected_disagreement"] + per["other"]["expected_disagreement"]) / 2
    assert res["alpha_u"] == pytest.approx(1 - d_o / d_e) and 0 < res["alpha_u"] < 1
    assert res["n_units"] == 5  # spans
    assert res["per_category"]["asp"]["alpha_u"] == pytest.approx(1.0)
    assert res["continuum_length"] == 18 and res["n_coders"] == 2 and res["n_items"] == 2
    assert set(res["per_category"]) == {"asp", "other"}
    assert "asp" in run(*args)


def test_alpha_u_points_at_the_span_line(tmp_path):
    (tmp_path / "S.csv").write_text("coder,item,begin,length,category\na,s1,0,3,asp\nb,s1,0,3,asp\na,s1,2,2,asp\n")
    (tmp_path / "L.csv").write_text("item,length\ns1,10\n")
    with pytest.raises(CommandError) as e:
        run("alpha-u", "--spans", str(tmp_path / "S.csv"), "--lengths", str(tmp_path / "L.csv"))
    assert e.value.returncode == 2
    assert str(e.value).startswith(f"{tmp_path / 'S.csv'}:4: overlaps the span on line 2")


def test_kappa_two_coders(tmp_path):
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    p = tmp_path / "K.csv"
    p.write_text("coder," + ",".join(f"u{i}" for i in range(50)) + "\nx," + ",".join(a) + "\ny," + ",".join(b) + "\n")
    res = json.loads(run("kappa", "--file", str(p), "--json"))
    assert res["kappa"] == pytest.approx(0.4) and res["percent_agreement"] == pytest.approx(0.7)
    assert (res["n_units"], res["n_coders"]) == (50, 2)


@pytest.mark.parametrize(
    "content,level,message",
    [
        ("coder,u1,u2\nA,1,x\nB,1,2\n", "interval", ":2: unit u2: 'x' is not a number"),
        ("coder,u1,u1\nA,1,2\n", "nominal", ":1: unit id 'u1' appears twice"),
        ("who,u1\nA,1\n", "nominal", ":1: the header must start with 'coder'"),
        ("coder,u1,u2\nA,1,2\nA,2,2\n", "nominal", ":3: coder 'A' already has a row (line 2)"),
        ("coder,u1\nA,1,2,3\n", "nominal", ":2: 3 values but the header names 1 units"),
        ("coder,u1,u2\nA,1,-1\nB,1,2\n", "ratio", ":2: unit u2: ratio data must be non-negative"),
        ("coder,u1,u2\nA,1,2\n", "nominal", ": alpha needs at least 2 coders"),
        ("coder,u1,u2\nA,1,\nB,,2\n", "nominal", ": no pairable values"),
        ("coder,u1,u2\nA,1,1\nB,1,1\n", "nominal", ": alpha is undefined: all pairable values are identical"),
    ],
)
def test_bad_input_exit_2(tmp_path, content, level, message):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    with pytest.raises(CommandError) as e:
        run("alpha", "--file", str(p), "--level", level)
    assert e.value.returncode == 2
    assert str(e.value).startswith(str(p) + message), str(e.value)


def test_missing_file_exit_2(tmp_path):
    with pytest.raises(CommandError) as e:
        run("kappa", "--file", str(tmp_path / "none.csv"))
    assert e.value.returncode == 2 and "cannot read" in str(e.value)


def test_subprocess_exit_code_and_stderr(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("coder,u1,u2\nA,1,x\nB,1,2\n")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "argora.settings"}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "agreement", "alpha", "--file", str(p), "--level", "interval"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    assert f"{p}:2: unit u2: 'x' is not a number" in proc.stderr
