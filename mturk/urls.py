from django.urls import path

from . import views

app_name = "mturk"

urlpatterns = [
    path("external/<slug:slug>/", views.external, name="external"),
    path("external/<slug:slug>/submit/", views.external_submit, name="external-submit"),
    path("external/<slug:slug>/draft/", views.external_draft, name="external-draft"),
    path("external/<slug:slug>/study/<slug:step>/", views.external_phase, name="external-phase"),
    path("projects/<slug:slug>/", views.panel, name="panel"),
    # local stand-in for MTurk's externalSubmit: 404 unless DEBUG or ARGORA_MTURK_FAKE_TURK
    path("_test/turk/mturk/externalSubmit", views.fake_external_submit, name="fake-turk"),
]
