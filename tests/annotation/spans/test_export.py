"""JSONL export (``manage.py spans export``), the ``spans`` release kind and ``manage.py spans metrics``."""
import json

import pytest
from django.core.management import CommandError, call_command

from annotation import services
from annotation.models import Assignment, Response
from corpus.releases import build_release, get_exporter

from .helpers import FIG7, fig7_payload, fig7_spans, make_kb, make_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def answered(django_user_model):
    _, facts = make_kb(3)
    project = make_project(config={"ask_schemes": True}, items_per_hit=1, assignments_per_item=2)
    services.add_items(project, [fig7_payload(facts), fig7_payload(facts[:2])])
    services.build_hits(project)
    human, model = fig7_spans(*(f.pk for f in facts))
    for name, spans in (("a", human), ("b", human)):
        worker = services.worker_for_user(django_user_model.objects.create_user(name, password="pw-123456789"))
        a = services.reserve_next_assignment(project, worker)
        item = services.assignment_items(a)[0]
        services.submit_assignment(a, worker, {item.pk: {"spans": spans if item.payload["variables"][2:] else [],
                                                         "schemes": ["From Consequence"]}})
    return project, facts


def test_export_command_jsonl(answered, tmp_path):
    project, facts = answered
    assert Response.objects.count() == 2 and Assignment.objects.filter(status="submitted").count() == 2
    out = tmp_path / "spans.jsonl"
    call_command("spans", "export", "--project", project.slug, "--file", str(out))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 1  # the other item has no answers yet
    row = rows[0]
    assert row["text"] == FIG7 and row["n_annotations"] == 2 and row["schemes"] == ["From Consequence"]
    assert [s["text"] for s in row["span_details"]] == ["Criminologists", "effects of the DP on crime",
                                                         "DP does not deter crime"]
    assert [FIG7[b:e] for b, e, _ in row["spans"]] == [s["text"] for s in row["span_details"]]  # [begin, end, id]
    assert [v for _, _, v in row["spans"]] == [s["variable"] for s in row["span_details"]]
    assert row["facts"] == [f.text for f in facts]
    call_command("spans", "export", "--project", project.slug, "--file", str(out), "--include-unannotated")
    assert len(out.read_text().splitlines()) == 2
    with pytest.raises(CommandError) as exc:
        call_command("spans", "export", "--project", "nope", "--file", str(out))
    assert exc.value.returncode == 2


def test_release_kind(answered, tmp_artifacts):
    project, _ = answered
    exporter = get_exporter("spans")
    with pytest.raises(ValueError, match="config.projects"):
        exporter.prepare({})
    release = build_release("spans-demo", "1.0", kind="spans", config={"projects": [project.slug]})
    from corpus.releases import release_file_path

    rows = [json.loads(line) for line in release_file_path(release, "spans.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["project"] == project.slug


def test_metrics_command(tmp_path, capsys):
    human, model = fig7_spans()
    path = tmp_path / "eval.jsonl"
    path.write_text(json.dumps({"text": FIG7, "reference": human, "predicted": model}) + "\n")
    call_command("spans", "metrics", "--file", str(path), "--json")
    r = json.loads(capsys.readouterr().out)
    assert round(r["f1"], 2) == 0.87 and r["label_accuracy"] == pytest.approx(2 / 3)
    path.write_text(json.dumps({"text": FIG7, "reference": human, "predicted": model}) + "\n{oops\n")
    with pytest.raises(CommandError) as exc:
        call_command("spans", "metrics", "--file", str(path))
    assert exc.value.returncode == 2 and str(exc.value).startswith(f"{path}:2: invalid JSON")


def test_argu_3_2_4_filters():
    """At most 30% unnormalised spans, 1-4 fact variables, at most 150 words (ArgU §3.2.4)."""
    from annotation.spans.export import clean_filters, filter_reason

    f = clean_filters(True)

    def row(words, variables):
        return {"text": " ".join(["w"] * words),
                "span_details": [{"variable": v} for v in variables]}

    assert filter_reason(row(150, [1, 2, 3]), f) is None
    assert "151 words" in filter_reason(row(151, [1]), f)
    assert filter_reason(row(20, [1, 2, None]), f).startswith("33% of spans unnormalised")  # 1 of 3 > 30%
    assert filter_reason(row(20, [1, 2, 2, None]), f) is None  # 1 of 4 = 25%
    assert "0 fact variables" in filter_reason(row(20, []), f)
    assert "5 fact variables" in filter_reason(row(20, [1, 2, 3, 4, 5]), f)
    assert clean_filters(None) is None and clean_filters({"max_words": 10})["max_words"] == 10
    with pytest.raises(ValueError, match="config.filters.variables"):
        clean_filters({"variables": [3, 1]})
    with pytest.raises(ValueError, match="unknown key"):
        clean_filters({"words": 3})


def test_filters_apply_to_the_cli_and_the_release(answered, tmp_path, tmp_artifacts):
    project, _ = answered
    out = tmp_path / "kept.jsonl"
    call_command("spans", "export", "--project", project.slug, "--file", str(out), "--filters")
    assert len(out.read_text().splitlines()) == 1  # 3 grounded spans, 3 variables, short text: kept
    release = build_release("spans-short", "1.0", kind="spans",
                            config={"projects": [project.slug], "filters": {"max_words": 5}})
    from corpus.releases import release_file_path

    assert release_file_path(release, "spans.jsonl").read_text() == ""  # FIG7 is longer than 5 words
