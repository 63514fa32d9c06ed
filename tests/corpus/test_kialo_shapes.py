"""Kialo exports in the shapes the public crawl of 1,011 English discussions has (issue: 71 of them were refused):
multi-thesis discussions, unlabelled nodes deeper down, numbered lists inside claims at every depth, references to
later nodes; and the broken files that must still be refused with their line."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.importers import ImportFailed, import_file
from corpus.models import DebateNode, DebateTree
from ml.generation import corpora

pytestmark = pytest.mark.django_db

MULTI_THESIS = """Discussion Title: What is the best way to reduce carbon emissions?

1. What is the best way to reduce carbon emissions?
1.1. A carbon tax.
1.1.1. Pro: It prices the harm where it is made.
1.1.1.1. Con: Poor households pay a larger share of their income.
1.1.2. Con: It is politically hard to pass.
1.2. Subsidies for renewables.
1.2.1. Pro: They lowered solar prices tenfold.
1.2.2. Con: -> See 1.1.2.
"""

NUMBERED_LISTS = """Discussion Title: Should the state fund space exploration?

1. The state should fund space exploration.
The case rests on two claims:
1. Exploration pays back in technology.
2. Private firms will not carry the basic research.
1.1. Pro: The argument requires:
1. The existence of spin-off technologies,
2. That these reach the public.
3. That no cheaper route exists.
1.1.1. Con: Spin-offs are often overstated:
1. Velcro was not invented by NASA.
1.1. Teflon neither.
1.1.1.1. Pro: -> See 1.2.
1.2. Con: Money is better spent on earth.
1.2.1. Pro: Unlabelled nodes also exist deeper down in real exports.
1.2.1.1. An unlabelled position below a claim.
1.2.1.1.1. Pro: Supports the unlabelled position.
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def nodes_of(tree):
    return {n.path: (n.stance, n.text, n.reference_path) for n in DebateNode.objects.filter(tree=tree)}


def test_a_multi_thesis_discussion_imports_with_its_positions_as_theses(tmp_path):
    summary = import_file(write(tmp_path, "m.txt", MULTI_THESIS), "kialo", topic="climate")
    assert summary.created["debate_nodes"] == 8
    nodes = nodes_of(DebateTree.objects.get())
    assert nodes["1"][0] == "none"
    assert nodes["1.1"] == ("none", "A carbon tax.", "")
    assert nodes["1.2"] == ("none", "Subsidies for renewables.", "")
    assert nodes["1.1.1.1"][0] == "con"
    assert nodes["1.2.2"] == ("con", "It is politically hard to pass.", "1.1.2")


def test_numbered_lists_inside_claims_are_text_at_every_depth(tmp_path):
    import_file(write(tmp_path, "n.txt", NUMBERED_LISTS), "kialo")
    nodes = nodes_of(DebateTree.objects.get())
    assert sorted(nodes) == ["1", "1.1", "1.1.1", "1.1.1.1", "1.2", "1.2.1", "1.2.1.1", "1.2.1.1.1"]
    assert nodes["1"][1] == (
        "The state should fund space exploration.\nThe case rests on two claims:\n"
        "1. Exploration pays back in technology.\n"
        "2. Private firms will not carry the basic research."
    )
    assert nodes["1.1"] == (
        "pro",
        "The argument requires:\n1. The existence of spin-off technologies,\n"
        "2. That these reach the public.\n3. That no cheaper route exists.",
        "",
    )
    # "1.1." is already a node, so inside 1.1.1's text it is text too
    assert (
        nodes["1.1.1"][1]
        == "Spin-offs are often overstated:\n1. Velcro was not invented by NASA.\n1.1. Teflon neither."
    )
    assert nodes["1.1.1.1"] == ("pro", "Money is better spent on earth.", "1.2")  # a reference to a later node
    assert nodes["1.2.1.1"][0] == "none" and nodes["1.2.1.1.1"][0] == "pro"


def test_a_second_top_level_number_is_text_of_the_node_above(tmp_path):
    import_file(write(tmp_path, "t.txt", "1. Thesis with a list:\n1. first\n2. second\n1.1. Pro: A reason.\n"), "kialo")
    nodes = nodes_of(DebateTree.objects.get())
    assert nodes == {"1": ("none", "Thesis with a list:\n1. first\n2. second", ""), "1.1": ("pro", "A reason.", "")}


@pytest.mark.parametrize(
    "body, line, reason",
    [
        ("1. Thesis.\n1.1. Pro: A.\n1.1.1. Con: -> See 1.7.\n", 3, "1.7., which does not exist"),  # dangling -> See
        ("1. Thesis.\n1.1. Pro: A.\n1.3.1. Con: orphan.\n", 3, "1.3. is not defined"),
        ("1. Thesis.\n1.2. Pro: A.\n1.1. Con: back in time.\n", 3, "out of order"),
        ("1. Thesis.\n2. Pro: a labelled second root.\n", 2, "second thesis"),
        ("3. Thesis.\n", 1, "must be numbered 1."),
    ],
)
def test_broken_numbering_with_a_label_is_still_refused_with_its_line(tmp_path, body, line, reason):
    with pytest.raises(ImportFailed) as info:
        import_file(write(tmp_path, "b.txt", body), "kialo")
    assert info.value.line == line and reason in info.value.reason
    assert not DebateTree.objects.exists()


def test_paths_of_a_multi_thesis_discussion_start_at_each_thesis(tmp_path):
    import_file(write(tmp_path, "m.txt", MULTI_THESIS), "kialo")
    nodes = corpora.tree_nodes(DebateTree.objects.get())
    assert [n.path for n in corpora.thesis_nodes(nodes)] == ["1.1", "1.2"]
    keys = {pair.key for s in corpora.STRATEGIES for pair in corpora.debate_pairs(nodes, s)}
    assert keys  # paths exist
    assert all(prompt[0] in ("1.1", "1.2") for prompt, _ in keys)  # never the question, always a thesis
    supportive = {pair.key for pair in corpora.debate_pairs(nodes, "supportive")}
    assert supportive == {(("1.1",), ("1.1.1",)), (("1.2",), ("1.2.1",))}
    contradicting = {pair.key for pair in corpora.debate_pairs(nodes, "contradicting")}
    assert (("1.1", "1.1.1"), ("1.1.1.1",)) in contradicting and (("1.2",), ("1.2.2",)) in contradicting


def test_a_thesis_deeper_down_starts_paths_of_its_own(tmp_path):
    import_file(write(tmp_path, "n.txt", NUMBERED_LISTS), "kialo")
    nodes = corpora.tree_nodes(DebateTree.objects.get())
    assert [n.path for n in corpora.thesis_nodes(nodes)] == ["1", "1.2.1.1"]
    pairs = {pair.key for pair in corpora.debate_pairs(nodes, "complex")}
    assert (("1.2.1.1",), ("1.2.1.1.1",)) in pairs
    assert not any("1.2.1.1" in prompt + response and prompt[0] != "1.2.1.1" for prompt, response in pairs)


def test_single_thesis_trees_keep_their_paths():
    nodes = [
        corpora.Node("1", None, "none", "T"),
        corpora.Node("1.1", "1", "pro", "P"),
        corpora.Node("1.1.1", "1.1", "con", "C"),
    ]
    assert [n.path for n in corpora.thesis_nodes(nodes)] == ["1"]
    assert {p.key for p in corpora.debate_pairs(nodes, "contradicting")} == {(("1", "1.1"), ("1.1.1",))}


def test_the_command_refuses_a_dangling_reference_with_file_and_line(tmp_path):
    path = write(tmp_path, "d.txt", "1. Thesis.\n1.1. Pro: -> See 1.4.2.\n")
    with pytest.raises(CommandError) as info:
        call_command("import_corpus", str(path), "--format", "kialo", stdout=StringIO())
    assert info.value.returncode == 2 and str(info.value).startswith(f"{path}:2: ")
