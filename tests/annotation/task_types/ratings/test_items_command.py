"""Item builders and ``manage.py ratings``: JSONL pairs / debates (all-or-nothing, ``file:line: reason`` + exit 2,
nothing written), re-import adds nothing, debate-tree paths as human debates, the results command."""

import json

import pytest
from django.core.management import call_command

from annotation.models import HIT, Item, Project
from annotation.task_types.ratings import items
from corpus.importers.base import ImportFailed
from corpus.models import DebateNode, DebateTree

from .helpers import DEBATES, PAIRS, write_jsonl

pytestmark = pytest.mark.django_db


def run(*args):
    call_command("ratings", *[str(a) for a in args])


def test_pairwise_command_creates_project_items_and_hits(tmp_path, capsys):
    path = write_jsonl(tmp_path, PAIRS)
    run("pairwise", "--project", "eval-pairs", "--file", path, "--activate")
    out = capsys.readouterr().out
    assert "4 items created" in out and "/projects/eval-pairs/results/" in out
    project = Project.objects.get(slug="eval-pairs")
    assert (project.task_type, project.assignments_per_item, project.status) == ("pairwise_preference", 2, "active")
    payloads = list(Item.objects.filter(project=project).order_by("position").values_list("payload", flat=True))
    assert payloads[0]["a"] == PAIRS[0]["a"] and payloads[0]["stance"] == "pro" and "_line" not in payloads[0]
    assert HIT.objects.filter(project=project).count() == 1
    run("pairwise", "--project", "eval-pairs", "--file", path)  # again: nothing new
    assert "0 items created, 4 already present" in capsys.readouterr().out
    assert Item.objects.filter(project=project).count() == 4


def test_debates_command_defaults(tmp_path, capsys):
    run("debates", "--project", "eval-debates", "--file", write_jsonl(tmp_path, DEBATES))
    project = Project.objects.get(slug="eval-debates")
    assert (project.task_type, project.assignments_per_item, project.items_per_hit) == ("likert_debate", 5, 1)
    assert HIT.objects.filter(project=project).count() == 4
    item = Item.objects.filter(project=project).order_by("position").first()
    assert item.external_key == "debate:d1" and item.payload["system"] == "human" and len(item.payload["turns"]) == 4


@pytest.mark.parametrize(
    "rows, line, reason",
    [
        ([PAIRS[0], "not json"], 2, "invalid JSON"),
        ([PAIRS[0], [1, 2]], 2, "expected a JSON object"),
        ([PAIRS[0], {**PAIRS[1], "topic": ""}], 2, '"topic" is empty'),
        ([{**PAIRS[0], "stance": 3}], 1, '"stance" must be a string'),
        ([PAIRS[0], PAIRS[1], {**PAIRS[2], "b": "text"}], 3, '"b" must be an object'),
        ([{**PAIRS[0], "a": {"system": "x"}}], 1, 'missing "a.text"'),
        ([{**PAIRS[0], "b": {**PAIRS[0]["a"], "text": "other"}}], 1, "same system"),
        ([{**PAIRS[0], "id": 7}, {**PAIRS[1], "id": 7}], 2, "duplicate id"),
        ([], 0, "empty"),
    ],
)
def test_bad_pairs_exit_2_and_write_nothing(tmp_path, capsys, rows, line, reason):
    path = write_jsonl(tmp_path, rows)
    with pytest.raises(SystemExit) as exc:
        run("pairwise", "--project", "bad", "--file", path)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{path}:{line}: ") and reason in err, err
    assert not Project.objects.filter(slug="bad").exists() and Item.objects.count() == 0


@pytest.mark.parametrize(
    "row, reason",
    [
        ({**DEBATES[0], "turns": [{"speaker": "Alice", "text": "only one"}]}, "at least 2 turns"),
        ({**DEBATES[0], "turns": "text"}, '"turns" must be a list'),
        ({**DEBATES[0], "turns": [{"speaker": "Alice", "text": "x"}, {"speaker": "Bob"}]}, 'missing "turns[2].text"'),
        ({k: v for k, v in DEBATES[0].items() if k != "system"}, 'missing "system"'),
        ({k: v for k, v in DEBATES[0].items() if k != "id"}, 'missing "id"'),
        (DEBATES[0], "duplicate id"),
    ],
)
def test_bad_debates_exit_2_and_write_nothing(tmp_path, capsys, row, reason):
    path = write_jsonl(tmp_path, [DEBATES[0], DEBATES[1], row])
    project = items.get_project("ld", "likert_debate", create=True)
    with pytest.raises(SystemExit) as exc:
        run("debates", "--project", "ld", "--file", path)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{path}:3: ") and reason in err, err
    assert Item.objects.filter(project=project).count() == 0


def test_wrong_task_type_and_missing_file(tmp_path, capsys):
    items.get_project("ld", "likert_debate", create=True)
    with pytest.raises(SystemExit):
        run("pairwise", "--project", "ld", "--file", write_jsonl(tmp_path, PAIRS))
    assert "project 'ld' is a 'likert_debate' project, not 'pairwise_preference'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run("pairwise", "--project", "x", "--file", tmp_path / "nope.jsonl")
    assert "nope.jsonl:0: file not found" in capsys.readouterr().err
    assert Item.objects.count() == 0


def make_tree():
    tree = DebateTree.objects.create(title="Ban religions", content_hash="t1")
    nodes = {}
    for path, stance, text in [
        ("1", "none", "All religions should be banned."),
        ("1.1", "pro", "Religion divides."),
        ("1.1.1", "con", "It also unites."),
        ("1.1.1.1", "pro", "Only its own members."),
        ("1.2", "con", "Freedom of belief matters."),
        ("1.2.1", "pro", "Not above safety."),
        ("1.3", "pro", "A leaf too short."),
    ]:
        parent = nodes.get(path.rsplit(".", 1)[0]) if "." in path else None
        nodes[path] = DebateNode.objects.create(
            tree=tree, parent=parent, path=path, depth=path.count("."), stance=stance, text=text
        )
    return tree


def test_tree_paths_as_human_debates(capsys):
    tree = make_tree()
    two = items.tree_debates(length=2)
    assert [[t["text"] for t in d["turns"]] for d in two] == [
        ["Religion divides.", "It also unites."],
        ["Freedom of belief matters.", "Not above safety."],
    ]
    assert two[0]["topic"] == "All religions should be banned." and two[0]["system"] == "human"
    assert [t["speaker"] for t in two[0]["turns"]] == ["Alice", "Bob"]
    assert two[0]["source"] == {"tree": tree.pk, "title": "Ban religions", "path": "1.1.1"}
    assert len(items.tree_debates(length=3)) == 1 and items.tree_debates(length=4) == []
    assert len(items.tree_debates(length=2, limit=1)) == 1
    run("debates", "--project", "trees", "--from-trees", "--length", 3)
    assert "1 items created" in capsys.readouterr().out
    item = Item.objects.get(project__slug="trees")
    assert [t["speaker"] for t in item.payload["turns"]] == ["Alice", "Bob", "Alice"]
    with pytest.raises(SystemExit) as exc:
        run("debates", "--project", "trees", "--from-trees", "--length", 10)
    assert exc.value.code == 2 and "no root-to-leaf path of 10 turns" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run("debates", "--project", "trees", "--from-trees", "--tree", 999)
    assert "no debate tree with id 999" in capsys.readouterr().err


def test_read_functions_raise_import_failed(tmp_path):
    path = write_jsonl(tmp_path, [PAIRS[0], json.dumps({"topic": "t"})])
    with pytest.raises(ImportFailed) as exc:
        items.read_pairs(path)
    assert exc.value.line == 2 and 'missing "stance"' in exc.value.reason


def test_results_command(tmp_path, capsys):
    run("debates", "--project", "ld2", "--file", write_jsonl(tmp_path, DEBATES))
    capsys.readouterr()
    out_csv, resp_csv = tmp_path / "t.csv", tmp_path / "r.csv"
    run("results", "--project", "ld2", "--csv", out_csv, "--responses", resp_csv)
    out = capsys.readouterr().out
    assert "4 items, 0 rated" in out and "Overall" in out
    assert out_csv.read_text().startswith("criterion,Human mean,Human sd,Human n,Generated mean")
    assert resp_csv.read_text().startswith("item_id,debate_id,system,group,topic,worker,style")
    with pytest.raises(SystemExit):
        run("results", "--project", "none")
