"""The Researcher role: a Django group whose members run studies from the browser (the studio, dashboards,
releases) without being superusers.

Each app grants the group its own model permissions in a data migration (:func:`grant`), so no app's migrations
reach into another's; ``load_demo`` puts the demo ``expert`` account in the group.
"""
from __future__ import annotations

from django.contrib.auth.management import create_permissions

RESEARCHER_GROUP = "Researcher"


def grant(app_label: str, codenames: tuple[str, ...]):
    """A ``migrations.RunPython`` function that gives the Researcher group ``codenames`` of ``app_label`` (creating
    the group and, on a fresh database, the permissions themselves, which Django otherwise adds after the last
    migration)."""

    def forwards(apps, schema_editor):
        app_config = apps.get_app_config(app_label)
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
        group_model = apps.get_model("auth", "Group")
        permission_model = apps.get_model("auth", "Permission")
        group, _ = group_model.objects.get_or_create(name=RESEARCHER_GROUP)
        perms = list(permission_model.objects.filter(content_type__app_label=app_label, codename__in=codenames))
        missing = set(codenames) - {p.codename for p in perms}
        if missing:
            raise RuntimeError(f"{app_label}: no permission {', '.join(sorted(missing))}")
        group.permissions.add(*perms)

    return forwards
