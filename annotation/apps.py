from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self):
        from . import receivers  # noqa: F401  (connects the signal receivers)
        from .task_types import autodiscover, package_modules

        autodiscover()
        package_modules("receivers")  # each task type's signal receivers
