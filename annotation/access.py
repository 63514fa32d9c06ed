"""Who may see and change what: the one selector every staff page, API endpoint, admin view, download, model
annotator, job and worker list asks (SECURITY.md, "Who can do what").

A project's team (:class:`annotation.models.ProjectMember`) gives each member one role:

=========  =====================================================================================================
role       may
=========  =====================================================================================================
viewer     ``view``: every staff page, dashboard, result, CSV, release download and worker list of the project
editor     ``view`` + ``change``: settings, status, phases, items, model annotators, late answers, unblocking,
           adjudication, releases, MTurk / Prolific publishing
owner      ``view`` + ``change`` + ``manage``: the team itself (members and their roles)
=========  =====================================================================================================

A superuser is an owner of every project. Anyone else -- staff flag, the Researcher group or not -- sees only the
projects whose team they are in; another project is a 404, as if it did not exist. The Researcher group (or the
``annotation.add_project`` permission) lets a user make new projects, of which they are then the owner.

Workers are seen only through the projects a user may see; a passwordless invite worker takes HITs only of the
projects it was admitted to (:func:`worker_admitted`).

A user's role in a project, and whether they are a team user at all, is looked up once per request
(:mod:`argora.request_memo`); outside a request every call asks the database.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet

from argora.request_memo import remembered

from .models import Admission, Assignment, Participation, Project, ProjectMember, Worker

VIEW = "view"
CHANGE = "change"
MANAGE = "manage"
ACTIONS = (VIEW, CHANGE, MANAGE)
Role = ProjectMember.Role
ROLE_ACTIONS = {Role.OWNER: {VIEW, CHANGE, MANAGE}, Role.EDITOR: {VIEW, CHANGE}, Role.VIEWER: {VIEW}}
ROLES_FOR = {action: tuple(role for role, actions in ROLE_ACTIONS.items() if action in actions) for action in ACTIONS}
ACTION_WORDS = {VIEW: "see", CHANGE: "change", MANAGE: "manage the team of"}


class NotAllowed(Exception):
    """The user may see the project but not do ``action`` there (a 403 saying which role is needed)."""

    def __init__(self, project: Project, action: str, role: str | None):
        self.project, self.action, self.role = project, action, role
        needed = " or ".join(Role(r).label.lower() for r in ROLES_FOR[action])
        super().__init__(
            f"To {ACTION_WORDS[action]} {project.name} you need the role {needed} in its team "
            f"(yours: {Role(role).label.lower() if role else 'none'}); ask one of its owners."
        )


def _active(user) -> bool:
    return bool(user is not None and getattr(user, "is_authenticated", False) and user.is_active)


def is_superuser(user) -> bool:
    return _active(user) and bool(user.is_superuser)


def may_create_projects(user) -> bool:
    """Superusers, and users with ``annotation.add_project`` (the Researcher group has it)."""
    return _active(user) and user.has_perm("annotation.add_project")


def owner_or_superuser(user, owner_id) -> bool:
    """Things of no project that belong to the user who made them (a generation run): that user and superusers;
    ``owner_id`` None (made on the command line): superusers only."""
    return _active(user) and (bool(user.is_superuser) or (owner_id is not None and owner_id == user.pk))


def is_team_user(user) -> bool:
    """May open the staff side at all: a superuser, a user who may make projects, or a member of some team. A user
    who is none of these (a crowdworker; an OIDC user not made a member yet) sees no staff page."""
    if not _active(user):
        return False
    return remembered(  # a member first (one indexed query), the Researcher role's permissions only if not
        ("team-user", user.pk),
        lambda: bool(
            user.is_superuser or ProjectMember.objects.filter(user=user).exists() or may_create_projects(user)
        ),
    )


def role_of(user, project: Project) -> str | None:
    """The user's role in ``project``'s team (superusers: owner); ``None``: not in it."""
    if not _active(user):
        return None
    if user.is_superuser:
        return Role.OWNER
    return remembered(  # once per request and project (argora.request_memo)
        ("role", user.pk, project.pk),
        lambda: ProjectMember.objects.filter(project_id=project.pk, user=user).values_list("role", flat=True).first(),
    )


def can(user, project: Project, action: str = VIEW) -> bool:
    role = role_of(user, project)
    return role is not None and action in ROLE_ACTIONS[Role(role)]


def check(user, project: Project, action: str = VIEW) -> None:
    """Nothing when ``can(user, project, action)``; :class:`NotAllowed` for a member without the role; ``LookupError``
    for a user outside the team (callers answer 404)."""
    role = role_of(user, project)
    if role is None:
        raise LookupError(f"no project {project.slug!r}")
    if action not in ROLE_ACTIONS[Role(role)]:
        raise NotAllowed(project, action, role)


def projects_q(user, action: str = VIEW) -> Q:
    """A filter of the projects the user may ``action``: nothing for a user outside every team, everything for a
    superuser."""
    if not _active(user):
        return Q(pk__in=[])
    if user.is_superuser:
        return Q()
    return Q(members__user=user, members__role__in=ROLES_FOR[action])


def projects(user, action: str = VIEW) -> QuerySet[Project]:
    """The projects ``user`` may ``action`` (a superuser: all)."""
    if is_superuser(user):
        return Project.objects.all()
    return Project.objects.filter(pk__in=Project.objects.filter(projects_q(user, action)).values("pk"))


def project_ids(user, action: str = VIEW):
    """A subquery of the ids of :func:`projects` (for ``project_id__in=``)."""
    return projects(user, action).values("pk")


def visible_project(user, slug: str, action: str = VIEW) -> Project:
    """The project ``slug`` if the user may ``action`` it; ``Project.DoesNotExist`` when there is none or the user is
    outside its team (the same answer, so a slug tells nothing); :class:`NotAllowed` for a member without the role."""
    project = Project.objects.get(slug=slug)
    try:
        check(user, project, action)
    except LookupError:
        raise Project.DoesNotExist(f"no project {slug!r}") from None
    return project


def workers(user) -> QuerySet[Worker]:
    """The workers who worked in, or came into, a project the user may see."""
    if is_superuser(user):
        return Worker.objects.all()
    ids = project_ids(user)
    return Worker.objects.filter(
        Q(pk__in=Assignment.objects.filter(project_id__in=ids).values("worker_id"))
        | Q(pk__in=Participation.objects.filter(project_id__in=ids).values("worker_id"))
        | Q(pk__in=Admission.objects.filter(project_id__in=ids).values("worker_id"))
    )


def members(project: Project) -> QuerySet[ProjectMember]:
    return ProjectMember.objects.filter(project=project).select_related("user", "added_by").order_by("role", "id")


DOOR_SOURCES = (Worker.Source.INVITE, Worker.Source.PROLIFIC)  # workers a project's link made


def worker_admitted(project: Project, worker: Worker) -> bool:
    """May ``worker`` take HITs of ``project``? A local account (one the operator or the institution's sign-in made:
    the department's own people) or a worker without an account (a platform's, who works through that platform's
    signed pages): yes. A worker an invite link or a Prolific study link made (a passwordless stranger): only where
    one of the project's doors let it in (an :class:`Admission`, :func:`annotation.services.admit_worker`; its own
    earlier work there counts too), so a worker of one study cannot reach another study by its slug."""
    if worker.user_id is None or worker.source not in DOOR_SOURCES:
        return True
    return (
        Admission.objects.filter(project=project, worker=worker).exists()
        or Assignment.objects.filter(project=project, worker=worker).exists()
        or Participation.objects.filter(project=project, worker=worker).exists()
    )


def release_projects(config) -> list[str]:
    """The slugs of the projects a release's ``config`` exports (``project`` / ``projects``)."""
    config = config if isinstance(config, dict) else {}
    slugs = config.get("projects") or ([config["project"]] if config.get("project") else [])
    if isinstance(slugs, str):
        slugs = [s.strip() for s in slugs.split(",") if s.strip()]
    return [str(s) for s in slugs] if isinstance(slugs, (list, tuple)) else []


def _config_visible(user, config) -> bool:
    slugs = release_projects(config)
    if not slugs:
        return may_create_projects(user)
    return projects(user).filter(slug__in=slugs).count() == len(set(slugs))


def release_visible(user, release) -> bool:
    """May ``user`` download ``release``? A release of annotation projects: the user may see every one of them. A
    release of no project (corpus sentences): users who may make projects."""
    return is_superuser(user) or (_active(user) and _config_visible(user, release.config))


def visible_releases(user, queryset):
    """The releases of ``queryset`` that :func:`release_visible` lets ``user`` see."""
    if is_superuser(user):
        return queryset
    if not _active(user):
        return queryset.none()
    ids = [
        pk
        for pk, config in queryset.model.objects.filter(pk__in=queryset.values("pk")).values_list("pk", "config")
        if _config_visible(user, config)
    ]
    return queryset.filter(pk__in=ids)
