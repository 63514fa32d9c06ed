from django.apps import AppConfig


class MlConfig(AppConfig):
    name = "ml"
    verbose_name = "Machine learning"

    def ready(self):
        from . import receivers  # noqa: F401  (connects the signal receivers)
