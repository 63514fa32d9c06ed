from django.urls import include, path

from . import phase_views, task_types, views

app_name = "annotation"

urlpatterns = [
    path("invite/<str:token>/", views.invite, name="invite"),
    path("work/", views.my_projects, name="my-projects"),
    path("work/recover/", views.recover, name="recover"),
    path("work/<slug:slug>/", views.work, name="work"),
    path("work/<slug:slug>/done/", views.done, name="done"),
    path("work/<slug:slug>/stop/", views.stop, name="stop"),
    path("work/<slug:slug>/instructions/", views.instructions, name="instructions"),
    # the study's phases: consent, instructions, training + qualification, exit survey (annotation.phases)
    path("work/<slug:slug>/study/", phase_views.study, name="study"),
    path("work/<slug:slug>/study/<slug:step>/", phase_views.study, name="study-step"),
    path("projects/", views.project_list, name="project-list"),
    path("projects/<slug:slug>/progress/", views.project_progress, name="project-progress"),
    path("", include("annotation.dashboard_urls")),  # agreement dashboards, adjudication
    path("studio/", include("annotation.studio.urls")),  # Researchers: set up, run and watch a study
]
# each task type's own pages (annotation/task_types/<name>/urls.py), in this namespace
urlpatterns += [path("", include(module)) for module in task_types.package_modules("urls")]
