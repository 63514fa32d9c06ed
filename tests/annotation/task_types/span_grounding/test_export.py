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
    human, _model = fig7_spans(*(f.pk for f in facts))
    for name, spans in (("a", human), ("b", human)):
        worker = services.worker_for_user(django_user_model.objects.create_user(name, password="pw-123456789"))
        a = services.reserve_next_assignment(project, worker)
        item = services.assignment_items(a)[0]
        services.submit_assignment(
            a,
            worker,
            {item.pk: {"spans": spans if item.payload["variables"][2:] else [], "schemes": ["From Consequence"]}},
        )
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
    assert [s["text"] for s in row["span_details"]] == [
        "Criminologists",
        "effects of the DP on crime",
        "DP does not deter crime",
    ]
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


def test_annotations_release_takes_span_projects(answered, tmp_artifacts):
    """The generic ``annotations`` release sets its own ``annotations`` (per worker): the task type's export row
    must not carry one (it did: the release refused span_grounding projects)."""
    from corpus.releases import release_file_path

    project, facts = answered
    release = build_release("ann-spans", "1.0", kind="annotations", config={"projects": [project.slug]})
    rows = [json.loads(line) for line in release_file_path(release, "annotations.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and rows[0]["task_type"] == "span_grounding"
    answered_row = next(r for r in rows if r["annotations"])
    assert len(answered_row["annotations"]) == 2 and "worker" in answered_row["annotations"][0]
    assert answered_row["facts"] == [f.text for f in facts] and answered_row["n_annotations"] == 2


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
    assert exc.value.returncode == 2
    assert str(exc.value) == f"{path}:2: invalid JSON: Expecting property name enclosed in double quotes (column 2)"
    for text, where, reason in [
        ("\n", 0, "no rows: the file is empty"),
        ("[1, 2]\n", 1, "expected a JSON object, got list"),
        ('{"reference": []}\n', 1, 'expected an object with "text", "reference", "predicted"'),
    ]:
        path.write_text(text)
        with pytest.raises(CommandError) as exc:
            call_command("spans", "metrics", "--file", str(path))
        assert exc.value.returncode == 2 and str(exc.value) == f"{path}:{where}: {reason}"


def test_argu_3_2_4_filters():
    """At most 30% unnormalised spans, 1-4 fact variables each present 2-4 times, at most 150 words (ArgU §3.2.4)."""
    from annotation.task_types.span_grounding.export import clean_filters, filter_reason

    f = clean_filters(True)
    assert f == {"max_unnormalised": 0.30, "variables": [1, 4], "mentions_per_variable": [2, 4], "max_words": 150}

    def row(words, variables, normalised=None):
        return {
            "text": " ".join(["w"] * words),
            "span_details": [{"variable": v, "normalised": (normalised or {}).get(i)} for i, v in enumerate(variables)],
        }

    assert filter_reason(row(150, [1, 1, 2, 2, 3, 3]), f) is None
    assert "151 words" in filter_reason(row(151, [1, 1]), f)
    assert filter_reason(row(20, [1, 1, 2, 2, None, None, None]), f).startswith("43% of spans unnormalised")
    assert filter_reason(row(20, [1, 1, 2, 2, None]), f) is None  # 1 of 5 = 20%
    assert filter_reason(row(20, [1, 1, 2, None]), f).startswith("variable 2 present 1 time, not 2-4")
    assert filter_reason(row(20, [1, 1, 1, None]), f) is None  # 1 of 4 = 25%
    assert filter_reason(row(20, [1, 1, 2, 2, None, None]), f).startswith("33% of spans unnormalised")  # > 30%
    # a span mapped only to a new (accepted proposal) variable still counts as unnormalised
    assert filter_reason(row(20, [1, 1, 7, 7], {2: "new", 3: "new"}), f).startswith("50% of spans unnormalised")
    assert filter_reason(row(20, [1, 1, 7, 7], {2: "merged", 3: "indirect"}), f) is None
    assert "0 fact variables" in filter_reason(row(20, []), f)
    assert "5 fact variables" in filter_reason(row(20, [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]), f)
    assert "variable 1 present 5 times, not 2-4" in filter_reason(row(20, [1] * 5), f)
    loose = clean_filters({"mentions_per_variable": None, "max_unnormalised": None})
    assert filter_reason(row(20, [1, 2, None, None]), loose) is None
    assert clean_filters(None) is None and clean_filters({"max_words": 10})["max_words"] == 10
    assert clean_filters({"mentions_per_variable": [1, 9]})["mentions_per_variable"] == [1, 9]
    with pytest.raises(ValueError, match="config.filters.variables"):
        clean_filters({"variables": [3, 1]})
    with pytest.raises(ValueError, match="config.filters.mentions_per_variable"):
        clean_filters({"mentions_per_variable": [2]})
    with pytest.raises(ValueError, match="unknown key"):
        clean_filters({"words": 3})


def test_filters_apply_to_the_cli_and_the_release(answered, tmp_path, tmp_artifacts):
    project, _ = answered
    out = tmp_path / "kept.jsonl"
    call_command("spans", "export", "--project", project.slug, "--file", str(out), "--filters")
    assert out.read_text() == ""  # Figure 7 grounds each of its 3 variables once: not 2-4 times
    release = build_release(
        "spans-once",
        "1.0",
        kind="spans",
        config={"projects": [project.slug], "filters": {"mentions_per_variable": None}},
    )
    from corpus.releases import release_file_path

    assert len(release_file_path(release, "spans.jsonl").read_text().splitlines()) == 1  # 3 grounded spans: kept
    release = build_release(
        "spans-short",
        "1.0",
        kind="spans",
        config={"projects": [project.slug], "filters": {"max_words": 5, "mentions_per_variable": None}},
    )
    assert release_file_path(release, "spans.jsonl").read_text() == ""  # FIG7 is longer than 5 words


MAPPED_TEXT = "same as one and near one and brand new and KB two"
TOY = {
    "KB one": [1, 0, 0],
    "KB two": [0, 1, 0],
    "same as one": [1, 0, 0],
    "near one": [0.8, 0.6, 0],
    "brand new": [0, 0, 1],
}


@pytest.fixture
def others_answered(django_user_model):
    """One item whose single response grounds four spans to Others; the KB holds "KB one" and "KB two"."""
    from corpus.models import FactVariable

    from .helpers import span

    topic, _ = make_kb(0, "Toy")
    one = FactVariable.objects.create(topic=topic, text="KB one", content_hash="k1")
    two = FactVariable.objects.create(topic=topic, text="KB two", content_hash="k2")
    project = make_project(items_per_hit=1, assignments_per_item=1)
    from corpus.tokens import token_offsets

    services.add_items(
        project,
        [
            {
                "argument_id": None,
                "text": MAPPED_TEXT,
                "topic": "Toy",
                "stance": "pro",
                "tokens": token_offsets(MAPPED_TEXT),
                "variables": [{"id": one.pk, "text": one.text}],
                "suggestions": [],
            }
        ],
    )
    services.build_hits(project)
    worker = services.worker_for_user(django_user_model.objects.create_user("w", password="pw-123456789"))
    a = services.reserve_next_assignment(project, worker)
    item = services.assignment_items(a)[0]
    phrases = ["same as one", "near one", "brand new", "KB two"]
    services.submit_assignment(a, worker, {item.pk: {"spans": [span(MAPPED_TEXT, p, None) for p in phrases]}})
    return project, one, two


def test_export_emits_normalised_ids_and_filters_after_mapping(others_answered, monkeypatch, tmp_artifacts):
    import numpy as np

    from annotation.task_types.span_grounding import normalisation

    project, one, two = others_answered
    keep_mentions_off = {"mentions_per_variable": None}
    from annotation.task_types.span_grounding.export import project_rows

    [before] = list(project_rows(project))
    assert [v for _, _, v in before["spans"]] == [None] * 4 and before["n_unnormalised"] == 4
    assert list(project_rows(project, filters=keep_mentions_off)) == []  # 100% unnormalised > 30%
    monkeypatch.setattr(
        normalisation, "_encode", lambda texts, encoder: np.array([TOY[t] for t in texts], dtype=np.float32)
    )
    normalisation.normalise_project(project)
    [row] = list(project_rows(project))
    assert [v for _, _, v in row["spans"]] == [one.pk, one.pk, None, two.pk]
    assert [d["normalised"] for d in row["span_details"]] == ["direct", "indirect", None, "direct"]
    assert [d["annotated_variable"] for d in row["span_details"]] == [None] * 4
    assert row["span_details"][1]["normalisation_score"] == pytest.approx(0.8)
    assert row["span_details"][3]["variable_text"] == "KB two"
    assert row["variables"] == [{"id": one.pk, "text": "KB one"}, {"id": two.pk, "text": "KB two"}]
    assert row["offered_variables"] == [one.pk] and row["facts"] == ["KB one", "KB two"]
    assert row["n_unnormalised"] == 1 and row["annotations"][0]["spans"][0]["variable"] is None  # as stored
    assert list(project_rows(project, filters=keep_mentions_off)) == [row]  # 1 of 4 = 25% <= 30%: kept now
    assert list(project_rows(project, filters=True)) == []  # "KB two" is present once, not 2-4 times
    # the generation corpus reads the mapped ids (every grounded id is among the row's variables)
    from ml.generation.corpora import argu_input

    made = argu_input(row)
    assert sorted(v["id"] for v in made["variables"]) == sorted([one.pk, two.pk])
