"""The Researcher role: a Django group whose members run studies from the browser (the studio, dashboards,
releases) without being superusers.

Each app says what a Researcher may do with its models (``researcher_permissions`` on its AppConfig: permission
codenames of that app); after every ``migrate`` -- and every ``flush``, which the test runner does between
transactional tests -- :func:`grant_researcher_permissions` creates the group and gives it exactly those, so the
role never depends on data written once by a migration. ``load_demo`` puts the demo ``expert`` account in the group.
"""

from __future__ import annotations

from django.apps import apps as global_apps
from django.db import DEFAULT_DB_ALIAS

RESEARCHER_GROUP = "Researcher"


def grant_researcher_permissions(sender, *, apps=global_apps, using=DEFAULT_DB_ALIAS, **kwargs) -> None:
    """``post_migrate`` receiver: the Researcher group gets the ``researcher_permissions`` of the app just migrated
    (``sender``). Runs after ``django.contrib.auth`` created that app's permissions (auth is installed first)."""
    codenames = tuple(getattr(sender, "researcher_permissions", ()))
    if not codenames:
        return
    try:
        group_model = apps.get_model("auth", "Group")
        permission_model = apps.get_model("auth", "Permission")
        # no model of the app in the migration state (migrated back to zero, or not yet): Django made no
        # permissions for it either (django.contrib.auth's create_permissions asks the same)
        apps.get_app_config(sender.label)
    except LookupError:  # auth is not installed or not migrated
        return
    perms = list(
        permission_model.objects.using(using).filter(content_type__app_label=sender.label, codename__in=codenames)
    )
    missing = set(codenames) - {p.codename for p in perms}
    if missing:
        raise RuntimeError(f"{sender.label}.researcher_permissions: no permission {', '.join(sorted(missing))}")
    group, _ = group_model.objects.using(using).get_or_create(name=RESEARCHER_GROUP)
    group.permissions.add(*perms)
