"""Shared-task CSV / JSONL: exact round trip, all-or-nothing import with file:line errors (and CLI exit 2), gold
import, crowd export with aggregated labels and confidence words."""

import csv
import io
import json
import subprocess
import sys

import pytest
from django.core.management import call_command

from annotation import services
from annotation.models import HIT, GoldItem, Item, Project, Worker
from annotation.task_types.validity_novelty import results
from annotation.task_types.validity_novelty.csvio import read_csv, read_file, read_jsonl
from corpus.importers.base import ImportFailed

from .helpers import HEADER, ROWS, csv_text, write

pytestmark = pytest.mark.django_db


def parsed(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def export_text(project, **kw):
    buf = io.StringIO(newline="")
    results.export(project, buf, **kw)
    return buf.getvalue()


def test_csv_round_trip_exact(tmp_path):
    src = write(tmp_path, csv_text())
    said = io.StringIO()
    call_command("valnov", "import", str(src), "--project", "st", stdout=said)
    assert "status draft: workers cannot start yet" in said.getvalue()
    project = Project.objects.get(slug="st")
    assert project.task_type == "validity_novelty" and project.assignments_per_item == 3
    assert Item.objects.filter(project=project).count() == 5 and HIT.objects.filter(project=project).exists()
    out = tmp_path / "out.csv"
    call_command("valnov", "export", "--project", "st", "--out", str(out))
    assert parsed(out) == parsed(src)  # same rows, values, column order, extra columns
    assert out.read_text(encoding="utf-8") == src.read_text(encoding="utf-8")  # here even byte for byte
    item = Item.objects.filter(project=project).order_by("position")[1]
    assert item.payload["premise"].startswith("Pentagon, hardly")
    assert item.payload["reference"] == {
        "validity": -1,
        "validity_confidence": "very confident",
        "novelty": -1,
        "novelty_confidence": "majority",
    }
    assert item.payload["extra"] == {"Topic-in-dev-split": "no", "note": 'a "quoted" note'}


def test_round_trip_other_column_order_crlf_and_bom(tmp_path):
    rows = list(csv.reader(io.StringIO(csv_text(), newline="")))
    order = [8, 3, 1, 0, 7, 6, 2, 4, 5]  # a shuffled header, extra columns first
    buf = io.StringIO(newline="")
    csv.writer(buf, lineterminator="\r\n", quoting=csv.QUOTE_ALL).writerows([[r[i] for i in order] for r in rows])
    src = write(tmp_path, b"\xef\xbb\xbf" + buf.getvalue().encode("utf-8"))
    call_command("valnov", "import", str(src), "--project", "st")
    out = tmp_path / "out.csv"
    call_command("valnov", "export", "--project", "st", "--out", str(out))
    assert parsed(out) == [[r[i] for i in order] for r in rows]


def test_jsonl_round_trip_and_csv_to_jsonl(tmp_path):
    src = write(tmp_path, csv_text())
    call_command("valnov", "import", str(src), "--project", "st")
    out = tmp_path / "out.jsonl"
    call_command("valnov", "export", "--project", "st", "--out", str(out), "--format", "jsonl")
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert list(lines[0]) == HEADER.split(",")
    assert lines[1]["Validity"] == -1 and lines[1]["note"] == 'a "quoted" note'
    # JSONL in -> JSONL out, exactly; extra values of any JSON type survive
    objs = [dict(o, score=[i, 0.5], flag=bool(i % 2)) for i, o in enumerate(lines)]
    src2 = write(tmp_path, "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs), name="in.jsonl")
    call_command("valnov", "import", str(src2), "--project", "js")
    out2 = tmp_path / "out2.jsonl"
    call_command("valnov", "export", "--project", "js", "--out", str(out2))
    assert out2.read_text(encoding="utf-8") == src2.read_text(encoding="utf-8")


def test_reimport_adds_nothing_and_duplicate_rows_are_kept(tmp_path):
    src = write(tmp_path, csv_text(ROWS + [ROWS[0]]))
    call_command("valnov", "import", str(src), "--project", "st")
    call_command("valnov", "import", str(src), "--project", "st")
    project = Project.objects.get(slug="st")
    assert Item.objects.filter(project=project).count() == 6
    out = tmp_path / "out.csv"
    call_command("valnov", "export", "--project", "st", "--out", str(out))
    assert parsed(out) == parsed(src)


def test_import_as_gold(tmp_path):
    src = write(tmp_path, csv_text())
    call_command("valnov", "import", str(src), "--project", "g", "--as-gold")
    project = Project.objects.get(slug="g")
    golds = {g.item.payload["conclusion"]: g.expected for g in GoldItem.objects.filter(item__project=project)}
    assert len(golds) == 5 and not HIT.objects.filter(project=project).exists()
    assert golds["Zoos are useful"] == {"validity": "yes", "novelty": "no"}
    assert golds["People like cafés"] == {}  # 0 = tie / unknown: not scored
    assert golds["Pentagon rebuild sends wrong message of peace"] == {"validity": "yes", "novelty": "yes"}
    out = tmp_path / "out.csv"
    call_command("valnov", "export", "--project", "g", "--out", str(out))
    assert parsed(out) == parsed(src)
    tt = project.get_task_type()
    gold = GoldItem.objects.get(item__payload__conclusion="Zoos are useful")
    assert tt.score_gold(project, gold, {"validity": "yes", "novelty": "no"}) == 1.0
    assert tt.score_gold(project, gold, {"validity": "yes", "novelty": "yes"}) == 0.5
    tie = GoldItem.objects.get(item__payload__conclusion="People like cafés")
    assert tt.score_gold(project, tie, {"validity": "no", "novelty": "dont_know"}) == 1.0


BAD = [
    (ROWS[:1] + [ROWS[1].replace(",-1,very confident,", ",2,very confident,")], 3, "Validity: bad label '2'"),
    (ROWS[:2] + [ROWS[2].replace(",-1,confident,", ",yes,confident,")], 4, "Novelty: bad label 'yes'"),
    ([ROWS[0].replace(",1,majority,1,", ",1,sure,1,")], 2, "Validity-Confidence: bad confidence 'sure'"),
    (ROWS[:3] + [ROWS[3]], None, None),  # control: fine
    (ROWS[:3] + ["Zoos,A premise,A conclusion,1,majority"], 6, "5 fields, the header has 9"),
    (["Zoos,,Conclusion,1,majority,1,majority,no,"], 2, "Premise: empty"),
    ([ROWS[2], ROWS[0].replace(",1,majority,1,majority", ",1,majority,1.0,majority")], 4, "Novelty: bad label '1.0'"),
]


@pytest.mark.parametrize("rows, line, reason", BAD)
def test_bad_rows_fail_with_file_line_and_write_nothing(tmp_path, rows, line, reason):
    src = write(tmp_path, csv_text(rows))
    if line is None:
        read_csv(src)
        return
    with pytest.raises(ImportFailed) as exc:
        results.import_file(results.get_project("st", create=True), src)
    assert str(exc.value).startswith(f"{src}:{line}: ") and reason in str(exc.value), str(exc.value)
    assert Item.objects.count() == 0


def test_missing_column_invalid_utf8_and_empty(tmp_path):
    src = write(tmp_path, csv_text(header=HEADER.replace("Novelty-Confidence,", "")))
    with pytest.raises(ImportFailed, match=r":1: missing column\(s\) Novelty-Confidence"):
        read_file(src)
    bad = csv_text().encode("utf-8").replace("Zürich".encode(), "Zürich".encode("latin-1"))
    src = write(tmp_path, bad, name="latin.csv")
    with pytest.raises(ImportFailed, match=r"latin\.csv:6: not UTF-8"):  # the cafe row: line 6 (row 3 spans 4-5)
        read_file(src)
    with pytest.raises(ImportFailed, match=r":2: no rows"):
        read_file(write(tmp_path, HEADER + "\n", name="empty.csv"))
    with pytest.raises(ImportFailed, match=r":1: missing key\(s\) Novelty"):
        read_jsonl(
            write(
                tmp_path,
                '{"topic": "t", "Premise": "p", "Conclusion": "c", "Validity": 1, '
                '"Validity-Confidence": "majority", "Novelty-Confidence": "majority"}\n',
                name="a.jsonl",
            )
        )
    with pytest.raises(
        ImportFailed,
        match=r"b\.jsonl:2: invalid JSON: Expecting property name enclosed in double "
        r"quotes \(column 2\)$",
    ):
        read_file(
            write(
                tmp_path,
                json.dumps(dict(zip(HEADER.split(",")[:7], ["t", "p", "c", 1, "majority", 1, "majority"])))
                + "\n{oops\n",
                name="b.jsonl",
            )
        )
    with pytest.raises(ImportFailed, match=r"c\.jsonl:0: no rows: the file is empty$"):
        read_file(write(tmp_path, "\n\n", name="c.jsonl"))
    with pytest.raises(ImportFailed, match=r"d\.jsonl:1: expected a JSON object, got list$"):
        read_file(write(tmp_path, "[1]\n", name="d.jsonl"))


def run_cli(*args):
    return subprocess.run([sys.executable, "manage.py", "valnov", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "make, line, reason",
    [
        (lambda: csv_text([ROWS[0], ROWS[1].replace(",-1,very confident,", ",5,very confident,")]), 3, "bad label '5'"),
        (lambda: csv_text(header=HEADER.replace("Validity,", "")), 1, "missing column(s) Validity"),
        (lambda: csv_text().encode("utf-8").replace("Zürich".encode(), b"Z\xfcrich"), 6, "not UTF-8"),
    ],
)
def test_cli_exit_2_with_file_line_reason(tmp_path, make, line, reason):
    src = write(tmp_path, make())
    r = run_cli("import", str(src), "--project", "cli-never-created")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.strip().startswith(f"{src}:{line}: ") and reason in r.stderr
    assert r.stdout == ""
    assert not Project.objects.filter(slug="cli-never-created").exists()


def test_cli_refuses_a_project_of_another_task_type(tmp_path, capsys):
    services.create_project(name="Other", slug="other", task_type="sentence_label")
    with pytest.raises(SystemExit) as exc:
        call_command("valnov", "import", str(write(tmp_path, csv_text())), "--project", "other")
    assert exc.value.code == 2
    assert "project 'other' is a 'sentence_label' project, not 'validity_novelty'" in capsys.readouterr().err
    assert Item.objects.count() == 0


def submit(project, worker, answers):
    a = services.reserve_next_assignment(project, worker)
    items = services.assignment_items(a)
    services.submit_assignment(a, worker, {str(i.pk): answers[i.payload["conclusion"]] for i in items})


def test_crowd_export_writes_aggregated_labels_and_confidence(tmp_path):
    src = write(tmp_path, csv_text(ROWS[2:5]))  # Zoos are useful / People like cafés / Zoos are cruel
    project = results.get_project("crowd", create=True, items_per_hit=3, status="active")
    results.import_file(project, src)
    Y, N, D = "yes", "no", "dont_know"
    votes = [  # per worker: conclusion -> answer
        {
            "Zoos are useful": {"validity": Y, "novelty": N},
            "People like cafés": {"validity": Y, "novelty": Y},
            "Zoos are cruel": {"validity": N, "novelty": D},
        },
        {
            "Zoos are useful": {"validity": Y, "novelty": N},
            "People like cafés": {"validity": N, "novelty": Y},
            "Zoos are cruel": {"validity": N, "novelty": D},
        },
        {
            "Zoos are useful": {"validity": Y, "novelty": D},
            "People like cafés": {"validity": D, "novelty": N},
            "Zoos are cruel": {"validity": Y, "novelty": Y},
        },
    ]
    for k, answers in enumerate(votes):
        submit(project, Worker.objects.create(external_id=f"w{k}", source="prolific"), answers)
    text = export_text(project, with_weights=True)
    rows = {r["Conclusion"]: r for r in csv.DictReader(io.StringIO(text))}
    useful, cafe, cruel = rows["Zoos are useful"], rows["People like cafés"], rows["Zoos are cruel"]
    # yes,yes,yes -> 1 very confident; no,no,dk -> -1 confident; weight 1 + 2 + 1
    assert (useful["Validity"], useful["Validity-Confidence"], useful["Novelty"], useful["Novelty-Confidence"]) == (
        "1",
        "very confident",
        "-1",
        "confident",
    )
    assert useful["Instance-Weight"] == "4.0"
    # yes,no,dk -> 0 defeasible (tie); yes,yes,no -> 1 majority
    assert (cafe["Validity"], cafe["Validity-Confidence"], cafe["Novelty"], cafe["Novelty-Confidence"]) == (
        "0",
        "defeasible",
        "1",
        "majority",
    )
    assert cafe["Instance-Weight"] == "1.25"
    # no,no,yes -> -1 majority; dk,dk,yes -> 0 defeasible ("don't know" majority)
    assert (cruel["Validity"], cruel["Validity-Confidence"], cruel["Novelty"], cruel["Novelty-Confidence"]) == (
        "-1",
        "majority",
        "0",
        "defeasible",
    )
    assert cafe["Topic-in-dev-split"] == "yes" and cafe["note"] == "tie"  # extra columns kept
    assert list(rows["Zoos are cruel"])[:9] == HEADER.split(",")
    # --labels reference still gives the imported file back
    ref = list(csv.reader(io.StringIO(export_text(project, labels="reference"))))
    assert ref == list(csv.reader(io.StringIO(csv_text(ROWS[2:5]))))
