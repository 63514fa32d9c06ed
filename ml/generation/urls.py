"""Generation pages (included by ``ml/urls.py``; namespace ``ml``). See :mod:`ml.generation.views`."""

from django.urls import path

from . import views

urlpatterns = [
    path("generation/", views.generate_page, name="generation"),
    path("generation/evaluation/", views.evaluation_page, name="generation-evaluation"),
    path("generation/train/", views.train_page, name="generation-train"),
    path("generation/runs/<str:run_id>/", views.run_page, name="generation-run"),
    path("generation/runs/<str:run_id>/evaluate/", views.run_evaluate, name="generation-run-evaluate"),
    path("generation/runs/<str:run_id>/ratings/", views.run_ratings, name="generation-run-ratings"),
]
