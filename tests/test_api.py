"""The corpus REST API: auth, filtering, pagination, staff-only writes, field-named 400s, and the schema guard."""

from __future__ import annotations

import pytest
import yaml
from django.core.management import call_command
from django.test import Client
from drf_spectacular.drainage import reset_generator_stats
from rest_framework.test import APIClient

from corpus import hashing
from corpus.models import DebateNode, DebateTree, FactVariable, Release, ReleaseFile, Sentence, Topic

pytestmark = pytest.mark.django_db


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("worker", "worker@example.org", "pw-worker-123")


@pytest.fixture
def api(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def staff_api(staff_user):
    client = APIClient()
    client.force_authenticate(staff_user)
    return client


@pytest.fixture
def topics():
    return (
        Topic.objects.create(name="Nuclear energy", synonyms=["nuclear power"]),
        Topic.objects.create(name="Gun control"),
    )


def make_sentence(topic, text, stance="none"):
    return Sentence.objects.create(
        topic=topic, text=text, stance=stance, content_hash=hashing.sentence_hash(topic.name, text)
    )


def make_fact(topic, text, **fields):
    return FactVariable.objects.create(
        topic=topic, text=text, content_hash=hashing.fact_hash(topic.name, text), **fields
    )


# --- authentication -----------------------------------------------------------------------------
@pytest.mark.parametrize("url", ["/api/topics/", "/api/sentences/", "/api/facts/", "/api/debates/", "/api/releases/"])
def test_anonymous_is_refused(url):
    assert APIClient().get(url).status_code in (401, 403)


def test_token_obtained_with_password_authenticates_a_plain_client(user, topics):
    client = Client()
    bad = client.post("/api/auth/token/", {"username": "worker", "password": "wrong"})
    assert bad.status_code == 400
    response = client.post(
        "/api/auth/token/", {"username": "worker", "password": "pw-worker-123"}, content_type="application/json"
    )
    assert response.status_code == 200
    token = response.json()["token"]
    assert client.get("/api/topics/").status_code in (401, 403)  # the token was not a login
    listed = client.get("/api/topics/", HTTP_AUTHORIZATION=f"Token {token}")
    assert listed.status_code == 200
    assert [t["name"] for t in listed.json()["results"]] == ["Gun control", "Nuclear energy"]
    assert client.get("/api/topics/", HTTP_AUTHORIZATION="Token not-a-token").status_code in (401, 403)


def test_session_login_works(client, user, topics):
    client.force_login(user)
    assert client.get(f"/api/topics/{topics[0].pk}/").json()["synonyms"] == ["nuclear power"]


# --- topics -------------------------------------------------------------------------------------
def test_staff_creates_and_updates_topics_others_cannot(api, staff_api):
    body = {"name": "School uniforms", "synonyms": ["uniform", "dress code"], "description": "d"}
    assert api.post("/api/topics/", body, format="json").status_code == 403
    created = staff_api.post("/api/topics/", body, format="json")
    assert created.status_code == 201, created.content
    topic = Topic.objects.get(pk=created.json()["id"])
    assert (topic.slug, topic.synonyms) == ("school-uniforms", ["uniform", "dress code"])
    assert api.patch(f"/api/topics/{topic.pk}/", {"description": "x"}, format="json").status_code == 403
    patched = staff_api.patch(f"/api/topics/{topic.pk}/", {"description": "new"}, format="json")
    assert patched.status_code == 200
    topic.refresh_from_db()
    assert topic.description == "new"


def test_topic_bad_input_names_the_field(staff_api, topics):
    duplicate = staff_api.post("/api/topics/", {"name": "Nuclear energy"}, format="json")
    assert duplicate.status_code == 400 and "name" in duplicate.json()
    same_slug = staff_api.post("/api/topics/", {"name": "nuclear-energy"}, format="json")
    assert same_slug.status_code == 400 and "name" in same_slug.json()
    bad_synonyms = staff_api.post("/api/topics/", {"name": "X", "synonyms": "not a list"}, format="json")
    assert bad_synonyms.status_code == 400 and "synonyms" in bad_synonyms.json()
    assert not Topic.objects.filter(name="X").exists()


def test_renaming_a_topic_with_sentences_is_refused(staff_api, topics):
    nuclear, guns = topics
    make_sentence(nuclear, "Nuclear power is clean.")
    refused = staff_api.patch(f"/api/topics/{nuclear.pk}/", {"name": "Atomic energy"}, format="json")
    assert refused.status_code == 400 and "name" in refused.json()
    assert staff_api.patch(f"/api/topics/{nuclear.pk}/", {"name": "Nuclear Energy"}, format="json").status_code == 200
    assert staff_api.patch(f"/api/topics/{guns.pk}/", {"name": "Firearms"}, format="json").status_code == 200
    assert sorted(Topic.objects.values_list("name", flat=True)) == ["Firearms", "Nuclear Energy"]


# --- sentences ----------------------------------------------------------------------------------
def test_sentence_filters_return_the_right_rows(staff_api, topics):
    api = staff_api  # filtering by label is for staff (see the next test)
    nuclear, guns = topics
    a = make_sentence(nuclear, "Nuclear power is clean.", "pro")
    b = make_sentence(nuclear, "Reactors produce waste.", "con")
    c = make_sentence(guns, "Guns kill people.", "con")
    d = make_sentence(guns, "The weather is nice.", "none")

    def ids(query):
        response = api.get("/api/sentences/", query)
        assert response.status_code == 200, response.content
        return [row["id"] for row in response.json()["results"]]

    assert ids({}) == [a.pk, b.pk, c.pk, d.pk]
    assert ids({"topic": nuclear.pk}) == [a.pk, b.pk]
    assert ids({"topic": "gun control"}) == [c.pk, d.pk]
    assert ids({"stance": "con"}) == [b.pk, c.pk]
    assert ids({"topic": "Gun control", "stance": "con"}) == [c.pk]
    assert ids({"search": "WASTE"}) == [b.pk]
    assert ids({"stance": ""}) == [a.pk, b.pk, c.pk, d.pk]
    row = api.get(f"/api/sentences/{c.pk}/").json()
    assert (row["topic"], row["topic_name"], row["stance"]) == (guns.pk, "Gun control", "con")


def test_a_non_staff_user_reads_no_label(api, staff_api, topics):
    """A sentence's stance (and labels in its metadata) can be a gold item's expected answer: workers read the
    text only, and cannot filter by stance either."""
    s = make_sentence(topics[0], "Reactors produce waste.", "con")
    Sentence.objects.filter(pk=s.pk).update(metadata={"spans": [[0, 8, 1]]})
    for row in (api.get(f"/api/sentences/{s.pk}/").json(), api.get("/api/sentences/").json()["results"][0]):
        assert row["text"] == "Reactors produce waste." and "stance" not in row and "metadata" not in row
    refused = api.get("/api/sentences/", {"stance": "con"})
    assert refused.status_code == 400 and "stance" in refused.json()
    staff = staff_api.get(f"/api/sentences/{s.pk}/").json()
    assert staff["stance"] == "con" and staff["metadata"] == {"spans": [[0, 8, 1]]}


def test_bad_sentence_filters_are_400_naming_the_parameter(staff_api, topics):
    api = staff_api
    stance = api.get("/api/sentences/", {"stance": "maybe"})
    assert stance.status_code == 400 and "stance" in stance.json()
    topic = api.get("/api/sentences/", {"topic": "no such topic"})
    assert topic.status_code == 400 and "topic" in topic.json()


def test_sentences_are_paginated_in_id_order(api, topics, settings):
    page_size = settings.REST_FRAMEWORK["PAGE_SIZE"]
    Sentence.objects.bulk_create(
        Sentence(topic=topics[0], text=f"s{i}", content_hash=hashing.sentence_hash(topics[0].name, f"s{i}"))
        for i in range(page_size + 3)
    )
    expected = list(Sentence.objects.order_by("id").values_list("id", flat=True))
    first = api.get("/api/sentences/").json()
    assert first["count"] == page_size + 3
    assert [row["id"] for row in first["results"]] == expected[:page_size]
    assert first["next"] is not None
    second = api.get(first["next"]).json()
    assert [row["id"] for row in second["results"]] == expected[page_size:]
    assert second["next"] is None


def test_staff_creates_a_sentence_with_its_content_hash(api, staff_api, topics):
    nuclear = topics[0]
    body = {
        "topic": "nuclear energy",
        "text": "Nuclear  power is clean.",
        "stance": "pro",
        "source": "ukp",
        "metadata": {"annotators": 3},
    }
    assert api.post("/api/sentences/", body, format="json").status_code == 403
    created = staff_api.post("/api/sentences/", body, format="json")
    assert created.status_code == 201, created.content
    sentence = Sentence.objects.get(pk=created.json()["id"])
    assert sentence.topic == nuclear
    assert sentence.content_hash == hashing.sentence_hash("Nuclear energy", "Nuclear power is clean.")
    assert created.json()["content_hash"] == sentence.content_hash
    assert sentence.metadata == {"annotators": 3}
    by_id = staff_api.post("/api/sentences/", {"topic": topics[1].pk, "text": "Guns kill."}, format="json")
    assert by_id.status_code == 201 and Sentence.objects.get(pk=by_id.json()["id"]).stance == "none"


def test_sentence_bad_input_is_400_naming_the_field(staff_api, topics):
    make_sentence(topics[0], "Nuclear power is clean.")
    cases = [
        ({"topic": topics[0].pk, "text": " Nuclear power   is clean. "}, "text"),  # duplicate content
        ({"topic": topics[0].pk, "text": "New.", "stance": "maybe"}, "stance"),
        ({"topic": "Unknown topic", "text": "New."}, "topic"),
        ({"topic": 999999, "text": "New."}, "topic"),
        ({"topic": topics[0].pk, "text": "   "}, "text"),
        ({"text": "New."}, "topic"),
        ({"topic": topics[0].pk, "text": "New.", "metadata": [1, 2]}, "metadata"),
    ]
    for body, field in cases:
        response = staff_api.post("/api/sentences/", body, format="json")
        assert response.status_code == 400, body
        assert field in response.json(), (body, response.json())
    assert Sentence.objects.count() == 1


# --- fact KB ------------------------------------------------------------------------------------
def test_facts_filter_create_and_update(api, staff_api, topics):
    nuclear, guns = topics
    seed = make_fact(nuclear, "Nuclear plants emit little CO2.")
    pending = make_fact(nuclear, "Waste storage is unsolved.", status="pending", origin="proposed")
    other = make_fact(guns, "Gun deaths per year.")

    def ids(query):
        response = api.get("/api/facts/", query)
        assert response.status_code == 200, response.content
        return [row["id"] for row in response.json()["results"]]

    assert ids({"topic": "Nuclear energy"}) == [seed.pk, pending.pk]
    assert ids({"status": "pending"}) == [pending.pk]
    assert ids({"origin": "seed"}) == [seed.pk, other.pk]
    bad = api.get("/api/facts/", {"status": "gone"})
    assert bad.status_code == 400 and "status" in bad.json()

    body = {"topic": nuclear.pk, "text": "Uranium is finite.", "origin": "expert"}
    assert api.post("/api/facts/", body, format="json").status_code == 403
    created = staff_api.post("/api/facts/", body, format="json")
    assert created.status_code == 201, created.content
    fact = FactVariable.objects.get(pk=created.json()["id"])
    assert fact.content_hash == hashing.fact_hash("Nuclear energy", "Uranium is finite.")

    patched = staff_api.patch(f"/api/facts/{fact.pk}/", {"text": "Uranium reserves are finite."}, format="json")
    assert patched.status_code == 200
    fact.refresh_from_db()
    assert fact.content_hash == hashing.fact_hash("Nuclear energy", "Uranium reserves are finite.")
    duplicate = staff_api.patch(f"/api/facts/{fact.pk}/", {"text": seed.text}, format="json")
    assert duplicate.status_code == 400 and "text" in duplicate.json()
    cross_topic = staff_api.patch(
        f"/api/facts/{fact.pk}/", {"merged_into": other.pk, "status": "merged"}, format="json"
    )
    assert cross_topic.status_code == 400 and "merged_into" in cross_topic.json()
    merged = staff_api.patch(f"/api/facts/{fact.pk}/", {"merged_into": seed.pk, "status": "merged"}, format="json")
    assert merged.status_code == 200
    fact.refresh_from_db()
    assert (fact.status, fact.merged_into_id, fact.text) == ("merged", seed.pk, "Uranium reserves are finite.")


# --- debates ------------------------------------------------------------------------------------
def test_debates_are_read_only_with_nested_nodes(api, staff_api, topics):
    tree = DebateTree.objects.create(title="Should we ban guns?", topic=topics[1], content_hash="t1")
    root = DebateNode.objects.create(tree=tree, path="1", text="We should ban guns.")
    child = DebateNode.objects.create(tree=tree, parent=root, path="1.1", depth=1, stance="pro", text="Fewer deaths.")
    DebateNode.objects.create(
        tree=tree, parent=root, path="1.2", depth=1, stance="con", text="Fewer deaths.", reference_path="1.1"
    )
    other = DebateTree.objects.create(title="Nuclear?", topic=topics[0], content_hash="t2")

    listed = api.get("/api/debates/").json()["results"]
    assert [(row["id"], row["node_count"]) for row in listed] == [(tree.pk, 3), (other.pk, 0)]
    assert [row["id"] for row in api.get("/api/debates/", {"topic": "Nuclear energy"}).json()["results"]] == [other.pk]
    detail = staff_api.get(f"/api/debates/{tree.pk}/").json()
    assert [(n["path"], n["parent"], n["depth"], n["stance"]) for n in detail["nodes"]] == [
        ("1", None, 0, "none"),
        ("1.1", root.pk, 1, "pro"),
        ("1.2", root.pk, 1, "con"),
    ]
    public = api.get(f"/api/debates/{tree.pk}/").json()  # a worker reads the texts, not the stances (labels)
    assert [(n["path"], n["text"]) for n in public["nodes"]][1] == ("1.1", "Fewer deaths.")
    assert not any("stance" in n for n in public["nodes"]) and "metadata" not in public
    assert detail["nodes"][2]["reference_path"] == "1.1"
    assert detail["nodes"][1]["id"] == child.pk
    assert staff_api.post("/api/debates/", {"title": "x"}, format="json").status_code == 405
    assert staff_api.delete(f"/api/debates/{tree.pk}/").status_code == 405


# --- releases -----------------------------------------------------------------------------------
def test_releases_are_staff_only_and_list_files(api, staff_api, staff_user):
    release = Release.objects.create(name="arg-aspects", version="1.0", creator=staff_user, config={"split": "fixed"})
    ReleaseFile.objects.create(release=release, name="train.jsonl", rows=10, size=1234, sha256="a" * 64)
    ReleaseFile.objects.create(release=release, name="dev.jsonl", rows=2, size=200, sha256="b" * 64)
    release.status = Release.Status.PUBLISHED
    release.save()
    assert api.get("/api/releases/").status_code == 403
    assert api.get(f"/api/releases/{release.pk}/").status_code == 403
    row = staff_api.get("/api/releases/").json()["results"][0]
    assert (row["name"], row["version"], row["status"], row["creator"], row["config"]) == (
        "arg-aspects",
        "1.0",
        "published",
        "expert",
        {"split": "fixed"},
    )
    assert [(f["name"], f["rows"], f["size"], f["url"]) for f in row["files"]] == [
        ("dev.jsonl", 2, 200, f"/releases/{release.pk}/files/dev.jsonl"),
        ("train.jsonl", 10, 1234, f"/releases/{release.pk}/files/train.jsonl"),
    ]
    assert staff_api.post("/api/releases/", {"name": "x", "version": "2"}, format="json").status_code == 405


# --- schema -------------------------------------------------------------------------------------
def test_openapi_schema_validates_without_warnings(tmp_path):
    """The guard for every endpoint: new views must not add schema warnings."""
    out = tmp_path / "schema.yaml"
    reset_generator_stats()
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    schema = yaml.safe_load(out.read_text())
    for path in (
        "/api/topics/",
        "/api/sentences/",
        "/api/facts/",
        "/api/debates/{id}/",
        "/api/releases/",
        "/api/auth/token/",
    ):
        assert path in schema["paths"], path
    params = {p["name"] for p in schema["paths"]["/api/sentences/"]["get"]["parameters"]}
    assert {"topic", "stance", "search", "page"} <= params


def test_swagger_ui_renders(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    assert b"swagger" in response.content.lower()
