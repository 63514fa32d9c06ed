"""Validity / novelty staff pages (included at the end of annotation/urls.py, namespace "annotation")."""

from django.urls import path

from . import views as valnov_views

urlpatterns = [
    path("projects/<slug:slug>/valnov/", valnov_views.valnov_results, name="valnov"),
    path("projects/<slug:slug>/valnov/export.csv", valnov_views.valnov_export_csv, name="valnov-export-csv"),
]
