"""Annotation endpoints under /api/ (included by argora/api_urls.py)."""

from django.urls import path

from . import api

urlpatterns = [
    path("projects/", api.ProjectCreate.as_view(), name="api-annotation-projects"),
    path("projects/<slug:slug>/next/", api.NextAssignment.as_view(), name="api-annotation-next"),
    path("projects/<slug:slug>/progress/", api.ProjectProgress.as_view(), name="api-annotation-progress"),
    path("assignments/<int:pk>/submit/", api.SubmitAssignment.as_view(), name="api-annotation-submit"),
    path("assignments/<int:pk>/draft/", api.SaveDraft.as_view(), name="api-annotation-draft"),
    path("assignments/<int:pk>/extend/", api.ExtendAssignment.as_view(), name="api-annotation-extend"),
]
