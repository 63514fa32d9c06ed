"""Pairwise preference and Likert debate results (included at the end of annotation/urls.py, namespace
"annotation"): the staff results page and its CSV downloads."""

from django.urls import path

from . import views as rating_views

urlpatterns = [
    path("projects/<slug:slug>/results/", rating_views.results, name="ratings-results"),
    path("projects/<slug:slug>/results/summary.csv", rating_views.summary_csv, name="ratings-summary-csv"),
    path("projects/<slug:slug>/results/responses.csv", rating_views.responses_csv, name="ratings-responses-csv"),
]
