"""What every page's navigation needs to know of the user: whether the staff side is theirs
(:func:`argora.access.team_user`, asked only when a page shows the bar)."""

from __future__ import annotations

from django.utils.functional import SimpleLazyObject

from . import access


def staff_nav(request) -> dict:
    user = getattr(request, "user", None)
    return {"team_user": SimpleLazyObject(lambda: bool(user is not None and access.team_user(user)))}
