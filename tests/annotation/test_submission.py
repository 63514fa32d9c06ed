"""Submission: validated before any write, atomic, idempotent, timing recorded, only by the holder."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import selectors, services
from annotation.models import Assignment, Response

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(django_user_model):
    project = services.create_project(
        name="Sub",
        task_type="sentence_label",
        status="active",
        config={"labels": ["pro", "con", "none"]},
        items_per_hit=3,
        reservation_timeout_seconds=600,
    )
    services.add_items(project, [{"text": f"s{i}", "topic": "t"} for i in range(6)])
    services.build_hits(project)
    w = services.worker_for_user(django_user_model.objects.create_user("w"))
    other = services.worker_for_user(django_user_model.objects.create_user("other"))
    a = services.reserve_next_assignment(project, w)
    items = services.assignment_items(a)
    return project, w, other, a, items


def test_valid_submission_stores_everything(setup):
    project, w, _, a, items = setup
    now = a.reserved_at + timedelta(seconds=42)
    done = services.submit_assignment(
        a, w, {str(i.pk): {"label": "con"} for i in items}, feedback="fine", client_seconds=30.5, now=now
    )
    assert done.status == "submitted" and done.submitted_at == now
    assert done.work_seconds == pytest.approx(42.0) and done.client_seconds == 30.5 and done.feedback == "fine"
    assert sorted(Response.objects.filter(assignment=a).values_list("item_id", flat=True)) == sorted(
        i.pk for i in items
    )
    assert services.current_assignment(project, w) is None


def test_retried_identical_submission_is_a_noop(setup):
    _, w, _, a, items = setup
    payload = {i.pk: {"label": "pro"} for i in items}
    first = services.submit_assignment(a, w, payload)
    again = services.submit_assignment(a, w, {str(k): v for k, v in payload.items()})  # same data, str keys
    assert again.pk == first.pk and again.submitted_at == first.submitted_at
    assert Response.objects.filter(assignment=a).count() == len(items)
    with pytest.raises(services.AssignmentNotOpen):
        services.submit_assignment(a, w, {i.pk: {"label": "con"} for i in items})
    assert [r.data for r in Response.objects.filter(assignment=a)] == [{"label": "pro"}] * len(items)


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda r, items: r.update({items[0].pk: {"label": "maybe"}}), "responses.{0}.label"),
        (lambda r, items: r.pop(items[1].pk), "responses.{1}"),
        (lambda r, items: r.update({999999: {"label": "pro"}}), "responses.999999"),
        (lambda r, items: r.update({"abc": {"label": "pro"}}), "responses.abc"),
    ],
)
def test_invalid_submission_names_the_field_and_writes_nothing(setup, mutate, field):
    _, w, _, a, items = setup
    responses = {i.pk: {"label": "pro"} for i in items}
    mutate(responses, items)
    with pytest.raises(services.ValidationFailed) as exc:
        services.submit_assignment(a, w, responses)
    assert field.format(*[i.pk for i in items]) in exc.value.errors
    a.refresh_from_db()
    assert a.status == "reserved" and a.submission_key == "" and not Response.objects.exists()


def test_not_a_dict_and_bad_client_seconds(setup):
    _, w, _, a, items = setup
    with pytest.raises(services.ValidationFailed) as exc:
        services.submit_assignment(a, w, ["pro"])
    assert "responses" in exc.value.errors
    with pytest.raises(services.ValidationFailed) as exc:
        services.submit_assignment(a, w, {i.pk: {"label": "pro"} for i in items}, client_seconds=-1)
    assert "client_seconds" in exc.value.errors
    assert not Response.objects.exists()


def test_only_the_holder_may_submit(setup):
    _, _, other, a, items = setup
    with pytest.raises(services.NotYourAssignment):
        services.submit_assignment(a, other, {i.pk: {"label": "pro"} for i in items})
    assert not Response.objects.exists() and Assignment.objects.get(pk=a.pk).status == "reserved"


def test_expired_assignment_answers_are_kept_as_late_answers(setup):
    project, w, _, a, items = setup
    assert services.expire_reservations(now=timezone.now() + timedelta(seconds=601)) == 1
    done = services.submit_assignment(a, w, {i.pk: {"label": "pro"} for i in items})
    assert done.status == "late" and Response.objects.filter(assignment=a).count() == len(items)
    assert selectors.project_progress(project)["done"] == 0
    # invalid late answers are refused like any others, and nothing is written
    b = services.reserve_next_assignment(project, w)
    services.expire_reservations(now=timezone.now() + timedelta(seconds=601))
    with pytest.raises(services.ValidationFailed):
        services.submit_assignment(b, w, {i.pk: {"label": "maybe"} for i in services.assignment_items(b)})
    assert Assignment.objects.get(pk=b.pk).status == "expired" and not Response.objects.filter(assignment=b).exists()


def test_rejection_frees_the_slot(setup, django_user_model):
    project, w, _, a, items = setup
    services.submit_assignment(a, w, {i.pk: {"label": "pro"} for i in items})
    a.hit.refresh_from_db()
    assert a.hit.taken == 1
    services.set_assignment_status(a, "rejected")
    a.hit.refresh_from_db()
    assert a.hit.taken == 0
    with pytest.raises(services.AssignmentNotOpen):
        services.set_assignment_status(services.reserve_next_assignment(project, w), "approved")


def test_progress_counts(setup):
    project, w, other, a, items = setup
    services.submit_assignment(a, w, {i.pk: {"label": "pro"} for i in items})
    services.reserve_next_assignment(project, other)
    p = selectors.project_progress(project)
    assert p["items"] == 6 and p["needed"] == 18 and p["done"] == 3 and p["hits"] == 2
    assert p["assignments"]["submitted"] == 1 and p["assignments"]["reserved"] == 1
    rows = {r["worker"]: r for r in p["workers"]}
    assert rows[w.pk]["submitted"] == 1 and rows[other.pk]["submitted"] == 0 and rows[w.pk]["blocked"] is False


def test_expiry_is_a_hard_deadline_at_submit(setup):
    """Answers after ``expires_at`` never count as a submission, even when no sweep has run: they are kept as late
    answers (counted nowhere) and the slot goes back at once."""
    project, w, _, a, items = setup
    late = a.expires_at + timedelta(seconds=1)
    done = services.submit_assignment(a, w, {str(i.pk): {"label": "con"} for i in items}, now=late)
    assert done.status == "late"
    a.refresh_from_db()
    assert a.status == "late" and a.hit.taken == 0
    assert Response.objects.filter(assignment=a).count() == len(items)
    assert not selectors.counted_responses(project).exists()
    # one second before the deadline is still in time
    b = services.reserve_next_assignment(project, w, now=late)
    done = services.submit_assignment(
        b,
        w,
        {str(i.pk): {"label": "pro"} for i in services.assignment_items(b)},
        now=b.expires_at - timedelta(seconds=1),
    )
    assert done.status == "submitted"
