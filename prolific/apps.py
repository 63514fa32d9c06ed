from django.apps import AppConfig

from annotation import providers


class ProlificConfig(AppConfig):
    name = "prolific"
    verbose_name = "Prolific"

    def ready(self):
        # a participant who entered through Prolific goes back there with the completion code (annotation's done and
        # screened-out pages ask this slot); a dotted path: imported on first use
        providers.completion_return.fill("prolific.entry.completion_return")
        providers.add_platform_page("prolific", "Prolific", "prolific:panel")  # linked from every project's pages
