"""The raw reads of the one-request-per-HIT path (``annotation.rawsql``: token auth, the submitted assignment with its
project, phases and items, the reservation with its HIT's items) build the instances the ORM builds: every concrete
field equal, values converted as the ORM converts them (JSON, aware datetimes, booleans on SQLite), missing outer
rows as ``None``. Runs on SQLite and on PostgreSQL (whichever DATABASE_URL names)."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from annotation import selectors, services
from annotation.auth import WorkerTokenAuthentication, cached_worker
from annotation.models import Assignment, HITItem, Item, StudyPhases
from tests.factories import ProjectFactory


def fields(obj):
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def make_project(slug, **kw):
    return ProjectFactory(
        name=slug,
        slug=slug,
        config={"labels": ["pro", "con ✓"]},
        items=[{"text": f"s{i} «quoted» ✓", "topic": "t", "nested": {"n": i, "l": [1, None]}} for i in range(9)],
        items_per_hit=3,
        assignments_per_item=2,
        **kw,
    )


@pytest.mark.django_db
def test_the_submitted_assignment_is_read_with_its_project_phases_and_items_as_the_orm_reads_them(
    django_user_model, django_assert_num_queries
):
    project = make_project("raw")
    StudyPhases.objects.create(
        project=project,
        survey_enabled=True,
        pass_threshold=0.75,
        survey_questions=[{"id": "q1", "text": "Why?", "kind": "text"}],
    )
    worker = services.worker_for_user(django_user_model.objects.create_user("alice"))
    held = services.reserve_next_assignment(project, worker)
    services.save_draft(held, worker, {}, feedback="x")

    read = services.submittable_assignment(held.pk)
    orm = Assignment.objects.select_related("project", "project__phases").get(pk=held.pk)
    assert fields(read) == fields(orm)
    assert read.reserved_at.tzinfo is not None and read.expires_at > read.reserved_at
    assert fields(read.project) == fields(orm.project) and read.project.config["labels"] == ["pro", "con ✓"]
    with django_assert_num_queries(0):  # read with the assignment
        phases = selectors.phase_config(read.project)
    assert fields(phases) == fields(orm.project.phases) and phases.survey_enabled is True
    assert read.has_gold is False
    hit_items = [
        hi.item for hi in HITItem.objects.filter(hit_id=held.hit_id).select_related("item").order_by("position")
    ]
    assert [fields(i) for i in services.items.items_read(read).hit_items] == [fields(i) for i in hit_items]
    assert services.items.items_read(read).hit_items[0].payload["nested"]["l"] == [1, None]
    assert [i.pk for i in services.assignment_items(read)] == [i.pk for i in hit_items]

    with pytest.raises(Assignment.DoesNotExist):
        services.submittable_assignment(held.pk + 1000)


@pytest.mark.django_db
def test_no_phases_row_reads_as_none_and_gold_items_are_flagged(django_user_model, django_assert_num_queries):
    project = make_project("raw-gold", gold_rate=0.34)  # one gold item per HIT of 3
    services.add_items(project, [], gold=[{"payload": {"text": "gold", "topic": "t"}, "expected": {"label": "pro"}}])
    gold = Item.objects.get(project=project, is_gold=True)
    worker = services.worker_for_user(django_user_model.objects.create_user("bob"))
    held = services.reserve_next_assignment(project, worker)
    read = services.submittable_assignment(held.pk)
    with django_assert_num_queries(0):  # no row, read as none with the assignment
        assert selectors.phase_config(read.project) is None
    assert read.has_gold is True
    items = services.assignment_items(read)
    assert gold.pk in [i.pk for i in items] and len(items) == 4
    assert [i.pk for i in items] == [i.pk for i in services.assignment_items(Assignment.objects.get(pk=held.pk))]


@pytest.mark.django_db
def test_a_reservation_comes_with_its_hits_items_in_order(django_user_model):
    project = make_project("raw-next")
    worker = services.worker_for_user(django_user_model.objects.create_user("carol"))
    held = services.reserve_next_assignment(project, worker)
    expected = list(HITItem.objects.filter(hit_id=held.hit_id).order_by("position").values_list("item_id", flat=True))
    assert [i.pk for i in services.items.items_read(held).hit_items] == expected and len(expected) == 3
    assert fields(Assignment.objects.get(pk=held.pk)) == fields(held)


@pytest.mark.django_db
def test_token_auth_reads_the_user_and_worker_the_orm_reads(django_user_model):
    user = django_user_model.objects.create_user("dave", email="d@example.org", first_name="Dävé")
    key = Token.objects.create(user=user).key
    read, token = WorkerTokenAuthentication().authenticate_credentials(key)
    assert fields(read) == fields(get_user_model().objects.get(pk=user.pk)) and token.key == key
    assert token.user is read and fields(token) == fields(Token.objects.get(key=key))
    assert cached_worker(read) == (True, None)  # no worker row yet: known to be none
    worker = services.worker_for_user(read)
    read, _ = WorkerTokenAuthentication().authenticate_credentials(key)
    known, cached = cached_worker(read)
    assert known and fields(cached) == fields(type(worker).objects.get(pk=worker.pk))


@pytest.mark.django_db
def test_instances_are_built_as_from_db_builds_them_and_init_receivers_are_honoured(django_user_model):
    """``rawsql.instance`` builds an instance without ``Model.__init__`` only where nothing could tell: the instance
    holds the same attributes as one from the ORM, counts as saved in this database (a save updates, a related
    object loads), and a model whose ``post_init`` has a receiver is built through ``from_db``, receiver called."""
    from django.db import connection
    from django.db.models.signals import post_init

    from annotation import rawsql

    project = make_project("raw-inst")
    worker = services.worker_for_user(django_user_model.objects.create_user("erin"))
    held = services.reserve_next_assignment(project, worker)
    read = services.items.items_read(held).hit_items[0]
    orm = Item.objects.get(pk=read.pk)
    assert {k: v for k, v in vars(read).items() if k != "_state"} == {
        k: v for k, v in vars(orm).items() if k != "_state"
    }
    assert (read._state.adding, read._state.db) == (False, orm._state.db) and read == orm
    assert read.project == project and read.project.slug == "raw-inst"
    read.payload = {**read.payload, "text": "changed"}
    read.save()
    assert Item.objects.count() == 9 and Item.objects.get(pk=read.pk).payload["text"] == "changed"

    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance.pk)

    post_init.connect(receiver, sender=Item)
    rawsql.forget(connection)  # a receiver belongs in an app's ready(), before any read
    try:
        again = services.submittable_assignment(held.pk)
        items = services.assignment_items(again)
    finally:
        post_init.disconnect(receiver, sender=Item)
        rawsql.forget(connection)
    assert sorted(seen) == sorted(i.pk for i in items) and len(items) == 3
    assert rawsql._layout(Item, connection)[3] is True
