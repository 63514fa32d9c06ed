"""BWS: pair sampling scored by the registry's active bi-encoder, scores stored per pair with their counts (refreshed
by the debounced recompute, shown on the report page with their time), and ``manage.py bws export``."""

from __future__ import annotations

import json
from collections import Counter
from io import StringIO
from unittest import mock

import numpy as np
import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command

from annotation import services
from annotation.agreement import snapshots
from annotation.models import AgreementSnapshot, Assignment, Response
from annotation.task_types.bws_similarity import project as bws
from annotation.task_types.bws_similarity import sampling

from .helpers import ARGS, make_project, make_topics

pytestmark = pytest.mark.django_db


# --- the active bi-encoder -------------------------------------------------------------------------------
class FakeEncoder:
    """A 'loaded bi-encoder': fixed 2-d vectors, so the cosines are known by hand."""

    def __init__(self, vectors: dict[str, list[float]], default=(1.0, 0.0)):
        self.vectors, self.default, self.calls = vectors, default, []

    def encode(self, texts, batch_size=32, normalize_embeddings=False, convert_to_numpy=True, show_progress_bar=None):
        self.calls.append(list(texts))
        out = np.array([self.vectors.get(t, self.default) for t in texts], dtype=np.float32)
        if normalize_embeddings:
            out = out / np.linalg.norm(out, axis=1, keepdims=True)
        return out


@pytest.fixture
def fake_kinds(monkeypatch, tmp_path):
    """Fake trainer specs for the bi-encoder kinds: a version's model is the FakeEncoder registered for its
    artifact folder (a folder named "broken" fails to load)."""
    from ml import registry

    models: dict[str, FakeEncoder] = {}

    def load(path):
        if path.name == "broken":
            raise OSError("artifact is damaged")
        return models[str(path)]

    for kind in ("biencoder", "augsbert"):
        monkeypatch.setitem(
            registry._TRAINERS,
            kind,
            registry.TrainerSpec(kind=kind, train=lambda req: None, load=load, primary_metric="spearman"),
        )
    registry.clear_model_cache()

    def version(kind, model, project=None, name=None):
        from ml.models import ModelVersion

        folder = tmp_path / (name or f"{kind}-{len(models)}")
        folder.mkdir()
        models[str(folder)] = model
        return ModelVersion.objects.create(
            kind=kind,
            project=project,
            status="ready",
            is_active=True,
            artifact_path=str(folder),
            metrics={"primary": 50.0},
        )

    yield version
    registry.clear_model_cache()


A, B, C = "Argument A.", "Argument B.", "Argument C."
VECTORS = {A: [1.0, 0.0], B: [0.0, 1.0], C: [0.6, 0.8]}  # cos(A,B) = 0, cos(A,C) = .6, cos(B,C) = .8


def test_cosine_uses_the_active_biencoder_project_first_then_global(fake_kinds, caplog):
    project = bws.create_project(name="enc", slug="enc")
    global_bi = FakeEncoder(VECTORS)
    v_global = fake_kinds("biencoder", global_bi)
    # global only: the global bi-encoder scores, each distinct text encoded once
    scores = sampling.cosine_scorer([A, A, B], [B, C, C], project=project)
    assert scores == pytest.approx([0.0, 0.6, 0.8], abs=1e-6)
    assert global_bi.calls == [[A, B, C]]
    _fn, label = sampling.resolve_scorer("cosine", project)
    assert label == f"cosine (biencoder#{v_global.pk})"
    # the project's own augsbert comes first; other projects still get the global one
    flipped = FakeEncoder({A: [0.0, 1.0], B: [0.0, 1.0], C: [1.0, 0.0]})
    v_project = fake_kinds("augsbert", flipped, project=project)
    assert sampling.cosine_scorer([A, A], [B, C], project=project) == pytest.approx([1.0, 0.0], abs=1e-6)
    assert sampling.resolve_scorer("cosine", project)[1] == f"cosine (augsbert#{v_project.pk})"
    assert sampling.resolve_scorer("cosine", None)[1] == f"cosine (biencoder#{v_global.pk})"
    other = bws.create_project(name="other", slug="other")
    assert sampling.cosine_scorer([A], [C], project=other) == pytest.approx([0.6], abs=1e-6)
    # an artifact that does not load is logged and skipped
    v_project.is_active = False
    v_project.save()
    fake_kinds("biencoder", FakeEncoder({}), project=project, name="broken")
    assert sampling.resolve_scorer("cosine", project)[1] == f"cosine (biencoder#{v_global.pk})"
    assert "could not be loaded" in caplog.text
    # no active bi-encoder at all: the packaged default encoder (not loaded here)
    from ml.models import ModelVersion

    ModelVersion.objects.update(is_active=False)
    _fn, label = sampling.resolve_scorer("cosine", project)
    assert label == "cosine (default encoder)"
    assert sampling.resolve_scorer("jaccard", project) == (sampling.jaccard_scorer, "jaccard")


def test_sampling_a_topic_is_scored_by_the_active_biencoder(fake_kinds):
    make_topics()
    texts = ARGS["cloning"]
    # every argument identical to the first except the last: the identical pairs are the top ones
    model = FakeEncoder({t: ([1.0, 0.0] if i < 5 else [0.0, 1.0]) for i, t in enumerate(texts)})
    version = fake_kinds("biencoder", model)
    project = bws.create_project(name="s", slug="s", config={"seed": 0})  # scorer: cosine (the default)
    report = bws.sample(project, "cloning", 15)  # every pair of 6 arguments
    assert report["scorer"] == f"cosine (biencoder#{version.pk})"
    assert model.calls and set(model.calls[0]) == set(texts)
    pairs = project.config["pairs"]
    assert len(pairs) == 15
    for p in pairs.values():
        same = (p["a"] == texts[5]) == (p["b"] == texts[5])
        assert p["ds"] == pytest.approx(1.0 if same else 0.0, abs=1e-6)


# --- stored scores ---------------------------------------------------------------------------------------
def submit(project, django_user_model, name, *, hits=None):
    """Worker ``name`` does up to ``hits`` HITs (all by default); shorter pair id = more similar."""
    user = django_user_model.objects.filter(username=name).first() or django_user_model.objects.create_user(name)
    worker = services.worker_for_user(user)
    done = 0
    while hits is None or done < hits:
        assignment = services.reserve_next_assignment(project, worker)
        if assignment is None:
            break
        answers = {}
        for item in services.assignment_items(assignment):
            ids = [p["id"] for p in item.payload["pairs"]]
            answers[str(item.pk)] = {"best": min(ids), "worst": max(ids)}
        services.submit_assignment(assignment, worker, answers)
        done += 1


def recount(project) -> dict:
    """Best / worst / appearances of every pair, counted straight from the stored responses."""
    best, worst, shown = Counter(), Counter(), Counter()
    for payload, data in Response.objects.filter(
        assignment__project=project, item__is_gold=False, assignment__status__in=Assignment.DONE
    ).values_list("item__payload", "data"):
        best[data["best"]] += 1
        worst[data["worst"]] += 1
        shown.update(p["id"] for p in payload["pairs"])
    return {
        pid: {"best": best[pid], "worst": worst[pid], "appearances": n, "score": ((best[pid] - worst[pid]) / n + 1) / 2}
        for pid, n in shown.items()
    }


def test_scores_are_stored_per_pair_with_counts_and_refreshed_by_the_recompute(django_user_model):
    cache.clear()
    project = make_project(pairs=4, gold_rate=0)
    submit(project, django_user_model, "w0")
    submit(project, django_user_model, "w1", hits=1)
    assert bws.latest_scores(project) is None
    snapshots.recompute(project.pk)  # the body of the debounced annotation.recompute_agreement task
    snap = bws.latest_scores(project)
    assert snap is not None and snap.scope == "bws" and snap.computed_at is not None
    done = Assignment.objects.filter(project=project, status__in=Assignment.DONE).count()
    assert snap.based_on == done and snap.n_coders == 2
    expected = recount(project)
    stored = {row["pair_id"]: row for row in snap.figures["pairs"]}
    assert set(stored) == set(expected) and len(stored) == 8
    for pid, row in stored.items():
        assert set(row) == {"pair_id", "topic", "score", "best", "worst", "appearances"}
        assert (row["best"], row["worst"], row["appearances"]) == (
            expected[pid]["best"],
            expected[pid]["worst"],
            expected[pid]["appearances"],
        )
        assert row["score"] == pytest.approx(expected[pid]["score"], abs=1e-6)
        assert row["topic"] == project.config["pairs"][pid]["topic"]
    assert snap.figures["judgements"] == Response.objects.filter(assignment__project=project).count()
    live = bws.report(project)  # the stored split-half table is the one computed on request
    assert snap.figures["split_half"]["all"]["rho"] == pytest.approx(live["split_half"]["all"]["rho"])
    assert snap.figures["split_half"]["all"]["n_pairs"] == live["split_half"]["all"]["n_pairs"] > 0
    assert [list(t) for t in live["table"]] == snap.figures["table"]
    # up to date: the next recompute stores nothing new; a new submission makes it store again
    snapshots.recompute(project.pk)
    assert AgreementSnapshot.objects.filter(project=project, scope="bws").count() == 1
    submit(project, django_user_model, "w2", hits=1)
    snapshots.recompute(project.pk)
    assert AgreementSnapshot.objects.filter(project=project, scope="bws").count() == 2
    newer = bws.latest_scores(project)
    assert newer.based_on == done + 1
    assert {r["pair_id"]: r["appearances"] for r in newer.figures["pairs"]} == {
        pid: c["appearances"] for pid, c in recount(project).items()
    }
    # the agreement snapshots of the project are not disturbed by the bws ones
    assert snapshots.latest_snapshot(project).scope == "project"


def test_a_submission_schedules_the_recompute_of_a_bws_project(django_user_model, django_capture_on_commit_callbacks):
    cache.clear()
    project = make_project(pairs=4, gold_rate=0)
    with mock.patch("annotation.tasks.recompute_agreement.apply_async") as apply_async:
        with django_capture_on_commit_callbacks(execute=True):
            submit(project, django_user_model, "w0", hits=1)
        apply_async.assert_called_once()
        assert apply_async.call_args.kwargs["args"] == [project.pk]
    cache.clear()


def test_report_page_shows_the_stored_scores_and_when_they_were_computed(client, staff_user, django_user_model):
    cache.clear()
    project = make_project(pairs=4, gold_rate=0)
    submit(project, django_user_model, "w0")
    client.force_login(staff_user)
    html = client.get(f"/projects/{project.slug}/bws/").content.decode()
    snap = bws.latest_scores(project)  # stored on the first view
    assert snap is not None
    assert 'id="bws-computed"' in html and snap.computed_at.strftime("%Y-%m-%d %H:%M:%S") in html
    assert f"from {snap.based_on} submitted assignment" in html and 'id="bws-stale"' not in html
    assert f'data-pair-id="{snap.figures["pairs"][0]["pair_id"]}"' in html
    n_judgements = snap.figures["judgements"]
    assert f"{n_judgements} judgements" in html
    # a new submission: the page keeps showing the stored figures (no recompute per view) and says a refresh is due
    submit(project, django_user_model, "w1", hits=1)
    html = client.get(f"/projects/{project.slug}/bws/").content.decode()
    assert f"{n_judgements} judgements" in html and 'id="bws-stale"' in html
    assert AgreementSnapshot.objects.filter(project=project, scope="bws").count() == 1
    snapshots.recompute(project.pk)
    html = client.get(f"/projects/{project.slug}/bws/").content.decode()
    assert f"{bws.latest_scores(project).figures['judgements']} judgements" in html and 'id="bws-stale"' not in html
    # ?splits= computes a report now, not stored
    html = client.get(f"/projects/{project.slug}/bws/?splits=3").content.decode()
    assert "Computed now with 3 splits" in html
    assert AgreementSnapshot.objects.filter(project=project, scope="bws").count() == 2


# --- manage.py bws export --------------------------------------------------------------------------------
def read(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_cli_export_unsplit_and_splits_match_the_release_exporter(django_user_model, tmp_path, tmp_artifacts):
    from corpus.releases import build_release, release_path

    project = make_project(pairs=4, gold_rate=0)
    submit(project, django_user_model, "w0")
    out = StringIO()
    call_command("bws", "export", "--project", "bws", "--out", str(tmp_path / "bws.jsonl"), stdout=out)
    rows = read(tmp_path / "bws.jsonl")
    assert len(rows) == 8 and f"{tmp_path / 'bws.jsonl'}: 8 rows" in out.getvalue()
    assert set(rows[0]) == {"pair_id", "topic", "argument1", "argument2", "score", "best", "worst", "appearances"}
    counts = recount(project)
    assert {r["pair_id"]: (r["best"], r["worst"], r["appearances"]) for r in rows} == {
        pid: (c["best"], c["worst"], c["appearances"]) for pid, c in counts.items()
    }
    release = build_release("bws", "1.0", kind="bws", config={"project": "bws", "split": {"mode": "none"}})
    assert (tmp_path / "bws.jsonl").read_bytes() == (release_path(release) / "bws.jsonl").read_bytes()

    # cross-topic with topics on the command line, plus the unsplit file at the same time
    call_command(
        "bws",
        "export",
        "--project",
        "bws",
        "--out",
        str(tmp_path / "all.jsonl"),
        "--split",
        "cross-topic",
        "--out-dir",
        str(tmp_path / "x"),
        "--train",
        "cloning",
        "--dev",
        "nothing",
        "--test",
        "school uniforms",
        stdout=StringIO(),
    )
    assert {r["topic"] for r in read(tmp_path / "x" / "train.jsonl")} == {"cloning"}
    assert read(tmp_path / "x" / "dev.jsonl") == []
    assert {r["topic"] for r in read(tmp_path / "x" / "test.jsonl")} == {"school uniforms"}
    assert len(read(tmp_path / "all.jsonl")) == 8
    release = build_release(
        "bws",
        "1.1",
        kind="bws",
        config={
            "project": "bws",
            "split": {"mode": "cross-topic", "train": ["cloning"], "dev": ["nothing"], "test": ["school uniforms"]},
        },
    )
    for part in ("train", "dev", "test"):
        assert (tmp_path / "x" / f"{part}.jsonl").read_bytes() == (release_path(release) / f"{part}.jsonl").read_bytes()

    # cross-topic from the project's config.splits; in-topic seeded like the release
    project.config = dict(project.config, splits={"train": ["school uniforms"], "dev": ["x"], "test": ["cloning"]})
    project.save()
    call_command(
        "bws",
        "export",
        "--project",
        "bws",
        "--split",
        "cross-topic",
        "--out-dir",
        str(tmp_path / "c"),
        stdout=StringIO(),
    )
    assert {r["topic"] for r in read(tmp_path / "c" / "test.jsonl")} == {"cloning"}
    call_command(
        "bws",
        "export",
        "--project",
        "bws",
        "--split",
        "in-topic",
        "--out-dir",
        str(tmp_path / "i"),
        "--seed",
        "4",
        stdout=StringIO(),
    )
    release = build_release(
        "bws", "1.2", kind="bws", config={"project": "bws", "split": {"mode": "in-topic", "seed": 4}}
    )
    parts = {p: read(tmp_path / "i" / f"{p}.jsonl") for p in ("train", "dev", "test")}
    assert sum(len(v) for v in parts.values()) == 8
    for part in ("train", "dev", "test"):
        assert (tmp_path / "i" / f"{part}.jsonl").read_bytes() == (release_path(release) / f"{part}.jsonl").read_bytes()


@pytest.mark.parametrize(
    "args, reason",
    [
        (["--split", "in-topic"], "--split needs --out-dir"),
        (["--out-dir", "DIR"], "--out-dir needs --split"),
        ([], "give --out FILE.jsonl"),
        (["--out", "TMP"], "is a folder"),
        (["--out", "OUT", "--train", "cloning", "--dev", "x", "--test", "y"], "needs --split cross-topic"),
        (["--split", "cross-topic", "--out-dir", "DIR", "--train", "cloning"], "go together"),
        (["--split", "cross-topic", "--out-dir", "DIR"], "splits: name the train / dev / test topics"),
        (
            ["--split", "cross-topic", "--out-dir", "DIR", "--out", "OUT", "--train", "w", "--dev", "x", "--test", "y"],
            "is in none of train, dev, test",
        ),
        (
            ["--split", "cross-topic", "--out-dir", "DIR", "--train", "cloning", "--dev", "cloning", "--test", "y"],
            "already in train",
        ),
    ],
)
def test_cli_export_bad_arguments_exit_2_and_write_nothing(django_user_model, tmp_path, args, reason):
    project = make_project(pairs=4, gold_rate=0)
    submit(project, django_user_model, "w0", hits=1)
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
        call_command("bws", "export", "--project", "bws", *args, stdout=StringIO())
    assert info.value.returncode == 2 and reason in str(info.value), str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_cli_export_of_a_missing_or_wrong_project_exits_2(tmp_path):
    with pytest.raises(CommandError) as info:
        call_command("bws", "export", "--project", "nope", "--out", str(tmp_path / "o.jsonl"), stdout=StringIO())
    assert info.value.returncode == 2 and "no project" in str(info.value)
    services.create_project(name="asp", slug="asp", task_type="sentence_label", config={"labels": ["a", "b"]})
    with pytest.raises(CommandError) as info:
        call_command("bws", "export", "--project", "asp", "--out", str(tmp_path / "o.jsonl"), stdout=StringIO())
    assert info.value.returncode == 2 and "not 'bws_similarity'" in str(info.value)
    assert not (tmp_path / "o.jsonl").exists()
