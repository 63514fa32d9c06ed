"""HTML pages of the annotation framework, through Django's test client: invite links, the HIT page and
its no-JS form POST, completion, roles (worker vs. staff) and the staff progress page."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation import selectors, services
from annotation.models import Assignment, Project, Response, Worker
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db

LABELS = ["pro", "con", "none"]
SENTENCES = [
    "Nuclear power plants emit almost no carbon dioxide while running.",
    "Nuclear waste stays dangerous for thousands of years.",
    "The plant opened in 1975.",
]


@pytest.fixture
def project():
    project = ProjectFactory(
        name="Nuclear stance",
        config={"labels": LABELS},
        guidelines="<p>Decide whether the sentence argues <b>for</b> or <b>against</b> nuclear energy.</p>",
        assignments_per_item=2,
        items_per_hit=3,
        items=[{"sentence_id": None, "text": t, "topic": "nuclear energy"} for t in SENTENCES],
    )
    assert project.hits.count() == 1
    return project


def join(client, project):
    """Follow the invite link; returns the logged-in worker."""
    resp = client.get(reverse("annotation:invite", args=[project.invite_token]))
    assert resp.status_code == 302
    assert resp["Location"] == reverse("annotation:work", args=[project.slug])
    return Worker.objects.get(user_id=client.session["_auth_user_id"])


def hit_page(client, project):
    resp = client.get(reverse("annotation:work", args=[project.slug]))
    assert resp.status_code == 200, resp.content[:500]
    return resp


def form_post(client, project, assignment, labels, feedback=""):
    data = {"assignment": assignment.pk, "feedback": feedback, "client_seconds": ""}
    for item, label in zip(services.assignment_items(assignment), labels):
        if label is not None:
            data[f"item-{item.pk}-label"] = label
    return client.post(reverse("annotation:work", args=[project.slug]), data)


def test_invite_creates_and_logs_in_a_worker_and_reuses_it(client, project, django_user_model):
    users_before = django_user_model.objects.count()
    worker = join(client, project)
    assert worker.source == Worker.Source.INVITE
    assert django_user_model.objects.count() == users_before + 1
    assert not worker.user.has_usable_password()
    # same browser session, same link: the same worker, no new account
    join(client, project)
    assert Worker.objects.count() == 1
    assert django_user_model.objects.count() == users_before + 1


def test_a_prolific_pid_in_the_link_is_recorded_but_never_logs_anyone_in(project):
    """A second browser that opens the public invite link with the victim's ?PROLIFIC_PID= gets an account of its
    own: not the victim's session, HIT or completion code."""
    from django.test import Client

    url = reverse("annotation:invite", args=[project.invite_token]) + "?PROLIFIC_PID=5f1a2b3c4d5e6f7a8b9c0d1e"
    victim_browser, attacker_browser = Client(), Client()
    assert victim_browser.get(url).status_code == 302
    victim = Worker.objects.get(user_id=victim_browser.session["_auth_user_id"])
    # recorded for the researcher, never as the platform's id: a Prolific sync could otherwise hand the real
    # participant's confirmed answers (and code) to whoever typed their PID first
    assert (victim.source, victim.external_id, victim.claimed_external_id, victim.link_id) == (
        Worker.Source.PROLIFIC,
        "",
        "",
        "5f1a2b3c4d5e6f7a8b9c0d1e",
    )
    hit_page(victim_browser, project)
    code = services.completion_code(project, victim)
    assert attacker_browser.get(url).status_code == 302
    attacker = Worker.objects.get(user_id=attacker_browser.session["_auth_user_id"])
    assert attacker.pk != victim.pk and attacker.user_id != victim.user_id and attacker.external_id == ""
    assert services.worker_for_external_id("5f1a2b3c4d5e6f7a8b9c0d1e", source="prolific") not in (victim, attacker)
    assert code not in attacker_browser.get(reverse("annotation:done", args=[project.slug])).content.decode()
    assert services.current_assignment(project, attacker) is None  # the victim's reservation stays the victim's


def test_invite_with_unknown_token_is_404_and_closed_project_is_explained(client, project):
    assert client.get("/invite/not-a-token/").status_code == 404
    services.set_project_status(project, Project.Status.CLOSED)
    resp = client.get(reverse("annotation:invite", args=[project.invite_token]))
    assert resp.status_code == 410
    assert b"closed" in resp.content
    assert Worker.objects.count() == 0


def test_hit_page_shows_items_progress_instructions_and_csrf(client, project):
    worker = join(client, project)
    resp = hit_page(client, project)
    html = resp.content.decode()
    assignment = Assignment.objects.get(worker=worker)
    assert assignment.status == Assignment.Status.RESERVED
    for text in SENTENCES:
        assert text in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert f'name="assignment" value="{assignment.pk}"' in html
    assert "0 of 3 answered" in html
    assert "This is HIT 1" in html
    assert "argues <b>for</b>" in html  # guidelines are rendered as HTML
    for item in services.assignment_items(assignment):
        for _n, label in enumerate(LABELS, start=1):
            assert f'name="item-{item.pk}-label" value="{label}"' in html
    assert re.search(r'<details class="card instructions" id="instructions" open>', html)
    # the instructions panel is open on the first visit only; reloading resumes the same assignment
    html2 = hit_page(client, project).content.decode()
    assert not re.search(r'id="instructions" open', html2)
    assert Assignment.objects.filter(worker=worker).count() == 1


def test_no_js_form_post_stores_responses_and_ends_with_the_completion_code(client, project):
    worker = join(client, project)
    hit_page(client, project)
    assignment = Assignment.objects.get(worker=worker)
    resp = form_post(client, project, assignment, ["pro", "con", "none"], feedback="clear enough")
    assert resp.status_code == 302
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.feedback == "clear enough"
    stored = {r.item_id: r.data for r in Response.objects.filter(assignment=assignment)}
    items = services.assignment_items(assignment)
    assert stored == {items[0].pk: {"label": "pro"}, items[1].pk: {"label": "con"}, items[2].pk: {"label": "none"}}
    # the only HIT is done for this worker: the next visit shows the completion page with the code
    resp = client.get(reverse("annotation:work", args=[project.slug]), follow=True)
    assert resp.redirect_chain[-1][0].startswith(reverse("annotation:done", args=[project.slug]))
    code = services.completion_code(project, worker)
    assert code in resp.content.decode()


def test_retried_form_post_does_not_double_count(client, project):
    worker = join(client, project)
    hit_page(client, project)
    assignment = Assignment.objects.get(worker=worker)
    first = form_post(client, project, assignment, ["pro", "pro", "con"])
    again = form_post(client, project, assignment, ["pro", "pro", "con"])
    assert first.status_code == again.status_code == 302
    assert Response.objects.filter(assignment=assignment).count() == 3
    assert Assignment.objects.filter(status=Assignment.Status.SUBMITTED).count() == 1
    assert selectors.project_progress(project)["done"] == 3


def test_bad_label_gets_400_page_with_the_reason_and_writes_nothing(client, project):
    worker = join(client, project)
    hit_page(client, project)
    assignment = Assignment.objects.get(worker=worker)
    items = services.assignment_items(assignment)
    resp = form_post(client, project, assignment, ["pro", "maybe", "con"])
    assert resp.status_code == 400
    html = resp.content.decode()
    # the reason is shown next to the item it concerns, and the other answers are kept
    block = re.search(rf'<li class="hit-item has-error" id="item-{items[1].pk}".*?</li>', html, re.S)
    assert block and "must be one of: pro, con, none" in block.group(0)
    assert re.search(rf'name="item-{items[0].pk}-label" value="pro" checked', html)
    assert Response.objects.count() == 0
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.RESERVED
    assert selectors.project_progress(project)["done"] == 0


def test_missing_answer_gets_400_naming_the_item(client, project):
    worker = join(client, project)
    hit_page(client, project)
    assignment = Assignment.objects.get(worker=worker)
    items = services.assignment_items(assignment)
    resp = form_post(client, project, assignment, ["pro", None, "con"])
    assert resp.status_code == 400
    block = re.search(rf'<li class="hit-item has-error" id="item-{items[1].pk}".*?</li>', resp.content.decode(), re.S)
    assert block and "label: choose a label" in block.group(0)
    assert Response.objects.count() == 0


def test_worker_cannot_submit_or_see_another_workers_assignment(client, project, django_user_model):
    from django.test import Client

    alice = join(client, project)
    hit_page(client, project)
    alices = Assignment.objects.get(worker=alice)

    bob_client = Client()
    bob = join(bob_client, project)
    bob_page = hit_page(bob_client, project).content.decode()
    bobs = Assignment.objects.get(worker=bob)
    assert bobs.pk != alices.pk
    assert f'name="assignment" value="{alices.pk}"' not in bob_page

    resp = form_post(bob_client, project, alices, ["pro", "con", "none"])
    assert resp.status_code == 403
    assert b"another worker" in resp.content
    assert Response.objects.count() == 0
    alices.refresh_from_db()
    assert alices.status == Assignment.Status.RESERVED
    # a made-up assignment id is not found at all
    resp = bob_client.post(reverse("annotation:work", args=[project.slug]), {"assignment": 999999})
    assert resp.status_code == 404


def test_workers_cannot_open_staff_pages(client, project):
    assert client.get(reverse("annotation:project-list")).status_code == 302  # anonymous -> login
    join(client, project)
    for url in (reverse("annotation:project-list"), reverse("annotation:project-progress", args=[project.slug])):
        resp = client.get(url)
        assert resp.status_code == 403, url
        assert project.invite_token not in resp.content.decode()


def test_staff_see_progress_numbers_per_worker_and_block_reasons(client, project, staff_user):
    from django.test import Client

    worker_client = Client()
    worker = join(worker_client, project)
    hit_page(worker_client, project)
    form_post(worker_client, project, Assignment.objects.get(worker=worker), ["pro", "con", "none"])
    services.block_worker(worker, "gold accuracy 20% on 5 gold items")

    client.force_login(staff_user)
    resp = client.get(reverse("annotation:project-list"))
    assert resp.status_code == 200
    assert "Nuclear stance" in resp.content.decode()
    assert "3 / 6" in resp.content.decode()

    resp = client.get(reverse("annotation:project-progress", args=[project.slug]))
    assert resp.status_code == 200
    html = resp.content.decode()
    assert re.search(r'id="progress-done">3<', html) and re.search(r'id="progress-needed">6<', html)
    assert project.invite_token in html
    row = re.search(r'<tr class="blocked">.*?</tr>', html, re.S).group(0)
    assert str(worker) in row
    assert "gold accuracy 20% on 5 gold items" in row


def test_blocked_worker_sees_a_polite_page_without_the_reason(client, project):
    worker = join(client, project)
    services.block_worker(worker, "gold accuracy 10% below 70%")
    resp = client.get(reverse("annotation:work", args=[project.slug]))
    assert resp.status_code == 403
    html = resp.content.decode()
    assert "Thank you" in html
    assert "10%" not in html
    assert Assignment.objects.filter(worker=worker).count() == 0


def test_done_page_gives_no_code_before_any_submission(client, project):
    worker = join(client, project)
    resp = client.get(reverse("annotation:done", args=[project.slug]))
    assert resp.status_code == 200
    assert services.completion_code(project, worker) not in resp.content.decode()
    assert b"Nothing submitted yet" in resp.content


def test_expired_reservation_keeps_the_answers_as_late_with_a_way_on(client, project):
    from datetime import timedelta

    from django.utils import timezone

    worker = join(client, project)
    hit_page(client, project)
    assignment = Assignment.objects.get(worker=worker)
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert services.expire_reservations() == 1
    resp = form_post(client, project, assignment, ["pro", "con", "none"])
    assert resp.status_code == 200
    assert b"kept as late answers" in resp.content and b"Get the next HIT" in resp.content
    assert Assignment.objects.get(pk=assignment.pk).status == "late"
    assert Response.objects.filter(assignment=assignment).count() == 3


def test_gold_items_are_interleaved_without_giving_them_away(client):
    project = services.create_project(
        name="With gold",
        task_type="sentence_label",
        config={"labels": LABELS},
        assignments_per_item=1,
        items_per_hit=2,
        gold_rate=0.5,
        status=Project.Status.ACTIVE,
    )
    services.add_items(
        project,
        [{"text": t, "topic": "nuclear energy"} for t in SENTENCES[:2]],
        gold=[
            {"payload": {"text": "Gold: reactors are safe.", "topic": "nuclear energy"}, "expected": {"label": "pro"}}
        ],
    )
    services.build_hits(project)
    worker = join(client, project)
    html = hit_page(client, project).content.decode()
    assignment = Assignment.objects.get(worker=worker)
    items = services.assignment_items(assignment)
    assert len(items) == 3 and sum(i.is_gold for i in items) == 1
    assert "Gold: reactors are safe." in html
    assert "is_gold" not in html and "expected" not in html
    assert form_post(client, project, assignment, ["pro", "con", "pro"]).status_code == 302
    assert Response.objects.filter(assignment=assignment).count() == 3


def test_draft_project_is_not_open_and_my_work_lists_projects(client, project):
    worker = join(client, project)
    hit_page(client, project)
    resp = client.get(reverse("annotation:my-projects"))
    assert resp.status_code == 200 and "Nuclear stance" in resp.content.decode()
    services.set_project_status(project, Project.Status.DRAFT)
    resp = client.get(reverse("annotation:work", args=[project.slug]))
    assert resp.status_code == 403 and b"Not open yet" in resp.content
    assert Assignment.objects.filter(worker=worker).count() == 1


@pytest.mark.django_db
def test_instructions_list_the_keys_of_the_projects_own_task_type(client):
    """The keyboard help comes from the task type: sentence_label lists its digit keys, aspect does not."""
    from annotation.services import create_project

    labels = create_project(
        name="Keys label", task_type="sentence_label", config={"labels": ["pro", "con"]}, status="active"
    )
    aspects = create_project(name="Keys aspect", task_type="aspect", config={}, status="active")
    label_page = client.get(f"/work/{labels.slug}/instructions/").content.decode()
    aspect_page = client.get(f"/work/{aspects.slug}/instructions/").content.decode()
    assert "choose for the highlighted item" in label_page
    assert "choose for the highlighted item" not in aspect_page
    assert "shows or hides these instructions" in aspect_page


@pytest.mark.django_db
def test_a_project_without_guidelines_shows_its_task_types_default_guidelines(client):
    from annotation.services import create_project

    aspects = create_project(name="No own guidelines", task_type="aspect", config={}, status="active")
    own = create_project(
        name="Own guidelines", task_type="aspect", config={}, status="active", guidelines="<p>Our own words.</p>"
    )
    default_page = client.get(f"/work/{aspects.slug}/instructions/").content.decode()
    own_page = client.get(f"/work/{own.slug}/instructions/").content.decode()
    assert "No written guidelines" not in default_page
    assert "aspect" in default_page.lower() and len(default_page) > len(own_page)
    assert "Our own words." in own_page
