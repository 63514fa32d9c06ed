"""The span_grounding HIT page through Django's test client: every argument is shown with its variables and their
keys (1..n in payload order, 0 = Others) and its suggestions; the plain form POST (no JavaScript) stores grounded
spans (suggestions taken are flagged), refuses overlaps (400 naming the reason, nothing written, the posted spans
kept), and asks the schemes only when the project does."""

from __future__ import annotations

import html as htmllib
import json
import re

import pytest
from django.template.loader import render_to_string
from django.urls import reverse

import annotation.task_types.span_grounding.task_type  # noqa: F401  (registers the "span_grounding" task type)
from annotation import services
from annotation.models import Assignment, Project, Response, Worker
from annotation.task_types.span_grounding.task_type import build_payload
from corpus.hashing import sentence_hash
from corpus.models import FactVariable, Sentence, Topic

TOPIC = "minimum wage"
VARIABLES = ["raising the minimum wage", "job losses", "consumer spending", "small business profits"]
TEXTS = [
    # (text, stance, [variable indexes offered, in key order], suggestion (words, variable index or None))
    (
        "Raising the minimum wage to $15 would cost young workers their jobs, economists say.",
        "con",
        [0, 1, 2],
        ("Raising the minimum wage", 0),
    ),
    ("I simply think it is the fair thing to do.", "pro", [0, 3, 2], None),
]


def make_span_project(*, slug: str = "spans-minimum-wage", config: dict | None = None, n: int = 2) -> Project:
    """An active span_grounding project with ``n`` arguments (payloads built by the task type's build_payload: 3
    variables each, the first argument with one suggestion), one HIT."""
    topic = Topic.objects.create(name=TOPIC, slug="minimum-wage")
    facts = [
        FactVariable.objects.create(topic=topic, text=t, content_hash=sentence_hash(TOPIC, "fact:" + t))
        for t in VARIABLES
    ]
    project = services.create_project(
        name="Minimum wage: factual spans",
        slug=slug,
        task_type="span_grounding",
        config={"variables_per_item": [3, 3], **(config or {})},
        guidelines=render_to_string("task_types/span_grounding/guidelines.html"),
        assignments_per_item=1,
        items_per_hit=n,
        time_estimate_seconds=120,
        reward_cents=40,
        status=Project.Status.ACTIVE,
    )
    payloads = []
    for text, stance, offered, suggestion in TEXTS[:n]:
        sentence = Sentence.objects.create(
            topic=topic, text=text, stance=stance, content_hash=sentence_hash(TOPIC, text)
        )
        chosen = [facts[i] for i in offered]
        suggestions = None
        if suggestion:
            words, vi = suggestion
            begin = text.index(words)
            suggestions = [
                {
                    "begin": begin,
                    "end": begin + len(words),
                    "variable": facts[vi].pk if vi is not None else None,
                    "source": "model:test",
                }
            ]
        payloads.append(build_payload(sentence, chosen, suggestions=suggestions))
    services.add_items(project, payloads)
    assert services.build_hits(project) == 1
    return project


def span_of(text: str, words: str) -> tuple[int, int]:
    begin = text.index(words)
    return begin, begin + len(words)


pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return make_span_project()


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


def item_html(html: str, item_id: int) -> str:
    start = html.index(f'id="item-{item_id}"')
    end = html.find('<li class="hit-item', start)
    return html[start : end if end > 0 else len(html)]


def test_page_shows_the_argument_its_variables_with_keys_and_the_suggestions(client, project):
    _, assignment, html = join(client, project)
    items = services.assignment_items(assignment)
    assert len(items) == 2
    assert 'data-task-type="span_grounding"' in html
    assert "task_types/span_grounding/hit.js" in html
    assert html.count("task_types/span_grounding/hit.css") == 1  # linked once, not per argument
    for n, item in enumerate(items, start=1):
        p, part = item.payload, item_html(html, item.pk)
        assert f"Argument {n} of 2" in part
        assert f'id="item-{item.pk}-text"' in part and htmllib.escape(p["text"]) in part
        assert "Topic: <strong" in part and TOPIC in part
        assert f'<strong class="sg-stance">{p["stance"]}</strong>' in part  # show_stance defaults to true
        # the variables beside the argument: keys 1..n in payload order, then 0 = Others
        keys = re.findall(r'data-var="(\d+|other)" data-key="(\d)"', part)
        assert keys == [(str(v["id"]), str(k)) for k, v in enumerate(p["variables"], start=1)] + [("other", "0")]
        for k, v in enumerate(p["variables"], start=1):
            assert re.search(rf'<kbd>{k}</kbd> <span class="sg-var-text">{re.escape(v["text"])}</span>', part)
        assert '<kbd>0</kbd> <span class="sg-var-text">Others' in part
        # tokens and suggestions for the script; the no-JS menus for the suggestions
        tokens = json.loads(htmllib.unescape(re.search(r'data-tokens="([^"]*)"', part).group(1)))
        assert tokens == p["tokens"]
        shown = json.loads(htmllib.unescape(re.search(r'data-suggestions="([^"]*)"', part).group(1)))
        assert shown == p["suggestions"]
        for s in p["suggestions"]:
            assert f'value="{s["begin"]}:{s["end"]}:{s["variable"]}" data-suggested="1"' in part
            assert f'name="item-{item.pk}-suggested[]" value="{s["begin"]}:{s["end"]}"' in part
        assert 'role="alert"' in part  # the overlap warning box of the script
        assert "No factual span in this argument" in part
        assert f'name="item-{item.pk}-schemes[]"' not in part  # ask_schemes is off
    first = items[0].payload
    assert len(first["variables"]) == 3 and len(first["suggestions"]) == 1
    # the guidelines are the project's instructions; the keyboard help comes from the task type
    assert "factual span" in html and "<details" in html and "Examples" in html
    assert "<kbd>1</kbd>" in html.split('id="instructions"')[1]


def test_no_js_post_stores_grounded_spans_and_flags_suggestions(client, project):
    _worker, assignment, _ = join(client, project)
    a, b = services.assignment_items(assignment)
    text = a.payload["text"]
    sugg = a.payload["suggestions"][0]
    v2 = a.payload["variables"][1]["id"]
    young = span_of(text, "young workers their jobs")
    resp = post(
        client,
        project,
        assignment,
        {
            # the suggestion taken through its menu (+ the hidden suggested[] of the page), one span of the annotator's
            f"item-{a.pk}-spans[]": [
                f"{sugg['begin']}:{sugg['end']}:{sugg['variable']}",
                f"{young[0]}:{young[1]}:{v2}",
                f"{text.index('economists')}:{text.index('economists') + 10}:other",
            ],
            f"item-{a.pk}-suggested[]": [f"{sugg['begin']}:{sugg['end']}"],
            # nothing for the second argument: no factual span
        },
    )
    assert resp.status_code == 302, resp.content.decode()[:2000]
    stored = {r.item_id: r.data for r in Response.objects.filter(assignment=assignment)}
    spans = stored[a.pk]["spans"]
    assert [(s["begin"], s["end"]) for s in spans] == [(sugg["begin"], sugg["end"]), young, span_of(text, "economists")]
    assert [s["variable"] for s in spans] == [sugg["variable"], v2, None]
    assert [s["from_suggestion"] for s in spans] == [True, False, False]
    assert [text[s["begin"] : s["end"]] for s in spans] == [
        "Raising the minimum wage",
        "young workers their jobs",
        "economists",
    ]
    assert stored[b.pk]["spans"] == []
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.SUBMITTED


def test_no_js_overlap_is_refused_with_the_reason_and_nothing_is_written(client, project):
    _, assignment, _ = join(client, project)
    a, b = services.assignment_items(assignment)
    text = a.payload["text"]
    young, workers = span_of(text, "young workers"), span_of(text, "workers their jobs")
    posted = [f"{young[0]}:{young[1]}:other", f"{workers[0]}:{workers[1]}:other"]
    resp = post(client, project, assignment, {f"item-{a.pk}-spans[]": posted})
    assert resp.status_code == 400
    page = resp.content.decode()
    error = re.search(rf'<p class="item-error" id="item-{a.pk}-error" role="alert">([^<]*)</p>', page).group(1)
    assert "spans overlap" in htmllib.unescape(error) and "workers" in htmllib.unescape(error)
    assert Response.objects.count() == 0
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.RESERVED
    # the posted spans come back (the script starts from them), the other argument stays clean
    part = item_html(page, a.pk)
    for value in posted:
        assert f'name="item-{a.pk}-spans[]" value="{value}"' in part
    assert f'<li class="hit-item has-error" id="item-{a.pk}"' in page
    assert f'<li class="hit-item" id="item-{b.pk}"' in page


def test_no_js_post_refuses_a_span_off_token_boundaries_and_an_unoffered_variable(client, project):
    _, assignment, _ = join(client, project)
    a, _b = services.assignment_items(assignment)
    text = a.payload["text"]
    b0 = text.index("young")
    resp = post(client, project, assignment, {f"item-{a.pk}-spans[]": [f"{b0}:{b0 + 3}:other"]})  # "you"
    assert resp.status_code == 400 and "token boundary" in htmllib.unescape(resp.content.decode())
    unoffered = FactVariable.objects.exclude(pk__in=[v["id"] for v in a.payload["variables"]]).first()
    resp = post(client, project, assignment, {f"item-{a.pk}-spans[]": [f"{b0}:{b0 + 5}:{unoffered.pk}"]})
    assert resp.status_code == 400 and "was not offered" in htmllib.unescape(resp.content.decode())
    assert Response.objects.count() == 0


def test_schemes_are_asked_only_when_the_project_asks_them(client):
    project = make_span_project(
        config={
            "ask_schemes": True,
            "schemes": ["From Consequence", "Source Authority", "Others"],
            "show_stance": False,
        },
        n=1,
    )
    _, assignment, html = join(client, project)
    (a,) = services.assignment_items(assignment)
    assert re.findall(rf'name="item-{a.pk}-schemes\[\]" value="([^"]+)"', html) == [
        "From Consequence",
        "Source Authority",
        "Others",
    ]
    assert 'data-ask-schemes="1"' in html
    assert "sg-stance" not in html  # show_stance off
    resp = post(client, project, assignment, {f"item-{a.pk}-schemes[]": ["Nonsense"]})
    assert resp.status_code == 400 and "unknown scheme" in htmllib.unescape(resp.content.decode())
    assert Response.objects.count() == 0
    resp = post(client, project, assignment, {f"item-{a.pk}-schemes[]": ["Source Authority", "From Consequence"]})
    assert resp.status_code == 302
    assert Response.objects.get().data == {"spans": [], "schemes": ["From Consequence", "Source Authority"]}
