from django.apps import AppConfig

from argora import access as argora_access

from .task_types import autodiscover, package_modules


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"
    # what the Researcher role may do here (argora.roles)
    researcher_permissions = (
        "add_project",
        "change_project",
        "view_project",
        "add_item",
        "change_item",
        "view_item",
        "add_golditem",
        "change_golditem",
        "view_golditem",
        "view_hit",
        "view_hititem",
        "change_assignment",
        "view_assignment",
        "view_response",
        "change_worker",
        "view_worker",
        "view_workerprojectcode",
        "view_goldrecord",
        "view_agreementsnapshot",
        "add_adjudication",
        "view_adjudication",
    )

    def ready(self):
        from . import receivers  # noqa: F401  (connects the signal receivers; needs the models: Django's ready())

        autodiscover()  # every task type package registers itself
        package_modules("receivers")  # each task type's signal receivers
        from . import access  # noqa: PLC0415  (imports the models: only once apps are ready)

        # the access questions argora and corpus ask (argora.access): answered by the project teams
        argora_access.fill("team_user", access.is_team_user)
        argora_access.fill("release_visible", access.release_visible)
        argora_access.fill("visible_releases", access.visible_releases)
