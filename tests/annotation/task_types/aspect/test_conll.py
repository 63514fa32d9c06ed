"""The argument-aspect span corpus in CoNLL (Ruckdeschel & Wiedemann 2022) into an aspect project as gold, through
App. F (issue 18, item 3): detokenisation with consistent offsets, ``aspects import --format conll`` (file and folder),
stance from the corpus or ``--stance``, ``aspects convert``, the studio's ``conll`` source; bad files exit 2 with
``file:line: reason`` and write nothing."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation import services
from annotation.models import GoldItem, Item, Project
from annotation.studio import services as studio
from annotation.task_types import get_task_type
from annotation.task_types.aspect import conll
from annotation.task_types.aspect.appf import parse_appf
from corpus.importers import import_file
from corpus.models import Sentence, Topic
from corpus.releases import build_release, release_path

pytestmark = pytest.mark.django_db

NUCLEAR = """Nuclear\tO
power\tB-ASP
is\tO
n't\tO
cheap\tB-ASP
(\tO
or\tO
safe\tB-ASP
)\tO
,\tO
says\tO
"\tO
the\tO
waste\tB-ASP
report\tI-ASP
"\tO
.\tO

Reactors\tO
create\tO
jobs\tB
in\tO
rural\tB
areas\tI
.\tO
"""
GUNS = """-DOCSTART-\tO

Background\tB-ASP
checks\tI-ASP
save\tO
lives\tB-ASP
.\tO
"""


def folder_of(tmp_path) -> Path:
    folder = tmp_path / "aspect_spans"
    folder.mkdir()
    (folder / "nuclear_energy.conll").write_text(NUCLEAR, encoding="utf-8")
    (folder / "gun-control.conll").write_text(GUNS, encoding="utf-8")
    (folder / "README.md").write_text("not a corpus file")
    return folder


def run(*args) -> str:
    out = StringIO()
    call_command("aspects", *map(str, args), stdout=out)
    return out.getvalue()


def refused(*args) -> str:
    with pytest.raises(CommandError) as info:
        call_command("aspects", *map(str, args), stdout=StringIO())
    assert info.value.returncode == 2
    return str(info.value)


def test_tokens_are_joined_faithfully_and_spans_keep_their_offsets(tmp_path):
    [first, second] = conll.parse_conll(folder_of(tmp_path) / "nuclear_energy.conll")
    assert first.text == 'Nuclear power isn\'t cheap (or safe), says "the waste report".'
    assert first.topic == "nuclear energy" and first.line == 1 and second.line == 19
    assert [first.text[b : b + n] for b, n in first.spans] == ["power", "cheap", "safe", "waste report"]
    assert all(first.text[b:e] == tok for (b, e), tok in zip(first.offsets, first.tokens))
    assert second.text == "Reactors create jobs in rural areas." and [
        second.text[b : b + n] for b, n in second.spans
    ] == ["jobs", "rural areas"]


def test_an_inside_label_after_outside_starts_a_span():
    sentence = conll.ConllSentence(line=1, topic="t", tokens=["Costs", "rise", "fast"], labels=["O", "I", "I"]).build()
    assert [sentence.text[b : b + n] for b, n in sentence.spans] == ["rise fast"]


# The corpus as published (Leibniz-HBI/argument-aspect-corpus-v1): numbered tokens, each labelled with its aspect
# category, a fourth True / False column in the experiments' split files. The sentences are written for this test.
PUBLISHED = """1\tA\tO\tTrue
2\thigher\tO\tTrue
3\twage\tO\tTrue
4\twould\tO\tTrue
5\tcost\tUN/EMPLOYMENT RATE\tTrue
6\tjobs\tUN/EMPLOYMENT RATE\tTrue
7\tand\tO\tTrue
8\traise\tPRICES\tTrue
9\tprices\tPRICES\tTrue
10\t.\tO\tFalse

1\tIt\tO\tTrue
2\tlifts\tSOCIAL JUSTICE/INJUSTICE\tTrue
3\tworkers\tSOCIAL JUSTICE/INJUSTICE\tTrue
4\tout\tECONOMIC IMPACT\tTrue
5\tof\tECONOMIC IMPACT\tTrue
6\tpoverty\tECONOMIC IMPACT\tTrue
7\t,\tO\tTrue
8\tsays\tO\tTrue
9\t#\tO\tTrue
10\tRaiseTheWage\tGOVERNMENT\tFalse
"""


def test_the_corpus_files_as_published_read_with_numbers_and_categories(tmp_path):
    path = tmp_path / "mw_conll_gold_chunk.txt"
    path.write_text(PUBLISHED.replace("\tTrue", "").replace("\tFalse", ""), encoding="utf-8")  # datasets/: 3 columns
    flagged = tmp_path / "flagged" / "mw_conll_gold_token.txt"
    flagged.parent.mkdir()
    flagged.write_text(PUBLISHED, encoding="utf-8")  # experiments/: the fourth column is ignored
    for file in (path, flagged):
        first, second = conll.parse_conll(file)
        assert first.topic == "minimum wage" and (first.line, second.line) == (1, 12)
        assert first.text == "A higher wage would cost jobs and raise prices."
        assert [first.text[b : b + n] for b, n in first.spans] == ["cost jobs", "raise prices"]
        assert first.span_categories == ["UN/EMPLOYMENT RATE", "PRICES"]
        # two categories side by side are two spans; the tokens are the second column, not the numbers
        assert second.text == "It lifts workers out of poverty, says # RaiseTheWage"
        assert [second.text[b : b + n] for b, n in second.spans] == ["lifts workers", "out of poverty", "RaiseTheWage"]
        assert second.span_categories == ["SOCIAL JUSTICE/INJUSTICE", "ECONOMIC IMPACT", "GOVERNMENT"]


def test_bio_labels_with_categories_and_comment_lines():
    text = (
        "# text = Wages rise, prices rise.\n#\tO\nWages\tB-PRICES\nrise\tI-PRICES\nprices\tI-GOVERNMENT\n"
        "rise\tI-GOVERNMENT\nfast\tB-GOVERNMENT\n"
    )
    [sentence] = conll.parse_conll("nuclear_energy.conll", text)
    assert sentence.line == 2 and sentence.tokens[0] == "#"  # a comment is skipped; a '#' token line is a token
    assert [sentence.text[b : b + n] for b, n in sentence.spans] == ["Wages rise", "prices rise", "fast"]
    assert sentence.span_categories == ["PRICES", "GOVERNMENT", "GOVERNMENT"]


@pytest.mark.parametrize(
    "path, topic",
    [
        ("datasets/ab_conll_gold_chunk.txt", "abortion"),
        ("datasets/mj_conll_gold_chunk.txt", "marijuana legalization"),
        ("experiments/exp1_ne/corpora/conll_gold_token/train.txt", "nuclear energy"),
        ("experiments/exp2_mw/corpora/conll_gold_chunk/test.txt", "minimum wage"),
        ("spans/nuclear_energy.conll", "nuclear energy"),
        ("spans/gun-control.conll", "gun control"),
    ],
)
def test_the_topic_comes_from_the_corpus_file_and_folder_names(path, topic):
    assert conll.topic_of_file(Path(path)) == topic


def test_convert_a_folder_of_the_corpus_files_as_published(tmp_path):
    folder = tmp_path / "datasets"
    folder.mkdir()
    (folder / "mw_conll_gold_chunk.txt").write_text(PUBLISHED, encoding="utf-8")
    (folder / "ne_conll_gold_chunk.txt").write_text("1\tReactors\tO\n2\tleak\tSAFETY\n3\t.\tO\n", encoding="utf-8")
    (folder / "README.txt").write_text("The Argument Aspect Corpus V1\n")
    (folder / "LICENSE").write_text("terms\n")
    out = tmp_path / "appf.jsonl"
    assert ": 3 App. F rows" in run("convert", folder, "--out", out, "--stance", "con")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["topic"], r["aspect_pos_string"]) for r in rows] == [
        ("minimum wage", ["cost jobs", "raise prices"]),
        ("minimum wage", ["lifts workers", "out of poverty", "RaiseTheWage"]),
        ("nuclear energy", ["leak"]),
    ]


def test_import_a_folder_as_gold_then_export_round_trips(tmp_path):
    folder = folder_of(tmp_path)
    out = run("import", folder, "--format", "conll", "--project", "spans", "--create", "--as-gold", "--stance", "pro")
    assert "rows 3" in out and "gold_created 3" in out
    project = Project.objects.get(slug="spans")
    gold = {g.item.payload["text"]: g.expected for g in GoldItem.objects.filter(item__project=project)}
    checks = gold["Background checks save lives."]
    assert [(a["begin"], a["length"], a["text"]) for a in checks["aspects"]] == [
        (0, 17, "Background checks"),
        (23, 5, "lives"),
    ]
    assert Topic.objects.filter(name="gun control").exists()
    assert set(Sentence.objects.values_list("stance", flat=True)) == {"pro"}

    exported = tmp_path / "aspects.jsonl"
    run("export", "--project", "spans", "--out", exported)
    rows = {r.sentence: r for r in parse_appf(exported)}  # a valid App. F file
    assert rows['Nuclear power isn\'t cheap (or safe), says "the waste report".'].aspect_pos_string == [
        "power",
        "cheap",
        "safe",
        "waste report",
    ]
    assert (
        "rows 3" in run("import", folder, "--format", "conll", "--project", "spans", "--as-gold", "--stance", "pro")
        and GoldItem.objects.count() == 3
    )  # idempotent: skipped 3


def test_the_stance_comes_from_the_corpus_when_the_sentence_is_there(tmp_path):
    corpus = tmp_path / "guns.jsonl"
    corpus.write_text(
        json.dumps({"topic": "gun control", "sentence": "Background checks save lives.", "stance": "con"}) + "\n",
        encoding="utf-8",
    )
    import_file(corpus, "jsonl")
    path = tmp_path / "gun_control.conll"
    path.write_text(GUNS, encoding="utf-8")
    converted = tmp_path / "appf.jsonl"
    assert "1 from the corpus, 0 unknown" in run("convert", path, "--out", converted)
    [row] = [json.loads(line) for line in converted.read_text().splitlines()]
    assert row["stance"] == "Argument_against" and row["aspect_pos"] == ["(0,17)", "(23,5)"]
    run("import", converted, "--project", "guns", "--create")  # the converted file is App. F
    assert Item.objects.get(project__slug="guns").payload["reference"]["aspects"][1]["text"] == "lives"


def test_no_stance_anywhere_is_unknown_never_pro_or_con_through_items_corpus_and_release(tmp_path, tmp_artifacts):
    """The corpus's files carry no stance: nothing given, nothing in the corpus -> unknown in the App. F rows, the
    item payloads, the corpus (stance none + metadata), the export and the aspects release (stance null)."""
    folder = folder_of(tmp_path)
    out = run("import", folder, "--format", "conll", "--project", "spans", "--create")
    assert "rows 3" in out and "stance_unknown 3" in out
    project = Project.objects.get(slug="spans")
    assert {i.payload["stance"] for i in Item.objects.filter(project=project)} == {"unknown"}
    assert {i.payload["reference"]["stance"] for i in Item.objects.filter(project=project)} == {None}
    assert [(s.stance, s.metadata) for s in Sentence.objects.all()] == [("none", {"stance": "unknown"})] * 3
    exported = tmp_path / "aspects.jsonl"
    run("export", "--project", "spans", "--out", exported)
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    assert len(rows) == 3 and {r["stance"] for r in rows} == {None}  # resolved by the imported reference
    assert {r.stance for r in parse_appf(exported)} == {"unknown"}  # a valid App. F file, read back as unknown
    release = build_release("spans", "1.0", kind="aspects", config={"projects": ["spans"], "split": "none"})
    written = [json.loads(line) for line in (release_path(release) / "aspects.jsonl").read_text().splitlines()]
    assert len(written) == 3 and {r["stance"] for r in written} == {None}
    # an item built from the same corpus sentence (another project, the corpus source) keeps it unknown too
    other = services.create_project(name="from corpus", slug="from-corpus", task_type="aspect")
    services.add_items_from_rows(other, list(Sentence.objects.order_by("id")))
    assert {i.payload["stance"] for i in Item.objects.filter(project=other)} == {"unknown"}


def test_a_stance_line_per_sentence_is_honoured_and_beats_the_file_default(tmp_path):
    path = tmp_path / "nuclear_energy.conll"
    path.write_text(
        "# stance = con\n"
        + NUCLEAR.replace("\nReactors", "# stance: Argument_for\nReactors")
        + "\n# stance = unknown\nWaste\tB-ASP\npiles\tO\nup\tO\n.\tO\n"
        + "\nPlants\tO\nare\tO\nold\tB-ASP\n.\tO\n",
        encoding="utf-8",
    )
    stats: dict = {}
    rows = conll.appf_rows(path, stance="pro", stats=stats)
    assert [(r.sentence, r.stance, r.raw_stance) for r in rows] == [
        ('Nuclear power isn\'t cheap (or safe), says "the waste report".', "con", "Argument_against"),
        ("Reactors create jobs in rural areas.", "pro", "Argument_for"),
        ("Waste piles up.", "unknown", None),  # its own "unknown": not overridden by the file's default
        ("Plants are old.", "pro", "Argument_for"),
    ]  # no line of its own: the file's default
    assert (stats["stance_from_file"], stats["stance_unknown"]) == (2, 1)
    run("import", path, "--format", "conll", "--project", "mixed", "--create")
    assert dict(Item.objects.filter(project__slug="mixed").values_list("payload__text", "payload__stance")) == {
        'Nuclear power isn\'t cheap (or safe), says "the waste report".': "con",
        "Reactors create jobs in rural areas.": "pro",
        "Waste piles up.": "unknown",
        "Plants are old.": "unknown",
    }
    assert dict(Sentence.objects.values_list("text", "stance"))["Reactors create jobs in rural areas."] == "pro"


@pytest.mark.parametrize(
    "head, line, reason",
    [
        ("# stance = maybe\n", 1, "stance 'maybe' is not pro, con or unknown"),
        ("# stance = pro\n", 1, "stance pro here, but the corpus has this sentence on 'gun control' as con"),
    ],
)
def test_a_bad_or_contradicting_stance_line_is_refused_with_its_line(tmp_path, head, line, reason):
    corpus = tmp_path / "guns.jsonl"
    corpus.write_text(
        json.dumps({"topic": "gun control", "sentence": "Background checks save lives.", "stance": "con"}) + "\n",
        encoding="utf-8",
    )
    import_file(corpus, "jsonl")
    path = tmp_path / "gun_control.conll"
    path.write_text(head + GUNS, encoding="utf-8")
    message = refused("import", path, "--format", "conll", "--project", "x", "--create")
    assert message.startswith(f"{path}:{line}: {reason}"), message
    assert not Project.objects.exists()


@pytest.mark.parametrize(
    "body, line, reason",
    [
        ("Nuclear\tO\npower\tTrue\n", 2, "label 'True' is not a label: O, B or I"),
        ("1\tNuclear\tO\tTrue\n2\tpower\t7\tTrue\n", 2, "label '7' is not a label"),
        ("1\tNuclear\tO\n2\tpower\tO\n4\tis\tO\n", 3, "expected token number 3 then its token and label"),
        ("Nuclear\tO\npower\n", 2, "expected a token and its label"),
        ("\n\n", 0, "no sentences"),
    ],
)
def test_a_bad_conll_file_exits_2_with_file_line(tmp_path, body, line, reason):
    path = tmp_path / "nuclear.conll"
    path.write_text(body, encoding="utf-8")
    message = refused("import", path, "--format", "conll", "--project", "x", "--create", "--stance", "pro")
    assert message.startswith(f"{path}:{line}: {reason}"), message
    assert not Project.objects.exists() and not Sentence.objects.exists()


def test_the_same_sentence_with_other_spans_is_refused_naming_both_lines(tmp_path):
    path = tmp_path / "guns.conll"
    path.write_text(GUNS + "\nBackground\tO\nchecks\tO\nsave\tO\nlives\tB-ASP\n.\tO\n", encoding="utf-8")
    assert (
        refused("convert", path, "--out", tmp_path / "x.jsonl", "--stance", "pro")
        == f"{path}:9: this sentence is also on line 3 of guns.conll with other aspects"
    )
    path.write_text(GUNS + "\n" + GUNS.split("\n", 2)[2], encoding="utf-8")  # the same spans again: kept once
    assert "1 repeated sentence(s) kept once" in run("convert", path, "--out", tmp_path / "x.jsonl", "--stance", "pro")


def studio_upload(study: str, body: str, stored_name: str):
    """``(project, the aspect type's conll source, the stored upload)``: a new study and a file as the studio
    stores an upload."""
    project = studio.check_setup(
        name=study, task_type="aspect", config={}, values={"assignments_per_item": 1, "items_per_hit": 2}
    )
    source = studio.source_named(get_task_type("aspect"), "conll")
    folder = Path(studio.settings.MEDIA_ROOT) / studio.UPLOAD_DIR / f"t-{project.slug}"
    folder.mkdir(parents=True, exist_ok=True)
    stored = folder / stored_name
    stored.write_text(body, encoding="utf-8")
    return project, source, stored


def test_the_studio_conll_source_previews_and_imports_gold():
    project, source, stored = studio_upload("CoNLL study", NUCLEAR, "upload-1234.conll")
    bad = studio.source_input(
        source, upload={"path": str(stored), "name": "nuclear_energy.conll"}, options={"stance": "maybe"}
    )
    assert studio.preview_import(project, bad)[1] == ["stance: pro, con or unknown (or empty: unknown), not 'maybe'"]
    data = studio.source_input(
        source, upload={"path": str(stored), "name": "nuclear_energy.conll"}, options={"stance": "con"}
    )
    preview, problems = studio.preview_import(project, data)
    assert problems == [] and preview.items == 2 and preview.rows[0][1] == "nuclear energy"  # topic: the file name
    result = studio.run_import(studio.import_spec(project, data), job="job-conll")
    saved = Project.objects.get(slug=result["project"])
    assert Item.objects.filter(project=saved).count() == 2
    assert set(Sentence.objects.values_list("topic__name", "stance")) == {("nuclear energy", "con")}


def test_the_studio_conll_source_takes_a_corpus_file_as_published():
    project, source, stored = studio_upload("Minimum wage aspects", PUBLISHED, "upload-5678.txt")
    data = studio.source_input(
        source,
        upload={"path": str(stored), "name": "mw_conll_gold_chunk.txt"},
        options={"stance": "pro"},
        gold={"mode": "first", "n": 1},
    )
    preview, problems = studio.preview_import(project, data)
    assert problems == [] and (preview.items, preview.gold) == (1, 1)
    assert preview.rows[0][1] == "minimum wage"  # the corpus's topic code
    assert preview.columns[-1] == "gold" and [r[-1] for r in preview.rows] == ["gold", ""]
    result = studio.run_import(studio.import_spec(project, data), job="job-conll-published")
    gold = GoldItem.objects.get(item__project__slug=result["project"])
    assert [a["text"] for a in gold.expected["aspects"]] == ["cost jobs", "raise prices"]
    other = Item.objects.get(project__slug=result["project"], is_gold=False)
    assert other.payload["text"].startswith("It lifts") and len(other.payload["reference"]["aspects"]) == 3
