from django.apps import AppConfig

from annotation import providers


class MturkConfig(AppConfig):
    name = "mturk"
    verbose_name = "Amazon Mechanical Turk"

    def ready(self):
        providers.add_platform_page("mturk", "MTurk", "mturk:panel")  # linked from every project's page list
