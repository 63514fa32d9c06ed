from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from . import views
from .jobs import JOB_ROUTE

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("jobs/", views.job_list, name="job-list"),
    re_path(JOB_ROUTE, views.job_detail, name="job-detail"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/", include("argora.api_urls")),
    path("mturk/", include("mturk.urls")),
    path("prolific/", include("prolific.urls")),
    path("ml/", include("ml.urls")),
    path("", include("corpus.urls")),
    path("", include("annotation.urls")),
]
