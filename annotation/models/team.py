"""A project's team, the audit log of staff actions, and admissions of workers to a project."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .projects import Project
from .work import Worker


class ProjectMember(models.Model):
    """A user's role in one project's team (:mod:`annotation.access` answers every question of who may do what;
    :mod:`annotation.teams` makes every change). Superusers are in every team as owners without a row."""

    class Role(models.TextChoices):
        OWNER = "owner", "Owner"  # everything an editor may, and the team itself
        EDITOR = "editor", "Editor"  # settings, status, items, phases, models, releases, late answers, workers
        VIEWER = "viewer", "Viewer"  # every page, result and download of the project; changes nothing

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_roles")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "id"]
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="unique_project_member")]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.project}"


class AuditEntry(models.Model):
    """One staff action on a project, as :func:`annotation.teams.record` wrote it: who, what, when, and the
    values it changed. Shown on the project's studio page; never edited."""

    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE, related_name="audit")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=60, help_text="e.g. settings, status, member.add, release.publish")
    detail = models.JSONField(default=dict, blank=True, help_text="what changed: {field: [before, after]} etc.")
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} by {self.user or 'system'} at {self.at:%Y-%m-%d %H:%M}"


class Admission(models.Model):
    """A worker let into a project by one of its doors (its invite link, an MTurk HIT, its Prolific study link).
    A passwordless invite worker takes HITs only of projects it was admitted to (``annotation.access``)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="admissions")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="admissions")
    via = models.CharField(max_length=20, default="invite")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "worker"], name="unique_admission")]

    def __str__(self) -> str:
        return f"worker {self.worker_id} admitted to project {self.project_id} via {self.via}"
