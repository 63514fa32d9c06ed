"""Generation corpora (issue 12 items 1-3): aspect-control documents, debate paths, ArgU inputs."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from django.core.management import CommandError, call_command

from ml.generation import corpora
from ml.generation.corpora import (
    AspectDocument,
    Node,
    RowError,
    argu_input,
    argu_inputs,
    aspect_stem,
    assign_splits,
    build_aspect_documents,
    control_code,
    debate_pairs,
)

# ---------------------------------------------------------------------------------------------------------
# 1. Aspect-control training documents (Arg-CTRL §4)
# ---------------------------------------------------------------------------------------------------------


def _rows(topic, stance, aspect, n, prefix=None):
    prefix = prefix or f"{topic} {stance} {aspect}"
    return [
        {"topic": topic, "stance": stance, "sentence": f"{prefix} argument {i}.", "aspects": [aspect]} for i in range(n)
    ]


def test_aspect_stem_merges_inflections():
    assert aspect_stem("cost") == aspect_stem("costs") == aspect_stem("Costs") == "cost"
    assert aspect_stem("nuclear waste") == aspect_stem("Nuclear  wastes") == "nuclear wast"
    assert aspect_stem("safety") != aspect_stem("safe")  # Porter keeps these apart
    assert control_code("nuclear energy", "con", "waste") == "nuclear energy CON waste"
    assert control_code("school uniforms", "Argument_for", "cost") == "school uniforms PRO cost"


def test_aspect_documents_bounds_and_stem_merging():
    rows = (
        _rows("nuclear energy", "pro", "cost", 4, "a")
        + _rows("nuclear energy", "pro", "Costs", 2, "b")  # same stem as "cost": merged
        + [{"topic": "nuclear energy", "stance": "pro", "sentence": "c both.", "aspects": ["cost", "costs"]}]
        + _rows("nuclear energy", "pro", "waste", 2)  # below min_args: dropped
        + _rows("nuclear energy", "pro", "safety", 8)  # above max_args: sampled down to 5
        + _rows("nuclear energy", "con", "cost", 3)  # same aspect, other stance: its own document
        + [
            {"topic": "nuclear energy", "stance": "pro", "sentence": "no aspect here.", "aspects": []},
            {"topic": "nuclear energy", "stance": "none", "sentence": "not an argument.", "aspects": ["cost"]},
        ]
    )
    result = build_aspect_documents(rows, min_args=3, max_args=5, max_per_topic_stance=100, seed=7)
    docs = {d.control_code: d for d in result.documents}
    assert sorted(docs) == ["nuclear energy CON cost", "nuclear energy PRO cost", "nuclear energy PRO safety"]

    cost = docs["nuclear energy PRO cost"]
    # 4 + 2 + 1 distinct arguments; the one naming "cost" and "costs" is in the document once. The stem group
    # has 7 > max_args 5 arguments, so 5 are sampled, in input order.
    assert cost.stem == "cost" and cost.aspect == "cost" and cost.aspects == ["cost", "costs"]
    assert len(cost.arguments) == 5
    everything = [r["sentence"] for r in rows[:7]]
    assert [everything.index(a) for a in cost.arguments] == sorted(everything.index(a) for a in cost.arguments)
    assert len(docs["nuclear energy PRO safety"].arguments) == 5
    assert len(docs["nuclear energy CON cost"].arguments) == 3

    assert result.stats["skipped_no_aspect"] == 1 and result.stats["skipped_stance"] == 1
    assert result.stats["dropped_small"] == 1  # waste
    assert result.stats["truncated"] == 2  # cost (7) and safety (8)
    assert result.stats["groups"] == 4
    row = cost.as_row()
    assert row["control_code"] == "nuclear energy PRO cost" and row["n_arguments"] == 5 and row["source"] == "gold"

    again = build_aspect_documents(rows, min_args=3, max_args=5, max_per_topic_stance=100, seed=7)
    assert [d.as_row() for d in again.documents] == [d.as_row() for d in result.documents]


def test_aspect_documents_display_aspect_is_the_most_frequent_form():
    rows = _rows("t", "pro", "costs", 3, "x") + _rows("t", "pro", "cost", 2, "y")
    [doc] = build_aspect_documents(rows, min_args=1, max_args=10).documents
    assert doc.aspect == "costs" and doc.control_code == "t PRO costs" and len(doc.arguments) == 5


def test_aspect_documents_default_bounds():
    rows = (
        _rows("gun control", "con", "crime", 14)
        + _rows("gun control", "con", "safety", 15)
        + _rows("gun control", "con", "rights", 1501)
    )
    result = build_aspect_documents(rows, source="silver")
    sizes = {d.aspect: len(d.arguments) for d in result.documents}
    assert sizes == {"safety": 15, "rights": 1500}
    assert all(d.source == "silver" for d in result.documents)


def test_aspect_documents_cap_per_topic_and_stance():
    # Three documents of 4 in one topic/stance with a budget of 10: two fit whole (8), the third would need
    # to be cut to 2 < min_args 3, so it is left out. The other stance has its own budget.
    rows = (
        _rows("t", "pro", "jobs", 4)
        + _rows("t", "pro", "price", 4)
        + _rows("t", "pro", "radiation", 4)
        + _rows("t", "con", "jobs", 4)
    )
    result = build_aspect_documents(rows, min_args=3, max_args=10, max_per_topic_stance=10, seed=1)
    pro = [d for d in result.documents if d.stance == "pro"]
    assert [len(d.arguments) for d in pro] == [4, 4]
    assert result.stats["capped"] == 1
    assert result.stats["per_topic_stance"] == {"t|con": 4, "t|pro": 8}

    # Documents of 5 and 5 with a budget of 8: the first whole, the second cut to the remaining 3 (>= min_args)
    # by a seeded sample. With a budget of 7 the remaining 2 < min_args: the second is left out.
    rows = _rows("t", "pro", "jobs", 5) + _rows("t", "pro", "price", 5)
    cut = build_aspect_documents(rows, min_args=3, max_args=10, max_per_topic_stance=8, seed=1)
    assert sorted(len(d.arguments) for d in cut.documents) == [3, 5]
    assert cut.stats["arguments"] == 8
    short = build_aspect_documents(rows, min_args=3, max_args=10, max_per_topic_stance=7, seed=1)
    assert [len(d.arguments) for d in short.documents] == [5]


def test_aspect_documents_accept_appf_rows_and_reject_bad_rows():
    appf = {
        "hash": "h1",
        "topic": "nuclear energy",
        "stance": "Argument_against",
        "sentence": "Waste is a problem.",
        "aspect_pos": ["(0,5)"],
        "aspect_pos_string": ["Waste"],
    }
    [doc] = build_aspect_documents([appf], min_args=1).documents
    assert doc.control_code == "nuclear energy CON waste"
    with pytest.raises(RowError, match="aspects"):
        build_aspect_documents([{"topic": "t", "stance": "pro", "sentence": "s"}])
    with pytest.raises(ValueError, match="min_args"):
        build_aspect_documents([], min_args=10, max_args=5)


def test_chunk_document_prepends_the_control_code_to_every_block():
    class Tok:
        def encode(self, text, add_special_tokens=False):
            return [len(w) for w in text.split()]

    doc = AspectDocument(topic="t", stance="pro", aspect="cost", stem="cost", arguments=["a bb ccc", "dddd eeeee"])
    # control code "t PRO cost" -> [1, 3, 4]; document "a bb ccc\ndddd eeeee" -> [1, 2, 3, 4, 5]
    assert corpora.chunk_document(doc, Tok(), block_size=2) == [[1, 3, 4, 1, 2], [1, 3, 4, 3, 4], [1, 3, 4, 5]]


# ---------------------------------------------------------------------------------------------------------
# 2. Debate paths (debate-trees §2.2, Table 2)
# ---------------------------------------------------------------------------------------------------------

#   1 thesis T
#   ├── 1.1 Pro A
#   │   ├── 1.1.1 Pro B
#   │   │   └── 1.1.1.1 Con D
#   │   └── 1.1.2 Con C
#   └── 1.2 Con E
#       └── 1.2.1 Pro F
#           └── 1.2.1.1 Con G
TREE = [
    Node("1", None, "none", "T"),
    Node("1.1", "1", "pro", "A"),
    Node("1.1.1", "1.1", "pro", "B"),
    Node("1.1.1.1", "1.1.1", "con", "D"),
    Node("1.1.2", "1.1", "con", "C"),
    Node("1.2", "1", "con", "E"),
    Node("1.2.1", "1.2", "pro", "F"),
    Node("1.2.1.1", "1.2.1", "con", "G"),
]
KIALO = """Discussion Title: T

1. T
1.1. Pro: A
1.1.1. Pro: B
1.1.1.1. Con: D
1.1.2. Con: C
1.2. Con: E
1.2.1. Pro: F
1.2.1.1. Con: G
"""

# Written out by hand: chains start at the thesis (R); the prompt matches [Pro Con][Pro]* (R then only Pro) ...
SUPPORTIVE = {  # response [Pro]+
    (("1",), ("1.1",)),
    (("1",), ("1.1", "1.1.1")),
    (("1", "1.1"), ("1.1.1",)),
}
CONTRADICTING = {  # response [Con][Pro]*
    (("1", "1.1", "1.1.1"), ("1.1.1.1",)),
    (("1", "1.1"), ("1.1.2",)),
    (("1",), ("1.2",)),
    (("1",), ("1.2", "1.2.1")),
}
COMPLEX = SUPPORTIVE | CONTRADICTING  # response [Pro Con][Pro]*
MULTI_TURN = CONTRADICTING | {  # prompt [Pro Con][Pro]*([Con][Pro]*)*: T | E F (two turns), then G answers F
    (("1", "1.2", "1.2.1"), ("1.2.1.1",)),
}


def _keys(strategy, **kwargs):
    pairs = list(debate_pairs(TREE, strategy, **kwargs))
    keys = [p.key for p in pairs]
    assert len(keys) == len(set(keys))
    return set(keys)


def test_debate_paths_four_strategies_on_a_hand_made_tree():
    assert _keys("supportive") == SUPPORTIVE
    assert _keys("contradicting") == CONTRADICTING
    assert _keys("complex") == COMPLEX
    assert _keys("multi-turn") == MULTI_TURN
    # Not pairs: T E | F (a prompt with a Con after the thesis is not [Pro Con][Pro]*), and T E F | G is a
    # multi-turn pair only.
    assert (("1", "1.2"), ("1.2.1",)) not in _keys("complex")
    assert (("1", "1.2", "1.2.1"), ("1.2.1.1",)) not in _keys("contradicting")


def test_debate_paths_texts_and_turns():
    pairs = {p.key: p for p in debate_pairs(TREE, "multi-turn")}
    two_turns = pairs[(("1", "1.2", "1.2.1"), ("1.2.1.1",))]
    assert two_turns.prompt_text() == "T <turn> E F"
    assert two_turns.response_text() == "G"
    assert two_turns.prompt_text(node_sep=" / ", turn_sep=" || ") == "T || E / F"
    one_turn = {p.key: p for p in debate_pairs(TREE, "supportive")}[(("1", "1.1"), ("1.1.1",))]
    assert one_turn.prompt_text() == "T A" and len(one_turn.prompt_turns()) == 1


def test_debate_paths_anchor_any_and_limits():
    # Paths may start at any node: the start's own stance fills the free [Pro Con] position.
    assert _keys("supportive", anchor="any") == SUPPORTIVE | {(("1.1",), ("1.1.1",)), (("1.2",), ("1.2.1",))}
    assert _keys("supportive", max_response_nodes=1) == SUPPORTIVE - {(("1",), ("1.1", "1.1.1"))}
    assert _keys("contradicting", max_prompt_nodes=1) == {(("1",), ("1.2",)), (("1",), ("1.2", "1.2.1"))}
    with pytest.raises(ValueError, match="strategy"):
        list(debate_pairs(TREE, "sarcastic"))


def test_assign_splits_is_seeded_and_90_5_5():
    keys = [f"debate-{i}" for i in range(40)]
    where = assign_splits(keys, seed=3)
    assert Counter(where.values()) == {"train": 36, "dev": 2, "test": 2}
    assert assign_splits(list(reversed(keys)), seed=3) == where  # order of the input does not matter
    assert assign_splits(keys, seed=4) != where
    assert Counter(assign_splits(keys, fractions="0.5,0.25,0.25").values()) == {"train": 20, "dev": 10, "test": 10}
    with pytest.raises(ValueError, match="must be 1"):
        assign_splits(keys, fractions=[0.5, 0.1, 0.1])


@pytest.mark.django_db
def test_debate_path_rows_from_imported_trees(tmp_path):
    from corpus.importers import import_file
    from corpus.models import DebateTree

    path = tmp_path / "debate.txt"
    path.write_text(KIALO, encoding="utf-8")
    import_file(path, "kialo", topic="religion")
    for i in range(19):  # more debates for the split
        other = tmp_path / f"d{i}.txt"
        other.write_text(
            f"Discussion Title: D{i}\n\n1. D{i}\n1.1. Pro: yes {i}\n1.1.1. Con: no {i}\n", encoding="utf-8"
        )
        import_file(other, "kialo")
    tree = DebateTree.objects.get(title="T")
    assert {(n.path, n.parent, n.stance) for n in corpora.tree_nodes(tree)} == {
        (n.path, n.parent, n.stance) for n in TREE
    }

    rows = list(corpora.debate_path_rows(seed=5))
    mine = [r for r in rows if r["tree_id"] == tree.pk]
    for strategy, expected in (
        ("supportive", SUPPORTIVE),
        ("contradicting", CONTRADICTING),
        ("complex", COMPLEX),
        ("multi-turn", MULTI_TURN),
    ):
        got = {(tuple(r["prompt_paths"]), tuple(r["response_paths"])) for r in mine if r["strategy"] == strategy}
        assert got == expected
    assert all(r["topic"] == "religion" and r["debate"] == "T" for r in mine)
    # Split by debate: each debate in exactly one split; 20 debates -> 18 / 1 / 1.
    split_of = {}
    for r in rows:
        assert split_of.setdefault(r["tree_id"], r["split"]) == r["split"]
    assert Counter(split_of.values()) == {"train": 18, "dev": 1, "test": 1}
    assert list(corpora.debate_path_rows(seed=5)) == rows
    only_test = list(corpora.debate_path_rows(seed=5, splits=["test"], strategies=["contradicting"]))
    assert only_test and {r["split"] for r in only_test} == {"test"}


# ---------------------------------------------------------------------------------------------------------
# 3. ArgU inputs (ArgU §4.1)
# ---------------------------------------------------------------------------------------------------------

TEXT = "Criminologists familiar with the effects of the DP on crime assert that the DP does not deter crime"


def _span(phrase, variable):
    begin = TEXT.index(phrase)
    return [begin, begin + len(phrase), variable]


ROW = {
    "argument_id": "a1",
    "item_id": 5,
    "topic": "death penalty",
    "stance": "con",
    "schemes": ["Source Authority"],
    "scheme_votes": {"Source Authority": 3},
    "text": TEXT,
    "variables": [
        {"id": 11, "text": "criminologists"},
        {"id": 12, "text": "effects of the death penalty on crime"},
        {"id": 13, "text": "the death penalty deters crime"},
        {"id": 14, "text": "offered, not used"},
    ],
    "spans": [
        _span("the DP does not deter crime", 13),
        _span("Criminologists", 11),
        _span("the effects of the DP on crime", 12),
        _span("assert", None),
    ],
}


def test_argu_input_formatting():
    out = argu_input(ROW, seed=13)
    # seed 13 and key "a1" shuffle the grounded variables [11, 12, 13] (span order) to [11, 13, 12].
    assert [(v["tag"], v["id"]) for v in out["variables"]] == [("<VAR_0>", 11), ("<VAR_1>", 13), ("<VAR_2>", 12)]
    assert out["encoder_input"] == (
        "death penalty <VAR_0> criminologists <VAR_1> the death penalty deters crime "
        "<VAR_2> effects of the death penalty on crime"
    )
    # Grounded spans become their variable's tag; the "Others" span ("assert") stays text.
    assert out["template"] == "<VAR_0> familiar with <VAR_2> assert that <VAR_1>"
    assert out["stance_code"] == "<con>" and out["scheme_code"] == "<source_authority>"
    assert out["control_codes"] == ["<con>", "<source_authority>"]
    assert out["mono_target"] == f"<con> <source_authority> <argument> {TEXT}"
    assert out["dual_target"] == (
        f"<con> <source_authority> <pattern> <VAR_0> familiar with <VAR_2> assert that <VAR_1> <argument> {TEXT}"
    )
    assert out["argument"] == TEXT and out["argument_id"] == "a1" and out["item_id"] == 5


def test_argu_input_order_is_seeded_per_argument():
    orders = set()
    for key in range(30):
        row = dict(ROW, argument_id=f"k{key}")
        out = argu_input(row, seed=13)
        assert out == argu_input(row, seed=13)
        ids = [v["id"] for v in out["variables"]]
        assert sorted(ids) == [11, 12, 13] and [v["tag"] for v in out["variables"]] == ["<VAR_0>", "<VAR_1>", "<VAR_2>"]
        for v in out["variables"]:  # every tag in the template stands where its variable's span was
            assert v["tag"] in out["template"]
        orders.add(tuple(ids))
    assert len(orders) > 1  # random, not span order


def test_argu_input_schemes_limits_and_skips():
    merged = argu_input(dict(ROW, schemes=[], scheme="Goal from Means"))
    assert merged["scheme"] == "Means for Goal" and merged["scheme_code"] == "<means_for_goal>"
    kept = argu_input(dict(ROW, schemes=[], scheme="Goal from Means"), merge_goal_from_means=False)
    assert kept["scheme_code"] == "<goal_from_means>"
    voted = argu_input(
        dict(
            ROW,
            schemes=["From Consequence", "Rule or Principle"],
            scheme_votes={"From Consequence": 2, "Rule or Principle": 3},
        )
    )
    assert voted["scheme"] == "Rule or Principle"
    no_scheme = argu_input(dict(ROW, schemes=[], scheme=None))
    assert no_scheme["scheme_code"] is None and no_scheme["mono_target"] == f"<con> <argument> {TEXT}"

    five = dict(
        ROW,
        variables=ROW["variables"] + [{"id": 15, "text": "x"}],
        spans=ROW["spans"] + [_span("does not", 14), _span("crime assert", 15)],
    )
    with pytest.raises(RowError, match="5 grounded variables"):
        argu_input(five)
    skipped = Counter()
    rows = [ROW, five, dict(ROW, spans=[]), dict(ROW, stance="none"), dict(ROW, schemes=[], scheme=None)]
    out = list(argu_inputs(rows, require_scheme=True, skipped=skipped))
    assert len(out) == 1
    assert sum(skipped.values()) == 4
    assert corpora.special_tokens() == [
        "<means_for_goal>",
        "<from_consequence>",
        "<source_knowledge>",
        "<source_authority>",
        "<rule_or_principle>",
        "<pro>",
        "<con>",
        "<VAR_0>",
        "<VAR_1>",
        "<VAR_2>",
        "<VAR_3>",
        "<pattern>",
        "<argument>",
    ]


# ---------------------------------------------------------------------------------------------------------
# Release kinds and the CLI
# ---------------------------------------------------------------------------------------------------------


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.django_db
def test_release_kinds(tmp_path, tmp_artifacts):
    from corpus.importers import import_file
    from corpus.releases import build_release, get_exporter, release_path

    silver = _write(tmp_path / "silver.jsonl", _rows("t", "pro", "cost", 20) + _rows("t", "con", "waste", 3))
    release = build_release("argctrl-docs", "1", kind="aspect-docs", config={"rows_file": str(silver), "min_args": 15})
    assert release.config["source"] == "silver" and release.config["max_args"] == 1500
    lines = (release_path(release) / "aspect-docs.jsonl").read_text().splitlines()
    assert [json.loads(l)["control_code"] for l in lines] == ["t PRO cost"]

    kialo = tmp_path / "debate.txt"
    kialo.write_text(KIALO, encoding="utf-8")
    import_file(kialo, "kialo")
    release = build_release(
        "debates", "1", kind="debate-paths", config={"strategies": ["supportive"], "fractions": [1, 0, 0]}
    )
    names = sorted(f.name for f in release.files.all())
    assert names == ["README.md", "supportive-dev.jsonl", "supportive-test.jsonl", "supportive-train.jsonl"]
    rows = [json.loads(l) for l in (release_path(release) / "supportive-train.jsonl").read_text().splitlines()]
    assert {(tuple(r["prompt_paths"]), tuple(r["response_paths"])) for r in rows} == SUPPORTIVE

    spans = _write(tmp_path / "spans.jsonl", [ROW])
    release = build_release("argu", "1", kind="argu-inputs", config={"rows_file": str(spans)})
    [row] = [json.loads(l) for l in (release_path(release) / "argu-inputs.jsonl").read_text().splitlines()]
    assert row["template"] == "<VAR_0> familiar with <VAR_2> assert that <VAR_1>"

    with pytest.raises(ValueError, match="projects or rows_file"):
        get_exporter("argu-inputs").prepare({})


@pytest.mark.django_db
def test_gencorpus_command(tmp_path, capsys):
    from corpus.importers import import_file

    rows = _write(tmp_path / "silver.jsonl", _rows("t", "pro", "costs", 4) + _rows("t", "pro", "cost", 1))
    out = tmp_path / "docs.jsonl"
    call_command("gencorpus", "aspect-docs", "--rows", str(rows), "--min-args", "3", "--out", str(out), "--json")
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows"] == 1 and summary["stats"]["arguments"] == 5
    assert json.loads(out.read_text())["control_code"] == "t PRO costs"

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_rows("t", "pro", "x", 1)[0]) + "\n" + '{"topic": "t", "stance": "pro"}\n')
    with pytest.raises(CommandError, match=r"bad\.jsonl:2: ") as err:
        call_command("gencorpus", "aspect-docs", "--rows", str(bad), "--out", str(tmp_path / "x.jsonl"))
    assert err.value.returncode == 2 and not (tmp_path / "x.jsonl").exists()
    with pytest.raises(CommandError, match="min_args") as err:
        call_command("gencorpus", "aspect-docs", "--rows", str(rows), "--min-args", "0", "--out", str(out))
    assert err.value.returncode == 2

    kialo = tmp_path / "debate.txt"
    kialo.write_text(KIALO, encoding="utf-8")
    import_file(kialo, "kialo")
    paths = tmp_path / "paths.jsonl"
    call_command(
        "gencorpus", "debate-paths", "--strategy", "multi-turn", "--fractions", "1,0,0", "--out", str(paths), "--json"
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["counts"] == {"multi-turn|train": len(MULTI_TURN)}
    got = {
        (tuple(r["prompt_paths"]), tuple(r["response_paths"])) for r in map(json.loads, paths.read_text().splitlines())
    }
    assert got == MULTI_TURN

    spans = _write(tmp_path / "spans.jsonl", [ROW, dict(ROW, spans=[])])
    argu = tmp_path / "argu.jsonl"
    call_command("gencorpus", "argu-inputs", "--rows", str(spans), "--out", str(argu), "--json")
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows"] == 1 and summary["skipped"] == {"N grounded variables, not 1-4": 1}


@pytest.mark.django_db
def test_gold_aspect_documents_from_an_aspect_project(tmp_path, tmp_artifacts):
    from annotation import services
    from annotation.task_types.aspect.appf import import_appf
    from annotation.task_types.base import GoldShare
    from corpus.releases import build_release, release_path

    lines = []
    for i, (sentence, aspect) in enumerate(
        [
            ("The cost is too high.", "cost"),
            ("Its costs keep rising.", "costs"),
            ("Low cost energy for all.", "cost"),
            ("Waste is stored.", "Waste"),
        ]
    ):
        begin = sentence.index(aspect)
        lines.append(
            json.dumps(
                {
                    "hash": f"h{i}",
                    "topic": "nuclear energy",
                    "stance": "Argument_against",
                    "sentence": sentence,
                    "aspect_pos": [f"({begin},{len(aspect)})"],
                    "aspect_pos_string": [aspect],
                }
            )
        )
    path = tmp_path / "appf.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    project = services.create_project(
        name="Aspects", slug="aspects-gold", task_type="aspect", status="active", config={"top_k": 3}
    )
    import_appf(path, project, gold=GoldShare("all"))

    rows = list(corpora.gold_aspect_rows(["aspects-gold"]))
    assert len(rows) == 4 and {r["stance"] for r in rows} == {"con"}
    docs = build_aspect_documents(rows, min_args=2).documents
    assert [(d.control_code, len(d.arguments)) for d in docs] == [("nuclear energy CON cost", 3)]

    release = build_release("gold-docs", "1", kind="aspect-docs", config={"projects": ["aspects-gold"], "min_args": 2})
    assert release.config["source"] == "gold"
    [row] = [json.loads(l) for l in (release_path(release) / "aspect-docs.jsonl").read_text().splitlines()]
    assert row["aspects"] == ["cost", "costs"] and row["n_arguments"] == 3


@pytest.mark.django_db
def test_gold_aspect_rows_of_unknown_stance_are_skipped_never_guessed(tmp_path):
    """A CoNLL sentence without a stance is App. F ``"stance": null``: the aspect documents leave it out (counted),
    no control code says PRO or CON for it."""
    from annotation import services
    from annotation.task_types.aspect.appf import import_appf

    lines = [
        json.dumps(
            {
                "hash": f"h{i}",
                "topic": "nuclear energy",
                "stance": stance,
                "sentence": sentence,
                "aspect_pos": ["(4,4)"],
                "aspect_pos_string": ["cost"],
            }
        )
        for i, (stance, sentence) in enumerate(
            [
                ("Argument_against", "The cost is too high."),
                (None, "The cost is what it is."),
                ("Argument_against", "The cost keeps rising."),
            ]
        )
    ]
    path = tmp_path / "appf.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    project = services.create_project(name="Aspects", slug="aspects-unknown", task_type="aspect", config={"top_k": 3})
    import_appf(path, project)
    rows = list(corpora.gold_aspect_rows(["aspects-unknown"]))
    assert sorted((r["sentence"], r["stance"]) for r in rows) == [
        ("The cost is too high.", "con"),
        ("The cost is what it is.", None),
        ("The cost keeps rising.", "con"),
    ]
    result = build_aspect_documents(rows, min_args=1)
    assert [(d.control_code, len(d.arguments)) for d in result.documents] == [("nuclear energy CON cost", 2)]
    assert result.stats["dropped"]["no_stance"] == 1
