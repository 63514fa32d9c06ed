from django.apps import AppConfig


class MlConfig(AppConfig):
    name = "ml"
    verbose_name = "Machine learning"
