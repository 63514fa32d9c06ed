"""Shared set-up for the tests of the task types' studio sources: a file stored as the studio stores an upload, read
through ``annotation.studio.services.source_input`` (the options' defaults and the gold share checked as the studio
checks them), and a Kialo export as Kialo writes it."""

from __future__ import annotations

import secrets
from pathlib import Path

from django.conf import settings

from annotation import services
from annotation.studio import services as studio
from annotation.task_types import get_task_type
from argora.progress import null_progress

# Kialo's plain-text export (debate trees §2.1): the title, a blank line, numbered claims with Pro:/Con: towards
# their parent, a claim continued on the next line, a "-> See" reference copying another claim.
KIALO = """Discussion Title: Should schools require uniforms?

1. Schools should require uniforms.
1.1. Pro: Uniforms reduce bullying over clothes.
1.1.1. Con: Children are bullied for
other things too.
1.1.1.1. Pro: Removing one reason for bullying still helps.
1.1.2. Pro: Poorer pupils stand out less.
1.2. Con: Uniforms cost families money.
1.2.1. Pro: A set of uniforms costs more than ordinary clothes.
1.2.2. Con: -> See 1.1.2.
1.3. Pro: Uniforms make a school feel like a community.
1.4. Con: Uniforms limit self-expression.
"""


def stored(name: str, text: str) -> dict:
    """An upload kept where the studio keeps them (``MEDIA_ROOT/studio-uploads/<random>/<name>``)."""
    folder = Path(settings.MEDIA_ROOT) / studio.UPLOAD_DIR / secrets.token_hex(6)
    folder.mkdir(parents=True)
    (folder / name).write_text(text, encoding="utf-8")
    return {"path": str(folder / name), "name": name}


def source_input(
    task_type: str,
    source: str,
    name: str | None = None,
    text: str | None = None,
    *,
    options=None,
    gold=None,
    topics=(),
    limit=None,
):
    tt = get_task_type(task_type)
    upload = stored(name, text) if name is not None else None
    return studio.source_input(
        studio.source_named(tt, source), upload=upload, options=options or {}, gold=gold, topics=topics, limit=limit
    )


def setup(task_type: str, config=None, **values):
    """An unsaved, checked project (what the studio previews for)."""
    return studio.check_setup(name=f"{task_type} study", task_type=task_type, config=config or {}, values=values)


def write(task_type: str, data, config=None, **values):
    """The source's ``write`` for a new project of ``task_type``, as the studio's import runs it (then the HITs)."""
    project = services.create_project(name=f"{task_type} study", task_type=task_type, config=config or {}, **values)
    module = studio.sources_module(project.get_task_type())
    summary = module.write(project, data, null_progress)
    services.build_hits(project)
    return project, summary
