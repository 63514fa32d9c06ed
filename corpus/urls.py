from django.urls import path

from . import views

urlpatterns: list = [
    path("releases/<int:pk>/files/<str:name>", views.release_file, name="release-file"),
]
