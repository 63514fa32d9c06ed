"""The similarity results page (AugSBERT Table 5); included in ``ml/urls.py``:
``path("similarity/", include("ml.similarity_urls"))`` (names live in the ``ml`` namespace)."""
from django.urls import path

from ml.similarity import views

urlpatterns = [
    path("", views.results, name="similarity-results"),
]
