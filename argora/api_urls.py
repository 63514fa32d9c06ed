"""All REST endpoints under /api/. Each app contributes its router registrations here."""
from django.urls import path

from . import api

urlpatterns = [
    path("jobs/<str:task_id>/", api.JobDetail.as_view(), name="api-job-detail"),
]
