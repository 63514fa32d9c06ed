from django.urls import path

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
]
