"""Span grounding staff pages (included at the end of annotation/urls.py, namespace "annotation")."""

from django.urls import path

from . import views

urlpatterns = [
    path("spans/kb/review/", views.kb_review, name="spans-kb-review"),
    path("spans/kb/review/<int:variable_id>/", views.kb_review_action, name="spans-kb-review-action"),
    path("spans/kb/normalise/", views.kb_normalise, name="spans-kb-normalise"),
]
