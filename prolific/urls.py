from django.urls import path

from . import views

app_name = "prolific"

urlpatterns = [
    path("webhook/", views.webhook, name="webhook"),
    path("projects/<slug:slug>/", views.panel, name="panel"),
    path("<slug:slug>/start/", views.start, name="start"),
]
