"""KB export / import (``manage.py spans kb-export|kb-import``) on top of the corpus importers."""

import json

import pytest
from django.core.management import CommandError, call_command

from annotation.task_types.span_grounding import kb
from corpus.models import FactVariable

from .helpers import make_kb

pytestmark = pytest.mark.django_db


def test_export_then_import_round_trip(tmp_path):
    topic, facts = make_kb(3)
    FactVariable.objects.create(
        topic=topic, text="rejected fact", content_hash="rej", status=FactVariable.Status.REJECTED
    )
    for fmt in ("csv", "jsonl"):
        path = tmp_path / f"kb.{fmt}"
        call_command("spans", "kb-export", "--file", str(path))
        assert kb.import_kb(path).created["facts"] == 0  # everything already there: idempotent
    rows = [json.loads(line) for line in (tmp_path / "kb.jsonl").read_text().splitlines()]
    assert [r["text"] for r in rows] == [f.text for f in facts]  # active only by default
    assert rows[0]["topic"] == "Death penalty" and rows[0]["id"] == facts[0].pk and rows[0]["origin"] == "seed"
    header = (tmp_path / "kb.csv").read_text().splitlines()[0]
    assert header == "id,topic,text,origin,status,merged_into,content_hash,metadata_json"
    call_command("spans", "kb-export", "--file", str(tmp_path / "all.jsonl"), "--status", "all")
    assert len((tmp_path / "all.jsonl").read_text().splitlines()) == 4
    FactVariable.objects.all().delete()
    summary = kb.import_kb(tmp_path / "kb.csv")
    assert summary.created["facts"] == 3
    assert sorted(FactVariable.objects.values_list("text", flat=True)) == sorted(f.text for f in facts)


def test_import_proposed_rows_become_pending(tmp_path):
    path = tmp_path / "new.jsonl"
    path.write_text(
        json.dumps({"topic": "Gun control", "text": "guns kill", "origin": "proposed"})
        + "\n"
        + json.dumps({"topic": "Gun control", "text": "guns protect"})
        + "\n"
    )
    call_command("spans", "kb-import", "--file", str(path))
    assert FactVariable.objects.get(text="guns kill").status == FactVariable.Status.PENDING
    assert FactVariable.objects.get(text="guns protect").status == FactVariable.Status.ACTIVE


def test_bad_file_exits_2_with_file_line_and_writes_nothing(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("topic,text,origin\nGun control,fine fact,seed\nGun control,bad origin,guessed\n")
    with pytest.raises(CommandError) as exc:
        call_command("spans", "kb-import", "--file", str(path))
    assert exc.value.returncode == 2 and str(exc.value).startswith(f"{path}:3: unknown origin")
    assert FactVariable.objects.count() == 0
    with pytest.raises(CommandError) as exc:
        call_command("spans", "kb-import", "--file", str(tmp_path / "kb.txt"))
    assert exc.value.returncode == 2 and "kb.txt:0:" in str(exc.value)
