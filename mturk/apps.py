from django.apps import AppConfig


class MturkConfig(AppConfig):
    name = "mturk"
    verbose_name = "Amazon Mechanical Turk"
