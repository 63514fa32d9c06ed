"""Projects and their items: creating a project (the task type checks its config, :func:`clean_engine` its engine
keys), its settings and status, adding items and gold items, and putting the items into HITs (:func:`build_hits`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.utils.text import slugify

from argora.errors import FieldError

from .. import selectors, teams
from ..models import ENGINE_KEYS, HIT, GoldItem, HITItem, Item, Project, new_invite_token
from ..task_types import ResponseInvalid, TaskType, get_task_type
from .errors import ProjectInvalid
from .ordering import ITEM_ORDER_MARK, item_confidence, reorder_hits

PROJECT_SETTINGS = (
    "guidelines",
    "assignments_per_item",
    "items_per_hit",
    "gold_rate",
    "max_hits_per_worker",
    "reward_cents",
    "time_estimate_seconds",
    "reservation_timeout_seconds",
    "gold_min_items",
    "gold_min_accuracy",
    "status",
)


def _unique_slug(base: str) -> str:
    base = (slugify(base) or "project")[:180]
    slug, n = base, 2
    while Project.objects.filter(slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return slug


def create_project(
    *,
    name: str,
    task_type: str,
    slug: str | None = None,
    config: dict | None = None,
    engine: dict | None = None,
    created_by=None,
    **settings: Any,
) -> Project:
    """A new project; the task type checks ``config`` (its options), :func:`clean_engine` ``engine`` (the engine's own
    keys, :data:`~annotation.models.ENGINE_KEYS`). Raises :class:`ProjectInvalid` naming the field."""
    unknown = set(settings) - set(PROJECT_SETTINGS)
    if unknown:
        raise TypeError(f"unknown project settings: {', '.join(sorted(unknown))}")
    if not name or not name.strip():
        raise ProjectInvalid("name", "give the project a name")
    try:
        tt = get_task_type(task_type)
    except KeyError as exc:
        raise ProjectInvalid("task_type", str(exc.args[0])) from None
    try:
        config = tt.checked_config(config)
    except ResponseInvalid as exc:
        raise ProjectInvalid(f"config.{exc.field}", exc.reason) from None
    engine = clean_engine(engine)
    for key, value in tt.project_defaults.items():  # the task type's defaults for what the caller left out
        if settings.get(key) is None:
            settings[key] = value
    settings = {key: value for key, value in settings.items() if value is not None}
    if slug:
        if Project.objects.filter(slug=slug).exists():
            raise ProjectInvalid("slug", f"a project with slug {slug!r} exists")
    else:
        slug = _unique_slug(name)
    project = Project(
        name=name.strip(),
        slug=slug,
        task_type=task_type,
        config=config,
        engine=engine,
        created_by=created_by,
        **settings,
    )
    _check_settings(project)
    with transaction.atomic():
        project.save()
        teams.add_creator(project, created_by)  # who made it owns it (annotation.access)
    return project


RETRAIN_NUMBERS = ("retrain_every", "retrain_max_rows", "retrain_max_steps", "retrain_max_seconds")
RETRAIN_NUMBER_MAX = 10**9


def clean_retrain_number(field: str, value: Any) -> int | None:
    """One of the retrain loop's numbers (:data:`RETRAIN_NUMBERS`; 0 = off / no limit) as a whole number between 0
    and :data:`RETRAIN_NUMBER_MAX`: an int, or its digits as text (a form's field); ``None`` / ``""``: not set (the
    setting's default). Raises :class:`ProjectInvalid` naming ``field``. The one check of these numbers: the engine
    keys of a new project (:func:`clean_engine`) and the studio's retraining page (``ml.loop``) ask it."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ProjectInvalid(field, f"must be a whole number >= 0, got {value!r}")
    if isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    elif isinstance(value, int):
        number = value
    else:
        raise ProjectInvalid(field, f"must be a whole number >= 0, got {value!r}")
    if not 0 <= number <= RETRAIN_NUMBER_MAX:
        raise ProjectInvalid(field, f"must be between 0 and {RETRAIN_NUMBER_MAX}, got {number}")
    return number


def clean_engine(engine: Any) -> dict:
    """``engine`` checked as a project's engine keys (``Project.engine``): a dict of
    :data:`~annotation.models.ENGINE_KEYS` only; the retrain loop's numbers as :func:`clean_retrain_number` takes
    them (None / "": not set) and ``retrain_kinds`` a list of kind names. The item order is checked against R by
    :func:`_check_settings`. Raises :class:`ProjectInvalid` naming ``engine[.key]``."""
    if engine is None:
        return {}
    if not isinstance(engine, dict):
        raise ProjectInvalid("engine", "expected an object {key: value}")
    unknown = set(engine) - ENGINE_KEYS
    if unknown:
        raise ProjectInvalid(
            f"engine.{sorted(unknown)[0]}", f"not an engine key (known: {', '.join(sorted(ENGINE_KEYS))})"
        )
    clean = dict(engine)
    for key in RETRAIN_NUMBERS:
        if key in clean:
            number = clean_retrain_number(f"engine.{key}", clean[key])
            if number is None:
                clean.pop(key)
            else:
                clean[key] = number
    kinds = engine.get("retrain_kinds")
    if kinds is not None and (not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds)):
        raise ProjectInvalid("engine.retrain_kinds", "must be a list of kind names")
    return clean


def _check_settings(project: Project) -> None:
    if project.assignments_per_item < 1:
        raise ProjectInvalid("assignments_per_item", "must be at least 1")
    if project.items_per_hit < 1:
        raise ProjectInvalid("items_per_hit", "must be at least 1")
    if not 0 <= project.gold_rate <= 1:
        raise ProjectInvalid("gold_rate", "must be between 0 and 1")
    if not 0 <= project.gold_min_accuracy <= 1:
        raise ProjectInvalid("gold_min_accuracy", "must be between 0 and 1")
    if project.status not in Project.Status.values:
        raise ProjectInvalid("status", f"must be one of {', '.join(Project.Status.values)}")
    try:
        selectors.clean_item_order(
            (project.engine or {}).get("item_order"), assignments_per_item=project.assignments_per_item
        )
    except FieldError as exc:
        raise ProjectInvalid(exc.field, exc.reason) from None


def set_item_order(project: Project, value) -> dict:
    """Set the order in which the project's items enter work (``Project.engine["item_order"]``: a mode of
    :data:`annotation.selectors.ITEM_ORDERS` or ``{"mode", "r_min", "r_max", "min_agreement"}``; ``None`` =
    random), then put the open HITs in that order (:func:`reorder_hits`). Raises :class:`ProjectInvalid` naming
    ``engine.item_order[.key]``; nothing is written then. Returns what :func:`reorder_hits` returns."""
    with transaction.atomic():
        locked = Project.objects.select_for_update(no_key=True).get(pk=project.pk)
        try:
            cleaned = selectors.clean_item_order(value, assignments_per_item=locked.assignments_per_item)
        except FieldError as exc:
            raise ProjectInvalid(exc.field, exc.reason) from None
        engine = dict(locked.engine or {})
        if cleaned is None or cleaned == {"mode": "random"}:
            engine.pop("item_order", None)
        else:
            engine["item_order"] = cleaned
        Project.objects.filter(pk=locked.pk).update(engine=engine)
        project.engine = locked.engine = engine
        return reorder_hits(locked)


def set_project_status(project: Project, status: str) -> Project:
    if status not in Project.Status.values:
        raise ProjectInvalid("status", f"must be one of {', '.join(Project.Status.values)}")
    if status == Project.Status.ACTIVE and not HIT.objects.filter(project=project).exists():
        raise ProjectInvalid("status", "cannot activate a project with no HITs: import its items first")
    Project.objects.filter(pk=project.pk).update(status=status)
    project.status = status
    return project


def regenerate_invite_token(project: Project) -> str:
    project.invite_token = new_invite_token()
    Project.objects.filter(pk=project.pk).update(invite_token=project.invite_token)
    return project.invite_token


@transaction.atomic
def add_items(project: Project, payloads: Iterable[dict], *, gold: Iterable[dict] | None = None) -> list[Item]:
    """Add items (payload dicts, as ``build_items`` returns them) and gold items.

    ``gold``: dicts ``{"payload": {...}, "expected": {...}, "tolerance": 0.0, "explanation": ""}`` (``"training":
    true``: a training item of the study's training phase, never in a HIT); the expected answer is validated like a
    worker's response. All or nothing.
    """
    tt = get_task_type(project.task_type)
    last = Item.objects.filter(project=project).order_by("-position").values_list("position", flat=True).first()
    position = (last or 0) + 1 if last is not None else 0
    items: list[Item] = []
    for i, payload in enumerate(payloads):
        if not isinstance(payload, dict):
            raise ProjectInvalid(f"items[{i}]", "an item payload must be an object")
        items.append(Item(project=project, payload=payload, position=position, **tt.item_links(payload)))
        position += 1
    gold_rows: list[tuple[Item, dict]] = []
    for i, spec in enumerate(gold or []):
        if not isinstance(spec, dict) or not isinstance(spec.get("payload"), dict) or "expected" not in spec:
            raise ProjectInvalid(f"gold[{i}]", 'give {"payload": {...}, "expected": {...}}')
        item = Item(
            project=project,
            payload=spec["payload"],
            is_gold=True,
            is_training=spec.get("training") is True,
            position=position,
            **tt.item_links(spec["payload"]),
        )
        position += 1
        try:
            expected = tt.validate_response(project, item, spec["expected"])
        except ResponseInvalid as exc:
            raise ProjectInvalid(f"gold[{i}].expected.{exc.field}", exc.reason) from None
        gold_rows.append(
            (
                item,
                {
                    "expected": expected,
                    "tolerance": float(spec.get("tolerance", 0.0)),
                    "explanation": str(spec.get("explanation", "")),
                },
            )
        )
    created = Item.objects.bulk_create(items + [item for item, _ in gold_rows])
    if gold_rows:
        if any(item.pk is None for item, _ in gold_rows):  # backends that do not return ids from bulk_create
            for item, _ in gold_rows:
                item.pk = Item.objects.get(project=project, position=item.position).pk
        GoldItem.objects.bulk_create([GoldItem(item=item, **fields) for item, fields in gold_rows])
    return created


def gold_from_sentences(project: Project, sentences: list, *, field: str = "gold") -> list[dict]:
    """Gold items (``{"payload", "expected"}``, as :func:`add_items` takes them) from corpus sentences whose stance
    the task type reads as the expected answer (``TaskType.gold_from_sentence``); each answer is checked as a worker's
    response. Raises :class:`ProjectInvalid` naming ``field`` when the task type takes no gold from a stance or a
    sentence's stance is no valid answer."""
    if not sentences:
        return []
    tt = get_task_type(project.task_type)
    refused = ProjectInvalid(field, f"{tt.label} items take no gold answer from a corpus stance; set it to 0")
    if type(tt).gold_from_sentence is TaskType.gold_from_sentence:
        raise refused
    gold = []
    for n, (sentence, payload) in enumerate(zip(sentences, tt.build_items(project, sentences))):
        expected = tt.gold_from_sentence(project, sentence, payload)
        if expected is None:
            raise refused
        try:
            expected = tt.validate_response(project, Item(project=project, payload=payload, is_gold=True), expected)
        except ResponseInvalid as exc:
            raise ProjectInvalid(
                field,
                f"sentence {n + 1} ({sentence.text[:60]!r}, stance {sentence.stance}) is no "
                f"valid gold answer: {exc.reason}",
            ) from None
        gold.append({"payload": payload, "expected": expected})
    return gold


def add_items_from_rows(project: Project, rows: Iterable[Any], *, gold=None) -> list[Item]:
    """Corpus rows -> payloads (through the task type) -> items."""
    return add_items(project, get_task_type(project.task_type).build_items(project, rows), gold=gold)


@transaction.atomic
def build_hits(project: Project) -> int:
    """Put every non-gold item that is in no HIT yet into new HITs of ``items_per_hit``; returns HITs created."""
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).first()  # one builder at a time per project
    loose = list(
        Item.objects.filter(project=project, is_gold=False, hit_items__isnull=True)
        .order_by("position", "id")
        .values_list("pk", flat=True)
    )
    if not loose:
        return 0
    order = selectors.item_order(project)
    if order["mode"] == "uncertainty":  # items the model is least sure of enter HITs together, and first
        confidence = item_confidence(project, loose)
        if confidence:
            loose.sort(key=lambda pk: confidence.get(pk, 1.0))
    size = project.items_per_hit
    last = (
        HIT.objects.filter(project=project, position__lt=ITEM_ORDER_MARK)
        .order_by("-position")
        .values_list("position", flat=True)
        .first()
    )
    start = 0 if last is None else last + 1
    chunks = [loose[i : i + size] for i in range(0, len(loose), size)]
    hits = HIT.objects.bulk_create([HIT(project=project, position=start + n) for n in range(len(chunks))])
    if any(h.pk is None for h in hits):
        hits = list(HIT.objects.filter(project=project, position__gte=start).order_by("position"))
    HITItem.objects.bulk_create(
        [
            HITItem(hit=hit, item_id=item_id, position=p)
            for hit, chunk in zip(hits, chunks)
            for p, item_id in enumerate(chunk)
        ]
    )
    if order["mode"] != "random":
        reorder_hits(project)
    return len(hits)
