"""Slots for the access questions the lower layers (``argora``, ``corpus``) must ask but cannot answer: who is on
a project's team lives in ``annotation`` (:mod:`annotation.access`), which fills these when its app is ready.

Until it does (or without it), every slot answers for superusers only: closed, never open.

- ``team_user(user) -> bool``: may open the staff side at all (job pages).
- ``release_visible(user, release) -> bool``: may download the release's files (releases of annotation projects:
  the user may see every project the release exports; other releases: users who may make projects).
- ``visible_releases(user, queryset) -> queryset``: the releases of ``queryset`` the user may see (the admin).
"""

from __future__ import annotations

from collections.abc import Callable

_slots: dict[str, Callable] = {}


def fill(name: str, provider: Callable) -> None:
    if name not in ("team_user", "release_visible", "visible_releases"):
        raise KeyError(f"no access slot {name!r}")
    _slots[name] = provider


def is_superuser(user) -> bool:
    return bool(getattr(user, "is_authenticated", False) and user.is_active and user.is_superuser)


def team_user(user) -> bool:
    provider = _slots.get("team_user")
    return provider(user) if provider else is_superuser(user)


def release_visible(user, release) -> bool:
    provider = _slots.get("release_visible")
    return provider(user, release) if provider else is_superuser(user)


def visible_releases(user, queryset):
    provider = _slots.get("visible_releases")
    if provider:
        return provider(user, queryset)
    return queryset if is_superuser(user) else queryset.none()
