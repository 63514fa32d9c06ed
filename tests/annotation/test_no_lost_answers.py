"""No worker loses an answer: drafts restored on reload, extend while the slot is free, late answers kept (and
accepted by staff), "stop" frees the slot at once, an invite worker survives "Log out" (cookie, recovery code), a
full project says whether places may free up."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotation import identity, selectors, services
from annotation.models import HIT, Assignment, AssignmentDraft, GoldRecord, Project, Response, Worker
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db
LABELS = ["pro", "con", "none"]


def make_project(**settings) -> Project:
    values = {"assignments_per_item": 1, "items_per_hit": 3, "reservation_timeout_seconds": 600, "status": "active"}
    values.update(settings)
    return ProjectFactory(name="Lost", config={"labels": LABELS}, items=6, text="sentence {i}", **values)


@pytest.fixture
def project():
    return make_project()


def worker_of(django_user_model, name: str) -> Worker:
    return services.worker_for_user(django_user_model.objects.create_user(name))


def answers(a, label="pro"):
    return {i.pk: {"label": label} for i in services.assignment_items(a)}


def join(client, project) -> Worker:
    response = client.get(reverse("annotation:invite", args=[project.invite_token]))
    assert response.status_code == 302
    return Worker.objects.get(user_id=client.session["_auth_user_id"])


# --- drafts ---------------------------------------------------------------------------------------------
def test_draft_is_restored_in_the_hit_page(client, project):
    worker = join(client, project)
    client.get(reverse("annotation:work", args=[project.slug]))
    a = Assignment.objects.get(worker=worker)
    first, second, _ = services.assignment_items(a)
    url = reverse("api-annotation-draft", args=[a.pk])
    body = {"fields": {str(first.pk): {"label": "con"}, str(second.pk): {"label": "none"}}, "feedback": "item 2 is odd"}
    resp = client.put(url, body, content_type="application/json")
    assert resp.status_code == 204, resp.content
    html = client.get(reverse("annotation:work", args=[project.slug])).content.decode()
    assert re.search(rf'name="item-{first.pk}-label" value="con" checked', html)
    assert re.search(rf'name="item-{second.pk}-label" value="none" checked', html)
    assert "item 2 is odd</textarea>" in html and "Your saved answers are back." in html
    assert "2 of 3 answered" in html
    # a new draft replaces the old one
    client.put(url, {"fields": {str(first.pk): {"label": "pro"}}}, content_type="application/json")
    draft = AssignmentDraft.objects.get(assignment=a)
    assert draft.responses == {str(first.pk): {"label": "pro"}} and draft.feedback == ""
    # submitting sends the answers; the draft is gone after the next sweep
    services.submit_assignment(a, worker, answers(a))
    services.expire_reservations()
    assert not AssignmentDraft.objects.exists()


def test_draft_saves_that_cross_on_the_way_keep_the_newest(client, project):
    """hit.js numbers its saves (the server's clock in ms): a slow save that lands after a newer one (the page's
    save as it closes) is dropped, not written over it; a save without a revision always wins; a bad one is a 400."""
    worker = join(client, project)
    client.get(reverse("annotation:work", args=[project.slug]))
    a = Assignment.objects.get(worker=worker)
    first = services.assignment_items(a)[0]
    url = reverse("api-annotation-draft", args=[a.pk])

    def put(label, **extra):
        return client.put(url, {"fields": {str(first.pk): {"label": label}}, **extra}, content_type="application/json")

    assert put("con", revision=2_000).status_code == 204
    assert put("pro", revision=1_000).status_code == 204  # older: dropped
    draft = AssignmentDraft.objects.get(assignment=a)
    assert draft.responses == {str(first.pk): {"label": "con"}} and draft.revision == 2_000
    assert put("none", revision=2_000).status_code == 204  # the same page's clock did not move: kept
    assert put("pro", revision=3_000).status_code == 204
    assert AssignmentDraft.objects.get(assignment=a).responses == {str(first.pk): {"label": "pro"}}
    assert put("none").status_code == 204  # no revision (an API client): written, the revision stays
    draft = AssignmentDraft.objects.get(assignment=a)
    assert draft.responses == {str(first.pk): {"label": "none"}} and draft.revision == 3_000
    for bad in (-1, "soon", 2**53, True):
        resp = put("con", revision=bad)
        assert resp.status_code == 400 and "revision" in resp.json()["errors"], (bad, resp.content)
    assert AssignmentDraft.objects.get(assignment=a).responses == {str(first.pk): {"label": "none"}}
    with pytest.raises(services.ValidationFailed) as refused:
        services.save_draft(a, worker, {}, revision=1.5)
    assert "revision" in refused.value.errors


def test_draft_refuses_what_is_not_the_workers(client, project, django_user_model):
    worker = join(client, project)
    client.get(reverse("annotation:work", args=[project.slug]))
    a = Assignment.objects.get(worker=worker)
    item = services.assignment_items(a)[0]
    url = reverse("api-annotation-draft", args=[a.pk])
    bad = [
        ({"fields": {"999999": {"label": "pro"}}}, "fields.999999"),
        ({"fields": {str(item.pk): {"label": {"x": 1}}}}, f"fields.{item.pk}"),
        ({"fields": {str(item.pk): {"label": "p" * (services.DRAFT_MAX_BYTES + 1)}}}, "fields"),
        ({"fields": "nope"}, "fields"),
        ({"fields": {}, "feedback": "x" * 10001}, "feedback"),
    ]
    for body, field in bad:
        resp = client.put(url, body, content_type="application/json")
        assert resp.status_code == 400 and field in resp.json()["errors"], (body, resp.content)
    assert not AssignmentDraft.objects.exists()
    other = APIClient()
    other.force_authenticate(django_user_model.objects.create_user("other"))
    resp = other.put(url, {"fields": {}}, format="json")
    assert resp.status_code == 403
    services.submit_assignment(a, worker, answers(a))
    resp = client.put(url, {"fields": {}}, content_type="application/json")
    assert resp.status_code == 409


# --- extend -----------------------------------------------------------------------------------------------
def test_extend_before_the_deadline_up_to_the_limit(project, django_user_model):
    w = worker_of(django_user_model, "w")
    a = services.reserve_next_assignment(project, w)
    now = a.reserved_at + timedelta(seconds=500)
    extended = services.extend_reservation(a, w, now=now)
    assert extended.expires_at == now + timedelta(seconds=600)
    limit = a.reserved_at + timedelta(seconds=services.MAX_HOLD_TIMEOUTS * 600)
    services.extend_reservation(a, w, now=limit - timedelta(seconds=100))
    assert Assignment.objects.get(pk=a.pk).expires_at == limit
    with pytest.raises(services.AssignmentNotOpen, match="cannot be held longer"):
        services.extend_reservation(a, w, now=limit - timedelta(seconds=50))
    with pytest.raises(services.NotYourAssignment):
        services.extend_reservation(a, worker_of(django_user_model, "x"), now=now)


def test_extend_after_expiry_only_while_the_slot_is_free(project, django_user_model):
    w, other = worker_of(django_user_model, "w"), worker_of(django_user_model, "other")
    a = services.reserve_next_assignment(project, w)
    later = a.expires_at + timedelta(seconds=5)
    assert services.expire_reservations(now=later) == 1
    back = services.extend_reservation(a, w, now=later)
    assert back.status == "reserved" and back.expires_at == later + timedelta(seconds=600)
    assert HIT.objects.get(pk=a.hit_id).taken == 1
    # expired again, and this time another worker takes the place (R = 1)
    much_later = back.expires_at + timedelta(seconds=5)
    services.expire_reservations(now=much_later)
    services.reserve_next_assignment(project, other, now=much_later)
    assert Assignment.objects.get(worker=other).hit_id == a.hit_id
    with pytest.raises(services.SlotTaken):
        services.extend_reservation(a, w, now=much_later)
    assert HIT.objects.get(pk=a.hit_id).taken == 1 and Assignment.objects.get(pk=a.pk).status == "expired"


def test_extend_api(client, project):
    worker = join(client, project)
    client.get(reverse("annotation:work", args=[project.slug]))
    a = Assignment.objects.get(worker=worker)
    resp = client.post(reverse("api-annotation-extend", args=[a.pk]))
    assert resp.status_code == 200 and resp.json()["assignment"] == a.pk
    assert Assignment.objects.get(pk=a.pk).expires_at > a.expires_at
    services.submit_assignment(a, worker, answers(a))
    resp = client.post(reverse("api-annotation-extend", args=[a.pk]))
    assert resp.status_code == 409 and "submitted" in resp.json()["detail"]


# --- late answers ---------------------------------------------------------------------------------------------
def test_late_answers_after_the_slot_was_taken_are_kept_apart_until_accepted(django_user_model):
    project = make_project(gold_rate=0.0)
    w, other = worker_of(django_user_model, "w"), worker_of(django_user_model, "other")
    a = services.reserve_next_assignment(project, w)
    later = a.expires_at + timedelta(seconds=1)
    services.expire_reservations(now=later)
    b = services.reserve_next_assignment(project, other, now=later)
    assert b.hit_id == a.hit_id  # the place went to the other worker
    done = services.submit_assignment(a, w, answers(a, "con"), feedback="sorry, slow", now=later)
    assert done.status == "late"
    # retried: a no-op; different answers: refused
    assert services.submit_assignment(a, w, answers(a, "con"), feedback="sorry, slow", now=later).status == "late"
    with pytest.raises(services.AssignmentNotOpen):
        services.submit_assignment(a, w, answers(a, "pro"), now=later)
    services.submit_assignment(b, other, answers(b, "pro"), now=later)
    assert set(selectors.counted_responses(project).values_list("data__label", flat=True)) == {"pro"}
    assert HIT.objects.get(pk=a.hit_id).taken == 1
    assert Response.objects.filter(assignment=a).count() == 3
    # staff accept the late answers: they count from now on
    accepted = services.accept_late_assignment(a)
    assert accepted.status == "submitted" and accepted.late_accepted_at is not None
    assert HIT.objects.get(pk=a.hit_id).taken == 2
    assert (
        sorted(selectors.counted_responses(project).values_list("data__label", flat=True)) == ["con"] * 3 + ["pro"] * 3
    )
    assert services.accept_late_assignment(a).status == "submitted"  # idempotent
    with pytest.raises(services.AssignmentNotOpen):
        services.accept_late_assignment(b)


def test_accepting_late_answers_scores_their_gold(django_user_model):
    project = make_project(gold_rate=1.0, gold_min_items=1, gold_min_accuracy=0.9)
    services.add_items(project, [], gold=[{"payload": {"text": "gold", "topic": "t"}, "expected": {"label": "pro"}}])
    w = worker_of(django_user_model, "w")
    a = services.reserve_next_assignment(project, w)
    later = a.expires_at + timedelta(seconds=1)
    assert services.submit_assignment(a, w, answers(a, "con"), now=later).status == "late"
    assert not GoldRecord.objects.exists()  # late gold answers are not scored ...
    services.accept_late_assignment(a)
    record = GoldRecord.objects.get(worker=w)  # ... until they are accepted
    assert record.correct is False and Worker.objects.get(pk=w.pk).blocked


# --- stop ------------------------------------------------------------------------------------------------------
def test_stop_gives_the_slot_back_at_once(client, project):
    worker = join(client, project)
    client.get(reverse("annotation:work", args=[project.slug]))
    a = Assignment.objects.get(worker=worker)
    assert HIT.objects.get(pk=a.hit_id).taken == 1
    resp = client.post(reverse("annotation:stop", args=[project.slug]))
    assert resp.status_code == 302 and resp["Location"] == reverse("annotation:done", args=[project.slug])
    assert Assignment.objects.get(pk=a.pk).status == "expired" and HIT.objects.get(pk=a.hit_id).taken == 0
    assert client.get(reverse("annotation:stop", args=[project.slug])).status_code == 405  # a link cannot stop


# --- the same worker after "Log out" --------------------------------------------------------------------------------
def test_logout_and_the_invite_link_again_is_the_same_worker(client, project):
    worker = join(client, project)
    client.get(reverse("annotation:work", args=[project.slug]))
    a = Assignment.objects.get(worker=worker)
    services.submit_assignment(a, worker, answers(a))
    code = services.completion_code(project, worker)
    done = client.get(reverse("annotation:done", args=[project.slug])).content.decode()
    assert code in done
    recovery = re.search(r'id="recovery-code">([^<]+)<', done).group(1)
    client.post(reverse("logout"))
    assert "_auth_user_id" not in client.session
    again = join(client, project)
    assert again.pk == worker.pk and Worker.objects.count() == 1
    assert code in client.get(reverse("annotation:done", args=[project.slug])).content.decode()
    # another browser (no cookie): the recovery code makes it this worker
    other = Client()
    resp = other.post(reverse("annotation:recover"), {"code": "W1-AAAA-BBBB-CCCC"})
    assert resp.status_code == 400 and b"not a recovery code we know" in resp.content
    resp = other.post(reverse("annotation:recover"), {"code": recovery.lower().replace("-", " ")})
    assert resp.status_code == 302
    assert int(other.session["_auth_user_id"]) == worker.user_id
    assert code in other.get(reverse("annotation:done", args=[project.slug])).content.decode()
    # a revoked code stops working
    identity.revoke_recovery_code(worker)
    assert Client().post(reverse("annotation:recover"), {"code": recovery}).status_code == 400


def test_recovery_attempts_are_limited_per_address(client):
    for _ in range(identity.RECOVERY_ATTEMPTS):
        assert client.post(reverse("annotation:recover"), {"code": "W1-AAAA-BBBB-CCCC"}).status_code == 400
    assert client.post(reverse("annotation:recover"), {"code": "W1-AAAA-BBBB-CCCC"}).status_code == 429


def test_accounts_with_a_password_are_never_remembered_or_recovered(client, project, django_user_model, rf):
    staff = django_user_model.objects.create_user("boss", password="pw-boss-1234", is_staff=True)
    worker = services.worker_for_user(staff)
    assert identity.recovery_code(worker) == ""
    client.force_login(staff)
    resp = client.get(reverse("annotation:invite", args=[project.invite_token]))
    assert identity.COOKIE not in resp.cookies
    # a cookie naming such a user (forged or old) logs nobody in
    request = rf.get("/")
    signer = resp  # any response can sign a cookie the way the app does
    signer.set_signed_cookie(identity.COOKIE, str(staff.pk), salt=identity.COOKIE_SALT)
    request.COOKIES[identity.COOKIE] = signer.cookies[identity.COOKIE].value
    assert identity.remembered_user(request) is None
    request.COOKIES[identity.COOKIE] = "1:forged"
    assert identity.remembered_user(request) is None


# --- a full project says whether places may free up ------------------------------------------------------------------
def test_full_project_says_when_places_may_come_back(client, django_user_model):
    project = make_project()
    holders = [worker_of(django_user_model, f"h{i}") for i in range(2)]
    held = [services.reserve_next_assignment(project, w) for w in holders]
    join(client, project)
    resp = client.get(reverse("annotation:work", args=[project.slug]))
    assert resp.status_code == 302 and "finished=1" in resp["Location"]
    html = " ".join(client.get(resp["Location"]).content.decode().split())
    assert "2 HITs may become free again if their workers do not finish in time" in html
    assert f"{min(a.expires_at for a in held):%H:%M} UTC" in html
    for w, a in zip(holders, held):
        services.submit_assignment(a, w, answers(a))
    html = client.get(resp["Location"]).content.decode()
    assert "has all the answers it needs" in html


def test_paused_project_hands_out_no_hits(client, project, django_user_model):
    services.set_project_status(project, Project.Status.PAUSED)
    resp = client.get(reverse("annotation:invite", args=[project.invite_token]))
    assert resp.status_code == 503 and b"paused" in resp.content
    with pytest.raises(services.ProjectNotActive):
        services.reserve_next_assignment(project, worker_of(django_user_model, "p"))
