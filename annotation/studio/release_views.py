"""The studio's Release step (``/studio/projects/<slug>/release/``): the project's releases with their files, and a
form that publishes a new one (an editor or owner). The form's values are checked by
:func:`annotation.studio.releases.start_release`, which queues :func:`corpus.tasks.releases.build_release_task`;
the person follows the job on the studio's job page, whose result links back here."""

from __future__ import annotations

from django import forms
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from annotation import access
from annotation.models import Project
from annotation.views import notice
from argora.errors import FieldError
from corpus.models import Release
from corpus.releases import CARD_LIMITS

from . import releases as studio_releases
from .pages import studio_page


def option_field(kind: str, option: str) -> str:
    """The form field of ``kind``'s option ``option`` (kinds may share option names)."""
    return f"{kind}__{option}"


class ReleaseForm(forms.Form):
    kind = forms.ChoiceField(label="Kind", widget=forms.RadioSelect)
    name = forms.CharField(
        label="Name",
        max_length=200,
        required=False,
        help_text="letters, digits, '.', '_' and '-' (a folder name); empty: the project's slug",
    )
    version = forms.CharField(
        label="Version", max_length=50, help_text="e.g. 1.0; a name + version is published once and never changes"
    )
    license = forms.CharField(
        label="Licence", required=False, max_length=CARD_LIMITS["license"], help_text="e.g. CC-BY-4.0"
    )
    citation = forms.CharField(
        label="Citation",
        required=False,
        max_length=CARD_LIMITS["citation"],
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text="BibTeX or text; README.md shows it as a block",
    )
    description = forms.CharField(
        label="Description",
        required=False,
        max_length=CARD_LIMITS["description"],
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="a paragraph near the top of README.md",
    )

    def __init__(self, *args, project: Project, **kwargs):
        super().__init__(*args, **kwargs)
        self.project = project
        self.kinds = studio_releases.release_kinds(project)
        self.fields["kind"].choices = [(k.kind, k.kind) for k in self.kinds]
        self.fields["kind"].initial = self.kinds[0].kind
        self.fields["name"].initial = project.slug
        for k in self.kinds:
            for option in k.options:
                self.fields[option_field(k.kind, option.name)] = self._field(option)

    @staticmethod
    def _field(option: studio_releases.KindOption) -> forms.Field:
        if option.kind == "choice":
            return forms.ChoiceField(
                label=option.label,
                choices=option.choices,
                initial=option.default,
                required=False,
                help_text=option.help,
            )
        if option.kind == "int":
            return forms.IntegerField(label=option.label, initial=option.default, required=False, help_text=option.help)
        return forms.BooleanField(label=option.label, initial=option.default, required=False, help_text=option.help)

    def kind_rows(self) -> list[dict]:
        return [{"kind": k, "fields": [self[option_field(k.kind, o.name)] for o in k.options]} for k in self.kinds]

    def options(self, kind: str) -> dict:
        """The chosen kind's option values (an empty number: the option's default)."""
        chosen = next(k for k in self.kinds if k.kind == kind)
        values = {}
        for option in chosen.options:
            value = self.cleaned_data.get(option_field(kind, option.name))
            values[option.name] = option.default if value in (None, "") else value
        return values

    def attach(self, exc: FieldError, kind: str | None) -> None:
        """A refusal as the error of the field it names (an option of the chosen kind, or a field of the form)."""
        name = option_field(kind, exc.field) if kind else ""
        if name in self.fields:
            self.add_error(name, exc.reason)
        elif exc.field in self.fields:
            self.add_error(exc.field, exc.reason)
        else:
            self.add_error(None, str(exc))


def _rows(request, project: Project) -> list[dict]:
    rows = []
    for release in studio_releases.project_releases(project):
        published = release.status == Release.Status.PUBLISHED
        visible = published and access.release_visible(request.user, release)
        rows.append(
            {
                "release": release,
                "files": [
                    {"file": f, "url": reverse("release-file", args=[release.pk, f.name]) if visible else ""}
                    for f in release.files.all()
                ],
            }
        )
    return rows


@studio_page(access.VIEW)
@require_http_methods(["GET", "POST"])
def project_release(request, project: Project):
    """GET: the project's releases and (for an editor) the form; POST: check it and queue the build."""
    can_change = access.can(request.user, project, access.CHANGE)
    if request.method == "POST" and not can_change:
        return notice(
            request,
            "Not allowed",
            [str(access.NotAllowed(project, access.CHANGE, access.role_of(request.user, project)))],
            status=403,
        )
    form = ReleaseForm(request.POST if request.method == "POST" else None, project=project)
    if request.method == "POST" and form.is_valid():
        data, kind = form.cleaned_data, form.cleaned_data["kind"]
        try:
            job = studio_releases.start_release(
                project,
                request.user,
                kind=kind,
                name=data["name"] or project.slug,
                version=data["version"],
                options=form.options(kind),
                card={key: data[key] for key in ("license", "citation", "description")},
            )
        except FieldError as exc:
            form.attach(exc, kind)
        else:
            return redirect(reverse("annotation:studio-job", args=[job]) + "?for=release")
    return render(
        request,
        "annotation/studio/release.html",
        {"project": project, "form": form, "can_change": can_change, "rows": _rows(request, project)},
        status=400 if form.errors else 200,
    )
