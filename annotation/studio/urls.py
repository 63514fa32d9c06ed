"""URLs of the study studio (namespace ``annotation``, under ``/studio/``)."""
from django.urls import path  # noqa: F401

urlpatterns: list = []
