from django.urls import include, path

from . import views

app_name = "ml"

urlpatterns = [
    path("models/", views.model_list, name="models"),
    path("models/rollback/", views.model_rollback, name="model-rollback"),
    path("models/<int:pk>/", views.model_detail, name="model-detail"),
    path("models/<int:pk>/activate/", views.model_activate, name="model-activate"),
    path("similarity/", include("ml.similarity.urls")),
    path("", include("ml.generation.urls")),
]
