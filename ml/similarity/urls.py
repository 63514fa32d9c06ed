"""The similarity results page (AugSBERT Table 5); included in ``ml/urls.py`` under ``similarity/`` (names live in
the ``ml`` namespace)."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.results, name="similarity-results"),
]
