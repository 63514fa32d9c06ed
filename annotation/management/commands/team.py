"""``manage.py team <slug>``: a project's team (members and roles) and its audit log; ``--add USER --role ROLE``,
``--remove USER``. The operator's way to give a project made by a command (no maker recorded) or before teams
existed its owners; the studio's team page does the same in the browser (``annotation.teams``)."""

from django.core.management.base import BaseCommand

from annotation import access, teams
from annotation.models import Project
from argora.errors import command_error


class Command(BaseCommand):
    help = "Show a project's team and audit log; add a member (--add USER --role owner|editor|viewer) or remove one."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--add", metavar="USER", help="put USER in the team (or give a member --role)")
        parser.add_argument("--role", default="viewer", choices=list(access.Role.values))
        parser.add_argument("--remove", metavar="USER", help="take USER out of the team")

    def handle(self, *args, slug, add=None, role="viewer", remove=None, **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise command_error(teams.TeamRefused("slug", f"no project with slug {slug!r}"))
        try:
            if add:
                teams.add_member(project, add, role, by=None)
            if remove:
                member = access.members(project).filter(user__username=remove).first()
                if member is None:
                    raise teams.TeamRefused("user", f"{remove!r} is not in the team of {slug!r}")
                teams.remove_member(member, by=None)
        except teams.TeamRefused as exc:
            raise command_error(exc) from None
        members = list(access.members(project))
        self.stdout.write(
            f"team of {slug}: "
            + (", ".join(f"{m.user.get_username()} ({m.role})" for m in members) or "nobody yet (superusers only)")
        )
        for entry in teams.audit_log(project, limit=10):
            self.stdout.write(f"  {entry.at:%Y-%m-%d %H:%M} {entry.user or 'system'}: {entry.action} {entry.detail}")
