"""What every studio page shares: the :func:`studio_page` guard (login, the Researcher role, the project's team) and
the task type of a project whose package may be missing. The pages themselves: :mod:`.views` (the list and one
project), :mod:`.new_views` (a new project, in steps, and its import job), :mod:`.add_views` (items added later),
:mod:`.model_views` (model annotators), :mod:`.release_views`, :mod:`.retrain_views`.

Who may do what is said by Django permissions, which the Researcher group (:data:`argora.roles.RESEARCHER_GROUP`) has
and a superuser has anyway: ``annotation.view_project`` to see the studio, ``annotation.add_project`` to make a
project, ``annotation.change_project`` to change its settings and status, ``annotation.change_worker`` to unblock a
worker. An anonymous visitor is sent to the login page; a logged-in user without the permission gets a 403 page that
says which permission is missing.
"""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login

from annotation import access
from annotation.models import Project
from annotation.task_types import get_task_type
from annotation.views import notice, team_project
from argora.roles import RESEARCHER_GROUP


def studio_page(action: str | None = None, *, create: bool = False):
    """Anonymous -> the login page. ``create``: the user must be allowed to make projects (the Researcher role:
    ``annotation.add_project``), else a 403 saying so. ``action`` (a view routed with ``<slug:slug>``): the view gets
    the project instead of the slug, if the user may ``action`` it (:mod:`annotation.access`: a 404 outside its team,
    a 403 naming the role needed). Neither: any user of the staff side (a member of some team)."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if create and not access.may_create_projects(request.user):
                return notice(
                    request,
                    "Not allowed",
                    [
                        "To create projects you need the permission annotation.add_project.",
                        f"The {RESEARCHER_GROUP} role has it: ask an administrator to add your account to the "
                        f"{RESEARCHER_GROUP} group, or a project's owner to add you to its team.",
                    ],
                    status=403,
                )
            if not access.is_team_user(request.user):
                return notice(
                    request,
                    "Not allowed",
                    [
                        "The studio is for research teams: ask a project's owner to add you to its team, or an "
                        f"administrator to add your account to the {RESEARCHER_GROUP} group."
                    ],
                    status=403,
                )
            if action is not None:
                kwargs["project"] = team_project(request, kwargs.pop("slug"), action)
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def task_type_of(project: Project):
    """The project's task type, or ``None`` when its package is not installed (the page still shows the project)."""
    try:
        return get_task_type(project.task_type)
    except KeyError:
        return None
