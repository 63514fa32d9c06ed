"""tests/factories.py makes its rows through the engine's services, as the tests that use it assume."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.models import HIT, Item
from tests.factories import HITFactory, ItemFactory, ProjectFactory, UserFactory, WorkerFactory

pytestmark = pytest.mark.django_db


def test_a_project_gets_its_items_gold_and_hits_from_the_services():
    project = ProjectFactory(items=7, gold=2, items_per_hit=3, gold_rate=0.0)
    assert project.status == "active" and project.config == {"labels": ["pro", "con", "none"]}
    assert Item.objects.filter(project=project, is_gold=False).count() == 7
    assert Item.objects.filter(project=project, is_gold=True, gold__expected={"label": "pro"}).count() == 2
    assert sorted(h.items.count() for h in HIT.objects.filter(project=project)) == [1, 3, 3]
    bare = ProjectFactory(items=0, build=False, name="Empty")
    assert not bare.items.exists() and not bare.hits.exists() and bare.slug != project.slug


def test_a_worker_is_the_one_the_hit_pages_would_make_and_bare_rows_link_up():
    user = UserFactory(password="pw-factory-123")
    assert user.check_password("pw-factory-123")
    worker = WorkerFactory(user=user)
    assert services.worker_for_user(user).pk == worker.pk
    project = ProjectFactory(items=0, build=False)
    items = ItemFactory.create_batch(2, project=project)
    hit = HITFactory(project=project, items=items)
    assert list(hit.hit_items.order_by("position").values_list("item_id", flat=True)) == [i.pk for i in items]
