"""First-list size in- vs cross-topic (top_k / top_k_cross_topic), the trainers' recorded training topics, gold
items' instructions (App. A quality checks) on the HIT page and in the API, and the dashboard adjudication POST of
an aspect project."""

from __future__ import annotations

import json
import re
from io import StringIO
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation import services
from annotation.models import Adjudication, Item, Project
from annotation.task_types.aspect import appf
from annotation.task_types.aspect.candidates import candidates as make_candidates
from annotation.task_types.aspect.items import (
    DEFAULT_TOP_K,
    DEFAULT_TOP_K_CROSS_TOPIC,
    build_payload,
    gold_instruction,
    ranker_topics,
    top_k_for,
)
from annotation.task_types.aspect.rankers import BaselineRanker
from annotation.task_types.base import GoldShare
from corpus.hashing import sentence_hash
from corpus.models import Sentence, Topic

pytestmark = pytest.mark.django_db

# long enough for more than 15 filtered candidates
GUN = "Universal background checks on every private gun sale would keep deadly weapons away from violent criminals."
NUCLEAR = "Nuclear power plants produce radioactive waste that stays dangerous for thousands of years after closing."


class FakeModel:
    """A loaded 'trained ranker': longer candidates first."""

    def score(self, sentence_text, topic, candidates):
        return [float(c.length) for c in candidates]


def trained(topics):
    """A Ranker as ml.rankers wraps a registry version, whose version recorded ``topics`` as training topics."""
    from ml.rankers import TrainedRanker

    version = SimpleNamespace(kind="span_ranker", pk=99, metrics={"primary": 0.8, "info": {"train_topics": topics}})
    return TrainedRanker(FakeModel(), name="span_ranker#99", version=version)


# --- the rule ------------------------------------------------------------------------------------------
def test_top_k_rule_trained_ranker_uses_its_training_topics():
    assert (DEFAULT_TOP_K, DEFAULT_TOP_K_CROSS_TOPIC) == (10, 15)  # the paper's 10 in-topic, 15 cross-topic
    ranker = trained(["Gun control", "abortion"])
    assert ranker_topics(ranker) == {"gun control", "abortion"}
    assert top_k_for({}, ranker, "gun control") == 10
    assert top_k_for({}, ranker, " GUN CONTROL ") == 10  # case and spaces do not matter
    assert top_k_for({}, ranker, "nuclear energy") == 15
    assert top_k_for({"top_k": 4, "top_k_cross_topic": 6}, ranker, "abortion") == 4
    assert top_k_for({"top_k": 4, "top_k_cross_topic": 6}, ranker, "cloning") == 6
    # the study setting does not override what the trained ranker knows
    assert top_k_for({"study": "cross-topic"}, ranker, "gun control") == 10


def test_top_k_rule_baseline_follows_the_study_setting():
    baseline = BaselineRanker(load_from_db=False)
    assert ranker_topics(baseline) is None
    assert top_k_for({}, baseline, "gun control") == 10
    assert top_k_for({"study": "in-topic"}, baseline, "gun control") == 10
    assert top_k_for({"study": "cross-topic"}, baseline, "gun control") == 15
    assert top_k_for({"study": "cross-topic", "top_k_cross_topic": 7}, baseline, "x") == 7
    # a trained version that recorded no topics counts as unknown, like the baseline
    assert ranker_topics(trained([])) is None
    assert top_k_for({"study": "cross-topic"}, trained([]), "gun control") == 15


def sentences():
    out = []
    for topic, text in (("gun control", GUN), ("nuclear energy", NUCLEAR)):
        t = Topic.objects.create(name=topic)
        out.append(Sentence.objects.create(topic=t, text=text, stance="pro", content_hash=sentence_hash(topic, text)))
    return out


def test_items_of_unseen_topics_get_the_cross_topic_list(monkeypatch):
    assert len(make_candidates(GUN)) > 15 and len(make_candidates(NUCLEAR)) > 15
    monkeypatch.setattr("ml.rankers.active_ranker", lambda project=None: trained(["gun control"]))
    project = services.create_project(
        name="k", slug="k", task_type="aspect", config={"top_k": 3, "top_k_cross_topic": 5}
    )
    services.add_items_from_rows(project, sentences())
    by_topic = {i.payload["topic"]: i.payload for i in Item.objects.filter(project=project)}
    assert len(by_topic["gun control"]["candidates"]) == 3  # a training topic: in-topic k
    assert len(by_topic["nuclear energy"]["candidates"]) == 5  # unseen: cross-topic k
    for p in by_topic.values():
        assert p["ranker"] == "span_ranker#99"
        offered = [c["id"] for c in p["candidates"]] + [c["id"] for c in p["more"]]
        assert len(offered) == len(set(offered)) == len(make_candidates(p["text"]))  # the rest is the second list
    # the defaults: 10 and 15
    other = services.create_project(name="d", slug="d", task_type="aspect")
    services.add_items_from_rows(other, Sentence.objects.order_by("pk"))
    assert sorted(len(i.payload["candidates"]) for i in Item.objects.filter(project=other)) == [10, 15]


def test_baseline_project_of_a_cross_topic_study(tmp_path):
    sents = sentences()
    in_topic = services.create_project(name="i", slug="i", task_type="aspect")
    cross = services.create_project(name="c", slug="c", task_type="aspect", config={"study": "cross-topic"})
    for project in (in_topic, cross):
        services.add_items_from_rows(project, sents)
    assert {len(i.payload["candidates"]) for i in Item.objects.filter(project=in_topic)} == {10}
    assert {len(i.payload["candidates"]) for i in Item.objects.filter(project=cross)} == {15}
    # the App. F import follows the same rule
    path = tmp_path / "a.jsonl"
    path.write_text(
        json.dumps(
            {
                "hash": "n1",
                "topic": "nuclear energy",
                "stance": "Argument_for",
                "sentence": NUCLEAR,
                "aspect_pos": [],
                "aspect_pos_string": [],
            }
        )
        + "\n"
    )
    imported = services.create_project(name="x", slug="x", task_type="aspect", config={"study": "cross-topic"})
    appf.import_appf(path, imported)
    assert len(Item.objects.get(project=imported).payload["candidates"]) == 15


def test_the_registry_version_of_the_active_ranker_decides(monkeypatch, tmp_path):
    """Through ml.rankers: an active span_ranker version whose metrics record its training topics."""
    from ml import registry
    from ml.models import ModelVersion

    spec = registry.TrainerSpec(
        kind="span_ranker", train=lambda req: None, load=lambda path: FakeModel(), primary_metric="recall@10"
    )
    monkeypatch.setitem(registry._TRAINERS, "span_ranker", spec)
    registry.clear_model_cache()
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    ModelVersion.objects.create(
        kind="span_ranker",
        status="ready",
        is_active=True,
        artifact_path=str(artifact),
        metrics={"primary": 0.9, "primary_metric": "recall@10", "info": {"train_topics": ["nuclear energy"]}},
    )
    try:
        project = services.create_project(name="r", slug="r", task_type="aspect")
        services.add_items_from_rows(project, sentences())
        by_topic = {i.payload["topic"]: i.payload for i in Item.objects.filter(project=project)}
    finally:
        registry.clear_model_cache()
    assert by_topic["nuclear energy"]["ranker"].startswith("span_ranker#")
    assert len(by_topic["nuclear energy"]["candidates"]) == 10
    assert len(by_topic["gun control"]["candidates"]) == 15


@pytest.mark.slow
def test_the_ranker_trainers_record_their_training_topics(tmp_path):
    """Both ranker kinds write the topics of their training rows into the version's metrics (info)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from ml import registry
    from ml.data import synthetic_ranker_rows
    from ml.encoders import default_encoder_path
    from ml.registry import TrainRequest

    torch.manual_seed(0)
    tiny = tmp_path / "tiny"
    tokenizer = AutoTokenizer.from_pretrained(default_encoder_path())
    BertModel(
        BertConfig(
            vocab_size=tokenizer.vocab_size,
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
        )
    ).save_pretrained(str(tiny))
    tokenizer.save_pretrained(str(tiny))
    rows = synthetic_ranker_rows(6, seed=1, topics=("gun control", "abortion"))
    train = [r for r in rows if r["topic"] == "gun control"]
    dev = [r for r in rows if r["topic"] == "abortion"]
    assert train and dev
    for kind in ("ranker", "span_ranker"):
        out = tmp_path / kind
        out.mkdir()
        result = registry.get_trainer(kind).train(
            TrainRequest(
                kind=kind,
                rows_train=train,
                rows_dev=dev,
                base_model=str(tiny),
                seed=1,
                output_dir=out,
                hyperparameters={"max_steps": 1, "batch_size": 4, "max_length": 32},
            )
        )
        assert result.info["train_topics"] == ["gun control"], kind


# --- gold instructions ---------------------------------------------------------------------------------
def test_gold_instruction_phrasing():
    assert (
        gold_instruction({"aspects": [{"begin": 14, "length": 10, "text": "kill birds"}]})
        == "Select 'kill birds' as the aspect of this sentence."
    )
    two = {"aspects": [{"begin": 28, "length": 9, "text": "expensive"}, {"begin": 18, "length": 5, "text": "clean"}]}
    assert gold_instruction(two) == "Select 'clean' and 'expensive' as the aspects of this sentence."
    three = {
        "aspects": [
            {"begin": 0, "length": 1, "text": "a"},
            {"begin": 2, "length": 1, "text": "b"},
            {"begin": 4, "length": 1, "text": "c"},
        ]
    }
    assert gold_instruction(three) == "Select 'a', 'b' and 'c' as the aspects of this sentence."
    # spans without text are read from the sentence
    assert (
        gold_instruction({"aspects": [{"begin": 0, "length": 4}]}, "Wind turbines")
        == "Select 'Wind' as the aspect of this sentence."
    )
    assert gold_instruction({"aspects": [], "no_aspect": True}) == 'Tick "No aspect in the sentence" for this sentence.'
    assert gold_instruction({}) == ""


TOPIC = "nuclear energy"
PLAIN = [
    ("Nuclear energy is clean but the reactors can easily be targeted by terrorist attacks.", "pro"),
    ("Building nuclear power plants is extremely expensive for taxpayers.", "con"),
]
GOLD_TEXT = "Wind turbines kill birds."


def gold_project(config=None, *, slug="gold-asp"):
    """Two plain items in one HIT and gold_rate 1/2, so the worker's assignment carries one gold item."""
    topic = Topic.objects.create(name=TOPIC)
    sents = [
        Sentence.objects.create(topic=topic, text=t, stance=s, content_hash=sentence_hash(TOPIC, t)) for t, s in PLAIN
    ]
    project = services.create_project(
        name="Gold aspects",
        slug=slug,
        task_type="aspect",
        config=config or {},
        assignments_per_item=1,
        items_per_hit=2,
        gold_rate=0.5,
        status=Project.Status.ACTIVE,
    )
    services.add_items_from_rows(project, sents)
    services.build_hits(project)
    return project


def add_gold(project, **payload_extra):
    payload = build_payload(GOLD_TEXT, TOPIC, stance="con", ranker=BaselineRanker(load_from_db=False), top_k=5)
    payload.update(payload_extra)
    begin = GOLD_TEXT.index("kill birds")
    services.add_items(
        project,
        [],
        gold=[{"payload": payload, "expected": {"aspects": [{"begin": begin, "length": 10}], "no_aspect": False}}],
    )
    return Item.objects.get(project=project, is_gold=True)


def hit_page(client, project):
    from annotation.models import Assignment, Worker

    assert client.get(reverse("annotation:invite", args=[project.invite_token])).status_code == 302
    page = client.get(reverse("annotation:work", args=[project.slug]))
    assert page.status_code == 200
    worker = Worker.objects.get(user_id=client.session["_auth_user_id"])
    assignment = Assignment.objects.get(worker=worker, project=project)
    return page.content.decode(), services.assignment_items(assignment)


def test_hit_page_shows_the_instruction_of_a_gold_item_only(client):
    project = gold_project()
    gold = add_gold(project)
    assert "instruction" not in gold.payload  # added without one: phrased from GoldItem.expected on the page
    html, items = hit_page(client, project)
    assert gold.pk in [i.pk for i in items] and len(items) == 3
    assert html.count('class="aspect-instruction"') == 1
    m = re.search(rf'<p class="aspect-instruction" id="item-{gold.pk}-instruction">(.*?)</p>', html, re.S)
    assert m and "Select &#x27;kill birds&#x27; as the aspect of this sentence." in m.group(1)
    assert f'id="item-{gold.pk}-text" aria-describedby="item-{gold.pk}-instruction"' in html
    # the instruction comes before its sentence; the ordinary sentences have none
    assert html.index(f'id="item-{gold.pk}-instruction"') < html.index(f'id="item-{gold.pk}-text"')
    for item in items:
        if item.pk != gold.pk:
            assert f'id="item-{item.pk}-instruction"' not in html
            assert f'id="item-{item.pk}-text">{item.payload["text"]}</p>' in html
    assert "gold" not in html.split(f'id="item-{gold.pk}-instruction"')[1].split("</li>")[0].lower()


def test_api_sends_the_instruction_and_hidden_gold_can_turn_it_off(django_user_model):
    project = gold_project()
    gold = add_gold(project)
    client = APIClient()
    user = django_user_model.objects.create_user("wanda", password="pw-wanda-123")
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    body = client.post(f"/api/projects/{project.slug}/next/", format="json").json()
    payloads = {i["id"]: i["payload"] for i in body["items"]}
    assert payloads[gold.pk]["instruction"] == "Select 'kill birds' as the aspect of this sentence."
    assert all("instruction" not in p for pk, p in payloads.items() if pk != gold.pk)
    tt = project.get_task_type()
    # an explicit empty instruction, or the project setting, hides it (gold that looks like any other item)
    gold.payload = dict(gold.payload, instruction="")
    gold.save()
    assert "instruction" not in tt.worker_payload(project, gold) and tt.item_context(project, gold)["instruction"] == ""
    gold.payload = {k: v for k, v in gold.payload.items() if k != "instruction"}
    gold.save()
    project.config = dict(project.config, gold_instructions=False)
    project.save()
    assert "instruction" not in tt.worker_payload(project, gold)


def test_imported_gold_stores_its_instruction_and_the_page_shows_it(client, tmp_path):
    project = gold_project(slug="imp-gold")
    begin = GOLD_TEXT.index("kill birds")
    path = tmp_path / "gold.jsonl"
    path.write_text(
        json.dumps(
            {
                "hash": "g1",
                "topic": TOPIC,
                "stance": "Argument_against",
                "sentence": GOLD_TEXT,
                "aspect_pos": [f"({begin},10)"],
                "aspect_pos_string": ["kill birds"],
            }
        )
        + "\n"
        + json.dumps(
            {
                "hash": "g2",
                "topic": TOPIC,
                "stance": "Argument_for",
                "sentence": "Solar panels are getting cheaper every year.",
                "aspect_pos": [],
                "aspect_pos_string": [],
            }
        )
        + "\n"
    )
    call_command("aspects", "import", str(path), "--project", project.slug, "--as-gold", stdout=StringIO())
    g1 = Item.objects.get(project=project, external_key="appf:g1")
    g2 = Item.objects.get(project=project, external_key="appf:g2")
    assert g1.payload["instruction"] == "Select 'kill birds' as the aspect of this sentence."
    assert g2.payload["instruction"] == 'Tick "No aspect in the sentence" for this sentence.'
    html, items = hit_page(client, project)
    shown = [i for i in items if i.is_gold]
    assert len(shown) == 1
    assert f'id="item-{shown[0].pk}-instruction"' in html
    # the instruction is not part of the App. F row
    rows = appf.project_rows(project)
    assert rows and all("instruction" not in r for r in rows)
    # a project with gold_instructions false imports gold without one
    quiet = services.create_project(name="q", slug="quiet", task_type="aspect", config={"gold_instructions": False})
    appf.import_appf(path, quiet, gold=GoldShare("all"))
    assert all("instruction" not in i.payload for i in Item.objects.filter(project=quiet))


# --- adjudication through the dashboard ----------------------------------------------------------------
def test_dashboard_adjudication_post_of_an_aspect_project(client, staff_user, django_user_model, tmp_path):
    """An expert records a final answer from the items page: stored with who, used by the App. F export;
    overlapping spans or 'no aspect' with aspects are refused (400 naming the field) and change nothing."""
    from annotation.models import Worker

    project = services.create_project(
        name="adj",
        slug="adj",
        task_type="aspect",
        assignments_per_item=2,
        items_per_hit=1,
        status=Project.Status.ACTIVE,
        config={"top_k": 5},
    )
    text, stance = PLAIN[0]
    services.add_items(
        project, [build_payload(text, TOPIC, stance=stance, ranker=BaselineRanker(load_from_db=False), top_k=5)]
    )
    services.build_hits(project)
    item = Item.objects.get(project=project)
    clean, attacks = f"{text.index('clean')}:5", f"{text.index('terrorist attacks')}:17"
    for name, choice in (("w1", clean), ("w2", attacks)):  # 1 vote each of R = 2: unresolved
        worker = services.worker_for_user(django_user_model.objects.create_user(name, password="pw-12345678"))
        assignment = services.reserve_next_assignment(project, worker)
        services.submit_assignment(assignment, worker, {item.pk: {"aspects": [choice]}})
    assert Worker.objects.count() == 2
    assert appf.project_rows(project) == []

    client.force_login(staff_user)
    url = reverse("annotation:adjudicate", args=[project.slug, item.pk])
    page = client.get(reverse("annotation:agreement-items", args=[project.slug]))
    assert page.status_code == 200 and f'id="item-{item.pk}"' in page.content.decode()

    terrorist = f"{text.index('terrorist')}:9"
    r = client.post(url, {"aspects": [attacks, terrorist]})
    assert r.status_code == 400 and "overlap" in r.content.decode() and "aspects" in r.content.decode()
    r = client.post(url, {"aspects": [clean], "no_aspect": "on"})
    assert r.status_code == 400 and "no_aspect" in r.content.decode()
    r = client.post(url, {})
    assert r.status_code == 400
    assert not Adjudication.objects.exists()
    item.refresh_from_db()
    assert "adjudicated" not in item.payload

    r = client.post(url, {"aspects": [clean, attacks], "note": "both reasons"})
    assert r.status_code == 302 and r["Location"].endswith(f"#item-{item.pk}")
    adj = Adjudication.objects.get(item=item)
    assert adj.expert == staff_user and adj.note == "both reasons"
    assert [a["text"] for a in adj.answer["aspects"]] == ["clean", "terrorist attacks"]
    assert adj.answer["no_aspect"] is False
    item.refresh_from_db()
    assert item.payload["adjudicated"]["by"] == staff_user.username
    rows = appf.project_rows(project)
    assert len(rows) == 1 and rows[0]["aspect_pos_string"] == ["clean", "terrorist attacks"]
    # a crowdworker may not adjudicate
    client.force_login(django_user_model.objects.get(username="w1"))
    assert client.post(url, {"aspects": [clean]}).status_code == 403
    assert Adjudication.objects.filter(item=item).count() == 1
