"""A BWS project from the published pair files (issue 37, point 2), through the studio's services: the BWS Argument
Similarity Corpus CSV and the UKP ASPECT TSV, written by the tests in their published layouts. Every pair of the file
becomes a pair of the project, the 4-tuples are built from them (AugSBERT sec. 4.1: 2N tuples, every pair in 8), the
arguments go into the corpus (stance unknown); bad rows are refused with ``file:line``, a topic with fewer than 4
pairs with a clear message, and nothing is written."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from annotation import services
from annotation.models import GoldItem, Item, Project, Response
from annotation.studio import services as studio
from annotation.task_types import get_task_type
from annotation.task_types.bws_similarity import design
from corpus.models import Sentence, Topic
from corpus.releases import build_release, release_path
from tests.annotation.task_types.bws_similarity.test_project import submit_everything

pytestmark = pytest.mark.django_db

CONFIG = {"scorer": "jaccard", "tuples_per_pair": 2, "attention_checks": 1}
CLONING = [
    ("Cloning treats children as objects.", "It encourages parents to regard their children as property.", 0.89),
    ("Cloning lets infertile couples have children.", "Cloned animals often suffer from health problems.", 0.1),
    ("Cloning could bring back extinct species.", "Cloning reduces genetic diversity.", 0.35),
    ("Reproductive cloning is unsafe for the mother.", "Cloned animals often suffer from health problems.", 0.62),
    ("Cloning treats children as objects.", "Cloning reduces genetic diversity.", 0.2),
]
UNIFORMS = [
    ("Uniforms reduce bullying over clothes.", "Uniforms limit students' self-expression.", 0.4),
    ("Uniforms save parents money.", "School uniforms make getting ready faster.", 0.3),
    ("Uniforms do not improve grades.", "Uniforms create a sense of community.", 0.15),
    ("Uniforms save parents money.", "Uniforms reduce bullying over clothes.", 0.25),
]


def bws_csv(path: Path, rows=None) -> Path:
    """The corpus's published CSV: id, topic, argument1, argument2, score (a quoted cell with a comma, too)."""
    rows = (
        rows
        if rows is not None
        else (
            [("Cloning", a, b, s) for a, b, s in CLONING]
            + [("school uniforms", a, b, s) for a, b, s in UNIFORMS]
            + [("Cloning", CLONING[0][1], CLONING[0][0], 0.9)]
        )
    )  # the first pair again, the other way round
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "topic", "argument1", "argument2", "score"])
        for n, (topic, a, b, score) in enumerate(rows):
            writer.writerow([f"p{n}", topic, a, b, score])
    return path


def aspect_tsv(path: Path, *, header=True) -> Path:
    labels = ["HS", "SS", "NS", "DTORCD"]
    lines = ["topic\tsentence_1\tsentence_2\tlabel\n"] if header else []
    for n, (a, b, _) in enumerate(UNIFORMS + [(UNIFORMS[0][1], UNIFORMS[2][0], 0)]):
        lines.append(f'School uniforms\t{a}\t"{b}\t{labels[n % 4]}\n')  # a quote opens a sentence, as in the corpus
    path.write_text("".join(lines), encoding="utf-8")
    return path


def studio_input(tmp_path, source_name: str, file: Path, *, config=None):
    """``(unsaved project, SourceInput)``: a new BWS study and the file stored as the studio stores an upload."""
    project = studio.check_setup(
        name=f"BWS {source_name}",
        task_type="bws_similarity",
        config=config or CONFIG,
        values={"assignments_per_item": 1, "items_per_hit": 4, "gold_rate": 0},
    )
    source = studio.source_named(get_task_type("bws_similarity"), source_name)
    assert source.is_upload and not source.gold_label  # pair files carry no answers: no gold share
    folder = Path(studio.settings.MEDIA_ROOT) / studio.UPLOAD_DIR / f"t-{tmp_path.name}"
    folder.mkdir(parents=True, exist_ok=True)
    stored = folder / f"upload{file.suffix}"
    stored.write_bytes(file.read_bytes())
    return project, studio.source_input(source, upload={"path": str(stored), "name": file.name})


def test_the_bws_corpus_csv_previews_then_every_pair_is_a_pair_of_the_project(tmp_path):
    Topic.objects.create(name="cloning")  # the corpus's spelling wins over the file's "Cloning"
    project, data = studio_input(tmp_path, "bws-csv", bws_csv(tmp_path / "BWS_Argument_Similarity_Corpus.csv"))
    preview, problems = studio.preview_import(project, data)
    assert problems == []
    assert (preview.items, preview.gold) == (2 * 5 + 2 * 4, 2)  # 2N tasks a topic, one attention check each
    assert preview.columns[-1].startswith("score") and preview.rows[0] == [
        "2",
        "Cloning",
        CLONING[0][0],
        CLONING[0][1],
        "0.89",
    ]
    assert "cloning: 5 pairs of 7 arguments, 10 tasks of 4 pairs, 1 attention check(s)" in preview.notes
    assert "1 pair(s) repeated in the file, kept once" in preview.notes
    assert not Sentence.objects.exists()  # the preview writes nothing

    result = studio.run_import(studio.import_spec(project, data), job="job-bws-csv")
    saved = Project.objects.get(slug=result["project"])
    assert (result["items"], result["gold"]) == (preview.items, preview.gold)
    pairs = saved.config["pairs"]
    assert len(pairs) == 9 and {p["topic"] for p in pairs.values()} == {"cloning", "school uniforms"}
    first = next(p for p in pairs.values() if p["file_id"] == "p0")
    assert (first["a"], first["b"], first["file_score"]) == (CLONING[0][0], CLONING[0][1], 0.89)
    for pid, p in pairs.items():  # the pair names corpus sentences, as a sampled pair does
        assert pid == f"{p['a_id']}-{p['b_id']}"
        assert Sentence.objects.get(pk=p["a_id"]).text == p["a"] and Sentence.objects.get(pk=p["b_id"]).text == p["b"]
    assert {(s.stance, s.metadata["stance"]) for s in Sentence.objects.all()} == {("none", "unknown")}
    assert Sentence.objects.count() == 7 + 6 and Topic.objects.count() == 2

    items = Item.objects.filter(project=saved, is_gold=False)
    seen = Counter(p["id"] for item in items for p in item.payload["pairs"])
    assert set(seen) == set(pairs) and set(seen.values()) == {4 * CONFIG["tuples_per_pair"]}  # every pair in 8
    assert all(len({p["id"] for p in item.payload["pairs"]}) == design.TUPLE_SIZE for item in items)
    for item in items:  # one topic a task; the file's score never reaches a worker
        assert len({pairs[p["id"]]["topic"] for p in item.payload["pairs"]}) == 1
        assert all(set(p) == {"id", "a", "b"} for p in item.payload["pairs"])
    checks = GoldItem.objects.filter(item__project=saved)
    assert checks.count() == 2 and all(g.expected["best"].startswith("same:") for g in checks)
    assert saved.config["sampling"]["cloning"]["scorer"] == "pairs of BWS_Argument_Similarity_Corpus.csv"


@pytest.mark.parametrize("header", [True, False])
def test_the_ukp_aspect_tsv_with_or_without_its_header(tmp_path, header):
    project, data = studio_input(
        tmp_path,
        "ukp-aspect-tsv",
        aspect_tsv(tmp_path / "UKP_ASPECT.tsv", header=header),
        config={**CONFIG, "attention_checks": 0},
    )
    preview, problems = studio.preview_import(project, data)
    assert problems == [] and (preview.items, preview.gold) == (10, 0)
    assert preview.columns[-1].startswith("label") and [r[-1] for r in preview.rows] == [
        "HS",
        "SS",
        "NS",
        "DTORCD",
        "HS",
    ]
    assert preview.rows[0][0] == ("2" if header else "1") and preview.rows[0][3].startswith('"')
    result = studio.run_import(studio.import_spec(project, data), job=f"job-aspect-{header}")
    pairs = Project.objects.get(slug=result["project"]).config["pairs"]
    assert sorted(p["file_label"] for p in pairs.values()) == ["DTORCD", "HS", "HS", "NS", "SS"]
    assert Item.objects.filter(project__slug=result["project"]).count() == 10


@pytest.mark.parametrize(
    "source_name, name, body, problems",
    [
        (
            "bws-csv",
            "pairs.csv",
            "id,topic,argument1,argument2,score\np1,Cloning,A one.,B one.,0.5\np2,Cloning,A two.,,0.5\n"
            "p3,Cloning,A three.,B three.,1.5\n",
            [
                "pairs.csv:3: a pair row needs non-empty argument1 and argument2 (the BWS export's keys)",
                "pairs.csv:4: score 1.5 is outside [0, 1]",
            ],
        ),
        (
            "bws-csv",
            "pairs.csv",
            "id,topic,argument1,score\np1,Cloning,A one.,0.5\n",
            ['pairs.csv:1: missing column "argument2" (header has: id, topic, argument1, score)'],
        ),
        (
            "bws-csv",
            "pairs.csv",
            "id,topic,argument1,argument2,score\np1,,A one.,B one.,0.5\n",
            ["pairs.csv:2: topic is empty"],
        ),
        (
            "bws-csv",
            "pairs.csv",
            "id,topic,argument1,argument2,score\np1,Cloning,Same  text.,Same text.,0.5\n",
            ["pairs.csv:2: argument1 and argument2 are the same argument (a pair needs two)"],
        ),
        (
            "ukp-aspect-tsv",
            "UKP_ASPECT.tsv",
            "topic\tsentence_1\tsentence_2\tlabel\nT\ta a\tb b\tHS\nT\ta a\tHS\n",
            ["UKP_ASPECT.tsv:3: expected 4 tab-separated columns (topic, sentence_1, sentence_2, label), found 3"],
        ),
        (
            "ukp-aspect-tsv",
            "UKP_ASPECT.tsv",
            "T\ta a\tb b\tMAYBE\n",
            ["UKP_ASPECT.tsv:1: label 'MAYBE' is not one of HS, SS, NS, DTORCD"],
        ),
    ],
)
def test_a_bad_row_is_refused_with_file_line_and_nothing_is_written(tmp_path, source_name, name, body, problems):
    file = tmp_path / name
    file.write_text(body, encoding="utf-8")
    project, data = studio_input(tmp_path, source_name, file)
    assert studio.preview_import(project, data) == (None, problems)
    with pytest.raises(studio.StudioImportFailed) as info:
        studio.run_import(studio.import_spec(project, data), job=f"job-bad-{source_name}")
    assert str(info.value) == problems[0]
    assert not Project.objects.exists() and not Sentence.objects.exists() and not Topic.objects.exists()


def test_a_topic_with_fewer_than_four_pairs_is_a_clear_error(tmp_path):
    rows = [("Cloning", a, b, s) for a, b, s in CLONING] + [("school uniforms", a, b, s) for a, b, s in UNIFORMS[:3]]
    project, data = studio_input(tmp_path, "bws-csv", bws_csv(tmp_path / "few.csv", rows))
    assert studio.preview_import(project, data)[1] == [
        "file: topic 'school uniforms' has 3 distinct pair(s) in the file; a BWS task shows 4 pairs of one topic, so "
        "a topic needs at least 4"
    ]
    with pytest.raises(studio.StudioImportFailed, match="school uniforms' has 3 distinct pair"):
        studio.run_import(studio.import_spec(project, data), job="job-few")
    assert not Sentence.objects.exists() and not Project.objects.exists()


def test_the_hit_page_and_the_bws_release_of_a_pair_file_project(tmp_path, client, django_user_model, tmp_artifacts):
    project, data = studio_input(
        tmp_path,
        "bws-csv",
        bws_csv(tmp_path / "BWS_Argument_Similarity_Corpus.csv"),
        config={**CONFIG, "attention_checks": 0, "tuples_per_pair": 1},
    )
    slug = studio.run_import(studio.import_spec(project, data), job="job-bws-release")["project"]
    saved = Project.objects.get(slug=slug)
    services.set_project_status(saved, Project.Status.ACTIVE)
    user = django_user_model.objects.create_user("pairs-worker", password="pw-12345678")
    client.force_login(user)
    html = client.get(f"/work/{slug}/").content.decode()
    assert 'class="bws-pair"' in html and html.count('class="bws-pair"') % design.TUPLE_SIZE == 0
    assert "0.89" not in html  # the file's score is not shown
    submit_everything(saved, django_user_model, n_workers=2)
    release = build_release("pairs", "1.0", kind="bws", config={"project": slug, "split": "none"})
    rows = [json.loads(line) for line in open(release_path(release) / "bws.jsonl")]
    judged = {
        p["id"]
        for payload in Response.objects.filter(item__project=saved).values_list("item__payload", flat=True)
        for p in payload["pairs"]
    }
    assert len(judged) >= 8 and {r["pair_id"] for r in rows} == judged
    assert {r["topic"] for r in rows} == {"Cloning", "school uniforms"}
    assert (CLONING[0][0], CLONING[0][1]) in {(r["argument1"], r["argument2"]) for r in rows}
    assert all(0 <= r["score"] <= 1 and r["appearances"] > 0 for r in rows)
