"""The importers' contract on hostile files (issue 22, item 10): every bad line is exit 2 with ``file:line: reason``
and nothing written -- never a traceback, and never a row the database cannot hold or a value picked silently."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.models import DebateTree, FactVariable, Sentence, Topic

pytestmark = pytest.mark.django_db
GOOD = json.dumps({"topic": "Cloning", "sentence": "Cloning is safe.", "stance": "pro"})


@pytest.mark.parametrize(
    "line, reason",
    [
        (
            '{"topic": "Cloning", "sentence": "x", "stance": "pro", "metadata": ' + "[" * 5000 + "]" * 5000 + "}",
            "nested deeper than 64 levels",
        ),
        ('{"topic": "Cloning", "sentence": "Cloning\\u0000 is risky.", "stance": "con"}', "contains a NUL character"),
        (
            '{"topic": "Cloning", "sentence": "Cloning is risky.", "stance": "con", "metadata": {"score": NaN}}',
            "NaN is not a JSON number",
        ),
        ('{"topic": "Cloning", "sentence": "Cloning \\ud800 is risky.", "stance": "con"}', "lone surrogate"),
        (
            '{"topic": "Cloning", "sentence": "Cloning is risky.", "stance": "con", "stance": "pro"}',
            "the key 'stance' appears twice in one object",
        ),
        (
            json.dumps({"topic": "Cloning", "sentence": "Cloning " * 3000 + "is risky.", "stance": "con"}),
            '"sentence" is longer than 20000 characters',
        ),
    ],
)
def test_a_hostile_jsonl_line_is_exit_2_with_file_and_line(tmp_path, line, reason):
    path = tmp_path / "args.jsonl"
    path.write_text(GOOD + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(CommandError) as exc:
        call_command("import_corpus", str(path), "--format", "jsonl")
    assert exc.value.returncode == 2
    assert str(exc.value).startswith(f"{path}:2: ") and reason in str(exc.value), str(exc.value)
    assert not Sentence.objects.exists() and not Topic.objects.exists()


def test_a_fact_line_with_a_nul_is_refused(tmp_path):
    path = tmp_path / "facts.jsonl"
    path.write_text(json.dumps({"topic": "Cloning", "text": "Cloning\u0000 costs."}) + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"facts.jsonl:1: contains a NUL character"):
        call_command("import_corpus", str(path), "--format", "facts-jsonl")
    assert not FactVariable.objects.exists()


def test_a_dangling_kialo_reference_is_refused(tmp_path):
    path = tmp_path / "debate.txt"
    path.write_text(
        "Discussion Title: Cloning\n\n1. Cloning should be allowed.\n1.1. Pro: It cures diseases.\n"
        "-> See 9.9.9.\n1.2. Con: It is risky.\n",
        encoding="utf-8",
    )
    with pytest.raises(CommandError, match=r"debate.txt:4: node 1.1. refers to 9.9.9., which does not exist"):
        call_command("import_corpus", str(path), "--format", "kialo", "--topic", "cloning")
    assert not DebateTree.objects.exists()
