"""BWS staff pages (included at the end of annotation/urls.py, namespace "annotation")."""

from django.urls import path

from . import views as bws_views

urlpatterns = [
    path("projects/<slug:slug>/bws/", bws_views.bws_report, name="bws"),
    path("projects/<slug:slug>/bws/scores.csv", bws_views.bws_scores_csv, name="bws-scores-csv"),
]
