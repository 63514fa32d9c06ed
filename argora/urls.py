from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from . import views
from .jobs import JOB_ROUTE

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("jobs/", views.job_list, name="job-list"),
    re_path(JOB_ROUTE, views.job_detail, name="job-detail"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("oidc/", include("argora.oidc_urls")),  # sign-in with the institution's OpenID Connect provider
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI's start-up script from /api/docs/?script= instead of inline: the CSP runs no inline script
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("api/", include("argora.api_urls")),
    path("mturk/", include("mturk.urls")),
    path("prolific/", include("prolific.urls")),
    path("ml/", include("ml.urls")),
    path("", include("corpus.urls")),
    path("", include("annotation.urls")),
]

# JSON under /api/, Django's pages elsewhere (argora.errors)
handler400 = "argora.errors.bad_request"
handler403 = "argora.errors.permission_denied"
handler404 = "argora.errors.page_not_found"
handler500 = "argora.errors.server_error"
