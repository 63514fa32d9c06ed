"""All REST endpoints under /api/. Each app owns its own `api_urls.py`; this file only includes them."""

from django.urls import include, path, re_path

from . import api
from .jobs import JOB_ROUTE

urlpatterns = [
    re_path(JOB_ROUTE, api.JobDetail.as_view(), name="api-job-detail"),
    path("", include("corpus.api_urls")),
    path("", include("annotation.api_urls")),
    path("generate/", include("ml.generation.api")),
    re_path(r"", api.not_found),  # last: anything else under /api/ is a JSON 404
]
