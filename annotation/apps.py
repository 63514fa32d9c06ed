from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self):
        from . import receivers  # noqa: F401  (connects the signal receivers)
        from .task_types import autodiscover

        autodiscover()
