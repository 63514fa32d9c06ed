"""The studio's sources of ``span_grounding``: the fact KB uploaded in the browser (``FACT_KB``, the importer of
``spans kb-import``), and the sentence sources' preview naming each topic without enough variables."""

from __future__ import annotations

import json

import pytest

from annotation.models import HIT, Item
from annotation.studio import services as studio
from annotation.task_types.span_grounding import sources
from argora.errors import FieldError
from corpus.importers import ImportFailed
from corpus.models import FactVariable, Sentence, Topic
from tests.annotation.studio.helpers import setup, source_input, write

pytestmark = pytest.mark.django_db

KB_CSV = (
    "topic,text,origin\n"
    "minimum wage,Minimum wage increases reduce employment.,seed\n"
    "minimum wage,Minimum wage increases reduce poverty.,expert\n"
    "minimum wage,Minimum wage increases raise prices.,proposed\n"
    "rent control,Rent control lowers rents for tenants.,seed\n"
)
ARGUMENTS = "".join(
    json.dumps(row) + "\n"
    for row in (
        {
            "topic": "minimum wage",
            "sentence": "Raising the minimum wage costs young workers their jobs.",
            "stance": "con",
        },
        {"topic": "minimum wage", "sentence": "A higher minimum wage lifts families out of poverty.", "stance": "pro"},
        {"topic": "minimum wage", "sentence": "Prices go up when wages go up.", "stance": "con"},
    )
)


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def test_the_browser_flow_kb_first_then_the_arguments():
    # 1. the arguments alone: the preview names the topic and where to upload its KB; nothing written
    args = source_input("span_grounding", "arguments-jsonl", "wage.jsonl", ARGUMENTS)
    _, problems = studio.preview_import(setup("span_grounding"), args)
    assert problems == [
        "variables: topic 'minimum wage' has 0 active fact variable(s) in the KB; an item needs at "
        'least 2. Upload the topic\'s KB first: choose "Fact KB (CSV / JSONL)" where the items come '
        'from (then add these sentences with "Add items" on the project page), or run manage.py '
        "spans kb-import"
    ]
    # 2. the KB: the corpus has no sentence of its topics yet; the project starts without items
    kb = source_input("span_grounding", "fact-kb", "kb.csv", KB_CSV)
    preview = sources.preview(setup("span_grounding"), kb)
    assert preview.items == 0
    assert preview.rows == [["minimum wage", "3", "2", "0"], ["rent control", "1", "1", "0"]]  # proposed: not active
    assert preview.notes[0] == "4 fact variable(s) of 2 topic(s) in the file, 4 of them new to the KB"
    assert "no sentence of minimum wage, rent control in the corpus yet" in preview.notes[1]
    assert FactVariable.objects.count() == 0 and Topic.objects.count() == 0
    project, summary = write("span_grounding", kb)
    assert summary == {"items": 0, "gold": 0, "facts_created": 4}
    assert FactVariable.objects.get(text="Minimum wage increases raise prices.").status == FactVariable.Status.PENDING
    # 3. the arguments, added to the project: the preview now finds the KB
    preview, problems = studio.preview_import(
        project, source_input("span_grounding", "arguments-jsonl", "wage.jsonl", ARGUMENTS)
    )
    assert problems == [] and preview.items == 3
    assert (
        sources.write(
            project, source_input("span_grounding", "arguments-jsonl", "wage.jsonl", ARGUMENTS), lambda *a: None
        )["items"]
        == 3
    )
    item = Item.objects.filter(project=project).first()
    assert len(item.payload["variables"]) == 2


def test_kb_items_from_the_corpus_sentences_of_its_topics_with_a_limit():
    write("sentence_label", source_input("sentence_label", "arguments-jsonl", "wage.jsonl", ARGUMENTS))
    kb = source_input(
        "span_grounding",
        "fact-kb",
        "kb.jsonl",
        "".join(json.dumps({"topic": "Minimum Wage", "text": f"fact {n}"}) + "\n" for n in range(3)),
        options={"limit": 2},
    )
    preview = sources.preview(setup("span_grounding"), kb)
    assert preview.items == 2 and preview.rows == [["minimum wage", "3", "3", "2"]]  # 2: the limit
    project, summary = write("span_grounding", kb, items_per_hit=1)
    assert summary["items"] == 2 and HIT.objects.filter(project=project).count() == 2
    texts = [i.payload["text"] for i in Item.objects.filter(project=project).order_by("position")]
    assert texts == list(Sentence.objects.order_by("id").values_list("text", flat=True)[:2])
    assert FactVariable.objects.filter(topic__name="minimum wage").count() == 3  # the KB's topic matched by name


def test_kb_with_too_few_variables_for_a_topic_with_sentences_is_refused():
    write("sentence_label", source_input("sentence_label", "arguments-jsonl", "wage.jsonl", ARGUMENTS))
    kb = source_input("span_grounding", "fact-kb", "kb.csv", "topic,text\nminimum wage,only one fact\n")
    _, problems = studio.preview_import(setup("span_grounding"), kb)
    assert problems == [
        "variables: topic 'minimum wage' would have 1 active fact variable(s) after the import; an "
        "item needs at least 2: add variables to the file"
    ]
    with pytest.raises(FieldError, match="would have 1 active"):
        write("span_grounding", kb)
    assert FactVariable.objects.count() == 0


def test_a_bad_kb_row_is_refused_with_its_line_and_writes_nothing():
    bad = KB_CSV + "minimum wage,,seed\n"
    kb = source_input("span_grounding", "fact-kb", "kb.csv", bad)
    _, problems = studio.preview_import(setup("span_grounding"), kb)
    assert len(problems) == 1 and problems[0].startswith("kb.csv:6: ") and "text" in problems[0]
    with pytest.raises(ImportFailed):
        write("span_grounding", kb)
    assert FactVariable.objects.count() == 0
    other = source_input("span_grounding", "fact-kb", "kb.csv", "name,fact\nx,y\n")
    assert studio.preview_import(setup("span_grounding"), other)[1][0].startswith("kb.csv:1: ")
