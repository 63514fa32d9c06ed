"""The corpus sources of the sentence-built task types (:mod:`annotation.studio.sentences`): a Kialo export as a
source of sentences, and the gold share (first N, N% seeded) on the UKP TSV, JSONL and corpus sources."""

from __future__ import annotations

import json

import pytest

from annotation.models import GoldItem, Item
from annotation.studio import sentences
from annotation.studio import services as studio
from annotation.task_types import sources_of
from annotation.task_types.base import GoldShare, SourceInput
from argora.errors import FieldError
from corpus.importers import ImportFailed
from corpus.models import DebateNode, DebateTree, Sentence, Topic

from .helpers import KIALO, setup, source_input, write

pytestmark = pytest.mark.django_db

TSV_HEADER = "topic\tretrievedUrl\tarchivedUrl\tsentenceHash\tsentence\tannotation\tset\n"
LABELS = ("Argument_for", "Argument_against", "NoArgument")
TSV = TSV_HEADER + "".join(
    f"school uniforms\thttps://example.org/{n}\t\th{n}\tUniform sentence number {n}.\t{LABELS[n % 3]}\ttrain\n"
    for n in range(10)
)
STANCE = {"Argument_for": "pro", "Argument_against": "con", "NoArgument": "none"}


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


# --- Kialo as a source of sentences ----------------------------------------------------------------------------
def test_kialo_claims_become_sentences_of_the_discussion_topic():
    project = setup("sentence_label")
    data = source_input("sentence_label", "kialo", "uniforms.txt", KIALO)
    assert data.source.gold_label == ""  # Pro/Con towards a parent is no label of the topic: no gold share
    preview = sentences.preview(project, data)
    # 10 claims; 1.2.2 copies 1.1.2 ("-> See"), the same sentence of the same topic: kept once
    assert preview.items == 9 and preview.gold == 0
    assert [row[1] for row in preview.rows] == ["Should schools require uniforms?"] * 9
    stances = {row[3]: row[2] for row in preview.rows}
    assert stances["Uniforms reduce bullying over clothes."] == "pro"  # 1.1 answers the thesis
    assert stances["Uniforms cost families money."] == "con"  # 1.2
    assert stances["Children are bullied for\nother things too."] == "none"  # 1.1.1: Con of 1.1, not of the topic
    assert stances["Schools should require uniforms."] == "none"  # the thesis
    assert "new topic(s) for the corpus: Should schools require uniforms?" in preview.notes
    assert Topic.objects.count() == Sentence.objects.count() == DebateTree.objects.count() == 0  # nothing written

    project, summary = write("sentence_label", data)
    assert summary["items"] == 9 and summary["sentences_created"] == 9 and summary["topics_created"] == 1
    tree = DebateTree.objects.get()
    assert tree.topic.name == "Should schools require uniforms?" and DebateNode.objects.filter(tree=tree).count() == 10
    deep = Sentence.objects.get(external_id="1.1.1")
    assert deep.stance == "none" and deep.source == "kialo"
    assert deep.metadata["kialo"] == {
        "path": "1.1.1",
        "relation": "con",
        "tree": tree.content_hash,
        "discussion": "Should schools require uniforms?",
    }
    items = list(Item.objects.filter(project=project).order_by("position"))
    assert [i.payload["text"] for i in items][:2] == [
        "Schools should require uniforms.",
        "Uniforms reduce bullying over clothes.",
    ]
    # the same file again: the tree and the sentences are reused
    _, again = write("sentence_label", source_input("sentence_label", "kialo", "uniforms.txt", KIALO))
    assert again["items"] == 9 and again["sentences_created"] == 0 and DebateTree.objects.count() == 1


def test_kialo_with_a_topic_of_its_own_keeps_no_stance():
    """Under a topic that is not the discussion's own title, even a reply of the thesis says nothing about the
    topic (the thesis could be against it): every stance is none."""
    data = source_input("sentence_label", "kialo", "uniforms.txt", KIALO, options={"topic": "school uniforms"})
    preview = sentences.preview(setup("sentence_label"), data)
    assert {row[1] for row in preview.rows} == {"school uniforms"} and {row[2] for row in preview.rows} == {"none"}
    write("sentence_label", data)
    assert DebateTree.objects.get().topic.name == "school uniforms"
    assert set(Sentence.objects.values_list("stance", flat=True)) == {"none"}


@pytest.mark.parametrize(
    "text, line, reason",
    [
        ('{"topic": "x", "sentence": "y", "stance": "pro"}\n', 1, "text before the first node"),
        (KIALO + "1.6.1. Pro: An orphan.\n", 14, "node 1.6.1. has no parent"),
        (
            KIALO.replace("1.2.2. Con: -> See 1.1.2.", "1.2.2. Con: -> See 1.9."),
            11,
            "refers to 1.9., which does not exist",
        ),
    ],
)
def test_a_file_that_is_no_kialo_export_is_refused_with_its_line(text, line, reason):
    data = source_input("sentence_label", "kialo", "notkialo.txt", text)
    with pytest.raises(ImportFailed) as exc:
        sentences.preview(setup("sentence_label"), data)
    assert exc.value.line == line and reason in exc.value.reason
    _, problems = studio.preview_import(setup("sentence_label"), data)
    assert problems and problems[0].startswith(f"notkialo.txt:{line}: ")
    with pytest.raises(ImportFailed):
        write("sentence_label", data)
    assert Sentence.objects.count() == DebateTree.objects.count() == Topic.objects.count() == 0


def test_kialo_is_offered_to_every_sentence_built_task_type():
    for name in ("sentence_label", "span_grounding", "aspect", "bws_similarity"):
        assert "kialo" in {s.name for s in sources_of(name).SOURCES}, name
    # BWS pairs the claims of the discussion's topic (its sources read the file through this module)
    preview, problems = studio.preview_import(
        setup("bws_similarity", config={"scorer": "jaccard"}),
        source_input("bws_similarity", "kialo", "uniforms.txt", KIALO, options={"pairs": 6}),
    )
    assert problems == [] and preview.rows[0][:3] == ["Should schools require uniforms?", "9", "6"]


# --- the gold share ----------------------------------------------------------------------------------------------
def _gold_texts(project):
    return [g.item.payload["text"] for g in GoldItem.objects.filter(item__project=project).order_by("item__position")]


@pytest.mark.parametrize(
    "source, name, text",
    [
        ("ukp-tsv", "uniforms.tsv", TSV),
        (
            "arguments-jsonl",
            "uniforms.jsonl",
            "".join(
                json.dumps(
                    {
                        "topic": "school uniforms",
                        "sentence": f"Uniform sentence number {n}.",
                        "stance": STANCE[LABELS[n % 3]],
                    }
                )
                + "\n"
                for n in range(10)
            ),
        ),
    ],
)
def test_gold_share_first_n_from_the_corpus_stance(source, name, text):
    data = source_input("sentence_label", source, name, text, gold={"mode": "first", "n": 3})
    preview = sentences.preview(setup("sentence_label"), data)
    assert (preview.items, preview.gold) == (7, 3) and preview.columns[-1] == "gold"
    assert [row[-1] for row in preview.rows[:4]] == ["gold: pro", "gold: con", "gold: none", ""]
    project, summary = write("sentence_label", data)
    assert (summary["items"], summary["gold"]) == (7, 3)
    assert _gold_texts(project) == [f"Uniform sentence number {n}." for n in range(3)]
    assert [g.expected for g in GoldItem.objects.filter(item__project=project).order_by("item__position")] == [
        {"label": "pro"},
        {"label": "con"},
        {"label": "none"},
    ]
    assert Item.objects.filter(project=project, is_gold=False).count() == 7


def test_gold_share_percent_is_seeded_the_same_rows_twice():
    def run(seed):
        data = source_input(
            "sentence_label", "ukp-tsv", "uniforms.tsv", TSV, gold={"mode": "percent", "n": 30, "seed": seed}
        )
        preview = sentences.preview(setup("sentence_label"), data)
        marked = [row[3] for row in preview.rows if row[-1]]
        project, summary = write("sentence_label", data)
        assert (preview.items, preview.gold) == (summary["items"], summary["gold"]) == (7, 3)
        assert _gold_texts(project) == marked  # the preview shows the rows the import makes gold
        return marked

    first = run(5)
    assert run(5) == first  # the same file and seed: the same rows (the corpus sentences are reused the second time)
    assert len({tuple(run(seed)) for seed in (1, 2, 3, 4)} | {tuple(first)}) > 1


def test_gold_share_on_a_corpus_selection_is_drawn_from_the_limit():
    write("sentence_label", source_input("sentence_label", "ukp-tsv", "uniforms.tsv", TSV))
    data = source_input(
        "sentence_label", "corpus", topics=[Topic.objects.get().pk], limit=4, gold={"mode": "first", "n": 1}
    )
    preview = sentences.preview(setup("sentence_label"), data)
    assert (preview.items, preview.gold) == (3, 1)
    project, summary = write("sentence_label", data)
    assert (summary["items"], summary["gold"]) == (3, 1)
    assert _gold_texts(project) == ["Uniform sentence number 0."]


@pytest.mark.parametrize(
    "gold", [{"mode": "first", "n": 10}, {"mode": "first", "n": 50}, {"mode": "percent", "n": 100}]
)
def test_a_share_that_leaves_no_worker_item_is_refused(gold):
    """No project with 0 HITs: every row gold is refused (``gold_n``) in the preview and in the write."""
    project = setup("sentence_label")
    data = source_input("sentence_label", "ukp-tsv", "uniforms.tsv", TSV)
    data = SourceInput(
        source=data.source, path=data.path, file_name=data.file_name, options=data.options, gold=GoldShare(**gold)
    )
    with pytest.raises(FieldError) as exc:
        sentences.preview(project, data)
    assert exc.value.field == "gold_n" and "leave some rows for the workers" in exc.value.reason
    with pytest.raises(FieldError) as exc:
        write("sentence_label", data)
    assert exc.value.field == "gold_n" and Sentence.objects.count() == 0  # refused before the corpus import
    # "all" (a gold-only addition to a project that has items) is the one share without worker items
    everything = SourceInput(
        source=data.source, path=data.path, file_name=data.file_name, options=data.options, gold=GoldShare(mode="all")
    )
    assert sentences.preview(project, everything).gold == 10


def test_a_stance_that_is_no_label_of_the_project_is_refused_naming_the_row():
    project = setup("sentence_label", config={"labels": ["good", "bad"]})
    data = source_input("sentence_label", "ukp-tsv", "uniforms.tsv", TSV, gold={"mode": "first", "n": 1})
    _, problems = studio.preview_import(project, data)
    assert problems and problems[0].startswith("gold_mode: sentence 1 ('Uniform sentence number 0.', stance pro)")
