from django.apps import AppConfig


class ArgoraConfig(AppConfig):
    name = "argora"
    verbose_name = "Argora platform"
