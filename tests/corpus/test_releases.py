"""Versioned, immutable dataset releases: corpus.releases, the task, the CLI, the admin action, the download."""

from __future__ import annotations

import hashlib
import json
import stat

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from corpus import releases
from corpus.hashing import sentence_hash
from corpus.models import Release, ReleaseFile, Sentence, Topic
from corpus.releases import ReleaseExists, build_release, release_path, verify_release
from tests.worker_utils import eager_celery

pytestmark = pytest.mark.django_db

UKP_TOPICS = [
    "abortion",
    "cloning",
    "death penalty",
    "gun control",
    "marijuana legalization",
    "minimum wage",
    "nuclear energy",
    "school uniforms",
]


def make_sentence(topic: Topic, text: str, stance: str, **extra) -> Sentence:
    return Sentence.objects.create(
        topic=topic, text=text, stance=stance, content_hash=sentence_hash(topic.name, text), **extra
    )


@pytest.fixture
def corpus_data(db):
    """8 UKP topics x (2 pro, 1 con, 1 none) = 16 pro, 8 con, 8 none."""
    topics = {}
    for name in UKP_TOPICS:
        topic = topics[name] = Topic.objects.create(name=name)
        make_sentence(
            topic,
            f"{name} is good for society.",
            "pro",
            external_id=f"{name[:3]}-1",
            source="ukp",
            metadata={"url": f"http://example.org/{name[:3]}"},
        )
        make_sentence(topic, f"{name} saves money.", "pro", source="ukp")
        make_sentence(topic, f'{name} | is harmful, "really".', "con", source="ukp")
        make_sentence(topic, f"I read about {name} yesterday.", "none", source="ukp")
    return topics


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def sha256_of(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- export content ------------------------------------------------------------------------------


def test_sentences_release_without_split(tmp_artifacts, corpus_data):
    release = build_release("ukp", "1.0", config={"topics": ["Abortion", "cloning"]})

    assert release.status == Release.Status.PUBLISHED and release.published_at is not None
    folder = tmp_artifacts / "releases" / "ukp" / "1.0"
    assert release_path(release) == folder
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "sentences.jsonl"]
    rows = read_jsonl(folder / "sentences.jsonl")
    assert len(rows) == 6  # 2 topics x (2 pro + 1 con); non-arguments left out by default
    assert {r["topic"] for r in rows} == {"abortion", "cloning"}
    assert {r["stance"] for r in rows} == {"pro", "con"}
    first = rows[0]
    db_first = Sentence.objects.filter(topic__name="abortion").order_by("id").first()
    assert first == {
        "hash": db_first.content_hash,
        "id": "abo-1",
        "topic": "abortion",
        "sentence": "abortion is good for society.",
        "stance": "pro",
        "source": "ukp",
        "metadata": {"url": "http://example.org/abo"},
        "split": None,
    }
    ids = [Sentence.objects.get(content_hash=r["hash"]).pk for r in rows]
    assert ids == sorted(ids)  # ordered by id
    assert release.config["topics"] == ["abortion", "cloning"] and release.config["stances"] == ["pro", "con"]


def test_include_non_arguments_and_stance_filter(tmp_artifacts, corpus_data):
    with_none = build_release("all", "1", config={"topics": ["cloning"], "include_non_arguments": True})
    con_only = build_release("con", "1", config={"stances": ["con"]})
    rows = read_jsonl(release_path(with_none) / "sentences.jsonl")
    assert sorted(r["stance"] for r in rows) == ["con", "none", "pro", "pro"]
    rows = read_jsonl(release_path(con_only) / "sentences.jsonl")
    assert len(rows) == 8 and {r["stance"] for r in rows} == {"con"}


def test_cross_topic_default_split_follows_app_f(tmp_artifacts, corpus_data):
    release = build_release("ukp-cross", "1.0", config={"split": {"mode": "cross-topic"}})
    folder = release_path(release)
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "dev.jsonl", "test.jsonl", "train.jsonl"]
    split_topics = {}
    for part in ("train", "dev", "test"):
        rows = read_jsonl(folder / f"{part}.jsonl")
        assert {r["split"] for r in rows} == {part}
        split_topics[part] = {r["topic"] for r in rows}
    assert split_topics["test"] == {"gun control", "school uniforms"}
    assert split_topics["dev"] == {"death penalty"}
    assert split_topics["train"] == set(UKP_TOPICS) - {"gun control", "school uniforms", "death penalty"}
    assert len(read_jsonl(folder / "train.jsonl")) == 15
    assert release.config["split"]["test"] == ["gun control", "school uniforms"]


def test_cross_topic_explicit_split_and_errors(tmp_artifacts, corpus_data):
    release = build_release(
        "x",
        "1",
        config={
            "split": {"mode": "cross-topic", "train": ["abortion"], "dev": ["cloning"], "test": ["Nuclear Energy"]}
        },
    )
    folder = release_path(release)
    assert {r["topic"] for r in read_jsonl(folder / "test.jsonl")} == {"nuclear energy"}
    assert {r["topic"] for r in read_jsonl(folder / "train.jsonl")} == {"abortion"}

    with pytest.raises(ValueError, match=r"config.split.test: topic 'abortion' is also in train"):
        build_release(
            "x",
            "2",
            config={"split": {"mode": "cross-topic", "train": ["abortion"], "dev": ["cloning"], "test": ["abortion"]}},
        )
    with pytest.raises(ValueError, match=r"config.split.test: .*'gun control'.*not among the exported topics"):
        build_release("x", "3", config={"topics": ["abortion", "cloning"], "split": {"mode": "cross-topic"}})
    with pytest.raises(ValueError, match=r"config.topics: unknown topic\(s\) 'atlantis'"):
        build_release("x", "4", config={"topics": ["atlantis"]})
    with pytest.raises(ValueError, match=r"config.split.mode"):
        build_release("x", "5", config={"split": {"mode": "random"}})
    assert list(Release.objects.values_list("version", flat=True)) == ["1"]  # a bad config creates nothing


def test_in_topic_split_sizes_and_seed_determinism(tmp_artifacts, corpus_data):
    config = {"split": {"mode": "in-topic", "seed": 7, "sizes": {"train": 10, "dev": 4, "test": 6}}}
    a = build_release("in", "a", config=config)
    b = build_release("in", "b", config=config)
    c = build_release("in", "c", config={"split": {**config["split"], "seed": 8}})
    parts = {}
    for part, size in (("train", 10), ("dev", 4), ("test", 6)):
        rows = read_jsonl(release_path(a) / f"{part}.jsonl")
        assert len(rows) == size and {r["split"] for r in rows} == {part}
        parts[part] = {r["hash"] for r in rows}
        # same DB + same config -> byte-identical files
        assert (release_path(a) / f"{part}.jsonl").read_bytes() == (release_path(b) / f"{part}.jsonl").read_bytes()
    assert (
        not (parts["train"] & parts["dev"])
        and not (parts["train"] & parts["test"])
        and not (parts["dev"] & parts["test"])
    )
    assert len(set().union(*parts.values())) == 20
    other = {r["hash"] for r in read_jsonl(release_path(c) / "train.jsonl")}
    assert other != parts["train"]  # the seed matters

    with pytest.raises(ValueError, match=r"train\+dev\+test = 25 but only 24 sentences match"):
        build_release(
            "in", "d", config={"split": {"mode": "in-topic", "seed": 1, "sizes": {"train": 20, "dev": 4, "test": 1}}}
        )
    with pytest.raises(ValueError, match=r"config.split.sizes: give the number of rows"):
        build_release("in", "e", config={"split": {"mode": "in-topic", "seed": 1}})


# --- checksums, card, verification ---------------------------------------------------------------


def test_checksums_match_files_and_verify_detects_tampering(tmp_artifacts, corpus_data):
    release = build_release("sums", "1.0", config={"split": {"mode": "cross-topic"}})
    folder = release_path(release)
    recorded = {f.name: f for f in release.files.all()}
    assert set(recorded) == {"train.jsonl", "dev.jsonl", "test.jsonl", "README.md"}
    for name, f in recorded.items():
        path = folder / name
        assert f.sha256 == sha256_of(path)
        assert f.size == path.stat().st_size
        assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert recorded["train.jsonl"].rows == 15 and recorded["test.jsonl"].rows == 6
    assert verify_release(release) == []

    victim = folder / "test.jsonl"
    victim.chmod(0o644)
    victim.write_text(victim.read_text().replace("gun control", "gun kontrol"))
    problems = verify_release(release)
    assert any(p.startswith("test.jsonl: sha256") for p in problems)
    (folder / "dev.jsonl").chmod(0o644)
    (folder / "dev.jsonl").unlink()
    assert "dev.jsonl: file is missing" in verify_release(release)


def test_release_lines_keep_their_bytes(tmp_path):
    """A release file's bytes (and so its checksum) are sorted keys, real UTF-8, ``", "`` / ``": "`` separators, one
    row a line: the same bytes as before argora.jsonl.dumps wrote them."""
    rows = [
        {"text": "Zürich – “quoted” \u2028 ok", "b": [None, True, 1.5, -0], "a": {"z": 1, "y": "é"}},
        {"stance": "pro", "id": 3},
    ]
    path = tmp_path / "rows.jsonl"
    info = releases._write_rows(path, iter(rows), lambda row: None)
    expected = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    assert path.read_bytes() == expected
    assert expected.startswith('{"a": {"y": "é", "z": 1}, "b": [null, true, 1.5, 0], "text": "Zürich'.encode())
    assert info["sha256"] == hashlib.sha256(expected).hexdigest() and info["rows"] == 2


def test_card_lists_config_files_counts_and_agreement(tmp_artifacts, corpus_data, admin_user_obj):
    release = build_release("card", "2.0", config={"split": {"mode": "cross-topic"}}, creator=admin_user_obj)
    card = (release_path(release) / "README.md").read_text(encoding="utf-8")
    assert card.startswith("# card 2.0")
    assert "- creator: root" in card
    assert '"mode": "cross-topic"' in card
    for f in release.files.exclude(name="README.md"):
        assert f"| {f.name} | {f.rows} |" in card and f.sha256 in card
    assert "| gun control | pro | test | 2 |" in card
    assert "| gun control | con | test | 1 |" in card
    assert "| death penalty | con | dev | 1 |" in card
    assert "| abortion | pro | train | 2 |" in card
    assert "| **total** | | | 24 |" in card
    assert "## Agreement" in card and "No agreement figures recorded" in card


# --- immutability ---------------------------------------------------------------------------------


def test_second_publish_is_refused_and_first_release_unchanged(tmp_artifacts, corpus_data):
    first = build_release("dup", "1.0", config={"topics": ["abortion"]})
    files_before = {f.name: f.sha256 for f in first.files.all()}
    bytes_before = (release_path(first) / "sentences.jsonl").read_bytes()

    with pytest.raises(ReleaseExists, match=r"release dup 1.0 already exists \(published 2"):
        build_release("dup", "1.0", config={"topics": ["cloning"]})

    assert Release.objects.filter(name="dup").count() == 1
    first.refresh_from_db()
    assert first.status == Release.Status.PUBLISHED
    assert first.config["topics"] == ["abortion"]
    assert {f.name: f.sha256 for f in first.files.all()} == files_before
    assert (release_path(first) / "sentences.jsonl").read_bytes() == bytes_before
    assert verify_release(first) == []
    assert [p.name for p in (tmp_artifacts / "releases").iterdir()] == ["dup"]  # no temp folder left


def test_published_release_model_refuses_changes(tmp_artifacts, corpus_data):
    release = build_release("frozen", "1.0", config={"topics": ["abortion"]})
    release.config = {"topics": ["cloning"]}
    with pytest.raises(Release.Immutable, match="published and immutable.*config"):
        release.save()
    release = Release.objects.get(pk=release.pk)
    release.version = "1.1"
    with pytest.raises(Release.Immutable, match="version"):
        release.save()
    f = ReleaseFile.objects.filter(release_id=release.pk).first()
    f.sha256 = "0" * 64
    with pytest.raises(Release.Immutable):
        f.save()
    release = Release.objects.get(pk=release.pk)
    release.error = "a note"  # not part of what the release is
    release.save()
    assert Release.objects.get(pk=release.pk).version == "1.0"


def test_invalid_names_are_refused(tmp_artifacts, corpus_data):
    with pytest.raises(ValueError, match="name: '../evil' is not a valid release name"):
        build_release("../evil", "1.0")
    with pytest.raises(ValueError, match="version: "):
        build_release("ok", "1 0")
    assert not Release.objects.exists()


# --- failure leaves nothing -----------------------------------------------------------------------


@pytest.fixture
def scratch_registry(monkeypatch):
    monkeypatch.setattr(releases, "_EXPORTERS", dict(releases._EXPORTERS))


def test_failing_exporter_leaves_nothing_published_and_no_temp_folder(tmp_artifacts, scratch_registry):
    def rows():
        yield {"n": 1}
        yield {"n": 2}
        raise RuntimeError("source went away")

    @releases.register_exporter("boom")
    def export_boom(config):
        yield "good.jsonl", iter([{"n": 0}])
        yield "bad.jsonl", rows()

    with pytest.raises(RuntimeError, match="source went away"):
        build_release("boom", "1.0", kind="boom")

    assert not Release.objects.filter(status=Release.Status.PUBLISHED).exists()
    failed = Release.objects.get(name="boom", version="1.0")
    assert failed.status == Release.Status.FAILED and "source went away" in failed.error
    assert not failed.files.exists()
    assert list((tmp_artifacts / "releases").iterdir()) == []

    # a failed attempt can be retried under the same name+version once the cause is fixed
    @releases.register_exporter("boom")
    def export_fixed(config):
        yield "good.jsonl", iter([{"n": 0}])

    release = build_release("boom", "1.0", kind="boom")
    assert release.status == Release.Status.PUBLISHED
    assert Release.objects.filter(name="boom").count() == 1
    card = (release_path(release) / "README.md").read_text()
    assert "No agreement figures recorded" in card  # the default Agreement section for plug-in kinds


def test_failure_while_recording_removes_the_published_folder(tmp_artifacts, corpus_data, monkeypatch):
    def broken_bulk_create(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(ReleaseFile.objects, "bulk_create", broken_bulk_create)
    with pytest.raises(RuntimeError, match="database went away"):
        build_release("late", "1.0", config={"topics": ["abortion"]})
    assert Release.objects.get(name="late").status == Release.Status.FAILED
    assert not (tmp_artifacts / "releases" / "late" / "1.0").exists()
    assert [p for p in (tmp_artifacts / "releases").rglob("*") if p.is_file()] == []


def test_unknown_kind_is_refused(tmp_artifacts):
    with pytest.raises(ValueError, match="kind: unknown release kind 'nope'"):
        build_release("k", "1", kind="nope")


# --- round trip with the JSONL importer -----------------------------------------------------------


def test_round_trip_through_the_jsonl_importer(tmp_artifacts, corpus_data):
    importers = pytest.importorskip("corpus.importers", reason="corpus.importers has not landed yet")
    if not hasattr(importers, "import_file"):
        pytest.skip("corpus.importers.import_file has not landed yet")
    release = build_release("rt", "1.0", config={"include_non_arguments": True})
    before = sorted(
        Sentence.objects.values_list("text", "topic__name", "stance", "content_hash", "external_id", "source")
    )
    Sentence.objects.all().delete()

    importers.import_file(release_path(release) / "sentences.jsonl", "jsonl")

    after = sorted(
        Sentence.objects.values_list("text", "topic__name", "stance", "content_hash", "external_id", "source")
    )
    assert len(after) == 32
    assert after == before


# --- task, CLI, admin, download -------------------------------------------------------------------


def test_task_returns_release_and_checksums(tmp_artifacts, corpus_data, settings, admin_user_obj):
    from corpus.tasks import build_release_task

    with eager_celery(settings):
        result = build_release_task.delay(
            "task", "1.0", config={"topics": ["cloning"]}, creator_id=admin_user_obj.pk
        ).get()
    release = Release.objects.get(pk=result["release_id"])
    assert release.status == Release.Status.PUBLISHED and release.creator == admin_user_obj
    assert result["files"] == {f.name: f.sha256 for f in release.files.all()}


def test_cli_publishes_and_refuses_republish_with_exit_2(tmp_artifacts, corpus_data, tmp_path, capsys, admin_user_obj):
    config_file = tmp_path / "release.json"
    config_file.write_text(json.dumps({"topics": ["abortion", "cloning"], "include_non_arguments": True}))
    call_command(
        "export_release", "--name", "cli", "--version", "1.0", "--config", str(config_file), "--creator", "root"
    )
    out = capsys.readouterr().out
    release = Release.objects.get(name="cli", version="1.0")
    assert release.creator == admin_user_obj
    assert str(release_path(release)) in out
    for f in release.files.all():
        assert f"{f.sha256}  {f.name}" in out
    assert release.files.get(name="sentences.jsonl").rows == 8

    with pytest.raises(CommandError) as refused:
        call_command("export_release", "--name", "cli", "--version", "1.0", "--topics", "cloning")
    assert refused.value.returncode == 2
    assert "release cli 1.0 already exists" in str(refused.value)
    assert Release.objects.filter(name="cli").count() == 1

    call_command(
        "export_release", "--name", "cli", "--version", "1.1", "--split", "in-topic", "--seed", "3", "--sizes", "5,2,3"
    )
    assert Release.objects.get(version="1.1").files.get(name="dev.jsonl").rows == 2

    with pytest.raises(CommandError) as bad:
        call_command("export_release", "--name", "cli", "--version", "1.2", "--split", "in-topic")
    assert bad.value.returncode == 2 and "--sizes" in str(bad.value)
    with pytest.raises(CommandError, match="--creator: no user named 'nobody'") as bad:
        call_command("export_release", "--name", "cli", "--version", "1.2", "--creator", "nobody")
    assert bad.value.returncode == 2
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"topics":\n  [oops]}')
    with pytest.raises(CommandError, match=rf"{bad_json}:2: invalid JSON") as bad:
        call_command("export_release", "--name", "cli", "--version", "1.3", "--config", str(bad_json))
    assert bad.value.returncode == 2


def test_download_is_staff_only_and_serves_listed_files(
    tmp_artifacts, corpus_data, client, staff_user, django_user_model
):
    release = build_release("dl", "1.0", config={"topics": ["abortion"]})
    url = reverse("release-file", args=[release.pk, "sentences.jsonl"])
    assert url == f"/releases/{release.pk}/files/sentences.jsonl"

    response = client.get(url)  # anonymous: to the login page
    assert response.status_code == 302 and response["Location"].startswith(django_settings.LOGIN_URL)

    django_user_model.objects.create_user("worker", "w@example.org", "pw-worker-123")
    client.login(username="worker", password="pw-worker-123")
    assert client.get(url).status_code == 404  # not theirs to see: as if there were no such release

    client.login(username="expert", password="pw-expert-123")
    response = client.get(url)
    assert response.status_code == 200
    body = b"".join(response.streaming_content)
    assert hashlib.sha256(body).hexdigest() == release.files.get(name="sentences.jsonl").sha256
    assert "attachment" in response["Content-Disposition"]

    (release_path(release) / "stray.txt").write_text("not part of the release")
    assert client.get(reverse("release-file", args=[release.pk, "stray.txt"])).status_code == 404
    assert client.get(f"/releases/{release.pk}/files/..%2F..%2Fsecret_key").status_code == 404
    assert client.get(reverse("release-file", args=[release.pk + 999, "sentences.jsonl"])).status_code == 404


def test_a_changed_release_file_is_not_served(tmp_artifacts, corpus_data, client, staff_user):
    """A published file edited on disk (one byte, same size, or replaced) is refused with 409, not served."""
    release = build_release("tamper", "1.0", config={"topics": ["abortion"]})
    url = reverse("release-file", args=[release.pk, "sentences.jsonl"])
    client.force_login(staff_user)
    assert client.get(url).status_code == 200
    path = release_path(release) / "sentences.jsonl"
    original = path.read_bytes()
    path.write_bytes(original.replace(b'"con"', b'"pro"', 1) if b'"con"' in original else original[:-2] + b"X\n")
    assert path.stat().st_size == len(original)
    refused = client.get(url)
    assert refused.status_code == 409 and b"no longer matches the checksum" in refused.content
    path.write_bytes(original)  # restored: served again
    assert client.get(url).status_code == 200


def test_admin_action_publishes_a_release_through_celery(
    tmp_artifacts, corpus_data, client, admin_user_obj, settings, django_capture_on_commit_callbacks
):
    client.force_login(admin_user_obj)
    changelist = reverse("admin:corpus_topic_changelist")
    selected = [str(corpus_data[name].pk) for name in ("abortion", "cloning", "nuclear energy")]
    base = {"action": "publish_sentence_release", "_selected_action": selected}

    form_page = client.post(changelist, base)
    assert form_page.status_code == 200
    assert b"Publish a sentence release" in form_page.content and b"nuclear energy" in form_page.content

    with eager_celery(settings), django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(
            changelist,
            {
                **base,
                "apply": "1",
                "release_name": "admin-rel",
                "release_version": "1.0",
                "split_mode": "cross-topic",
                "dev_topics": "cloning",
                "test_topics": "nuclear energy",
                "seed": "13",
            },
            follow=True,
        )
    assert response.status_code == 200
    assert len(callbacks) == 1
    release = Release.objects.get(name="admin-rel", version="1.0")
    assert release.status == Release.Status.PUBLISHED and release.creator == admin_user_obj
    assert release.config["split"] == {
        "mode": "cross-topic",
        "train": ["abortion"],
        "dev": ["cloning"],
        "test": ["nuclear energy"],
    }
    assert verify_release(release) == []
    text = response.content.decode()
    assert "/jobs/" in text and "follow the job" in text

    # the same name+version again: the form says why, nothing is enqueued
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        again = client.post(
            changelist,
            {**base, "apply": "1", "release_name": "admin-rel", "release_version": "1.0", "split_mode": "none"},
        )
    assert again.status_code == 200 and callbacks == []
    assert "already exists" in again.content.decode()

    # the release admin: list with rows, read-only detail with download links, no delete of a published one
    listing = client.get(reverse("admin:corpus_release_changelist"))
    assert listing.status_code == 200 and b"admin-rel" in listing.content
    detail = client.get(reverse("admin:corpus_release_change", args=[release.pk]))
    assert detail.status_code == 200
    assert reverse("release-file", args=[release.pk, "train.jsonl"]).encode() in detail.content
    assert b"intact" in detail.content
    assert client.get(reverse("admin:corpus_release_delete", args=[release.pk])).status_code == 403
    assert (
        client.post(reverse("admin:corpus_release_change", args=[release.pk]), {"name": "renamed"}).status_code == 403
    )
    release.refresh_from_db()
    assert release.name == "admin-rel"


def test_unique_constraint_is_the_final_guard_against_a_concurrent_twin(tmp_artifacts, corpus_data, monkeypatch):
    """A twin committed between the check and the insert (a race) still makes the second build refuse."""
    real_create = Release.objects.create

    def racing_create(**kwargs):
        Release.objects.bulk_create(
            [Release(name=kwargs["name"], version=kwargs["version"], status=Release.Status.BUILDING)]
        )  # the other worker wins
        return real_create(**kwargs)

    monkeypatch.setattr(Release.objects, "create", racing_create)
    with pytest.raises(ReleaseExists, match="created concurrently"):
        build_release("race", "1.0", config={"topics": ["abortion"]})
    # (the simulated twin was inserted inside the refused claim's transaction, so it is rolled back too)
    assert not Release.objects.filter(name="race").exists()
    assert not (tmp_artifacts / "releases").exists()  # refused before anything was written
