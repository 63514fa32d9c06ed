from django.apps import AppConfig

from .task_types import autodiscover, package_modules


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self):
        from . import receivers  # noqa: F401  (connects the signal receivers; needs the models: Django's ready())

        autodiscover()  # every task type package registers itself
        package_modules("receivers")  # each task type's signal receivers
