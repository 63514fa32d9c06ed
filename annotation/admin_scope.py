"""The admin asks the same selector as every page (:mod:`annotation.access`): a ModelAdmin with
:class:`TeamScopedAdmin` shows a user only the rows of the projects they may see, lets them change only the rows of
the projects they may change, and offers only those projects in its forms. Superusers see everything.

``project_path``: the lookup from the admin's model to its project (``"project"``, ``"item__project"``, ``""`` for
:class:`~annotation.models.Project` itself); ``None``: rows of no project (shared data): seen by users who may make
projects (the Researcher role) unless ``superusers_only``. ``shared_rows``: rows whose project is empty are such
shared rows too (a model of no project, an operation of the whole account).
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.utils import NotRelationField, get_fields_from_path
from django.core.exceptions import FieldDoesNotExist
from django.db.models import Q

from . import access
from .models import Project


class TeamScopedAdmin(admin.ModelAdmin):
    project_path: str | None = "project"
    superusers_only = False
    shared_rows = False

    def _prefix(self) -> str:
        return f"{self.project_path}__" if self.project_path else ""

    def _shared_allowed(self, user) -> bool:
        return access.is_superuser(user) if self.superusers_only else access.may_create_projects(user)

    def get_queryset(self, request):
        return self._scoped(super().get_queryset(request), request.user, access.VIEW)

    def _scoped(self, queryset, user, action: str):
        """The rows of ``queryset`` whose project ``user`` may ``action`` (shared rows: :meth:`_shared_allowed`)."""
        if access.is_superuser(user):
            return queryset
        if self.project_path is None:
            return queryset if self._shared_allowed(user) else queryset.none()
        if self.project_path == "":
            return queryset.filter(pk__in=access.project_ids(user, action))
        mine = Q(**{f"{self.project_path}__in": access.project_ids(user, action)})
        if self.shared_rows and self._shared_allowed(user):
            mine |= Q(**{f"{self.project_path}__isnull": True})
        return queryset.filter(mine)

    def project_of(self, obj):
        if self.project_path is None:
            return None
        if self.project_path == "":
            return obj
        for part in self.project_path.split("__"):
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj

    def _may(self, request, obj, action: str) -> bool:
        if obj is None or access.is_superuser(request.user):
            return True
        project = self.project_of(obj)
        if project is None:
            return self._shared_allowed(request.user)
        return access.can(request.user, project, action)

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) and self._may(request, obj, access.VIEW)

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and self._may(request, obj, access.CHANGE)

    def has_delete_permission(self, request, obj=None):
        action = access.MANAGE if self.project_path == "" else access.CHANGE  # deleting a project: its owners
        return super().has_delete_permission(request, obj) and self._may(request, obj, action)

    def get_list_filter(self, request):
        """A filter by project lists only the projects of the rows shown (Django's default lists every project)."""
        filters = super().get_list_filter(request)
        if access.is_superuser(request.user):
            return filters
        return [
            (f, admin.RelatedOnlyFieldListFilter) if isinstance(f, str) and self._is_project(f) else f for f in filters
        ]

    def _is_project(self, name: str) -> bool:
        try:
            field = get_fields_from_path(self.model, name)[-1]
        except (FieldDoesNotExist, NotRelationField):
            return False
        return getattr(field, "related_model", None) is Project

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.related_model is Project and not access.is_superuser(request.user):
            kwargs["queryset"] = access.projects(request.user, access.CHANGE)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def delete_queryset(self, request, queryset):  # the bulk action: only rows the user may change
        super().delete_queryset(request, self.changeable(request, queryset))

    def changeable(self, request, queryset):
        """The rows of ``queryset`` (an action's selection) whose project the user may change."""
        return self._scoped(queryset, request.user, access.CHANGE)


class WorkerScopedAdmin(admin.ModelAdmin):
    """Workers (and rows of a worker, ``worker_path``) only of the projects the user may see."""

    worker_path = ""

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if access.is_superuser(request.user):
            return qs
        ids = access.workers(request.user).values("pk")
        return qs.filter(**{(f"{self.worker_path}__in" if self.worker_path else "pk__in"): ids})
