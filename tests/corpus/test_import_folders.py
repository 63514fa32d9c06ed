"""`import_corpus` over folders and glob patterns: one process, one summary, each file all-or-nothing on its own."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.importers import ImportFailed, expand_paths, import_paths
from corpus.models import DebateNode, DebateTree, Sentence

from .test_kialo_shapes import MULTI_THESIS, NUMBERED_LISTS

pytestmark = pytest.mark.django_db

SIMPLE = "Discussion Title: Tea beats coffee.\n\n1. Tea beats coffee.\n1.1. Pro: Less caffeine.\n"


def kialo_folder(tmp_path, *, broken: bool = False):
    folder = tmp_path / "kialo"
    folder.mkdir()
    (folder / "multi-thesis.txt").write_text(MULTI_THESIS)
    (folder / "lists.txt").write_text(NUMBERED_LISTS)
    (folder / "simple.txt").write_text(SIMPLE)
    (folder / "notes.md").write_text("not an export")  # other extensions are left alone
    (folder / ".hidden.txt").write_text("1. x\n")
    if broken:
        (folder / "zz-broken.txt").write_text("1. Thesis.\n1.1. Pro: A.\n1.1.1. Con: -> See 1.9.\n")
    return folder


def run(*args):
    out, err = StringIO(), StringIO()
    call_command("import_corpus", *map(str, args), stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_a_folder_of_every_shape_imports_whole_and_a_second_run_adds_nothing(tmp_path):
    folder = kialo_folder(tmp_path)
    out, _ = run(folder, "--format", "kialo")
    assert DebateTree.objects.count() == 3
    assert "files" in out and "3: 3 imported, 0 already imported (nothing new), 0 refused" in out
    assert re.search(r"^debate trees\s+3$", out, re.M) and re.search(r"^time\s+\d+\.\d s$", out, re.M)
    nodes = DebateNode.objects.count()
    out, _ = run(folder, "--format", "kialo")
    assert (DebateTree.objects.count(), DebateNode.objects.count()) == (3, nodes)
    assert "3: 0 imported, 3 already imported (nothing new), 0 refused" in out
    assert "nothing new: every file was imported before" in out


def test_a_refused_file_is_listed_with_its_line_the_others_import_and_the_exit_status_is_2(tmp_path):
    folder = kialo_folder(tmp_path, broken=True)
    err = StringIO()
    with pytest.raises(CommandError) as info:
        call_command("import_corpus", str(folder), "--format", "kialo", stdout=StringIO(), stderr=err)
    assert info.value.returncode == 2 and "1 of 4 files refused" in str(info.value)
    assert f"{folder / 'zz-broken.txt'}:3: " in err.getvalue() and "1.9., which does not exist" in err.getvalue()
    assert DebateTree.objects.count() == 3  # the good files are in, nothing of the broken one
    assert not DebateTree.objects.filter(source__endswith="zz-broken.txt").exists()


def test_glob_patterns_and_several_paths(tmp_path):
    folder = kialo_folder(tmp_path)
    assert [p.name for p in expand_paths([str(folder / "*.txt")], "kialo")] == [
        "lists.txt",
        "multi-thesis.txt",
        "simple.txt",
    ]
    assert [
        p.name for p in expand_paths([str(tmp_path / "**" / "simple.txt"), str(folder / "simple.txt")], "kialo")
    ] == ["simple.txt"]  # each file once
    batch = import_paths([folder / "simple.txt", str(folder / "l*.txt")], "kialo")
    assert (len(batch.files), batch.refused, batch.created["debate_trees"]) == (2, [], 2)


def test_paths_that_name_nothing_are_refused_before_anything_is_written(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ImportFailed, match="no .txt files"):
        expand_paths([empty], "kialo")
    with pytest.raises(CommandError) as info:
        run(kialo_folder(tmp_path), tmp_path / "missing.txt", "--format", "kialo")
    assert info.value.returncode == 2 and "missing.txt:0: file not found" in str(info.value)
    assert not DebateTree.objects.exists()
    with pytest.raises(CommandError, match="no file matches"):
        run(str(tmp_path / "*.nothing"), "--format", "kialo")


def test_a_folder_of_jsonl_files(tmp_path):
    folder = tmp_path / "args"
    folder.mkdir()
    for topic in ("cloning", "nuclear energy"):
        rows = [{"topic": topic, "sentence": f"{topic} argument {i}.", "stance": "pro"} for i in range(3)]
        (folder / f"{topic}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out, _ = run(folder, "--format", "jsonl")
    assert Sentence.objects.count() == 6 and "sentences" in out and "2: 2 imported" in out


def test_one_file_keeps_its_one_line_report(tmp_path):
    path = tmp_path / "simple.txt"
    path.write_text(SIMPLE)
    out, _ = run(path, "--format", "kialo")
    assert out.strip() == f"{path}: created 1 debate trees, 2 debate nodes; skipped 0 already present"
