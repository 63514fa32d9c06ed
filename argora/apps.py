from django.apps import AppConfig
from django.db.models.signals import post_migrate

from .clientaddr import trusted_proxies
from .roles import grant_researcher_permissions


class ArgoraConfig(AppConfig):
    name = "argora"
    verbose_name = "Argora platform"

    def ready(self):
        # the Researcher group and its permissions, after every migrate and flush (argora.roles)
        post_migrate.connect(grant_researcher_permissions, dispatch_uid="argora.researcher-permissions")
        trusted_proxies()  # a malformed ARGORA_TRUSTED_PROXIES stops the process at start (ImproperlyConfigured)
