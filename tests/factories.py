"""Test data factories (factory_boy): one place that knows how a test makes a project with items and HITs, a worker
or a user, instead of a ``make_project`` copy in each module.

Projects, items, HITs and workers are made through the engine's own services (``create_project``, ``add_items``,
``build_hits``, ``worker_for_user``), not as bare rows, so a test's data passes the same checks as a researcher's
and a change to the engine's rules reaches every test at once::

    project = ProjectFactory(items=10, gold=2, items_per_hit=3)      # active sentence_label, 10 items, 2 gold, HITs
    project = ProjectFactory(items=0)                                # no items, no HITs
    worker = WorkerFactory()                                         # a Worker of a new Django user
    hits = HITFactory.create_batch(2, project=project)               # bare HIT rows (reading-side tests)
"""

from __future__ import annotations

from typing import Any

import factory
from django.contrib.auth import get_user_model
from factory.django import DjangoModelFactory

from annotation import services
from annotation.models import HIT, Item, Project, Worker

LABELS = ["pro", "con", "none"]


def sentence_payloads(n: int, *, text: str = "s{i}", topic: str = "t", start: int = 0) -> list[dict]:
    """``n`` sentence_label payloads: ``text`` with ``{i}`` replaced by the item's number."""
    return [{"text": text.format(i=i), "topic": topic} for i in range(start, start + n)]


def gold_rows(n: int, *, expected: dict | None = None, text: str = "g{i}", topic: str = "t") -> list[dict]:
    """``n`` gold items for ``services.add_items(gold=...)``, each expecting ``expected`` (``{"label": "pro"}``)."""
    answer = expected if expected is not None else {"label": "pro"}
    return [{"payload": {"text": text.format(i=i), "topic": topic}, "expected": dict(answer)} for i in range(n)]


class UserFactory(DjangoModelFactory):
    class Meta:
        model = get_user_model()

    username = factory.Sequence(lambda n: f"factory-user-{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")

    @classmethod
    def _create(cls, model_class, *args, password: str | None = None, **kwargs):
        """Through ``create_user`` (a hashed password, or an unusable one), as the sign-up paths make users."""
        return cls._get_manager(model_class).create_user(*args, password=password, **kwargs)


class WorkerFactory(DjangoModelFactory):
    """The Worker of a Django user (``services.worker_for_user``: the row the HIT pages make on first use)."""

    class Meta:
        model = Worker

    user = factory.SubFactory(UserFactory)
    source = Worker.Source.LOCAL

    @classmethod
    def _create(cls, model_class, *args, user=None, source=Worker.Source.LOCAL, **kwargs):
        return services.worker_for_user(user, source=source)


class ProjectFactory(DjangoModelFactory):
    """An active project (sentence_label with :data:`LABELS` unless told) made by ``services.create_project``, with
    ``items`` items and ``gold`` gold items added by ``services.add_items`` and put into HITs by
    ``services.build_hits`` (``build=False``: no HITs yet).

    ``items``: a count (sentence_label payloads ``text`` / ``topic``, ``{i}`` numbered) or a list of payloads;
    ``gold``: a count (:func:`gold_rows`, expecting ``gold_expected``) or a list of gold dicts. Every other keyword is
    a project setting of ``create_project`` (``assignments_per_item``, ``items_per_hit``, ``gold_rate``, ...), or its
    ``engine`` (the engine's keys: ``item_order``, ``retrain_every``, ...; task-type options go in ``config``)."""

    class Meta:
        model = Project

    name = "Study"
    slug = None  # create_project makes one from the name, unique
    task_type = "sentence_label"
    # the labels are sentence_label's option: another task type starts from its own defaults (config_keys)
    config = factory.LazyAttribute(lambda o: {"labels": list(LABELS)} if o.task_type == "sentence_label" else {})
    status = Project.Status.ACTIVE

    @classmethod
    def _create(
        cls,
        model_class,
        *args,
        items: int | list = 10,
        gold: int | list = 0,
        build: bool = True,
        text: str = "s{i}",
        topic: str = "t",
        gold_expected: dict | None = None,
        **kwargs: Any,
    ) -> Project:
        project = services.create_project(**kwargs)
        payloads = sentence_payloads(items, text=text, topic=topic) if isinstance(items, int) else list(items)
        golds = gold_rows(gold, expected=gold_expected, topic=topic) if isinstance(gold, int) else list(gold)
        if payloads or golds:
            services.add_items(project, payloads, gold=golds or None)
        if build:
            services.build_hits(project)
        return project


class ItemFactory(DjangoModelFactory):
    """A bare Item row (no task-type check; for reading-side tests that write rows directly)."""

    class Meta:
        model = Item

    project = factory.SubFactory(ProjectFactory, items=0)
    payload = factory.Sequence(lambda n: {"text": f"s{n}", "topic": "t"})
    position = factory.Sequence(lambda n: n)


class HITFactory(DjangoModelFactory):
    """A bare HIT row (``items``: Items to put in it, in order)."""

    class Meta:
        model = HIT
        skip_postgeneration_save = True

    project = factory.SubFactory(ProjectFactory, items=0)
    position = factory.Sequence(lambda n: 1000 + n)

    @factory.post_generation
    def items(hit, create, extracted, **kwargs):
        from annotation.models import HITItem

        for position, item in enumerate(extracted or ()):
            HITItem.objects.create(hit=hit, item=item, position=position)
