"""What every release kind of annotation projects reads from its config (``annotation/exporters.py`` and the task
types' ``release`` modules): the known keys and the project slugs."""

from __future__ import annotations

from .models import Project


def check_keys(config: dict, allowed: tuple[str, ...]) -> None:
    """``ValueError("config: unknown key(s) ...")`` for keys outside ``allowed``."""
    unknown = set(config) - set(allowed)
    if unknown:
        expected = ", ".join(k for k in allowed if k != "project")
        raise ValueError(f"config: unknown key(s) {', '.join(sorted(unknown))} (expected {expected})")


def config_projects(config: dict, *, task_type: str | None = None) -> list[str]:
    """The slugs in ``config["projects"]`` (a list, or a comma-separated string) or ``config["project"]``, in the
    order given without repeats; each must be an existing project (of ``task_type`` when given, with a task type
    that is installed). Raises ``ValueError`` naming ``config.projects``."""
    slugs = config.get("projects") or ([config["project"]] if config.get("project") else [])
    if isinstance(slugs, str):
        slugs = [s.strip() for s in slugs.split(",") if s.strip()]
    if not slugs or not isinstance(slugs, list) or not all(isinstance(s, str) for s in slugs):
        kind = f"{task_type} " if task_type else ""
        raise ValueError(f"config.projects: name the {kind}project(s) to export (their slugs)")
    for slug in slugs:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise ValueError(f"config.projects: no project with slug {slug!r}")
        if task_type is not None and project.task_type != task_type:
            raise ValueError(f"config.projects: project {slug!r} is a {project.task_type!r} project, not {task_type!r}")
        try:
            project.get_task_type()
        except KeyError as exc:
            raise ValueError(f"config.projects: project {slug!r}: {exc.args[0]}") from None
    return list(dict.fromkeys(slugs))
