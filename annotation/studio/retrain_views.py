"""The studio's retraining page (``projects/<slug>/retraining/``, CHANGE role): the retrain loop's settings of the
project -- ``retrain_every`` and the budget ``retrain_max_rows`` / ``retrain_max_steps`` / ``retrain_max_seconds``
-- and its latest attempts.

The loop lives in the ml app: this page asks the ``annotation.providers.retrain_status`` slot what to show and
changes the settings through the ``retrain_settings_update`` slot (:func:`ml.loop.update_retrain_settings`, one
transaction and an audit line). Without the ml app the page says so (404).
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation import access, providers
from annotation.models import Project
from argora.errors import FieldError

from .pages import studio_page

SETTING_MAX = 10**9
FIELDS = {
    "retrain_every": (
        "Retrain every (new human labels)",
        "A retrain starts once this many new human labels (crowd answers, gold, adjudications) came "
        "in since the last version. 0 turns retraining off.",
    ),
    "retrain_max_rows": (
        "Budget: training rows at most",
        "A retrain with more training rows is refused (nothing trained). 0 = no limit.",
    ),
    "retrain_max_steps": (
        "Budget: optimisation steps at most",
        "Training stops after this many steps; the version records that it was capped. 0 = no limit.",
    ),
    "retrain_max_seconds": (
        "Budget: seconds of training at most",
        "Training stops after this many seconds (checked between steps). 0 = no limit.",
    ),
}


class RetrainForm(forms.Form):
    """One optional whole number per setting; empty = the default (settings / environment)."""

    def __init__(self, *args, settings: dict, **kwargs):
        super().__init__(*args, **kwargs)
        for key, (label, help_text) in FIELDS.items():
            current = settings.get(key) or {}
            self.fields[key] = forms.IntegerField(
                label=label,
                required=False,
                min_value=0,
                max_value=SETTING_MAX,
                help_text=f"{help_text} Empty: the default, {current.get('default')}.",
                widget=forms.NumberInput(attrs={"min": 0, "step": 1}),
            )
            if current.get("own"):
                self.initial.setdefault(key, current.get("value"))


def _status(project: Project) -> dict:
    if not providers.retrain_status.filled:
        raise Http404("model retraining comes from the ml app")
    return providers.retrain_status(project)


@studio_page(access.CHANGE)
@require_http_methods(["GET", "POST"])
def project_retraining(request, project: Project):
    status = _status(project)
    form = RetrainForm(request.POST or None, settings=status["settings"])
    if request.method == "POST" and form.is_valid():
        try:
            providers.retrain_settings_update(
                project, {key: form.cleaned_data[key] for key in FIELDS}, user=request.user
            )
        except FieldError as exc:
            form.add_error(exc.field if exc.field in FIELDS else None, exc.reason)
        else:
            messages.success(request, "Retraining settings saved.")
            return redirect("annotation:studio-retraining", slug=project.slug)
    return render(
        request,
        "annotation/studio/retraining.html",
        {"project": project, "form": form, "retraining": status},
        status=400 if form.errors else 200,
    )
