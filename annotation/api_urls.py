"""Annotation endpoints under /api/ (included by argora/api_urls.py)."""
from django.urls import path

from . import api

urlpatterns = [
    path("projects/<slug:slug>/next/", api.NextAssignment.as_view(), name="api-annotation-next"),
    path("projects/<slug:slug>/progress/", api.ProjectProgress.as_view(), name="api-annotation-progress"),
    path("assignments/<int:pk>/submit/", api.SubmitAssignment.as_view(), name="api-annotation-submit"),
]
