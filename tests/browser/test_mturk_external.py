"""MTurk ExternalQuestion in headless Chromium: preview (read-only, nothing reserved), then accept inside an
iframe (as MTurk shows it) with real-looking ids, complete the sentence_label HIT, and the page posts
assignmentId to a local stand-in for ``turkSubmitTo/mturk/externalSubmit``; a tampered workerId is refused."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, Project, Response, Worker
from mturk import views as mturk_views
from mturk.models import MTurkHIT, MTurkProjectSettings
from tests.factories import ProjectFactory

HIT_ID = "3X7837UUADRXYCQSL6TZ2YZ1K0N6J4"
ASSIGNMENT_ID = "3IO1LGZLK9WROAXCHZWRWLI6UK486H"
WORKER_ID = "A2SJZ4ZP9E8QNB"
TURK_ORIGIN = "https://workersandbox.mturk.com"
TURK_PAGE = f"{TURK_ORIGIN}/projects/argora/tasks"  # answered by page.route: no network
TEXTS = [
    "Nuclear power plants emit almost no carbon dioxide while they run.",
    "Nuclear waste stays dangerous for thousands of years and nobody wants it stored nearby.",
    "The plant in the valley opened in 1975.",
    "Modern reactors are among the safest ways to produce electricity per unit of energy.",
]


def make_project() -> Project:
    project = ProjectFactory(
        name="Nuclear energy: stance",
        config={"labels": ["pro", "con", "none"]},
        guidelines="<p>Is each sentence an argument for (pro) or against (con) nuclear energy, or none?</p>",
        assignments_per_item=1,
        items_per_hit=4,
        time_estimate_seconds=60,
        reward_cents=13,
        items=[{"text": t, "topic": "nuclear energy"} for t in TEXTS],
    )
    MTurkProjectSettings.objects.create(project=project, title="Stance of sentences", description="4 sentences")
    MTurkHIT.objects.create(
        project=project,
        hit=project.hits.get(),
        mturk_hit_id=HIT_ID,
        reward_cents=13,
        max_assignments=1,
        created_at=timezone.now(),
    )
    return project


def external_url(live_server, project, **q) -> str:
    return f"{live_server.url}/mturk/external/{project.slug}/?" + urlencode(q)


@pytest.fixture
def fake_turk(settings, live_server):
    settings.ARGORA_MTURK_FAKE_TURK = True
    mturk_views.RECEIVED.clear()
    return f"{live_server.url}/mturk/_test/turk"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_preview_then_accept_in_an_iframe_and_submit_to_turk(live_server, page, fake_turk):
    project = make_project()
    # 1. preview: the task is shown, every control disabled, nothing reserved
    page.goto(external_url(live_server, project, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", hitId=HIT_ID))
    expect(page.locator("#mturk-preview")).to_be_visible()
    expect(page.locator(".hit-item")).to_have_count(4)
    expect(page.locator("#hit-submit")).to_be_disabled()
    expect(page.locator(".hit-item input[type=radio]").first).to_be_disabled()
    assert Assignment.objects.count() == 0 and Worker.objects.count() == 0

    # 2. accept: MTurk frames the page with assignmentId / hitId / workerId / turkSubmitTo
    src = external_url(
        live_server, project, assignmentId=ASSIGNMENT_ID, hitId=HIT_ID, workerId=WORKER_ID, turkSubmitTo=fake_turk
    )
    # the framing page comes from MTurk's origin: the page's CSP (frame-ancestors) lets only MTurk's hosts frame it
    mturk_page = f'<h1>MTurk</h1><iframe id="turk" src="{src}" width="1300" height="700"></iframe>'
    page.route(f"{TURK_PAGE}*", lambda route: route.fulfill(content_type="text/html", body=mturk_page))
    page.context.grant_permissions(["local-network-access"], origin=TURK_ORIGIN)  # a public page framing localhost
    page.goto(TURK_PAGE)
    frame = page.frame_locator("#turk")
    expect(frame.locator(".hit-item")).to_have_count(4)
    # the accepting worker stays provisional until MTurk confirms the assignment
    worker = Worker.objects.get(source=Worker.Source.MTURK, claimed_external_id=WORKER_ID)
    assignment = Assignment.objects.get(worker=worker)
    assert assignment.external_id == ASSIGNMENT_ID and assignment.status == Assignment.Status.RESERVED
    items = services.assignment_items(assignment)
    labels = ["pro", "con", "none", "pro"]
    for item, label in zip(items, labels):
        frame.locator(f"#item-{item.pk} input[value={label}]").check()
    expect(frame.locator("#hit-answered")).to_have_text("4 of 4 answered")
    frame.locator("#hit-submit").click()

    # 3. answers stored, then the page posts assignmentId to turkSubmitTo + /mturk/externalSubmit
    expect(frame.locator("#fake-turk")).to_have_text("MTurk stand-in received a POST")
    expect(frame.locator("#field-assignmentId")).to_have_text(ASSIGNMENT_ID)
    assert mturk_views.RECEIVED[-1]["data"]["assignmentId"] == ASSIGNMENT_ID
    assert mturk_views.RECEIVED[-1]["data"]["argoraAssignment"] == str(assignment.pk)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    stored = {r.item_id: r.data["label"] for r in Response.objects.filter(assignment=assignment)}
    assert stored == {item.pk: label for item, label in zip(items, labels)}


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_tampered_worker_id_is_refused(live_server, page, fake_turk):
    project = make_project()
    page.goto(
        external_url(
            live_server, project, assignmentId=ASSIGNMENT_ID, hitId=HIT_ID, workerId=WORKER_ID, turkSubmitTo=fake_turk
        )
    )
    expect(page.locator(".hit-item")).to_have_count(4)
    assignment = Assignment.objects.get()
    for key in "1231":
        page.keyboard.press(key)
    # someone edits the page to submit as another worker
    page.evaluate(f"""() => {{ const hit = document.getElementById('hit');
        hit.dataset.submitUrl = hit.dataset.submitUrl.replace('workerId={WORKER_ID}', 'workerId=A3FORGEDWORKER');
        document.getElementById('hit-form').action = hit.dataset.submitUrl; }}""")
    page.keyboard.press("Enter")
    expect(page.locator("#hit-errors")).to_contain_text("workerId does not match the HIT you accepted")
    assert Response.objects.count() == 0
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.RESERVED
    assert mturk_views.RECEIVED == []
    # the same forged worker id on the accept URL is refused too (the assignmentId is bound to another worker)
    response = page.goto(
        external_url(
            live_server,
            project,
            assignmentId=ASSIGNMENT_ID,
            hitId=HIT_ID,
            workerId="A3FORGEDWORKER",
            turkSubmitTo=fake_turk,
        )
    )
    assert response.status == 403
    expect(page.locator("h1")).to_contain_text("Not your HIT")
    assert Assignment.objects.count() == 1
