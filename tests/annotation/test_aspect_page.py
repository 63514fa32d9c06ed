"""The aspect HIT page through Django's test client: the page shows every sentence with its topic, the first
list, the second list and the sum of the two boxes, leaks no reference answers, and the plain form POST (no
JavaScript) stores spans, refuses overlaps and wrong sums (400, nothing written, the choices kept)."""

from __future__ import annotations

import re

import pytest
from django.template.loader import render_to_string
from django.urls import reverse

import annotation.task_types.aspect.task_type  # noqa: F401  (registers the "aspect" task type)
from annotation import services
from annotation.models import Assignment, Item, Project, Response, Worker
from corpus.hashing import sentence_hash
from corpus.models import Sentence, Topic

TOPIC = "nuclear energy"
TEXTS = [
    ("Nuclear energy is clean but the reactors can easily be targeted by terrorist attacks.", "pro"),
    ("My uncle visited a power station last summer.", "none"),
    ("Building and running nuclear power plants is extremely expensive for taxpayers.", "con"),
]


def make_aspect_project(*, top_k: int = 5, slug: str = "aspects-nuclear", config: dict | None = None) -> Project:
    """An active aspect project: the sentences as corpus rows, their items built by the task type, one HIT.
    ``config`` adds to the project config (e.g. ``{"free_spans": True}``)."""
    topic = Topic.objects.create(name=TOPIC, slug="nuclear-energy")
    sentences = [
        Sentence.objects.create(topic=topic, text=t, stance=s, content_hash=sentence_hash(TOPIC, t)) for t, s in TEXTS
    ]
    project = services.create_project(
        name="Nuclear energy: aspects",
        slug=slug,
        task_type="aspect",
        config={"top_k": top_k, **(config or {})},
        guidelines=render_to_string("task_types/aspect/guidelines.html"),
        assignments_per_item=1,
        items_per_hit=len(TEXTS),
        time_estimate_seconds=120,
        reward_cents=40,
        status=Project.Status.ACTIVE,
    )
    services.add_items_from_rows(project, sentences)
    assert services.build_hits(project) == 1
    return project


def overlapping_pair(payload):
    """Two offered candidates that overlap (e.g. "terrorist attacks" and "terrorist")."""
    offered = payload["candidates"] + payload["more"]
    for a in offered:
        for b in offered:
            if a["id"] != b["id"] and a["begin"] < b["begin"] + b["length"] and b["begin"] < a["begin"] + a["length"]:
                return a, b
    raise AssertionError("no overlapping candidates")


pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return make_aspect_project()


def join(client, project):
    resp = client.get(reverse("annotation:invite", args=[project.invite_token]))
    assert resp.status_code == 302
    worker = Worker.objects.get(user_id=client.session["_auth_user_id"])
    page = client.get(reverse("annotation:work", args=[project.slug]))
    assert page.status_code == 200, page.content[:500]
    assignment = Assignment.objects.get(worker=worker, project=project)
    return worker, assignment, page.content.decode()


def post(client, project, assignment, fields):
    data = {"assignment": assignment.pk, "feedback": "", "client_seconds": ""}
    data.update(fields)
    return client.post(reverse("annotation:work", args=[project.slug]), data)


def test_page_lists_sentences_topic_both_lists_and_the_sum(client, project):
    _, assignment, html = join(client, project)
    items = services.assignment_items(assignment)
    assert len(items) == 3
    assert 'data-task-type="aspect"' in html
    assert "task_types/aspect/hit.js" in html and "task_types/aspect/hit.css" in html
    assert html.count("task_types/aspect/hit.css") == 1  # linked once, not per sentence
    for item in items:
        p = item.payload
        assert f'id="item-{item.pk}-text">{p["text"]}</p>' in html
        assert "Topic: <strong" in html and TOPIC in html
        first = re.findall(rf'name="item-{item.pk}-aspects\[\]" value="([0-9:]+)" data-list="first"', html)
        second = re.findall(rf'name="item-{item.pk}-aspects\[\]" value="([0-9:]+)" data-list="second"', html)
        assert first == [c["id"] for c in p["candidates"]] and len(first) == 5  # ranked order, top_k
        assert second == [c["id"] for c in p["more"]] and second
        assert f'name="item-{item.pk}-no_aspect"' in html and f'name="item-{item.pk}-not_in_lists"' in html
        assert f'name="item-{item.pk}-check"' in html and p["check"]["question"] in html
        assert 'inputmode="numeric" pattern="[0-9]*"' in html
    assert "Aspect not in the first list, show more candidates" in html
    assert 'role="alert"' in html  # the overlap warning box of the script
    # the guidelines (collapsible parts with examples) are the project's instructions
    assert "How to use the HIT" in html and "<details" in html and "Examples" in html


def test_page_does_not_leak_reference_answers_of_an_item(client, project):
    item = Item.objects.filter(project=project).first()
    item.payload = dict(
        item.payload,
        reference={"hash": "abc", "aspects": ["SECRET-REFERENCE"]},
        adjudicated={"aspects": ["SECRET-ADJUDICATED"]},
    )
    item.save()
    _, _, html = join(client, project)
    assert "SECRET-" not in html


def test_gold_item_looks_like_any_other(client, project):
    from annotation.task_types.aspect.items import build_payload
    from annotation.task_types.aspect.rankers import BaselineRanker

    text = "Wind turbines kill birds."
    payload = build_payload(text, TOPIC, stance="con", ranker=BaselineRanker(load_from_db=False), top_k=5)
    payload["reference"] = {"hash": "gold-1", "aspects": ["REFERENCE-ANSWER"]}
    target = next(c for c in payload["candidates"] + payload["more"] if c["text"] == "kill birds")
    services.add_items(
        project,
        [],
        gold=[
            {
                "payload": payload,
                "expected": {"aspects": [{"begin": target["begin"], "length": target["length"]}], "no_aspect": False},
            }
        ],
    )
    project.gold_rate = 1 / 3
    project.save()
    _, assignment, html = join(client, project)
    items = services.assignment_items(assignment)
    assert len(items) == 4 and sum(i.is_gold for i in items) == 1
    segments = html.split('<li class="hit-item')[1:]
    assert len(segments) == 4
    shapes = set()
    for item, segment in zip(items, segments):
        segment = segment.split("</li>\n")[0] if "</li>\n" in segment else segment
        assert "gold" not in segment.lower() and "REFERENCE-ANSWER" not in segment
        shapes.add(tuple(sorted(set(re.findall(rf'name="item-{item.pk}-([a-z_\[\]]+)"', segment)))))
    assert shapes == {("aspects[]", "check", "no_aspect", "not_in_lists")}
    assert "Wind turbines kill birds." in html


def test_no_js_post_stores_spans_and_boxes(client, project):
    _worker, assignment, _ = join(client, project)
    items = services.assignment_items(assignment)
    p0, p1, p2 = (i.payload for i in items)
    first0, more0 = (
        p0["candidates"][0],
        next(
            c
            for c in p0["more"]
            if not (
                c["begin"] < p0["candidates"][0]["begin"] + p0["candidates"][0]["length"]
                and p0["candidates"][0]["begin"] < c["begin"] + c["length"]
            )
        ),
    )
    check = p1["check"]
    resp = client.post(
        reverse("annotation:work", args=[project.slug]),
        {
            "assignment": assignment.pk,
            "feedback": "fine",
            "client_seconds": "",
            f"item-{items[0].pk}-aspects[]": [first0["id"], more0["id"]],
            f"item-{items[1].pk}-no_aspect": "on",
            f"item-{items[1].pk}-check": str(check["a"] + check["b"]),
            f"item-{items[2].pk}-aspects[]": [p2["candidates"][1]["id"]],
            f"item-{items[2].pk}-check": "",  # a box not ticked: its (empty) sum is not asked
        },
    )
    assert resp.status_code == 302, resp.content.decode()[:2000]
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    stored = {r.item_id: r.data for r in Response.objects.filter(assignment=assignment)}
    spans0 = [(a["begin"], a["length"], a["list"]) for a in stored[items[0].pk]["aspects"]]
    assert sorted(spans0) == sorted(
        [(first0["begin"], first0["length"], "ranked"), (more0["begin"], more0["length"], "more")]
    )
    assert stored[items[1].pk] == {"aspects": [], "no_aspect": True, "not_in_lists": False}
    assert [a["text"] for a in stored[items[2].pk]["aspects"]] == [p2["candidates"][1]["text"]]


def test_no_js_post_refuses_overlap_and_keeps_the_choices(client, project):
    _, assignment, _ = join(client, project)
    items = services.assignment_items(assignment)
    a, b = overlapping_pair(items[0].payload)
    check = items[1].payload["check"]
    resp = post(
        client,
        project,
        assignment,
        {
            f"item-{items[0].pk}-aspects[]": [a["id"], b["id"]],
            f"item-{items[1].pk}-not_in_lists": "on",
            f"item-{items[1].pk}-check": str(check["a"] + check["b"]),
            f"item-{items[2].pk}-aspects[]": [items[2].payload["candidates"][0]["id"]],
        },
    )
    assert resp.status_code == 400
    html = resp.content.decode()
    assert "aspects must not overlap" in html
    assert Response.objects.count() == 0
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.RESERVED
    # the page comes back with what was chosen
    for c in (a, b):
        assert re.search(rf'value="{c["id"]}" data-list="\w+" data-text="[^"]*" checked', html)
    assert re.search(rf'name="item-{items[1].pk}-not_in_lists" id="[^"]+" checked', html)
    assert f'value="{check["a"] + check["b"]}"' in html


@pytest.mark.parametrize("answer, reason", [("", "solve the sum"), ("x1", "digits only"), ("999", "not right")])
def test_no_js_post_checks_the_sum_of_no_aspect(client, project, answer, reason):
    _, assignment, _ = join(client, project)
    items = services.assignment_items(assignment)
    resp = post(
        client,
        project,
        assignment,
        {
            f"item-{items[0].pk}-aspects[]": [items[0].payload["candidates"][0]["id"]],
            f"item-{items[1].pk}-no_aspect": "on",
            f"item-{items[1].pk}-check": answer,
            f"item-{items[2].pk}-aspects[]": [items[2].payload["candidates"][0]["id"]],
        },
    )
    assert resp.status_code == 400
    html = resp.content.decode()
    assert re.search(rf'id="item-{items[1].pk}-error" role="alert">check: [^<]*{reason}', html), html[-3000:]
    assert Response.objects.count() == 0


def test_no_js_post_refuses_no_aspect_together_with_aspects(client, project):
    _, assignment, _ = join(client, project)
    items = services.assignment_items(assignment)
    check = items[0].payload["check"]
    resp = post(
        client,
        project,
        assignment,
        {
            f"item-{items[0].pk}-aspects[]": [items[0].payload["candidates"][0]["id"]],
            f"item-{items[0].pk}-no_aspect": "on",
            f"item-{items[0].pk}-check": str(check["a"] + check["b"]),
            f"item-{items[1].pk}-aspects[]": [items[1].payload["candidates"][0]["id"]],
            f"item-{items[2].pk}-aspects[]": [items[2].payload["candidates"][0]["id"]],
        },
    )
    assert resp.status_code == 400
    assert re.search(rf'id="item-{items[0].pk}-error" role="alert">no_aspect: ', resp.content.decode())
    assert Response.objects.count() == 0


def test_guidelines_fragment_renders_on_its_own():
    html = render_to_string("task_types/aspect/guidelines.html")
    assert html.count("<details") == 3 and "<summary>Examples</summary>" in html
    assert "Alt</kbd>+<kbd>M" in html and "digits only" in html
    assert "Add selected span" in html and "whole words" in html  # free-span projects
    assert "{%" not in html and "{{" not in html


def test_free_span_page_carries_the_tokens_and_the_add_button(client):
    from annotation.task_types.aspect.candidates import tokenize

    project = make_aspect_project(slug="aspects-free", config={"free_spans": True})
    _, assignment, html = join(client, project)
    for item in services.assignment_items(assignment):
        text = item.payload["text"]
        tokens = ", ".join(f"[{t.begin}, {t.end}]" for t in tokenize(text))
        assert (
            f'<p class="sentence aspect-sentence aspect-free" id="item-{item.pk}-text" data-tokens="[{tokens}]">'
            f"{text}</p>"
        ) in html
        assert f'id="item-{item.pk}-add" disabled>Add selected span</button>' in html
        assert f'id="item-{item.pk}-cursor" role="status"' in html
    assert "Marking words of your own needs JavaScript" in html  # the no-JS form says it is candidate-only


def test_normal_page_has_no_free_span_parts(client, project):
    _, _, html = join(client, project)
    assert "data-tokens" not in html and 'class="aspect-add"' not in html and "aspect-free" not in html


def test_no_js_post_of_a_free_span_in_a_free_span_project(client):
    project = make_aspect_project(slug="aspects-free-nojs", config={"free_spans": True})
    _, assignment, _ = join(client, project)
    items = services.assignment_items(assignment)
    text0 = items[0].payload["text"]
    phrase = "easily be targeted by terrorist attacks"  # 6 words: never a candidate
    begin = text0.index(phrase)
    fields = {
        f"item-{items[1].pk}-aspects[]": [items[1].payload["candidates"][0]["id"]],
        f"item-{items[2].pk}-aspects[]": [items[2].payload["candidates"][0]["id"]],
    }
    resp = post(
        client, project, assignment, {f"item-{items[0].pk}-aspects[]": [f"{begin}:{len(phrase) - 2}"], **fields}
    )
    assert resp.status_code == 400 and "whole words" in resp.content.decode()
    assert Response.objects.count() == 0
    resp = post(client, project, assignment, {f"item-{items[0].pk}-aspects[]": [f"{begin}:{len(phrase)}"], **fields})
    assert resp.status_code == 302, resp.content.decode()[:2000]
    stored = Response.objects.get(assignment=assignment, item=items[0]).data
    assert stored["aspects"] == [{"begin": begin, "length": len(phrase), "text": phrase, "list": "free"}]
