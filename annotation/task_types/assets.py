"""Templates and static files that live in a task type's package.

A package's ``templates/<file>`` is the template ``task_types/<package>/<file>`` and its ``static/<file>`` the static
file ``task_types/<package>/<file>``, for every package :func:`annotation.task_types.packages` knows (the built-in
ones and those named in ``ARGORA_TASK_TYPE_PACKAGES``), so a task type brings its pages along without touching the
project's ``templates/`` or ``static/`` folders. Both are in the settings (``TEMPLATES[...]["OPTIONS"]["loaders"]``,
``STATICFILES_FINDERS``).

Every task type package is also a Django app (``argora.settings.task_type_apps``), whose folders Django's own
app-directories loader and finder would serve a second time without the prefix (``hit.html``, ``hit.js`` of every
package under one name): :class:`AppDirectoriesLoader` and :class:`AppDirectoriesFinder` stand in for those two and
leave the task type packages to :class:`Loader` and :class:`Finder`.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.apps import AppConfig, apps
from django.conf import settings
from django.contrib.staticfiles import finders
from django.contrib.staticfiles.finders import BaseFinder
from django.contrib.staticfiles.utils import get_files
from django.core.files.storage import FileSystemStorage
from django.template import Origin
from django.template.loaders import app_directories
from django.template.loaders.filesystem import Loader as FileSystemLoader
from django.utils._os import safe_join

from . import package_dir, packages

PREFIX = "task_types"


def _split(name: str) -> tuple[str, str] | None:
    head, _, rest = name.replace("\\", "/").partition("/")
    package, _, file = rest.partition("/")
    return (package, file) if head == PREFIX and package and file else None


class Loader(FileSystemLoader):
    """``task_types/<package>/<file>`` -> ``<package folder>/templates/<file>``."""

    def get_template_sources(self, template_name):
        parts = _split(template_name)
        folder = package_dir(parts[0]) if parts else None
        if folder is None:
            return
        try:
            name = safe_join(str(folder / "templates"), parts[1])
        except Exception:  # noqa: BLE001 - any path safe_join refuses (SuspiciousFileOperation, ValueError) is not ours
            return
        yield Origin(name=name, template_name=template_name, loader=self)


class Finder(BaseFinder):
    """``task_types/<package>/<file>`` -> ``<package folder>/static/<file>`` (``findstatic``, ``collectstatic``)."""

    def check(self, **kwargs):
        return []

    def _storages(self):
        for short in sorted(packages()):
            folder = package_dir(short)
            if folder is not None and (folder / "static").is_dir():
                yield short, FileSystemStorage(location=str(folder / "static"))

    def find(self, path, find_all=False, **kwargs):
        find_all = find_all or kwargs.get("all", False)
        parts = _split(path)
        folder = package_dir(parts[0]) if parts else None
        if folder is None:
            return [] if find_all else None
        try:
            full = safe_join(str(folder / "static"), parts[1])
        except Exception:  # noqa: BLE001 - any path safe_join refuses (SuspiciousFileOperation, ValueError) is not ours
            return [] if find_all else None
        if not os.path.exists(full):
            return [] if find_all else None
        return [full] if find_all else full

    def list(self, ignore_patterns):
        for short, storage in self._storages():
            storage.prefix = f"{PREFIX}/{short}"
            for path in get_files(storage, ignore_patterns):
                yield path, storage


def is_task_type_app(config: AppConfig) -> bool:
    """Whether the installed app ``config`` is a task type package (built in, or named in
    ``ARGORA_TASK_TYPE_PACKAGES``)."""
    return config.name in set(packages().values()) | set(getattr(settings, "ARGORA_TASK_TYPE_PACKAGES", ()))


class AppDirectoriesLoader(app_directories.Loader):
    """Django's ``app_directories.Loader`` without the task type packages' ``templates/`` (:class:`Loader` serves
    those as ``task_types/<package>/<file>``)."""

    def get_dirs(self):
        skip = {Path(c.path) for c in apps.get_app_configs() if is_task_type_app(c)}
        return [d for d in super().get_dirs() if Path(d).parent not in skip]


class AppDirectoriesFinder(finders.AppDirectoriesFinder):
    """Django's ``AppDirectoriesFinder`` without the task type packages' ``static/`` (:class:`Finder` serves those
    as ``task_types/<package>/<file>``)."""

    def __init__(self, app_names=None, *args, **kwargs):
        names = [
            c.name
            for c in apps.get_app_configs()
            if not is_task_type_app(c) and (app_names is None or c.name in app_names)
        ]
        super().__init__(names, *args, **kwargs)
