"""Registry of task types: one package per task type, found without naming it anywhere else.

A task type is a package (``annotation/task_types/<name>/``, or any importable package named in the setting
``ARGORA_TASK_TYPE_PACKAGES``) with a module ``task_type.py`` that defines a :class:`~.base.TaskType` subclass and
registers it with :func:`register`. Every such package is also a Django app labelled by its folder's name (the
settings install them all: ``argora.settings.task_type_apps``), so what Django finds in an app it finds there, and
what else the package holds is found by module name, the way Django finds an app's ``admin`` (:func:`package_modules`):

=======================  ======================================================================================
``apps``                 its ``AppConfig`` where it needs one (a label other than the folder's name, the Researcher
                         role's ``researcher_permissions``); without one Django makes the default
``models``               its models, in its own app (table ``<label>_<model>``), with its ``migrations/``
``management/commands/`` its ``manage.py`` commands
``urls``                 ``urlpatterns`` of its staff pages, included by ``annotation/urls.py`` (namespace
                         ``annotation``)
``release``              release kinds (:func:`corpus.releases.register_exporter`), imported with
                         ``annotation.exporters``
``tasks``                Celery tasks, imported with ``annotation.tasks``
``receivers``            signal receivers, imported by ``annotation``'s ``ready()``
``sources``              where its items come from: upload formats and corpus selections, each with a preview (no
                         writes) and an all-or-nothing write (:func:`sources_of`; the contract is in :mod:`.base`),
                         read by the studio
``templates/``           templates named ``task_types/<package>/<file>`` (:class:`annotation.task_types.assets.Loader`;
                         Django's own app-directories loader skips them)
``static/``              static files named ``task_types/<package>/<file>``
                         (:class:`annotation.task_types.assets.Finder`; Django's own app-directories finder skips them)
=======================  ======================================================================================

Packages here without a ``task_type`` module (``ratings``: what the two rating task types share) are support
packages: apps too, their modules, commands, templates and static files are found the same way.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from pathlib import Path
from types import ModuleType

from django.conf import settings

from .base import ResponseInvalid, TaskType

_REGISTRY: dict[str, type[TaskType]] = {}
_INSTANCES: dict[str, TaskType] = {}
_PACKAGES: dict[str, str] = {}  # short name -> dotted path of every known package (built-in and loaded)
_DISCOVERED = False
_HERE = Path(__file__).resolve().parent


def register(cls: type[TaskType]) -> type[TaskType]:
    """Class decorator: make ``cls`` the task type named ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    package = cls.__module__.rpartition(".")[0] or cls.__module__
    cls.package = package
    _PACKAGES.setdefault(package.rpartition(".")[2], package)
    _REGISTRY[cls.name] = cls
    _INSTANCES.pop(cls.name, None)
    return cls


def unregister(name: str) -> None:
    """Forget the task type ``name`` (projects of that type then fail to load it, like an uninstalled plug-in)."""
    _REGISTRY.pop(name, None)
    _INSTANCES.pop(name, None)


def _builtin_packages() -> dict[str, str]:
    return {m.name: f"{__name__}.{m.name}" for m in pkgutil.iter_modules([str(_HERE)]) if m.ispkg}


def load_package(dotted: str) -> None:
    """Import the task type package ``dotted`` (its ``task_type`` module registers it)."""
    _PACKAGES[dotted.rpartition(".")[2]] = dotted
    importlib.import_module(f"{dotted}.task_type")


def autodiscover() -> None:
    """Import every task type package once: the built-in ones under this folder, then those named in
    ``ARGORA_TASK_TYPE_PACKAGES``."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True
    for name, dotted in _builtin_packages().items():
        _PACKAGES.setdefault(name, dotted)
        if (_HERE / name / "task_type.py").exists():
            importlib.import_module(f"{dotted}.task_type")
    for dotted in getattr(settings, "ARGORA_TASK_TYPE_PACKAGES", ()):
        load_package(dotted)


def packages() -> dict[str, str]:
    """``{short name: dotted path}`` of every task type and support package (without importing any)."""
    return {**_builtin_packages(), **_PACKAGES}


def package_dir(short_name: str) -> Path | None:
    """The folder of a known package, found without importing it (template and static lookups)."""
    dotted = packages().get(short_name)
    if dotted is None:
        return None
    spec = importlib.util.find_spec(dotted)
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def package_modules(module: str) -> list[ModuleType]:
    """Import ``<package>.<module>`` of every package that has one (e.g. ``"urls"``, ``"release"``), in name order."""
    out = []
    for _name, dotted in sorted(packages().items()):
        if importlib.util.find_spec(f"{dotted}.{module}") is not None:
            out.append(importlib.import_module(f"{dotted}.{module}"))
    return out


def sources_of(name: str) -> ModuleType | None:
    """The ``sources`` module of the task type ``name`` (its upload formats and corpus selections; see
    :mod:`.base`), found among :func:`package_modules` by its package; ``None`` when the package has none."""
    package = get_task_type(name).package
    return next((m for m in package_modules("sources") if m.__name__.rpartition(".")[0] == package), None)


def get_task_type(name: str) -> TaskType:
    """The task type registered as ``name``; ``KeyError`` if there is none."""
    autodiscover()
    if name not in _INSTANCES:
        try:
            _INSTANCES[name] = _REGISTRY[name]()
        except KeyError:
            raise KeyError(f"unknown task type {name!r} (known: {', '.join(sorted(_REGISTRY)) or 'none'})") from None
    return _INSTANCES[name]


def all_task_types() -> list[TaskType]:
    autodiscover()
    return [get_task_type(name) for name in sorted(_REGISTRY)]


def task_type_choices() -> list[tuple[str, str]]:
    return [(t.name, t.label) for t in all_task_types()]


__all__ = [
    "ResponseInvalid",
    "TaskType",
    "all_task_types",
    "autodiscover",
    "get_task_type",
    "load_package",
    "package_dir",
    "package_modules",
    "packages",
    "register",
    "sources_of",
    "task_type_choices",
    "unregister",
]
