"""A Kialo discussion export as the studio source of ``likert_debate`` (root-to-leaf debates, debate trees §2.1) and
``pairwise_preference`` items (the supportive against the contradicting reply to one prompt, §2.2 Table 2)."""

from __future__ import annotations

import pytest

from annotation.models import HIT, Item
from annotation.studio import services as studio
from annotation.task_types.likert_debate import sources as likert_sources
from annotation.task_types.pairwise_preference import sources as pairwise_sources
from corpus.importers import ImportFailed
from corpus.models import DebateNode, DebateTree, Topic
from tests.annotation.studio.helpers import KIALO, setup, source_input, write

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def test_likert_debates_from_a_kialo_export():
    data = source_input("likert_debate", "kialo", "uniforms.txt", KIALO, options={"length": 2})
    preview = likert_sources.preview(setup("likert_debate"), data)
    # the paths of 2 turns below the thesis: 1.1-1.1.1 (cut), 1.1-1.1.2, 1.2-1.2.1, 1.2-1.2.2; 1.3 and 1.4 are too short
    assert preview.items == 4 and {row[2] for row in preview.rows} == {"human"}
    assert [row[1] for row in preview.rows] == [
        "tree<new>:1.1.1:2",
        "tree<new>:1.1.2:2",
        "tree<new>:1.2.1:2",
        "tree<new>:1.2.2:2",
    ]
    assert (
        preview.rows[0][3] == "Schools should require uniforms."
        and preview.rows[0][5] == "Alice: Uniforms reduce bullying over clothes."
    )
    assert DebateTree.objects.count() == 0  # the preview writes nothing

    project, summary = write("likert_debate", data, items_per_hit=1)
    tree = DebateTree.objects.get()
    assert DebateNode.objects.filter(tree=tree).count() == 10 and tree.topic is None
    assert summary["items"] == 4 == HIT.objects.filter(project=project).count()
    keys = set(Item.objects.filter(project=project).values_list("external_key", flat=True))
    assert keys == {f"debate:tree{tree.pk}:{p}:2" for p in ("1.1.1", "1.1.2", "1.2.1", "1.2.2")}
    debate = Item.objects.get(project=project, external_key=f"debate:tree{tree.pk}:1.2.2:2").payload
    # "-> See 1.1.2." copies the referenced claim's text
    assert [t["text"] for t in debate["turns"]] == ["Uniforms cost families money.", "Poorer pupils stand out less."]
    assert [t["speaker"] for t in debate["turns"]] == ["Alice", "Bob"]

    # the same file again in the same project: the tree is reused and no debate is added twice
    again = source_input("likert_debate", "kialo", "uniforms.txt", KIALO, options={"length": 2})
    assert likert_sources.preview(project, again).rows[0][1] == f"tree{tree.pk}:1.1.1:2"
    assert likert_sources.write(project, again, lambda *a: None)["items"] == 0
    assert DebateTree.objects.count() == 1


def test_likert_kialo_length_limit_and_topic():
    data = source_input(
        "likert_debate", "kialo", "uniforms.txt", KIALO, options={"length": 3, "limit": 1, "topic": "school uniforms"}
    )
    preview = likert_sources.preview(setup("likert_debate"), data)
    assert preview.items == 1 and preview.rows[0][1] == "tree<new>:1.1.1.1:3"
    write("likert_debate", data)
    assert DebateTree.objects.get().topic == Topic.objects.get(name="school uniforms")
    too_long = source_input("likert_debate", "kialo", "uniforms.txt", KIALO, options={"length": 4})
    _, problems = studio.preview_import(setup("likert_debate"), too_long)
    assert problems == [
        "length: no root-to-leaf path of 4 turns in the discussion 'Should schools require "
        "uniforms?' (its longest path has 3 turns)"
    ]


def test_pairwise_supportive_against_contradicting_replies():
    data = source_input("pairwise_preference", "kialo", "uniforms.txt", KIALO)
    preview = pairwise_sources.preview(setup("pairwise_preference"), data)
    # prompts [Pro Con][Pro]*: the thesis (Pro replies 1.1, 1.3; Con replies 1.2, 1.4) and 1.1 (Pro 1.1.2, Con 1.1.1);
    # 1.2 and 1.1.1 are Con claims: no prompt of these strategies
    assert preview.items == 3 and preview.notes == ["3 pair(s) of the systems contradicting, supportive"]
    assert [(row[1], row[3], row[4]) for row in preview.rows] == [
        (
            "Schools should require uniforms.",
            "Uniforms reduce bullying over clothes.  [supportive]",
            "Uniforms cost families money.  [contradicting]",
        ),
        (
            "Schools should require uniforms.",
            "Uniforms make a school feel like a community.  [supportive]",
            "Uniforms limit self-expression.  [contradicting]",
        ),
        (
            "Uniforms reduce bullying over clothes.",
            "Poorer pupils stand out less.  [supportive]",
            "Children are bullied for\nother things too.  [contradicting]",
        ),
    ]
    assert DebateTree.objects.count() == 0

    project, summary = write("pairwise_preference", data, items_per_hit=2)
    tree = DebateTree.objects.get()
    assert summary["items"] == 3 and HIT.objects.filter(project=project).count() == 2
    item = Item.objects.get(project=project, external_key__endswith=":1.1.2|1.1.1")
    assert item.payload["source"] == {
        "tree": tree.content_hash,
        "title": "Should schools require uniforms?",
        "prompt": ["1", "1.1"],
        "a": "1.1.2",
        "b": "1.1.1",
        "tree_id": tree.pk,
    }
    worker = project.get_task_type().worker_payload(project, item)
    assert "supportive" not in str(worker) and "contradicting" not in str(worker)  # workers never see the systems
    # again: nothing new
    again = source_input("pairwise_preference", "kialo", "uniforms.txt", KIALO, options={"limit": 2})
    assert pairwise_sources.write(project, again, lambda *a: None)["items"] == 0


def test_pairwise_kialo_without_pairs_and_non_kialo_files_are_refused():
    lone = "Discussion Title: Ban zoos?\n\n1. Zoos should be banned.\n1.1. Pro: Animals suffer in cages.\n"
    _, problems = studio.preview_import(
        setup("pairwise_preference"), source_input("pairwise_preference", "kialo", "zoos.txt", lone)
    )
    assert problems == [
        "zoos.txt:1: no claim of the discussion 'Ban zoos?' has both a Pro and a Con reply on a "
        "supportive path (thesis, then Pro claims only)"
    ]
    for task_type, _module in (("pairwise_preference", pairwise_sources), ("likert_debate", likert_sources)):
        data = source_input(task_type, "kialo", "pairs.txt", '{"topic": "x", "stance": "pro"}\n')
        _, problems = studio.preview_import(setup(task_type), data)
        assert problems == [
            'pairs.txt:1: text before the first node (expected "Discussion Title: ..." or a '
            'numbered node such as "1. ...")'
        ]
        with pytest.raises(ImportFailed):
            write(task_type, data)
    assert DebateTree.objects.count() == 0
