"""The studio's Release step: which release kinds a project offers, the options each needs, and queueing the build.

Every project offers ``annotations`` (annotation/exporters.py); a task type adds its own kinds
(``TaskType.release_kinds``, registered by its package's ``release`` module). Each kind's options here are the few
a person chooses on the page; everything else is the exporter's default. The build is
:func:`corpus.releases.build_release` run by :func:`corpus.tasks.releases.build_release_task`, the same service
``manage.py export_release`` and the admin call.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from django.db import transaction
from django.urls import reverse

from annotation import access
from annotation.models import Project
from argora.errors import FieldError
from corpus import releases as corpus_releases
from corpus.models import Release
from corpus.tasks.releases import build_release_task

ANNOTATIONS = "annotations"
SPLIT_CHOICES = (
    ("none", "none: one file"),
    ("cross-topic", "cross-topic: whole topics in train / dev / test"),
    ("in-topic", "in-topic: rows shuffled with a seed"),
)


@dataclass(frozen=True)
class KindOption:
    """One option of a release kind on the page: ``name`` is the form field (and the config key it sets)."""

    name: str
    label: str
    kind: str = "bool"  # bool | choice | int
    default: object = None
    choices: tuple[tuple[str, str], ...] = ()
    help: str = ""


@dataclass(frozen=True)
class ReleaseKind:
    kind: str
    description: str
    options: tuple[KindOption, ...] = field(default_factory=tuple)


_SPLIT = (
    KindOption(
        "split",
        "Split",
        "choice",
        "cross-topic",
        SPLIT_CHOICES,
        "cross-topic: the task type's default topics (Arg-CTRL App. F for aspects; the project's "
        "config.splits for BWS)",
    ),
    KindOption("seed", "Seed (in-topic split)", "int", 13, help="the random seed of an in-topic split"),
)

# the options of each kind the studio offers (a kind not listed here has none: the exporter's defaults)
KIND_OPTIONS: dict[str, tuple[KindOption, ...]] = {
    ANNOTATIONS: (KindOption("include_gold", "Include the gold (control) items", "bool", False),),
    "aspects": _SPLIT,
    "bws": (
        _SPLIT[0],
        KindOption("seed", "Seed (in-topic split)", "int", 0, help="the random seed of an in-topic split"),
    ),
    "spans": (
        KindOption("include_unannotated", "Include arguments nobody annotated", "bool", False),
        KindOption("filters", "Apply the paper's filters (ArgU §3.1)", "bool", False),
    ),
}


def release_kinds(project: Project) -> list[ReleaseKind]:
    """The kinds ``project`` can be released as, ``annotations`` first, each with its exporter's description."""
    try:
        own = project.get_task_type().release_kinds
    except KeyError:  # a task type not installed here: its exporters say so when asked
        own = ()
    out = []
    for kind in dict.fromkeys((ANNOTATIONS, *own)):
        exporter = corpus_releases.get_exporter(kind)
        out.append(ReleaseKind(kind, exporter.description, KIND_OPTIONS.get(kind, ())))
    return out


def kind_config(project: Project, kind: str, values: dict) -> dict:
    """The release config of ``kind`` for ``project`` from the page's option ``values`` (``{option: value}``), checked
    and made explicit by the kind's exporter. Raises :class:`FieldError` naming ``kind``, an option, or ``config``."""
    offered = {k.kind: k for k in release_kinds(project)}
    if kind not in offered:
        raise FieldError("kind", f"{kind!r} is not a release kind of this project (choose one of {', '.join(offered)})")
    options = {o.name: o for o in offered[kind].options}
    config: dict = {"project": project.slug} if kind == "bws" else {"projects": [project.slug]}
    split = None
    for name, option in options.items():
        value = values.get(name, option.default)
        if option.kind == "choice" and value not in {c for c, _ in option.choices}:
            raise FieldError(name, f"one of {', '.join(c for c, _ in option.choices)}")
        if option.kind == "int" and (not isinstance(value, int) or isinstance(value, bool)):
            raise FieldError(name, "a whole number")
        if name == "split":
            split = {"mode": value}
        elif name == "seed":
            continue
        else:
            config[name] = bool(value)
    if split is not None:
        if split["mode"] == "in-topic":
            split["seed"] = values.get("seed", options["seed"].default)
        config["split"] = split
    exporter = corpus_releases.get_exporter(kind)
    try:
        return exporter.prepare(config) if exporter.prepare is not None else config
    except FieldError:
        raise
    except ValueError as exc:
        raise _named(str(exc), options) from None


def _named(message: str, options: dict) -> FieldError:
    """An exporter's ``config.split.seed: reason`` as the error of the page's field it is about."""
    key, sep, reason = message.partition(": ")
    if not sep:
        return FieldError("config", message)
    parts = key.split(".")
    for part in reversed(parts):
        if part in options:
            return FieldError(part, reason)
    return FieldError("config", message)


def project_releases(project: Project) -> list[Release]:
    """The releases that export ``project`` (its slug in their config: :func:`annotation.access.release_projects`),
    newest first, with their files."""
    ids = [
        pk
        for pk, config in Release.objects.values_list("pk", "config")
        if project.slug in access.release_projects(config)
    ]
    return list(
        Release.objects.filter(pk__in=ids)
        .select_related("creator")
        .prefetch_related("files")
        .order_by("-created_at", "-id")
    )


def start_release(
    project: Project, user, *, kind: str, name: str, version: str, options: dict, card: dict | None = None
) -> str:
    """Check a release of ``project`` and queue its build (``corpus.build_release``, once the current transaction
    commits); returns the job's id (its page: ``/studio/jobs/<id>/``, whose result links to this project's Release
    page). Nothing is queued when a value is wrong: :class:`FieldError` naming ``name``, ``version``, ``kind``, an
    option, or ``license`` / ``citation`` / ``description``."""
    access.check(user, project, access.CHANGE)
    try:
        name, version = corpus_releases.check_new_release(name, version)
    except corpus_releases.ReleaseExists as exc:
        raise FieldError("version", str(exc)) from None
    except ValueError as exc:
        field_name, _, reason = str(exc).partition(": ")
        raise FieldError(field_name if field_name in ("name", "version") else "name", reason or str(exc)) from None
    try:
        card = corpus_releases.clean_card(card)
    except ValueError as exc:
        key, _, reason = str(exc).partition(": ")
        raise FieldError(key.removeprefix("card.") if key.startswith("card.") else "description", reason) from None
    config = kind_config(project, kind, options)
    task_id = str(uuid.uuid4())
    kwargs = {
        "name": name,
        "version": version,
        "kind": kind,
        "config": config,
        "creator_id": user.pk,
        "card": card,
        "result_url": reverse("annotation:studio-release", args=[project.slug]),
    }
    transaction.on_commit(lambda: build_release_task.apply_async(kwargs=kwargs, task_id=task_id))
    return task_id
