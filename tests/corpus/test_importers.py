"""Corpus importers: exact rows per format, all-or-nothing refusal with file:line, idempotent re-import."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from corpus.hashing import document_hash, fact_hash, sentence_hash
from corpus.importers import FORMATS, ImportFailed, ImportSummary, import_documents, import_file
from corpus.models import DebateNode, DebateTree, Document, FactVariable, Sentence, Topic
from corpus.sentences import RelevanceFilter, split_sentences, token_count
from corpus.ukp_topics import UKP_TOPIC_SYNONYMS, default_synonyms

DATA = Path(__file__).parent / "data"
UKP_HEADER = "topic\tretrievedUrl\tarchivedUrl\tsentenceHash\tsentence\tannotation\tset\n"
MODELS = (Topic, Sentence, Document, FactVariable, DebateTree, DebateNode)

pytestmark = pytest.mark.django_db


def counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in MODELS}


def write(tmp_path, name: str, content, mode="w") -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def refused(path, fmt, **kwargs) -> ImportFailed:
    """Import must fail and leave every table as it was."""
    before = counts()
    with pytest.raises(ImportFailed) as info:
        import_file(path, fmt, **kwargs)
    assert counts() == before
    err = info.value
    assert str(err) == f"{err.file}:{err.line}: {err.reason}"
    assert err.file == str(path)
    return err


def test_formats_are_the_public_list():
    assert FORMATS == ("ukp-tsv", "jsonl", "kialo", "facts-jsonl", "facts-csv", "ibm-argq", "ibm-argkp", "argsme-json")


# --- UKP TSV ---------------------------------------------------------------------------------------


def test_ukp_tsv_creates_exact_rows_and_reimport_adds_nothing():
    summary = import_file(DATA / "ukp_sample.tsv", "ukp-tsv")
    assert isinstance(summary, ImportSummary)
    assert summary.created == {
        "topics": 2,
        "sentences": 4,
        "debate_trees": 0,
        "debate_nodes": 0,
        "facts": 0,
        "documents": 0,
    }
    assert summary.skipped == 1  # the repeated last row
    rows = list(Sentence.objects.order_by("id").values_list("topic__name", "text", "stance", "external_id", "source"))
    assert rows == [
        ("abortion", "Abortion is a woman's right to choose.", "pro", "h1", "ukp"),
        ("abortion", "Life begins at conception, so abortion ends a life.", "con", "h2", "ukp"),
        ("abortion", "The clinic opened in 1970.", "none", "h3", "ukp"),
        ("nuclear energy", "Nuclear power emits almost no CO2.", "pro", "h4", "ukp"),
    ]
    first = Sentence.objects.get(external_id="h1")
    assert first.metadata == {
        "retrievedUrl": "http://a.example/1",
        "archivedUrl": "http://archive.example/1",
        "set": "train",
    }
    assert first.content_hash == sentence_hash("abortion", first.text)
    # Topics created by an import get Table 9's synonyms.
    assert Topic.objects.get(name="abortion").synonyms == ["abort", "termination", "misbirth", "birth control"]

    before = counts()
    again = import_file(DATA / "ukp_sample.tsv", "ukp-tsv")
    assert counts() == before
    assert sum(again.created.values()) == 0
    assert again.skipped == 5
    assert again.as_dict()["skipped"] == 5 and again.as_dict()["created"]["sentences"] == 0


def test_ukp_tsv_source_option_and_existing_topic_matched_case_insensitively():
    Topic.objects.create(name="Abortion", synonyms=["custom"])
    summary = import_file(DATA / "ukp_sample.tsv", "ukp-tsv", source="ukp-2018")
    assert summary.created["topics"] == 1  # only "nuclear energy" is new
    assert set(Sentence.objects.values_list("source", flat=True)) == {"ukp-2018"}
    assert Sentence.objects.filter(topic__name="Abortion").count() == 3
    assert Topic.objects.get(name="Abortion").synonyms == ["custom"]


def test_ukp_tsv_bad_annotation_names_the_line(tmp_path):
    Topic.objects.create(name="abortion")
    path = write(
        tmp_path,
        "bad.tsv",
        UKP_HEADER
        + "abortion\tu\ta\th1\tGood sentence here.\tArgument_for\ttrain\n"
        + "abortion\tu\ta\th2\tAnother sentence here.\tArgument_maybe\ttrain\n",
    )
    err = refused(path, "ukp-tsv")
    assert err.line == 3
    assert "Argument_maybe" in err.reason


def test_ukp_tsv_missing_column_fails_at_line_1(tmp_path):
    header = UKP_HEADER.replace("\tannotation", "")
    path = write(tmp_path, "nocol.tsv", header + "abortion\tu\ta\th1\tGood sentence here.\ttrain\n")
    err = refused(path, "ukp-tsv")
    assert err.line == 1
    assert '"annotation"' in err.reason


def test_ukp_tsv_wrong_column_count_and_quoted_multiline_rows(tmp_path):
    path = write(
        tmp_path,
        "multi.tsv",
        UKP_HEADER
        + 'abortion\tu\ta\th1\t"A sentence that\nspans two lines."\tArgument_for\ttrain\n'
        + "abortion\tu\ta\th2\tToo few columns\n",
    )
    err = refused(path, "ukp-tsv")
    assert err.line == 4  # the row after the two-line row
    assert "expected 7 columns, found 5" in err.reason


def test_invalid_utf8_names_the_line_of_the_bad_bytes(tmp_path):
    content = (UKP_HEADER + "abortion\tu\ta\th1\tFine sentence.\tArgument_for\ttrain\n").encode()
    content += b"abortion\tu\ta\th2\tCaf" + b"\xe9 au lait.\tArgument_for\ttrain\n"
    path = write(tmp_path, "latin1.tsv", content)
    err = refused(path, "ukp-tsv")
    assert err.line == 3
    assert "UTF-8" in err.reason


def test_missing_file_is_refused(tmp_path):
    err = refused(tmp_path / "nope.jsonl", "jsonl")
    assert err.reason == "file not found"


# --- JSONL -----------------------------------------------------------------------------------------


def test_jsonl_creates_exact_rows_ignoring_hash_and_split():
    summary = import_file(DATA / "arguments.jsonl", "jsonl", source="upload")
    assert summary.created["sentences"] == 3 and summary.created["topics"] == 2
    rows = list(
        Sentence.objects.order_by("id").values_list(
            "topic__name", "text", "stance", "external_id", "source", "metadata"
        )
    )
    assert rows == [
        ("Cloning", "Cloning could save endangered species.", "pro", "a-1", "ukp", {"aspects": ["endangered species"]}),
        ("Cloning", "Cloned animals often suffer from health problems.", "con", "7", "upload", {}),
        ("Minimum wage", "The minimum wage was raised last year.", "none", "", "upload", {}),
    ]
    assert import_file(DATA / "arguments.jsonl", "jsonl").skipped == 3


def test_jsonl_release_rows_import_back_to_the_same_sentences(tmp_path):
    """A release file (hash, id, topic, sentence, stance, source, metadata, split) round-trips."""
    import_file(DATA / "ukp_sample.tsv", "ukp-tsv")
    original = list(
        Sentence.objects.order_by("id").values_list(
            "topic__name", "text", "stance", "source", "external_id", "metadata", "content_hash"
        )
    )
    lines = [
        json.dumps(
            {
                "hash": s.content_hash,
                "id": s.external_id,
                "topic": s.topic.name,
                "sentence": s.text,
                "stance": s.stance,
                "source": s.source,
                "metadata": s.metadata,
                "split": "train",
            }
        )
        for s in Sentence.objects.order_by("id")
    ]
    path = write(tmp_path, "release.jsonl", "\n".join(lines) + "\n")
    assert import_file(path, "jsonl").skipped == 4  # same hashes: nothing new
    Sentence.objects.all().delete()
    Topic.objects.all().delete()
    summary = import_file(path, "jsonl")
    assert summary.created["sentences"] == 4
    restored = list(
        Sentence.objects.order_by("id").values_list(
            "topic__name", "text", "stance", "source", "external_id", "metadata", "content_hash"
        )
    )
    assert restored == original
    assert all("split" not in m for m in Sentence.objects.values_list("metadata", flat=True))


@pytest.mark.parametrize(
    "line3, reason",
    [
        ('{"topic": "Cloning", "sentence": "Broken', "invalid JSON"),
        ('{"topic": "Cloning", "stance": "pro"}', 'missing key "sentence"'),
        ('{"topic": "Cloning", "sentence": "Fine text.", "stance": "maybe"}', 'unknown stance "maybe"'),
        ('{"topic": "Cloning", "sentence": 42, "stance": "pro"}', '"sentence" must be a string'),
        (
            '{"topic": "Cloning", "sentence": "Fine text.", "stance": "pro", "metadata": [1]}',
            '"metadata" must be an object',
        ),
        ('["not", "an", "object"]', "expected a JSON object"),
    ],
)
def test_jsonl_malformed_line_is_refused_with_its_line(tmp_path, line3, reason):
    good = '{"topic": "Cloning", "sentence": "Cloning is fine.", "stance": "pro"}'
    path = write(tmp_path, "bad.jsonl", f"{good}\n\n{line3}\n")
    err = refused(path, "jsonl")
    assert err.line == 3
    assert reason in err.reason


def test_jsonl_line_separator_inside_a_string_is_not_a_line_break(tmp_path):
    rows = [
        {"topic": "Cloning", "sentence": "Cloning is fine.\u2028Really.", "stance": "pro"},
        {"topic": "Cloning", "sentence": "Cloning is risky.", "stance": "con"},
    ]
    path = write(tmp_path, "separators.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    assert import_file(path, "jsonl").created["sentences"] == 2


def test_jsonl_topic_option_fills_rows_without_topic(tmp_path):
    path = write(tmp_path, "no_topic.jsonl", '{"sentence": "Uniforms cost money.", "stance": "con"}\n')
    refused(path, "jsonl")
    import_file(path, "jsonl", topic="School uniforms")
    assert Sentence.objects.get().topic.name == "School uniforms"


# --- Kialo -----------------------------------------------------------------------------------------


def test_kialo_tree_rows_parents_paths_and_references():
    summary = import_file(DATA / "kialo_abortion.txt", "kialo", topic="abortion")
    assert summary.created == {
        "topics": 1,
        "sentences": 0,
        "debate_trees": 1,
        "debate_nodes": 7,
        "facts": 0,
        "documents": 0,
    }
    tree = DebateTree.objects.get()
    assert tree.title == "Should abortion be legal?"
    assert tree.topic.name == "abortion"
    nodes = {n.path: n for n in tree.nodes.all()}
    assert {
        p: (n.parent.path if n.parent else None, n.depth, n.stance, n.text, n.reference_path) for p, n in nodes.items()
    } == {
        "1": (None, 0, "none", "Abortion should be legal.", ""),
        "1.1": ("1", 1, "pro", "Women have the right to decide what happens\nto their bodies.", ""),
        "1.1.1": ("1.1", 2, "con", "The fetus has a body too.", ""),
        "1.2": ("1", 1, "con", "Life begins at conception.", ""),
        "1.2.1": ("1.2", 2, "pro", "The fetus has a body too.", "1.1.1"),
        "1.2.2": ("1.2", 2, "con", "Bans do not stop abortions, they make them unsafe.", "1.3"),  # forward
        "1.3": ("1", 1, "pro", "Bans do not stop abortions, they make them unsafe.", ""),
    }
    before = counts()
    again = import_file(DATA / "kialo_abortion.txt", "kialo", topic="abortion")
    assert counts() == before
    assert sum(again.created.values()) == 0 and again.skipped == 8


def test_kialo_without_title_uses_the_thesis_and_title_only_makes_the_root(tmp_path):
    import_file(write(tmp_path, "a.txt", "1. Cats are better than dogs.\n1.1. Con: Dogs are loyal.\n"), "kialo")
    tree = DebateTree.objects.get()
    assert tree.title == "Cats are better than dogs." and tree.topic is None
    import_file(write(tmp_path, "b.txt", "Discussion Title: Tea beats coffee.\n\n1.1. Pro: Less caffeine.\n"), "kialo")
    root = DebateNode.objects.get(tree__title="Tea beats coffee.", path="1")
    assert root.text == "Tea beats coffee."
    assert root.children.get().text == "Less caffeine."


@pytest.mark.parametrize(
    "body, line, reason",
    [
        ("1. Thesis.\n1.1. Pro: A.\n1.3.1. Con: orphan.\n", 3, "1.3. is not defined"),
        ("1. Thesis.\n1.1. Pro: A.\n1.1. Con: again.\n", 3, "defined twice"),
        ("1. Thesis.\n2. Con: Another thesis.\n", 2, "second thesis"),
        ("1. Thesis.\n1.1. Pro: -> See 1.9.\n", 2, "1.9., which does not exist"),
        ("Some text first.\n1. Thesis.\n", 1, "text before the first node"),
    ],
)
def test_kialo_broken_files_are_refused_with_the_line(tmp_path, body, line, reason):
    err = refused(write(tmp_path, "debate.txt", body), "kialo")
    assert err.line == line
    assert reason in err.reason


# --- facts -----------------------------------------------------------------------------------------


def test_facts_csv_and_jsonl_share_hashes():
    summary = import_file(DATA / "facts.csv", "facts-csv")
    assert summary.created["facts"] == 2 and summary.created["topics"] == 1
    assert list(FactVariable.objects.order_by("id").values_list("text", "origin")) == [
        ("Nuclear plants emit no CO2 while running.", "seed"),
        ("Uranium is mined, milled and enriched.", "expert"),
    ]
    fact = FactVariable.objects.first()
    assert fact.content_hash == fact_hash("Nuclear energy", fact.text)
    summary = import_file(DATA / "facts.jsonl", "facts-jsonl")
    assert summary.created["facts"] == 1 and summary.skipped == 1
    assert FactVariable.objects.get(origin="proposed").text == "Spent fuel stays radioactive for millennia."


def test_facts_csv_missing_text_column_and_bad_origin(tmp_path):
    err = refused(write(tmp_path, "f.csv", "topic,fact\nNuclear energy,x\n"), "facts-csv")
    assert err.line == 1 and '"text"' in err.reason
    err = refused(
        write(tmp_path, "g.csv", "topic,text,origin\nNuclear energy,x,seed\nNuclear energy,y,rumour\n"), "facts-csv"
    )
    assert err.line == 3 and "rumour" in err.reason


# --- all or nothing, progress ------------------------------------------------------------------------


def test_failure_late_in_a_large_file_writes_nothing(tmp_path):
    rows = [
        json.dumps({"topic": "Gun control", "sentence": f"Argument number {i}.", "stance": "pro"}) for i in range(1200)
    ]
    rows.append('{"topic": "Gun control", "sentence": "Last one.", "stance": "perhaps"}')
    err = refused(write(tmp_path, "big.jsonl", "\n".join(rows)), "jsonl")
    assert err.line == 1201


def test_progress_is_reported_per_batch_while_parsing_and_writing(tmp_path):
    rows = [
        json.dumps({"topic": "Gun control", "sentence": f"Argument number {i}.", "stance": "con"}) for i in range(1500)
    ]
    calls = []
    summary = import_file(
        write(tmp_path, "big.jsonl", "\n".join(rows)),
        "jsonl",
        progress=lambda done, total, desc="": calls.append((done, total, desc)),
    )
    assert summary.created["sentences"] == 1500
    parsing = [c for c in calls if c[2] == "parsing"]
    writing = [c for c in calls if c[2] == "writing"]
    assert len(parsing) >= 3 and len(writing) >= 3
    assert writing[-1][0] == writing[-1][1] == 1500
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(writing))
    assert all(done > 0 for done, _, _ in calls)  # a PROGRESS state never reads "0 done"


# --- documents -------------------------------------------------------------------------------------


def test_documents_split_dedup_and_filter_by_table9_synonyms():
    summary = import_documents(DATA / "docs_cloning", "Cloning")
    assert summary.created["documents"] == 2 and summary.created["topics"] == 1
    assert summary.dropped == {"too_short": 1, "not_relevant": 2}
    assert summary.skipped == 1  # "Dolly was a cloned sheep" is in both documents
    a, b = Document.objects.order_by("title")
    assert (a.title, b.title) == ("a.txt", "b.txt")
    assert a.content_hash == document_hash((DATA / "docs_cloning" / "a.txt").read_text())
    kept = list(Sentence.objects.order_by("id").values_list("document__title", "position", "text", "stance"))
    assert kept == [
        ("a.txt", 0, "Cloning animals is now routine in some labs.", "none"),
        ("a.txt", 3, "Scientists warn that reproductive cloning remains risky.", "none"),
        ("a.txt", 4, "Dolly was a cloned sheep born in 1996.", "none"),
        ("a.txt", 5, "Copying a genome is not the same as copying a person.", "none"),
        ("a.txt", 6, "Asexual reproduction happens in nature too.", "none"),
        ("b.txt", 2, "Reproduction without sex is common among plants.", "none"),
    ]
    assert Sentence.objects.first().source == str(DATA / "docs_cloning" / "a.txt")
    assert Topic.objects.get(name="Cloning").synonyms == UKP_TOPIC_SYNONYMS["cloning"]

    before = counts()
    again = import_documents(DATA / "docs_cloning", "Cloning")
    assert counts() == before
    assert sum(again.created.values()) == 0 and again.skipped == 2


def test_documents_without_filter_keep_off_topic_sentences(tmp_path):
    summary = import_documents(DATA / "docs_cloning", "Cloning", relevance_filter=False)
    assert summary.created["sentences"] == 8
    assert Sentence.objects.filter(text="The weather was nice that day.").exists()


def test_documents_use_stored_topic_synonyms_and_skip_known_sentences(tmp_path):
    Topic.objects.create(name="Space travel", synonyms=["mars", "rocket launch"])
    import_file(
        write(
            tmp_path, "s.jsonl", '{"topic": "space travel", "sentence": "Mars is far away indeed.", "stance": "none"}\n'
        ),
        "jsonl",
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "x.txt").write_text(
        "Mars is far away indeed. A rocket\nlaunch costs millions. Rockets are loud things. "
        "Space travel is expensive. Travelling by train is relaxing. Dogs bark a lot."
    )
    summary = import_documents(docs, "Space travel")
    assert summary.skipped == 1  # the sentence imported before
    assert summary.dropped["not_relevant"] == 2  # "Rockets are loud" (not a phrase match), "Dogs bark"
    assert set(Sentence.objects.filter(document__isnull=False).values_list("text", flat=True)) == {
        "A rocket launch costs millions.",
        "Space travel is expensive.",
        "Travelling by train is relaxing.",
    }


def test_documents_invalid_utf8_and_empty_folder_are_refused(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    before = counts()
    with pytest.raises(ImportFailed) as info:
        import_documents(docs, "Cloning")
    assert info.value.file == str(docs) and "no *.txt files" in info.value.reason
    (docs / "a.txt").write_text("Cloning is a topic of debate today.\n")
    (docs / "b.txt").write_bytes(b"Line one about cloning here.\nClon\xffing again.\n")
    with pytest.raises(ImportFailed) as info:
        import_documents(docs, "Cloning")
    assert (info.value.file, info.value.line) == (str(docs / "b.txt"), 2)
    assert counts() == before


# --- sentence tools ---------------------------------------------------------------------------------


def test_relevance_filter_prefix_and_phrase_matching():
    cloning = RelevanceFilter("Cloning", default_synonyms("cloning"))
    assert cloning("Human reproduction is complex.")  # "reproduct" is a prefix
    assert cloning("The anti-cloning bill passed.")  # token boundary after a hyphen
    assert not cloning("Microcloning is not a word here.")  # must start on a token boundary
    assert not cloning("Copper wires conduct.")  # "copy" is not a prefix of "copper"
    death = RelevanceFilter("Death penalty", default_synonyms("Death Penalty"))
    assert death("CAPITAL   PUNISHMENT deters nobody.")
    assert death("The electric chair was retired.")
    assert not death("The chair is electric blue.")  # phrase words out of order
    assert death("Penalty kicks decide the match.")  # a token of the topic name itself
    gun = RelevanceFilter("Gun control", default_synonyms("gun control"))
    assert gun("The Second Amendment protects it.") and not gun("The second change of plans.")


def test_split_sentences_and_token_count():
    assert split_sentences("Dr. Smith arrived. He sat\n down.\n\nNew paragraph here") == [
        "Dr. Smith arrived.",
        "He sat down.",
        "New paragraph here",
    ]
    assert token_count("Ok then.") == 2 and token_count("It's a well-known fact.") == 4


def test_ukp_topics_table9():
    assert len(UKP_TOPIC_SYNONYMS) == 8
    assert default_synonyms("  Minimum   Wage ") == ["living wage", "base pay", "average wage", "low income"]
    assert default_synonyms("Veganism") == []


def test_a_database_error_half_way_through_the_write_rolls_everything_back(monkeypatch):
    """Documents and the topic are written before the sentences; a failure there must undo them too."""
    from django.db import IntegrityError

    def broken_bulk_create(objs, *args, **kwargs):
        raise IntegrityError("simulated failure while inserting sentences")

    monkeypatch.setattr(Sentence.objects, "bulk_create", broken_bulk_create)
    before = counts()
    with pytest.raises(IntegrityError):
        import_documents(DATA / "docs_cloning", "Cloning")
    assert counts() == before
