"""Aspect tagger (Arg-CTRL §3.2, Table 3) and ArgSpan / ArgSpanScheme (ArgU §3.1.2, §3.2.1, Table 1)."""

import json
import random

import pytest

from ml.trainers.argspan import scheme_metrics, span_f1
from ml.trainers.tagger import bio_metrics

TINY = {
    "from_config": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64},
    "lr": 3e-3,
    "head_lr": 3e-3,
    "batch_size": 16,
    "max_length": 48,
}

ASPECTS = ["costs", "safety", "radioactive waste", "jobs", "crime rates", "freedom", "health risks", "pollution"]
FILLER = (
    "the a it is we they people should would many some this that policy country government law support "
    "oppose really very"
).split()


def planted_tagger_rows(n, seed):
    """Sentences whose aspect (one of a fixed vocabulary) follows "because of": a signal a tiny model can learn."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        left = " ".join(rng.choice(FILLER) for _ in range(rng.randint(2, 8)))
        aspect = rng.choice(ASPECTS)
        right = " ".join(rng.choice(FILLER) for _ in range(rng.randint(1, 6)))
        text = f"{left.capitalize()} because of {aspect} {right}."
        begin = text.index(" because of ") + len(" because of ")
        rows.append(
            {
                "sentence": text,
                "aspect_pos": [f"({begin},{len(aspect)})"],
                "aspect_pos_string": [aspect],
                "topic": "nuclear energy",
                "stance": "Argument_for",
                "hash": f"h{seed}-{len(rows)}",
            }
        )
    return rows


VARS = {
    1: "nuclear waste",
    2: "energy costs",
    3: "carbon emissions",
    4: "reactor accidents",
    5: "job creation",
    6: "national security",
}
OTHER_PHRASES = ["my neighbour", "the weather", "old movies"]
SCHEME_MARKERS = {
    "From Consequence": "because it leads to",
    "Source Authority": "experts say that",
    "Rule or Principle": "it is a principle that",
}


def planted_span_rows(n, seed):
    """Span-grounding export rows: the span names one of the offered variables (or an Others phrase); the scheme
    is signalled by a marker phrase."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        scheme = rng.choice(list(SCHEME_MARKERS))
        offered = rng.sample(sorted(VARS), 3)
        left = " ".join(rng.choice(FILLER) for _ in range(rng.randint(1, 5)))
        if rng.random() < 0.75:
            var = rng.choice(offered)
            phrase = VARS[var]
        else:
            var, phrase = None, rng.choice(OTHER_PHRASES)
        text = f"{left.capitalize()} {SCHEME_MARKERS[scheme]} {phrase} {rng.choice(FILLER)}."
        begin = text.index(phrase)
        rows.append(
            {
                "text": text,
                "variables": [{"id": k, "text": VARS[k]} for k in offered],
                "spans": [{"begin": begin, "end": begin + len(phrase), "variable": var}],
                "schemes": [scheme],
            }
        )
    return rows


# --- metrics, hand-computed ------------------------------------------------------------------------


def test_bio_metrics_match_a_hand_computed_example():
    gold = [["B", "I", "O", "O"], ["O", "B", "O"]]
    pred = [["B", "O", "O", "B"], ["O", "B", "I"]]
    m = bio_metrics(gold, pred)
    # B: tp 2 fp 1 fn 0 -> P 2/3 R 1 F1 .8; I: tp 0 -> 0; O: tp 2 fp 1 fn 2 -> P 2/3 R 1/2 F1 4/7
    assert m["f1_B"] == pytest.approx(0.8) and m["f1_I"] == 0.0 and m["f1_O"] == pytest.approx(4 / 7)
    assert m["f1_macro"] == pytest.approx((0.8 + 0 + 4 / 7) / 3)
    assert m["precision_macro"] == pytest.approx(4 / 9)
    assert m["recall_macro"] == pytest.approx(0.5)
    # majority (all O): O P 4/7 R 1 F1 8/11; B and I 0
    assert m["majority_f1_macro"] == pytest.approx(8 / 33)
    assert m["majority_precision_macro"] == pytest.approx(4 / 21)
    assert m["majority_recall_macro"] == pytest.approx(1 / 3)


def test_majority_baseline_reproduces_table_3():
    # Table 3: Majority F1 .3085 / P .2871 / R .3333 <=> 86.13 % of the test tokens are O
    gold = [["O"] * 8613 + ["B"] * 800 + ["I"] * 587]
    m = bio_metrics(gold, [["O"] * 10000])
    assert round(m["f1_macro"], 4) == 0.3085 and round(m["precision_macro"], 4) == 0.2871
    assert round(m["recall_macro"], 4) == 0.3333
    assert m["f1_macro"] == pytest.approx(m["majority_f1_macro"])


def test_span_f1_partial_full_exact_hand_computed():
    gold = [[(0, 3), (5, 7)]]
    pred = [[(1, 3), (4, 7), (8, 9)]]
    # (1,3): inside (0,3) -> partial + full; (4,7): 2 of 3 tokens in (5,7) -> partial only; (8,9): nothing
    assert span_f1(gold, pred, "partial") == pytest.approx({"precision": 2 / 3, "recall": 1.0, "f1": 0.8})
    assert span_f1(gold, pred, "full") == pytest.approx({"precision": 1 / 3, "recall": 0.5, "f1": 0.4})
    assert span_f1(gold, pred, "exact")["f1"] == 0.0
    assert span_f1([[]], [[]], "partial")["f1"] == 1.0
    assert span_f1(gold, [[]], "partial")["f1"] == 0.0


def test_scheme_metrics_hand_computed():
    gold = [["A"], ["A", "B"], ["B"]]
    pred = [["A"], ["B"], ["A"]]
    m = scheme_metrics(gold, pred, ["A", "B"])
    # A: tp 1 fp 1 fn 1 -> .5; B: tp 1 fp 0 fn 1 -> 2/3; micro: tp 2 fp 1 fn 2 -> 4/7
    assert m["scheme_f1_A"] == pytest.approx(0.5) and m["scheme_f1_B"] == pytest.approx(2 / 3)
    assert m["scheme_f1_micro"] == pytest.approx(4 / 7)
    assert m["scheme_f1_macro"] == pytest.approx((0.5 + 2 / 3) / 2)


# --- data files ------------------------------------------------------------------------------------


def test_tagger_rows_from_appf_file_and_file_line_errors(tmp_path):
    from ml.errors import TrainerError
    from ml.registry import get_trainer

    rows = planted_tagger_rows(30, 1)
    path = tmp_path / "appf.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    train, dev = get_trainer("tagger").rows_from_file(path)
    assert len(train) + len(dev) == 30 and train and dev
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rows[0]) + "\n" + json.dumps(dict(rows[1], aspect_pos=["(500,3)"])) + "\n")
    with pytest.raises(TrainerError, match=r"bad.jsonl:2: .*outside"):
        get_trainer("tagger").rows_from_file(bad)


def test_argspan_rows_from_span_export_file(tmp_path):
    from ml.errors import TrainerError
    from ml.registry import get_trainer

    path = tmp_path / "spans.jsonl"
    path.write_text(
        "".join(
            json.dumps(dict(r, split="dev" if i % 4 == 0 else "train")) + "\n"
            for i, r in enumerate(planted_span_rows(20, 3))
        )
    )
    train, dev = get_trainer("argspan").rows_from_file(path)
    assert (len(train), len(dev)) == (15, 5)
    path.write_text(json.dumps({"text": "abc", "spans": [{"begin": 2, "end": 9}]}) + "\n")
    with pytest.raises(TrainerError, match=r"spans.jsonl:1: span \(2,9\) lies outside"):
        get_trainer("argspanscheme").rows_from_file(path)


# --- training: planted signals, through the registry -----------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db
def test_tagger_learns_planted_aspects_and_beats_majority(tmp_artifacts):
    from ml.registry import load_model
    from ml.versions import train_version

    version = train_version(
        "tagger",
        rows_train=planted_tagger_rows(160, 1),
        rows_dev=planted_tagger_rows(50, 2),
        seed=3,
        hyperparameters=dict(TINY, epochs=3),
    )
    assert version.status == "ready", version.error
    dev = version.metrics["dev"]
    assert dev["f1_macro"] > dev["majority_f1_macro"] + 0.4
    assert dev["f1_macro"] > 0.9 and dev["f1_B"] > 0.85
    tagger = load_model(version)
    [pred] = tagger.predict(["We oppose it because of safety really."])
    assert [s["text"] for s in pred["spans"]] == ["safety"]
    assert 0.0 < pred["spans"][0]["confidence"] <= 1.0


@pytest.mark.slow
@pytest.mark.django_db
def test_argspan_learns_spans_and_grounding(tmp_artifacts):
    from ml.registry import load_model
    from ml.versions import train_version

    version = train_version(
        "argspan",
        rows_train=planted_span_rows(120, 1),
        rows_dev=planted_span_rows(50, 2),
        seed=3,
        hyperparameters=dict(TINY, epochs=3, proj_dim=32),
    )
    assert version.status == "ready", version.error
    dev = version.metrics["dev"]
    assert dev["span_partial_f1"] > 0.8 and dev["majority_span_partial_f1"] == 0.0
    assert dev["span_full_f1"] > 0.7 and dev["span_overall_f1"] > dev["majority_span_overall_f1"]
    assert dev["label_accuracy"] > dev["majority_label_accuracy"] + 0.2
    model = load_model(version)
    [pred] = model.predict(
        ["People say that experts say that energy costs really."],
        [[{"id": 1, "text": "nuclear waste"}, {"id": 2, "text": "energy costs"}]],
    )
    assert " ".join(s["text"] for s in pred["spans"]) == "energy costs"  # one span, or B B at worst
    assert {s["variable"] for s in pred["spans"]} == {2}


@pytest.mark.slow
@pytest.mark.django_db
def test_argspanscheme_learns_schemes_and_spans(tmp_artifacts):
    from ml.versions import train_version

    version = train_version(
        "argspanscheme",
        rows_train=planted_span_rows(120, 1),
        rows_dev=planted_span_rows(50, 2),
        seed=3,
        hyperparameters=dict(TINY, epochs=3),
    )
    assert version.status == "ready", version.error
    dev = version.metrics["dev"]
    assert dev["span_partial_f1"] > 0.8
    assert dev["scheme_f1_micro"] > dev["majority_scheme_f1_micro"] + 0.1
    assert {k for k in dev if k.startswith("scheme_f1_")} >= {"scheme_f1_From Consequence", "scheme_f1_micro"}


# --- a real span_grounding export as ArgSpan data ----------------------------------------------------


def _exported_span_project(tmp_path, django_user_model, n=10):
    """A span_grounding project answered through the services, exported with ``manage.py spans export``."""
    from django.core.management import call_command

    from annotation import services
    from annotation.task_types.span_grounding.task_type import token_offsets
    from tests.annotation.task_types.span_grounding.helpers import TOPIC, make_kb, make_project, span

    _, facts = make_kb(3)
    project = make_project(slug="argspan-export", items_per_hit=1, assignments_per_item=1)
    texts, payloads = [], []
    for i in range(n):
        fact = facts[i % 3]
        text = f"Experts say that {fact.text} matters in case {i} , not my neighbour {i} ."
        texts.append(text)
        payloads.append(
            {
                "argument_id": None,
                "text": text,
                "topic": TOPIC,
                "stance": "con",
                "tokens": token_offsets(text),
                "suggestions": [],
                "variables": [{"id": v.pk, "text": v.text} for v in facts],
            }
        )
    services.add_items(project, payloads)
    services.build_hits(project)
    worker = services.worker_for_user(django_user_model.objects.create_user("annot", password="pw-123456789"))
    while (a := services.reserve_next_assignment(project, worker)) is not None:
        item = services.assignment_items(a)[0]
        text = item.payload["text"]
        i = texts.index(text)
        spans = [span(text, facts[i % 3].text, facts[i % 3].pk), span(text, f"my neighbour {i}", None)]
        services.submit_assignment(a, worker, {item.pk: {"spans": spans}})
    out = tmp_path / "spans.jsonl"
    call_command("spans", "export", "--project", project.slug, "--file", str(out))
    return project, facts, texts, out


@pytest.mark.django_db
def test_argspan_reads_a_real_span_grounding_export(tmp_path, django_user_model):
    """The export writes ``"spans": [[begin, end, variable], ...]``; ArgSpan reads that file (and the project)."""
    from ml.errors import TrainerError
    from ml.registry import get_trainer
    from ml.trainers.argspan import parse_row

    project, facts, texts, out = _exported_span_project(tmp_path, django_user_model)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 10 and all(isinstance(s, list) for r in rows for s in r["spans"])  # the list form
    train, dev = get_trainer("argspan").rows_from_file(out)
    assert len(train) + len(dev) == 10 and train and dev
    ids = [f.pk for f in facts]
    for row in rows:
        parsed = parse_row(row)
        i = texts.index(row["text"])
        # two word spans: the fact (grounded to its variable's position) and "my neighbour i" (Others)
        assert [" ".join(w[0] for w in parsed["words"][a:b]) for a, b in parsed["word_spans"]] == [
            facts[i % 3].text,
            f"my neighbour {i}",
        ]
        assert parsed["targets"] == [ids.index(facts[i % 3].pk), len(parsed["variables"])]
    p_train, p_dev, n = get_trainer("argspan").rows_from_project(project)
    assert n == 10 and len(p_train) + len(p_dev) == 10
    assert parse_row(p_train[0])["word_spans"]
    # the dict form still reads; bad span shapes name the line
    assert parse_row({"text": "ab cd", "spans": [{"begin": 3, "end": 5, "variable": None}]})["word_spans"] == [(1, 2)]
    assert parse_row({"text": "ab cd", "spans": [[0, 2]]})["targets"] == [0]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rows[0]) + "\n" + json.dumps(dict(rows[1], spans=[[0, "x", None]])) + "\n")
    with pytest.raises(TrainerError, match=r"bad.jsonl:2: span .*whole numbers"):
        get_trainer("argspan").rows_from_file(bad)
    bad.write_text(json.dumps(dict(rows[1], spans=[[3]])) + "\n")
    with pytest.raises(TrainerError, match=r"bad.jsonl:1: span \[3\]: expected"):
        get_trainer("argspan").rows_from_file(bad)


@pytest.mark.slow
@pytest.mark.django_db
def test_train_argspan_cli_on_a_real_export(tmp_path, tmp_artifacts, django_user_model):
    from io import StringIO

    from django.core.management import call_command

    from ml.models import ModelVersion

    _, _, _, out = _exported_span_project(tmp_path, django_user_model)
    buf = StringIO()
    call_command(
        "train",
        "argspan",
        "--data",
        str(out),
        "--json",
        "--epochs",
        "1",
        "--hp",
        "from_config=" + json.dumps(TINY["from_config"]),
        "--hp",
        "batch_size=8",
        "--hp",
        "max_length=32",
        "--hp",
        "proj_dim=16",
        stdout=buf,
    )
    outcome = json.loads(buf.getvalue())  # JSON only on stdout
    version = ModelVersion.objects.get(pk=outcome["version"])
    assert outcome["status"] == version.status == "ready", version.error
    assert version.n_train + version.n_dev == 10
    assert {"span_partial_f1", "label_accuracy", "combined_f1"} <= set(outcome["metrics"]["dev"])


# --- seed optimisation (AugSBERT §3.1) for the tagger and ArgSpan (the runs: tests/ml/test_training.py) -----


@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["tagger", "argspan"])
def test_tagger_and_argspan_accept_seeds(kind, tmp_artifacts):
    from ml.versions import train_version

    rows = (
        (planted_tagger_rows(24, 1), planted_tagger_rows(8, 2))
        if kind == "tagger"
        else (planted_span_rows(24, 1), planted_span_rows(8, 2))
    )
    version = train_version(
        kind,
        rows_train=rows[0],
        rows_dev=rows[1],
        seed=3,
        hyperparameters=dict(TINY, epochs=1, batch_size=4, seeds=[5, 6, 7], proj_dim=16)
        if kind == "argspan"
        else dict(TINY, epochs=1, batch_size=4, seeds=[5, 6, 7]),
    )
    assert version.status == "ready", version.error
    info = version.metrics["info"]
    probes = {int(k): v for k, v in info["seed_probes"].items()}
    assert set(probes) == {5, 6, 7}
    assert info["seed"] == max(probes, key=lambda s: (probes[s], -s))  # ties: the earlier seed
    assert info["steps"] == 6  # the kept run trained to the end (24 rows / 4 per step, 1 epoch)
