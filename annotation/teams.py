"""Every change to a project's team, and the audit log of staff actions (:class:`annotation.models.AuditEntry`).

Who may call these is :mod:`annotation.access`'s question (``manage`` for the team); these functions check what the
team itself must keep true: a project always has an owner, a user is in a team once, a role is one of
:class:`ProjectMember.Role`. Every staff action that changes a project (settings, status, phases, members, model
annotators, late answers, unblocking, releases, publishing) writes one :func:`record` line once it is made: the
team's changes here in their own transaction, the others right after their service returns (the studio, admin and
panel views; a published release through ``corpus.signals.release_published``, inside its transaction; items added
in the studio by the addition's job, inside its transaction: ``annotation.studio.services.run_addition``).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from argora import request_memo
from argora.errors import FieldError

from .models import AuditEntry, Project, ProjectMember

Role = ProjectMember.Role
AUDIT_SHOWN = 50
_SHORT = 300  # characters of a changed text value kept in the log


class TeamRefused(FieldError):
    """A change the team cannot take (naming the field: ``user``, ``role``)."""


def _short(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _SHORT:
        return value[:_SHORT] + "…"
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    text = str(value)
    return text if len(text) <= _SHORT else text[:_SHORT] + "…"


def changes(before: dict, after: dict) -> dict:
    """``{field: [before, after]}`` for the fields whose value differs (long texts shortened)."""
    return {
        key: [_short(before.get(key)), _short(after.get(key))] for key in after if before.get(key) != after.get(key)
    }


def record(project: Project | None, user, action: str, detail: dict | None = None) -> AuditEntry:
    """One audit line: ``user`` did ``action`` to ``project`` (``detail``: what changed)."""
    actor = user if getattr(user, "is_authenticated", False) else None
    return AuditEntry.objects.create(project=project, user=actor, action=action[:60], detail=detail or {})


def audit_log(project: Project, limit: int = AUDIT_SHOWN):
    return AuditEntry.objects.filter(project=project).select_related("user").order_by("-at", "-id")[:limit]


def _role(value: str) -> str:
    if value not in Role.values:
        raise TeamRefused("role", f"one of {', '.join(Role.values)}")
    return value


def _user(username: str):
    user = get_user_model().objects.filter(username=(username or "").strip(), is_active=True).first()
    if user is None:
        raise TeamRefused("user", f"no active account named {username!r}")
    if hasattr(user, "annotation_worker") and not user.has_usable_password() and not user.is_staff:
        raise TeamRefused("user", f"{username!r} is a crowdworker's account, not a researcher's")
    return user


def add_creator(project: Project, user) -> None:
    """The user who made ``project`` is its first owner."""
    if user is not None and getattr(user, "pk", None):
        ProjectMember.objects.get_or_create(project=project, user=user, defaults={"role": Role.OWNER, "added_by": user})
        request_memo.forget()  # a role this request looked up before is no longer true
        record(project, user, "project.create", {"name": project.name, "task_type": project.task_type})


@transaction.atomic
def add_member(project: Project, username: str, role: str, *, by) -> ProjectMember:
    """Put the user named ``username`` in the team with ``role`` (or give a member that role)."""
    user = _user(username)
    role = _role(role)
    member = ProjectMember.objects.select_for_update().filter(project=project, user=user).first()
    if member is not None:
        return set_role(member, role, by=by)
    member = ProjectMember.objects.create(project=project, user=user, role=role, added_by=by)
    request_memo.forget()
    record(project, by, "member.add", {"user": user.get_username(), "role": role})
    return member


def _owners(project: Project) -> int:
    return ProjectMember.objects.select_for_update().filter(project=project, role=Role.OWNER).count()


@transaction.atomic
def set_role(member: ProjectMember, role: str, *, by) -> ProjectMember:
    role = _role(role)
    member = ProjectMember.objects.select_for_update().get(pk=member.pk)
    if member.role == role:
        return member
    if member.role == Role.OWNER and _owners(member.project) <= 1:
        raise TeamRefused("role", "the project's last owner stays an owner: make another member owner first")
    before = member.role
    member.role = role
    member.save(update_fields=["role"])
    request_memo.forget()
    record(member.project, by, "member.role", {"user": member.user.get_username(), "role": [before, role]})
    return member


@transaction.atomic
def remove_member(member: ProjectMember, *, by) -> None:
    member = ProjectMember.objects.select_for_update().get(pk=member.pk)
    if member.role == Role.OWNER and _owners(member.project) <= 1:
        raise TeamRefused("user", "the project's last owner cannot leave: make another member owner first")
    record(member.project, by, "member.remove", {"user": member.user.get_username(), "role": member.role})
    member.delete()
    request_memo.forget()
