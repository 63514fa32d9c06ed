"""The order in which items enter work (Project.engine["item_order"], annotation.services.reorder_hits): random,
uncertainty, disagreement (with adaptive R between r_min and r_max), model-human -- and the allocation guarantees
(no HIT over its cap, no worker sees an item twice) under concurrent workers, on SQLite and PostgreSQL."""

import threading
from collections import Counter

import pytest
from django.db.models import Count
from django.utils import timezone

from annotation import providers, selectors, services
from annotation.models import HIT, Assignment, HITItem, Item, Response, Worker
from annotation.studio.forms import SettingsForm
from tests.annotation.test_concurrency import run_threads
from tests.factories import ProjectFactory

LABELS = ["pro", "con", "none"]


def make_project(n=20, per_hit=5, r=3, order=None, **kw):
    engine = {} if order is None else {"item_order": order}
    return ProjectFactory(
        name="Order",
        config={"labels": LABELS},
        engine=engine,
        items=n,
        assignments_per_item=r,
        items_per_hit=per_hit,
        **kw,
    )


@pytest.fixture
def make_worker(django_user_model):
    counter = iter(range(10**6))

    def make():
        return services.worker_for_user(django_user_model.objects.create_user(f"ow{next(counter)}"))

    return make


def hit_items(hit_id):
    return list(HITItem.objects.filter(hit_id=hit_id).order_by("position").values_list("item_id", flat=True))


def hits_in_order(project):
    return list(HIT.objects.filter(project=project).order_by("position").values_list("pk", flat=True))


def work(project, worker, label_of):
    """Reserve the next HIT and answer each item with ``label_of(item_id)``; returns the HIT id (None: nothing)."""
    a = services.reserve_next_assignment(project, worker)
    if a is None:
        return None
    services.submit_assignment(a, worker, {i.pk: {"label": label_of(i.pk)} for i in services.assignment_items(a)})
    return a.hit_id


# --- the option ---------------------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "order,field",
    [
        ("fastest", "engine.item_order.mode"),
        ({"mode": "disagreement", "r_max": 5}, "engine.item_order.r_max"),  # above R = 3
        ({"mode": "disagreement", "r_min": 3, "r_max": 2}, "engine.item_order.r_min"),
        ({"mode": "disagreement", "r_min": 0}, "engine.item_order.r_min"),
        ({"mode": "disagreement", "min_agreement": 1.5}, "engine.item_order.min_agreement"),
        ({"mode": "uncertainty", "r_min": 2}, "engine.item_order.r_min"),
        ({"mode": "random", "speed": 1}, "engine.item_order.speed"),
        ([1], "engine.item_order"),
    ],
)
def test_a_bad_item_order_is_refused_naming_the_field(order, field):
    with pytest.raises(services.ProjectInvalid) as exc:
        make_project(order=order)
    assert exc.value.field == field


@pytest.mark.django_db
def test_set_item_order_validates_stores_and_reorders():
    project = make_project(order=None)
    assert selectors.item_order(project)["mode"] == "random"
    with pytest.raises(services.ProjectInvalid) as exc:
        services.set_item_order(project, {"mode": "disagreement", "r_min": 4})
    assert exc.value.field == "engine.item_order.r_min"
    project.refresh_from_db()
    assert "item_order" not in project.engine  # nothing written
    result = services.set_item_order(project, {"mode": "disagreement", "r_min": 2})
    project.refresh_from_db()
    assert project.engine["item_order"] == {"mode": "disagreement", "r_min": 2, "r_max": 3, "min_agreement": 0.7}
    assert project.config == {"labels": LABELS}  # the task type's options only
    assert result["mode"] == "disagreement"
    order = selectors.item_order(project)
    assert order["adaptive"] and order["cap"] == 3
    services.set_item_order(project, "random")
    project.refresh_from_db()
    assert "item_order" not in project.engine and project.config == {"labels": LABELS}


@pytest.mark.django_db
def test_the_settings_form_checks_the_option():
    base = {
        "guidelines": "",
        "assignments_per_item": 3,
        "items_per_hit": 5,
        "gold_rate": 0,
        "reward_cents": 0,
        "time_estimate_seconds": 0,
        "reservation_timeout_seconds": 600,
        "gold_min_items": 3,
        "gold_min_accuracy": 0.7,
    }
    form = SettingsForm({**base, "item_order": "disagreement", "r_min": 2, "r_max": 5})
    assert not form.is_valid() and "r_max" in form.errors
    form = SettingsForm({**base, "item_order": "disagreement", "r_min": 2})
    assert form.is_valid(), form.errors
    assert form.item_order_value == {"mode": "disagreement", "r_min": 2, "r_max": 3, "min_agreement": 0.7}


# --- random ---------------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_random_keeps_the_import_order(make_worker):
    project = make_project()
    before = hits_in_order(project)
    assert services.reorder_hits(project)["moved"] == 0
    assert hits_in_order(project) == before
    assert services.reserve_next_assignment(project, make_worker()).hit_id == before[0]


# --- uncertainty ----------------------------------------------------------------------------------------------------


@pytest.fixture
def confidence_by_text(monkeypatch):
    """The item_confidence slot answering from the item text: the model is least sure of the highest numbers."""

    def provider(project, item_ids):
        texts = dict(Item.objects.filter(pk__in=list(item_ids)).values_list("pk", "payload__text"))
        return {pk: 1.0 - int(texts[pk][1:]) / 100 for pk in item_ids}

    monkeypatch.setattr(providers.item_confidence, "provider", provider)


@pytest.mark.django_db
def test_uncertainty_groups_and_offers_the_least_confident_items_first(make_worker, confidence_by_text):
    project = make_project(n=20, order="uncertainty")
    first = hits_in_order(project)[0]
    texts = sorted(Item.objects.filter(pk__in=hit_items(first)).values_list("payload__text", flat=True))
    assert texts == ["s15", "s16", "s17", "s18", "s19"]  # the least confident five, together
    assert services.reserve_next_assignment(project, make_worker()).hit_id == first


@pytest.mark.django_db
def test_uncertainty_without_a_model_falls_back_to_random_and_says_so(monkeypatch):
    monkeypatch.setattr(providers.item_confidence, "provider", lambda project, ids: None)
    project = make_project(n=10, order="uncertainty")
    before = hits_in_order(project)
    result = services.reorder_hits(project)
    assert result["moved"] == 0 and "random" in result["note"]
    assert hits_in_order(project) == before


@pytest.mark.django_db
def test_uncertainty_follows_a_new_model(make_worker, monkeypatch):
    project = make_project(n=15, order="uncertainty")
    monkeypatch.setattr(providers.item_confidence, "provider", lambda project, ids: dict.fromkeys(ids, 0.9))
    last = hits_in_order(project)[-1]
    # a retrained model is unsure of the last HIT's items only
    monkeypatch.setattr(
        providers.item_confidence,
        "provider",
        lambda project, ids: {pk: (0.1 if pk in hit_items(last) else 0.9) for pk in ids},
    )
    services.reorder_hits(project)
    assert hits_in_order(project)[0] == last
    assert services.reserve_next_assignment(project, make_worker()).hit_id == last


# --- disagreement -----------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_disagreement_offers_disagreeing_items_before_new_ones(make_worker):
    project = make_project(n=15, r=3, order="disagreement")
    h1, h2, _h3 = hits_in_order(project)
    # one worker each on h1 (everyone agrees) ... by taking them in order
    agree = lambda pk: "pro"  # noqa: E731
    w1, w2 = make_worker(), make_worker()
    assert work(project, w1, agree) == h1
    assert work(project, w1, agree) == h2
    assert work(project, w2, agree) == h1
    assert work(project, w2, lambda pk: "con") == h2  # h2 now disagrees, h1 agrees
    services.reorder_hits(project)
    assert hits_in_order(project)[:2] == [h2, h1]
    assert work(project, make_worker(), agree) == h2


@pytest.mark.django_db
def test_adaptive_r_extends_only_disagreeing_hits_up_to_r_max(make_worker):
    project = make_project(n=10, r=4, order={"mode": "disagreement", "r_min": 2, "r_max": 4})
    calm, hot = hits_in_order(project)
    workers = [make_worker() for _ in range(6)]
    for w in workers[:2]:  # r_min answers on both HITs; the workers disagree on "hot" only
        assert work(project, w, lambda pk: "pro") == calm
        assert work(project, w, lambda pk, w=w: "pro" if w is workers[0] else "con") == hot
    # nothing is marked yet: both HITs stopped at r_min
    assert work(project, workers[2], lambda pk: "pro") is None
    result = services.reorder_hits(project)
    assert result["marked"] == 1
    assert HIT.objects.get(pk=hot).position >= services.ITEM_ORDER_MARK
    # the disagreeing HIT takes more, up to r_max; the agreeing one stays at r_min
    got = [work(project, w, lambda pk: "none") for w in workers[2:]]
    assert got == [hot, hot, None, None]
    assert dict(HIT.objects.filter(project=project).values_list("pk", "taken")) == {calm: 2, hot: 4}


@pytest.mark.django_db
def test_adaptive_r_settles_a_hit_that_comes_to_agree(make_worker):
    project = make_project(n=5, r=5, order={"mode": "disagreement", "r_min": 2, "r_max": 5, "min_agreement": 0.7})
    (hot,) = hits_in_order(project)
    ws = [make_worker() for _ in range(6)]
    work(project, ws[0], lambda pk: "pro")
    work(project, ws[1], lambda pk: "con")
    assert services.reorder_hits(project)["marked"] == 1
    work(project, ws[2], lambda pk: "pro")
    work(project, ws[3], lambda pk: "pro")  # 3 of 4 = 0.75 >= 0.7: settled
    assert services.reorder_hits(project)["marked"] == 0
    assert HIT.objects.get(pk=hot).position < services.ITEM_ORDER_MARK
    assert work(project, ws[4], lambda pk: "pro") is None
    assert HIT.objects.get(pk=hot).taken == 4


# --- model-human ------------------------------------------------------------------------------------------------------


def model_answers(project, hit_id, label):
    """A model annotator's answers to a HIT's items, stored as the model worker's responses (status ``model``,
    which holds no slot)."""
    worker, _ = Worker.objects.get_or_create(source=Worker.Source.MODEL, external_id=f"model-{project.pk}")
    now = timezone.now()
    a = Assignment.objects.create(
        project=project, hit_id=hit_id, worker=worker, status=Assignment.Status.MODEL, reserved_at=now, expires_at=now
    )
    Response.objects.bulk_create([Response(assignment=a, item_id=i, data={"label": label}) for i in hit_items(hit_id)])


@pytest.mark.django_db
def test_model_human_offers_items_where_the_model_and_the_humans_differ_first(make_worker):
    project = make_project(n=15, r=3, order="model-human")
    h1, h2, h3 = hits_in_order(project)
    w = make_worker()
    for _ in range(3):
        work(project, w, lambda pk: "pro")
    for h in (h1, h2, h3):
        model_answers(project, h, "con" if h == h3 else "pro")
    assert selectors.model_human_disagreement(project)[hit_items(h3)[0]] == 1.0
    assert selectors.model_human_disagreement(project)[hit_items(h1)[0]] == 0.0
    services.reorder_hits(project)
    assert hits_in_order(project)[0] == h3
    assert work(project, make_worker(), lambda pk: "none") == h3
    # the model's answers hold no slot and count in no human figure
    assert HIT.objects.get(pk=h3).taken == 2
    assert all(n == 2 for _, n in selectors.item_agreement(project, hit_items(h3)).values())


# --- the guarantees under concurrency ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("order", [{"mode": "disagreement", "r_min": 2, "r_max": 4}, "uncertainty"])
def test_concurrent_workers_and_reorders_keep_the_guarantees(django_user_model, order, confidence_by_text):
    n_items, per_hit, r_max, n_workers = 60, 3, 4, 12
    project = make_project(n=n_items, per_hit=per_hit, r=r_max, order=order)
    workers = [services.worker_for_user(django_user_model.objects.create_user(f"cw{i}")) for i in range(n_workers)]
    stop = threading.Event()

    def drain(worker):
        try:
            while work(project, worker, lambda pk: LABELS[(pk * worker.pk) % 3]) is not None:
                pass
        finally:
            stop.set() if worker is workers[-1] else None

    def reorder():
        # re-rank over and over while the workers drain the project (in production a debounced task does it at most
        # every 30 s); the short pause lets SQLite's single writer lock reach the workers on a busy machine
        while not stop.is_set():
            services.reorder_hits(project)
            stop.wait(0.05)

    run_threads(lambda w: reorder() if w is None else drain(w), [(w,) for w in workers] + [(None,)])
    services.reorder_hits(project)  # a last look: marked HITs may take more
    for w in workers:
        while work(project, w, lambda pk: "pro") is not None:
            pass
    taken = dict(HIT.objects.filter(project=project).values_list("pk", "taken"))
    slots = Counter(
        Assignment.objects.filter(project=project, status__in=Assignment.HOLDING).values_list("hit_id", flat=True)
    )
    assert taken == {pk: slots[pk] for pk in taken}  # the counter is exact
    low = order["r_min"] if isinstance(order, dict) else r_max
    assert all(low <= t <= r_max for t in taken.values()), Counter(taken.values())
    twice = (
        Response.objects.filter(assignment__project=project)
        .values("assignment__worker", "item")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
    )
    assert not twice.exists()
    assert len(set(HIT.objects.filter(project=project).values_list("position", flat=True))) == len(taken)


# --- re-ranking follows the answers -------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("order,queued", [(None, 0), ({"mode": "disagreement", "r_min": 2, "r_max": 3}, 1)])
def test_a_submission_queues_one_debounced_reorder_unless_the_order_is_random(
    make_worker, order, queued, monkeypatch, django_capture_on_commit_callbacks
):
    from django.core.cache import cache

    from annotation.tasks import reorder_hits

    calls = []
    monkeypatch.setattr(reorder_hits, "apply_async", lambda **kw: calls.append(kw))
    cache.clear()
    project = make_project(n=12, per_hit=3, r=3, order=order)
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(3):  # three submissions within the debounce window: one re-ranking
            assert work(project, make_worker(), lambda pk: LABELS[pk % 3]) is not None
    assert len(calls) == queued
    if queued:
        assert calls[0]["args"] == [project.pk]
