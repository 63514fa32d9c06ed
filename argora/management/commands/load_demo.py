"""``manage.py load_demo``: the demo corpus and accounts (what ``make demo`` loads). Idempotent.

Creates the demo accounts, then calls every installed app's optional ``<app>.demo.load(stdout)`` hook in the order of
``INSTALLED_APPS``: the corpus imports the files in ``argora/demo_data/`` (:mod:`corpus.demo`; content hashes make a
second run add nothing), then the apps above it add theirs (e.g. annotation's demo project) without touching this
command. A hook must be idempotent too; a bad demo file exits with status 2 and ``file:line: reason``. An app's
optional ``<app>.demo.links()`` gives ``(path, what)`` pairs (annotation: every active project's invite link) that
``manage.py run_demo`` prints as full URLs at the end of its start-up output.

Accounts (``ARGORA_DEMO_PASSWORD`` replaces all passwords):

==========  ===============  =======================================================
username    password         role
==========  ===============  =======================================================
admin       argora-admin     superuser
expert      argora-expert    researcher (staff, in the Researcher group: the studio)
worker1     argora-worker    plain user (crowdworker)
worker2     argora-worker    plain user (crowdworker)
==========  ===============  =======================================================

Existing accounts keep their password unless ``--reset-passwords`` is given.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from dataclasses import dataclass

from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction

from argora.errors import FileLineError, command_error
from argora.roles import RESEARCHER_GROUP


@dataclass(frozen=True)
class DemoAccount:
    username: str
    default_password: str
    role: str
    is_staff: bool = False
    is_superuser: bool = False
    groups: tuple[str, ...] = ()

    @property
    def password(self) -> str:
        return os.environ.get("ARGORA_DEMO_PASSWORD") or self.default_password


DEMO_ACCOUNTS = (
    DemoAccount("admin", "argora-admin", "superuser", is_staff=True, is_superuser=True),
    DemoAccount("expert", "argora-expert", "researcher", is_staff=True, groups=(RESEARCHER_GROUP,)),
    DemoAccount("worker1", "argora-worker", "crowdworker"),
    DemoAccount("worker2", "argora-worker", "crowdworker"),
)


def ensure_accounts(reset_passwords: bool = False) -> dict[str, bool]:
    """Create the demo accounts that are missing; returns ``{username: created}``."""
    User = get_user_model()
    created = {}
    with transaction.atomic():
        for account in DEMO_ACCOUNTS:
            user, was_created = User.objects.get_or_create(
                username=account.username,
                defaults={
                    "email": f"{account.username}@demo.argora.invalid",
                    "is_staff": account.is_staff,
                    "is_superuser": account.is_superuser,
                },
            )
            if was_created or reset_passwords:
                user.set_password(account.password)
            if user.is_staff != account.is_staff or user.is_superuser != account.is_superuser or not user.is_active:
                user.is_staff, user.is_superuser, user.is_active = account.is_staff, account.is_superuser, True
            user.save()
            for name in account.groups:
                user.groups.add(Group.objects.get_or_create(name=name)[0])
            created[account.username] = was_created
    return created


def _app_demo_modules():
    """``(app label, its demo module)`` of every installed app that has a ``demo`` module, in INSTALLED_APPS order."""
    for config in apps.get_app_configs():
        module_name = f"{config.name}.demo"
        if importlib.util.find_spec(config.name) is None:
            continue
        try:
            spec = importlib.util.find_spec(module_name)
        except ModuleNotFoundError:
            spec = None
        if spec is not None:
            yield config.label, importlib.import_module(module_name)


def run_app_demo_hooks(stdout) -> list[str]:
    """Call ``<app>.demo.load(stdout)`` for every installed app that has one; returns the apps called."""
    called = []
    for label, module in _app_demo_modules():
        load = getattr(module, "load", None)
        if callable(load):
            load(stdout)
            called.append(label)
    return called


def app_demo_links() -> list[tuple[str, str]]:
    """``(path, what)`` from every installed app's optional ``<app>.demo.links()`` (e.g. annotation's invite links),
    which ``manage.py run_demo`` prints as full URLs of the running server."""
    found = []
    for _, module in _app_demo_modules():
        links = getattr(module, "links", None)
        if callable(links):
            found.extend(links())
    return found


def accounts_table() -> str:
    lines = [f"  {'account':<10} {'password':<24} role"]
    for account in DEMO_ACCOUNTS:
        lines.append(f"  {account.username:<10} {account.password:<24} {account.role}")
    return "\n".join(lines)


class Command(BaseCommand):
    help = "Load the demo corpus (argora/demo_data/) and the demo accounts; safe to run again."

    def add_arguments(self, parser):
        parser.add_argument(
            "--reset-passwords", action="store_true", help="set the demo passwords on existing demo accounts too"
        )

    def handle(self, *args, reset_passwords=False, **options):
        created = ensure_accounts(reset_passwords=reset_passwords)
        try:
            hooks = run_app_demo_hooks(self.stdout)  # corpus first (its files), then the apps that build on it
        except FileLineError as exc:
            raise command_error(exc) from exc
        if hooks:
            self.stdout.write(f"Demo data from apps: {', '.join(hooks)}")
        made = [name for name, was_created in created.items() if was_created]
        self.stdout.write(f"Demo accounts ({'created: ' + ', '.join(made) if made else 'all present'}):")
        self.stdout.write(accounts_table())
        if not reset_passwords and len(made) < len(created):
            self.stdout.write("  (existing accounts keep their password; --reset-passwords sets the ones above)")
        self.stdout.write(self.style.SUCCESS("Demo data loaded."))
