"""Expert dashboards (included from annotation/urls.py, so the names live in the ``annotation`` namespace)."""

from django.urls import path

from . import dashboards

urlpatterns = [
    path("dashboards/", dashboards.dashboards, name="dashboards"),
    path("projects/<slug:slug>/agreement/", dashboards.agreement, name="agreement"),
    path("projects/<slug:slug>/agreement/recompute/", dashboards.agreement_recompute, name="agreement-recompute"),
    path("projects/<slug:slug>/agreement/items/", dashboards.agreement_items, name="agreement-items"),
    path("projects/<slug:slug>/agreement/items/<int:item_id>/adjudicate/", dashboards.adjudicate, name="adjudicate"),
    path("projects/<slug:slug>/agreement/<str:table>.csv", dashboards.agreement_csv, name="agreement-csv"),
]
