"""The import CLI (exit 2 with file:line: reason, nothing written) and the Celery task."""

from __future__ import annotations

import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from corpus.models import DebateNode, DebateTree, Document, FactVariable, Sentence, Topic
from tests.worker_utils import subprocess_env

DATA = Path(__file__).parent / "data"
MODELS = (Topic, Sentence, Document, FactVariable, DebateTree, DebateNode)
UKP_HEADER = "topic\tretrievedUrl\tarchivedUrl\tsentenceHash\tsentence\tannotation\tset\n"

pytestmark = pytest.mark.django_db


def counts():
    return {model.__name__: model.objects.count() for model in MODELS}


def test_import_corpus_prints_the_summary_and_is_idempotent():
    out = StringIO()
    call_command("import_corpus", str(DATA / "ukp_sample.tsv"), "--format", "ukp-tsv", stdout=out)
    assert "created 2 topics, 4 sentences; skipped 1 already present" in out.getvalue()
    assert Sentence.objects.count() == 4
    out = StringIO()
    call_command("import_corpus", str(DATA / "ukp_sample.tsv"), "--format", "ukp-tsv", stdout=out)
    assert "created nothing; skipped 5 already present" in out.getvalue()


def test_import_corpus_kialo_with_topic_and_source():
    call_command(
        "import_corpus",
        str(DATA / "kialo_abortion.txt"),
        "--format",
        "kialo",
        "--topic",
        "Abortion",
        "--source",
        "kialo.com",
        stdout=StringIO(),
    )
    tree = DebateTree.objects.get()
    assert (tree.topic.name, tree.source, tree.nodes.count()) == ("Abortion", "kialo.com", 7)


def test_import_corpus_refuses_a_bad_file_with_exit_2_and_writes_nothing(tmp_path):
    call_command("import_corpus", str(DATA / "facts.csv"), "--format", "facts-csv", stdout=StringIO())
    path = tmp_path / "bad.tsv"
    path.write_text(
        UKP_HEADER
        + "cloning\tu\ta\th1\tCloning saves species.\tArgument_for\ttrain\n"
        + "cloning\tu\ta\th2\tCloning harms animals.\tArgument_contra\ttrain\n"
    )
    before = counts()
    with pytest.raises(CommandError) as info:
        call_command("import_corpus", str(path), "--format", "ukp-tsv", stdout=StringIO())
    assert info.value.returncode == 2
    assert str(info.value).startswith(f"{path}:3: ")
    assert "Argument_contra" in str(info.value)
    assert counts() == before


def test_import_corpus_refuses_broken_kialo_numbering(tmp_path):
    path = tmp_path / "debate.txt"
    path.write_text("1. Thesis.\n1.1. Pro: Fine.\n1.2.1. Con: Orphan.\n")
    with pytest.raises(CommandError) as info:
        call_command("import_corpus", str(path), "--format", "kialo", stdout=StringIO())
    assert info.value.returncode == 2 and str(info.value).startswith(f"{path}:3: ")
    assert counts() == dict.fromkeys(counts(), 0)


def test_import_documents_command_with_and_without_filter():
    out = StringIO()
    call_command("import_documents", str(DATA / "docs_cloning"), "--topic", "Cloning", stdout=out)
    assert "created 1 topics, 6 sentences, 2 documents" in out.getvalue()
    assert "dropped 1 too short, 2 not relevant" in out.getvalue()
    Sentence.objects.all().delete()
    Document.objects.all().delete()
    call_command(
        "import_documents", str(DATA / "docs_cloning"), "--topic", "Cloning", "--no-relevance-filter", stdout=StringIO()
    )
    assert Sentence.objects.count() == 8


def test_import_documents_command_refuses_invalid_utf8(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"Cloning is debated.\n\xc3\x28 bad bytes\n")
    with pytest.raises(CommandError) as info:
        call_command("import_documents", str(tmp_path), "--topic", "Cloning", stdout=StringIO())
    assert info.value.returncode == 2 and str(info.value).startswith(f"{tmp_path / 'a.txt'}:2: invalid UTF-8")
    assert counts() == dict.fromkeys(counts(), 0)


@pytest.mark.django_db(transaction=True)  # the child process opens its own transaction on this database
def test_manage_py_exits_2_with_file_line_reason_on_stderr(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"topic": "Cloning", "sentence": "Fine.", "stance": "pro"}\n{"topic": oops}\n')
    result = subprocess.run(
        [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "import_corpus", str(path), "--format", "jsonl"],
        capture_output=True,
        text=True,
        timeout=120,
        env=subprocess_env(),  # this test's database
        cwd=settings.BASE_DIR,
    )
    assert result.returncode == 2, result.stderr
    assert f"{path}:2: invalid JSON" in result.stderr
    assert "Traceback" not in result.stderr


def test_celery_task_returns_the_summary_and_reports_progress(monkeypatch):
    from corpus.tasks.imports import import_corpus_file

    states = []
    monkeypatch.setattr(
        import_corpus_file,
        "update_state",
        lambda task_id=None, state=None, meta=None, **kw: states.append((state, meta)),
    )
    result = import_corpus_file.apply(args=[str(DATA / "ukp_sample.tsv"), "ukp-tsv"], kwargs={"source": "task"})
    summary = result.get()
    link = {key: summary.pop(key) for key in ("url", "link_text")}  # the jobs page links to what the import made
    assert summary == {
        "created": {"topics": 2, "sentences": 4, "debate_trees": 0, "debate_nodes": 0, "facts": 0, "documents": 0},
        "skipped": 1,
        "dropped": {},
    }
    assert link["url"] == "/admin/corpus/sentence/?source=task"
    assert set(Sentence.objects.values_list("source", flat=True)) == {"task"}
    assert states and {s for s, _ in states} == {"PROGRESS"}
    assert set(states[-1][1]) >= {"done", "total", "description", "percent"}
    assert states[-1][1]["done"] == states[-1][1]["total"]
