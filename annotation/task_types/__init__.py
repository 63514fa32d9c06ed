"""Registry of task types. A module registers its class with :func:`register`; adding a task type
touches no other task type (import it at the bottom of this file)."""
from __future__ import annotations

from .base import ResponseInvalid, TaskType

_REGISTRY: dict[str, type[TaskType]] = {}
_INSTANCES: dict[str, TaskType] = {}


def register(cls: type[TaskType]) -> type[TaskType]:
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    _REGISTRY[cls.name] = cls
    _INSTANCES.pop(cls.name, None)
    return cls


def get_task_type(name: str) -> TaskType:
    """The task type registered as ``name``; ``KeyError`` if there is none."""
    if name not in _INSTANCES:
        try:
            _INSTANCES[name] = _REGISTRY[name]()
        except KeyError:
            raise KeyError(f"unknown task type {name!r} (known: {', '.join(sorted(_REGISTRY)) or 'none'})") from None
    return _INSTANCES[name]


def all_task_types() -> list[TaskType]:
    return [get_task_type(name) for name in sorted(_REGISTRY)]


def task_type_choices() -> list[tuple[str, str]]:
    return [(t.name, t.label) for t in all_task_types()]


def _discover() -> None:
    """Import every module of this package: each task type registers itself, so adding one touches no other file."""
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        if module.name != "base" and not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")


_discover()

__all__ = ["ResponseInvalid", "TaskType", "register", "get_task_type", "all_task_types", "task_type_choices"]
