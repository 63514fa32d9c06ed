"""URLs of the study studio (namespace ``annotation``, under ``/studio/``)."""

from django.urls import path

from . import add_views, model_views, new_views, release_views, retrain_views, views

urlpatterns = [
    path("", views.index, name="studio"),
    path("new/", new_views.new_project, name="studio-new"),
    path("new/<str:token>/items/", new_views.new_items, name="studio-new-items"),
    path("new/<str:token>/preview/", new_views.new_preview, name="studio-new-preview"),
    path("jobs/<uuid:task_id>/", new_views.job, name="studio-job"),
    path("jobs/<uuid:task_id>/state/", new_views.job_state, name="studio-job-state"),
    path("guidelines/preview/", views.guidelines_preview, name="studio-guidelines-preview"),
    path("projects/<slug:slug>/", views.project_page, name="studio-project"),
    path("projects/<slug:slug>/settings/", views.project_settings, name="studio-settings"),
    path("projects/<slug:slug>/team/", views.project_team, name="studio-team"),
    path("projects/<slug:slug>/retraining/", retrain_views.project_retraining, name="studio-retraining"),
    path("projects/<slug:slug>/items/add/", add_views.add_items, name="studio-add-items"),
    path("projects/<slug:slug>/items/add/<str:token>/preview/", add_views.add_preview, name="studio-add-preview"),
    path("projects/<slug:slug>/items/add/jobs/<uuid:task_id>/", add_views.add_job, name="studio-add-job"),
    path(
        "projects/<slug:slug>/items/add/jobs/<uuid:task_id>/state/",
        add_views.add_job_state,
        name="studio-add-job-state",
    ),
    path("projects/<slug:slug>/release/", release_views.project_release, name="studio-release"),
    path("projects/<slug:slug>/phases/", views.project_phases, name="studio-phases"),
    path("projects/<slug:slug>/status/<str:status>/", views.project_status, name="studio-status"),
    path("projects/<slug:slug>/workers/<int:worker_id>/unblock/", views.unblock, name="studio-unblock"),
    path("projects/<slug:slug>/late/<int:assignment_id>/accept/", views.accept_late, name="studio-accept-late"),
    path("projects/<slug:slug>/models/", model_views.project_models, name="studio-models"),
    path("projects/<slug:slug>/models/new/", model_views.model_new, name="studio-model-new"),
    path(
        "projects/<slug:slug>/models/<int:annotator_id>/prompt/", model_views.model_prompt, name="studio-model-prompt"
    ),
    path("projects/<slug:slug>/models/<int:annotator_id>/run/", model_views.model_run, name="studio-model-run"),
    path(
        "projects/<slug:slug>/models/<int:annotator_id>/include/",
        model_views.model_include,
        name="studio-model-include",
    ),
    path(
        "projects/<slug:slug>/models/<int:annotator_id>/failures/",
        model_views.model_failures,
        name="studio-model-failures",
    ),
]
