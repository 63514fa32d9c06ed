from django.urls import include, path

from . import views

app_name = "annotation"

urlpatterns = [
    path("invite/<str:token>/", views.invite, name="invite"),
    path("work/", views.my_projects, name="my-projects"),
    path("work/<slug:slug>/", views.work, name="work"),
    path("work/<slug:slug>/done/", views.done, name="done"),
    path("work/<slug:slug>/instructions/", views.instructions, name="instructions"),
    path("projects/", views.project_list, name="project-list"),
    path("projects/<slug:slug>/progress/", views.project_progress, name="project-progress"),
    # Feature pages, one urls module each (so features grow without touching each other):
    path("", include("annotation.dashboard_urls")),  # agreement dashboards, adjudication
    path("", include("annotation.bws_urls")),  # BWS scores and split-half reliability
    path("", include("annotation.valnov_urls")),  # validity/novelty results
    path("", include("annotation.rating_urls")),  # pairwise preference and Likert debate results
    path("", include("annotation.span_urls")),
]
