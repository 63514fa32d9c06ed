"""App. F import (all-or-nothing, gold or plain), round trip, crowd export, splits, release kind, CLI."""

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from annotation import services
from annotation.models import GoldItem, Item
from annotation.studio import services as studio
from annotation.task_types import get_task_type
from annotation.task_types.aspect import appf
from annotation.task_types.aspect.appf import (
    import_appf,
    in_topic_sizes,
    parse_appf,
    project_rows,
    split_rows,
)
from annotation.task_types.base import GoldShare
from corpus.hashing import sentence_hash
from corpus.importers import ImportFailed
from corpus.models import Sentence, Topic
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db

ROWS = [
    (
        "h01",
        "gun control",
        "Argument_for",
        "Universal background checks save lives.",
        ["background checks", "save lives"],
    ),
    ("h02", "gun control", "Argument_against", "Gun bans punish law-abiding owners.", ["punish law-abiding owners"]),
    ("h03", "school uniforms", "Argument_for", "Uniforms reduce bullying at school.", ["bullying"]),
    ("h04", "death penalty", "Argument_against", "Innocent people have been executed.", ["Innocent people"]),
    ("h05", "abortion", "Argument_for", "Women have a right to choose.", ["a right to choose"]),
    ("h06", "nuclear energy", "Argument_for", "Nuclear energy is clean but expensive.", ["clean", "expensive"]),
    ("h07", "cloning", "Argument_against", "Cloning is unsafe – and “unnatural”.", ["unsafe", "unnatural"]),
    ("h08", "minimum wage", "Argument_for", "A higher minimum wage reduces poverty.", []),
]


def appf_line(h, topic, stance, sentence, aspects, *, reverse=True):
    pos = [f"({sentence.index(a)},{len(a)})" for a in aspects]
    strings = list(aspects)
    if reverse:  # unsorted on purpose: export orders aspects by begin
        pos, strings = pos[::-1], strings[::-1]
    row = {
        "sentence": sentence,
        "topic": topic,
        "stance": stance,
        "aspect_pos_string": strings,
        "aspect_pos": pos,
        "hash": h,
    }
    return json.dumps(row, ensure_ascii=False)


@pytest.fixture
def appf_file(tmp_path):
    path = tmp_path / "aspects.jsonl"
    lines = [appf_line(*r) for r in reversed(ROWS)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def project():
    return ProjectFactory(
        name="Aspects",
        slug="aspects",
        task_type="aspect",
        assignments_per_item=2,
        items_per_hit=4,
        config={"top_k": 3},
        items=0,
        build=False,
    )


def canonical(path) -> bytes:
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        pairs = sorted(
            zip(row["aspect_pos"], row["aspect_pos_string"]), key=lambda p: int(p[0].strip("()").split(",")[0])
        )
        row["aspect_pos"], row["aspect_pos_string"] = [p for p, _ in pairs], [s for _, s in pairs]
        rows.append(row)
    rows.sort(key=lambda r: r["hash"])
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def test_import_creates_sentences_and_items_and_is_idempotent(appf_file, project):
    summary = import_appf(appf_file, project)
    assert summary == {"rows": 8, "sentences_created": 8, "items_created": 8, "gold_created": 0, "skipped": 0}
    s = Sentence.objects.get(external_id="h01")
    assert (s.topic.name, s.stance, s.text) == ("gun control", "pro", ROWS[0][3])
    assert s.content_hash == sentence_hash("gun control", ROWS[0][3])
    assert Sentence.objects.get(external_id="h02").stance == "con"
    item = Item.objects.get(project=project, external_key="appf:h01")
    assert item.sentence_id == s.pk and not item.is_gold
    assert [a["text"] for a in item.payload["reference"]["aspects"]] == ["background checks", "save lives"]
    offered = {c["id"] for c in item.payload["candidates"] + item.payload["more"]}
    assert {"10:17", "28:10"} <= offered
    # imported aspects that the filters would drop are still offered (so they can be chosen / matched)
    item5 = Item.objects.get(project=project, external_key="appf:h05")
    begin = ROWS[4][3].index("a right to choose")  # starts with a stopword: the filters drop it
    assert f"{begin}:17" in {c["id"] for c in item5.payload["more"] + item5.payload["candidates"]}
    again = import_appf(appf_file, project)
    assert again["items_created"] == 0 and again["skipped"] == 8 and again["sentences_created"] == 0
    assert Item.objects.filter(project=project).count() == 8 and Sentence.objects.count() == 8


def test_import_as_gold(appf_file, project):
    summary = import_appf(appf_file, project, gold=GoldShare("all"))
    assert summary["gold_created"] == 8 and summary["items_created"] == 0
    gold = GoldItem.objects.get(item__external_key="appf:h06")
    assert gold.item.is_gold
    assert gold.expected == {
        "aspects": [{"begin": 18, "length": 5, "text": "clean"}, {"begin": 28, "length": 9, "text": "expensive"}],
        "no_aspect": False,
    }
    assert GoldItem.objects.get(item__external_key="appf:h08").expected == {"aspects": [], "no_aspect": True}


@pytest.mark.parametrize("as_gold", [False, True])
def test_round_trip_is_byte_for_byte(appf_file, project, tmp_path, as_gold):
    import_appf(appf_file, project, gold=GoldShare("all" if as_gold else "none"))
    out = tmp_path / "out" / "aspects.jsonl"
    files = appf.export_appf(project, out)
    assert files == {str(out): 8}
    assert out.read_bytes() == canonical(appf_file)
    # and back: the exported file imports into a fresh project and exports to the same bytes
    again = services.create_project(name="Again", slug="again", task_type="aspect", config={"top_k": 3})
    assert import_appf(out, again, gold=GoldShare("all" if as_gold else "none"))["rows"] == 8
    appf.export_appf(again, tmp_path / "again.jsonl")
    assert (tmp_path / "again.jsonl").read_bytes() == out.read_bytes()


def test_malformed_line_names_file_and_line_and_writes_nothing(tmp_path, project):
    good = [appf_line(*r) for r in ROWS[:3]]
    cases = [
        ("{not json", "invalid JSON: Expecting property name enclosed in double quotes (column 2)"),
        (
            json.dumps(
                {
                    "hash": "x",
                    "topic": "t",
                    "sentence": "abc",
                    "stance": "Argument_for",
                    "aspect_pos": ["(0,9)"],
                    "aspect_pos_string": ["abc"],
                }
            ),
            "outside the sentence",
        ),
        (
            json.dumps(
                {
                    "hash": "x",
                    "topic": "t",
                    "sentence": "abc",
                    "stance": "Argument_for",
                    "aspect_pos": ["(0,2)"],
                    "aspect_pos_string": ["bc"],
                }
            ),
            "aspect_pos_string[0]",
        ),
        (
            json.dumps(
                {
                    "hash": "x",
                    "topic": "t",
                    "sentence": "abc",
                    "stance": "pro",
                    "aspect_pos": [],
                    "aspect_pos_string": [],
                }
            ),
            "Argument_for, Argument_against or null (unknown)",
        ),
        (json.dumps({"hash": "x", "topic": "t", "sentence": "abc", "stance": "Argument_for"}), "missing key"),
        (appf_line(*ROWS[0]), "duplicate hash"),
    ]
    for bad, reason in cases:
        path = tmp_path / "bad.jsonl"
        path.write_text("\n".join(good[:2] + [bad] + good[2:]) + "\n", encoding="utf-8")
        with pytest.raises(ImportFailed) as info:
            import_appf(path, project)
        assert str(info.value).startswith(f"{path}:3: ") and reason in str(info.value), str(info.value)
        assert Sentence.objects.count() == 0 and Item.objects.count() == 0 and Topic.objects.count() == 0


def test_a_failure_while_writing_rolls_everything_back(appf_file, project, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("annotation.task_types.aspect.appf.add_items", boom)
    with pytest.raises(RuntimeError):
        import_appf(appf_file, project)
    assert Sentence.objects.count() == 0 and Item.objects.count() == 0 and Topic.objects.count() == 0


def submit(project, worker, answers):
    """answers: {external_key: response}"""
    assignment = services.reserve_next_assignment(project, worker)
    items = services.assignment_items(assignment)
    services.submit_assignment(assignment, worker, {i.pk: answers[i.external_key] for i in items})


def test_crowd_export_uses_the_aggregated_aspects(tmp_path, project):
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(appf_line(*r) for r in ROWS[5:7]) + "\n", encoding="utf-8")
    import_appf(path, project)
    services.build_hits(project)
    w1 = services.worker_for_external_id("w1", source="prolific")
    w2 = services.worker_for_external_id("w2", source="prolific")
    cloning = ROWS[6][3]
    clean = "18:5"
    unsafe, unnatural = f"{cloning.index('unsafe')}:6", f"{cloning.index('unnatural')}:9"
    submit(project, w1, {"appf:h06": {"aspects": [clean]}, "appf:h07": {"aspects": [unsafe]}})
    submit(project, w2, {"appf:h06": {"aspects": [clean]}, "appf:h07": {"aspects": [unnatural]}})
    rows = {r["hash"]: r for r in project_rows(project)}
    assert rows["h06"]["aspect_pos"] == ["(18,5)"] and rows["h06"]["aspect_pos_string"] == ["clean"]
    assert "h07" not in rows  # 1 vote each of R = 2: unresolved, left out
    assert rows["h06"]["stance"] == "Argument_for" and rows["h06"]["topic"] == "nuclear energy"


def test_cross_topic_split_has_exactly_the_named_topics(appf_file, project):
    import_appf(appf_file, project)
    parts = split_rows(project_rows(project), "cross-topic")
    topics = {part: {r["topic"] for r in rows} for part, rows in parts.items()}
    assert topics == {
        "test": {"gun control", "school uniforms"},
        "dev": {"death penalty"},
        "train": {"abortion", "nuclear energy", "cloning", "minimum wage"},
    }
    custom = split_rows(project_rows(project), "cross-topic", test=["Cloning"], dev=["abortion"])
    assert {r["topic"] for r in custom["test"]} == {"cloning"} and {r["topic"] for r in custom["dev"]} == {"abortion"}


def test_in_topic_sizes_scale_app_f_proportions_and_are_seeded():
    assert in_topic_sizes(5032) == {"train": 3532, "dev": 500, "test": 1000}
    assert in_topic_sizes(100) == {"train": 70, "dev": 10, "test": 20}
    rows = [{"hash": f"{i:04d}", "topic": "t"} for i in range(200)]
    a = split_rows(rows, "in-topic", seed=1)
    assert {k: len(v) for k, v in a.items()} == in_topic_sizes(200) == {"train": 140, "dev": 20, "test": 40}
    assert sorted(r["hash"] for part in a.values() for r in part) == [r["hash"] for r in rows]
    assert split_rows(list(reversed(rows)), "in-topic", seed=1) == a
    assert split_rows(rows, "in-topic", seed=2) != a


def test_aspects_release_kind(appf_file, project, tmp_artifacts):
    from corpus.releases import build_release, release_path

    import_appf(appf_file, project)
    release = build_release("aspects", "1.0", kind="aspects", config={"projects": ["aspects"]})
    folder = release_path(release)
    test_rows = [json.loads(line) for line in (folder / "test.jsonl").read_text().splitlines()]
    assert {r["topic"] for r in test_rows} == {"gun control", "school uniforms"}
    assert sum(f.rows for f in release.files.all()) == 8
    with pytest.raises(ValueError, match="config.projects"):
        build_release("aspects", "1.1", kind="aspects", config={"projects": ["nope"]})


def test_cli_import_export_labels(appf_file, tmp_path):
    out = StringIO()
    call_command(
        "aspects", "import", str(appf_file), "--project", "cli", "--create", "--build-hits", "--activate", stdout=out
    )
    assert "items_created 8" in out.getvalue() and "hits_created" in out.getvalue()
    assert "status active: workers join at /invite/" in out.getvalue()
    out = StringIO()
    call_command("aspects", "export", "--project", "cli", "--out", str(tmp_path / "all.jsonl"), stdout=out)
    assert f"{tmp_path / 'all.jsonl'}: 8 rows" in out.getvalue()
    assert (tmp_path / "all.jsonl").read_bytes() == canonical(appf_file)
    call_command(
        "aspects",
        "export",
        "--project",
        "cli",
        "--split",
        "cross-topic",
        "--out-dir",
        str(tmp_path / "x"),
        stdout=StringIO(),
    )
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == ["dev.jsonl", "test.jsonl", "train.jsonl"]
    test_rows = [json.loads(line) for line in (tmp_path / "x" / "test.jsonl").read_text().splitlines()]
    assert {r["topic"] for r in test_rows} == {"gun control", "school uniforms"}
    # both at once: the unsplit file and the in-topic split files
    call_command(
        "aspects",
        "export",
        "--project",
        "cli",
        "--out",
        str(tmp_path / "both.jsonl"),
        "--split",
        "in-topic",
        "--out-dir",
        str(tmp_path / "y"),
        "--seed",
        "3",
        stdout=StringIO(),
    )
    assert (tmp_path / "both.jsonl").read_bytes() == canonical(appf_file)
    parts = {p: (tmp_path / "y" / f"{p}.jsonl").read_text().splitlines() for p in ("train", "dev", "test")}
    assert sorted(line for lines in parts.values() for line in lines) == sorted(
        (tmp_path / "both.jsonl").read_text().splitlines()
    )
    call_command("aspects", "labels", "--project", "cli", "--out", str(tmp_path / "labels.jsonl"), stdout=StringIO())
    rows = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    row = next(r for r in rows if r["candidate"] == "background checks")
    assert row["score"] == 1.0 and row["sentence"] == ROWS[0][3]


def test_cli_malformed_line_exits_2_with_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(appf_line(*ROWS[0]) + "\n" + '{"hash": "x"\n', encoding="utf-8")
    with pytest.raises(CommandError) as info:
        call_command("aspects", "import", str(path), "--project", "cli", "--create", stdout=StringIO())
    assert info.value.returncode == 2 and str(info.value).startswith(f"{path}:2: ")
    assert Sentence.objects.count() == 0 and Item.objects.count() == 0
    from annotation.models import Project

    assert not Project.objects.filter(slug="cli").exists()


def test_cli_exit_status_in_a_subprocess(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n" + "[1, 2]\n", encoding="utf-8")
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="argora.settings")
    result = subprocess.run(
        [
            sys.executable,
            str(Path(settings.BASE_DIR) / "manage.py"),
            "aspects",
            "labels",
            "--appf",
            str(path),
            "--out",
            str(tmp_path / "l.jsonl"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert f"{path}:2: expected a JSON object" in result.stderr
    assert not (tmp_path / "l.jsonl").exists()


@pytest.mark.parametrize(
    "args, reason",
    [
        (["--split", "cross-topic"], "--split needs --out-dir"),
        (["--out-dir", "DIR"], "--out-dir needs --split"),
        (["--out", "OUT", "--out-dir", "DIR"], "--out-dir needs --split"),
        ([], "give --out FILE.jsonl"),
        (["--out", "TMP"], "is a folder"),
        (["--split", "none", "--out-dir", "DIR"], "--out-dir needs --split"),
    ],
)
def test_cli_export_wrong_combination_exits_2_and_writes_nothing(appf_file, tmp_path, args, reason):
    call_command("aspects", "import", str(appf_file), "--project", "cli", "--create", stdout=StringIO())
    args = [
        str(tmp_path / "d")
        if a == "DIR"
        else str(tmp_path / "o.jsonl")
        if a == "OUT"
        else str(tmp_path)
        if a == "TMP"
        else a
        for a in args
    ]
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(CommandError) as info:
        call_command("aspects", "export", "--project", "cli", *args, stdout=StringIO())
    assert info.value.returncode == 2 and reason in str(info.value), str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_non_argument_sentences_are_left_out_of_app_f_and_counted(tmp_path, project):
    """App. F has Argument_for / Argument_against only (import refuses anything else): an item of a sentence with
    stance none is not exported (and counted), so every exported file imports again."""
    from annotation.task_types.aspect.items import build_payload
    from annotation.task_types.aspect.rankers import BaselineRanker

    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(appf_line(*r) for r in ROWS[5:7]) + "\n", encoding="utf-8")
    import_appf(path, project, gold=GoldShare("all"))
    text = "My uncle visited a nuclear power station last summer."
    payload = build_payload(text, "nuclear energy", stance="none", ranker=BaselineRanker(load_from_db=False))
    visited = text.index("visited")
    services.add_items(
        project,
        [],
        gold=[{"payload": payload, "expected": {"aspects": [{"begin": visited, "length": 7}], "no_aspect": False}}],
    )
    item = Item.objects.get(project=project, payload__text=text)
    assert appf.appf_row(item, {"resolved": True, "aspects": [{"begin": visited, "length": 7}]}) is None
    stats = {}
    out = tmp_path / "out.jsonl"
    assert appf.export_appf(project, out, stats=stats) == {str(out): 2}
    assert stats == {"rows": 2, "unresolved": 0, "non_arguments": 1}
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["stance"] for r in rows} == {"Argument_for", "Argument_against"}
    assert text not in out.read_text()
    parse_appf(out)  # importable as it is
    cli = StringIO()
    call_command("aspects", "export", "--project", project.slug, "--out", str(tmp_path / "cli.jsonl"), stdout=cli)
    assert "1 non-argument sentence(s)" in cli.getvalue() and "0 unresolved" in cli.getvalue()


# --- the studio's App. F source: the gold share, an unknown stance ---------------------------------------------
def studio_data(tmp_name: str, path: Path, gold: dict | None):
    """``(unsaved project, SourceInput)`` of the App. F source for ``path`` stored as the studio stores an upload."""
    project = studio.check_setup(
        name=f"Aspects {tmp_name}",
        task_type="aspect",
        config={"top_k": 3},
        values={"assignments_per_item": 1, "items_per_hit": 2},
    )
    folder = Path(studio.settings.MEDIA_ROOT) / studio.UPLOAD_DIR / f"t-{tmp_name}"
    folder.mkdir(parents=True, exist_ok=True)
    stored = folder / "upload.jsonl"
    stored.write_bytes(path.read_bytes())
    source = studio.source_named(get_task_type("aspect"), "appf-jsonl")
    assert source.gold_label == "its aspects" and not source.options  # the gold share replaced "as gold"
    return project, studio.source_input(source, upload={"path": str(stored), "name": "aspects.jsonl"}, gold=gold)


def file_hashes(path) -> list[str]:
    return [r.hash for r in parse_appf(path)]


@pytest.mark.parametrize(
    "gold, expected",
    [
        ({"mode": "first", "n": 3}, lambda n: set(range(3))),
        ({"mode": "percent", "n": 50, "seed": 7}, lambda n: GoldShare("percent", 50, seed=7).rows(n)),
    ],
)
def test_the_studio_gold_share_makes_the_chosen_rows_gold_in_preview_and_write(appf_file, gold, expected):
    hashes = file_hashes(appf_file)
    want = {hashes[i] for i in expected(len(hashes))}
    project, data = studio_data(gold["mode"], appf_file, gold)
    preview, problems = studio.preview_import(project, data)
    again, _ = studio.preview_import(project, data)  # the same rows for the same file and seed
    assert (
        problems == []
        and (preview.items, preview.gold) == (8 - len(want), len(want))
        and len(want) == (3 if gold["mode"] == "first" else 4)
    )
    assert preview.columns[-1] == "gold" and again.rows == preview.rows
    shown = {hashes[n]: row[-1] for n, row in enumerate(preview.rows)}
    assert {h for h, mark in shown.items() if mark == "gold"} == want & set(shown)
    result = studio.run_import(studio.import_spec(project, data), job=f"job-appf-{gold['mode']}")
    assert (result["items"], result["gold"]) == (8 - len(want), len(want))
    made = {
        g.item.external_key.removeprefix("appf:"): g.expected
        for g in GoldItem.objects.filter(item__project__slug=result["project"]).select_related("item")
    }
    assert set(made) == want
    row = next(r for r in parse_appf(appf_file) if r.hash in want)
    assert made[row.hash] == {"aspects": row.reference()["aspects"], "no_aspect": not row.spans}
    plain = Item.objects.filter(project__slug=result["project"], is_gold=False)
    assert {i.external_key.removeprefix("appf:") for i in plain} == set(hashes) - want


def test_an_app_f_row_of_unknown_stance_stays_unknown(tmp_path, project):
    path = tmp_path / "unknown.jsonl"
    path.write_text(
        json.dumps(
            {
                "hash": "u1",
                "topic": "gun control",
                "stance": None,
                "sentence": "Guns are tools.",
                "aspect_pos": ["(9,5)"],
                "aspect_pos_string": ["tools"],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    import_appf(path, project)
    item = Item.objects.get(project=project)
    assert item.payload["stance"] == "unknown" and item.payload["reference"]["stance"] is None
    sentence = Sentence.objects.get()
    assert (sentence.stance, sentence.metadata) == ("none", {"stance": "unknown"})
    out = tmp_path / "out.jsonl"
    appf.export_appf(project, out)
    assert json.loads(out.read_text())["stance"] is None and out.read_bytes() == canonical(path)
