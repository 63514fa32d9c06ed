"""Set-up services of the study studio: every write the studio pages make is one of these functions (or a function of
:mod:`annotation.services` that they call); the pages only show forms and results.

A new project is made in steps (:mod:`annotation.studio.views`):

1. :func:`check_setup`: name, task type, its config and the main settings, checked without writing anything;
2. :func:`store_upload` keeps the uploaded file under ``MEDIA_ROOT/studio-uploads/<random>/<name>`` (refused over
   :data:`MAX_UPLOAD_BYTES`), :func:`source_input` checks the source's options, and :func:`preview_import` reads and
   checks everything through the task type's ``sources`` module -- nothing is written; a bad file gives every
   problem found as ``file:line: reason``;
3. :func:`start_import` queues :func:`run_import` on a Celery worker (``annotation.studio_import``, the default
   queue), which creates the project, writes its items with the same all-or-nothing importers the CLI uses and builds
   the HITs, all in one transaction: on any problem nothing is left behind.

A source whose rows carry labels (``Source.gold_label``) takes a gold share (:class:`~annotation.task_types.base.
GoldShare`: none, the first N rows, N% drawn with a seed; on an addition also every row), which
:func:`source_input` checks and the upload spec carries to the worker.

Items are added to an existing project (draft, active or paused; ``/studio/projects/<slug>/items/add/``) in the same
steps: :func:`source_input` with ``adding_to``, :func:`preview_import` with the saved project, then
:func:`start_import` of an :func:`addition_spec`, which :func:`run_import` hands to :func:`run_addition`: the new
items through the task type's ``sources.write``, a row already in the project skipped, HITs for the new items only
(the project's HITs, assignments and answers stay as they are), the audit line; one transaction.

Then :func:`update_settings` (refusing changes that would break running work), :func:`change_status` (draft ->
active <-> paused -> closed) and :func:`unblock` run the project.
"""
from __future__ import annotations

import csv
import io
import secrets
import shutil
import time
import uuid
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.urls import reverse
from django.utils import timezone
from django.utils.crypto import salted_hmac
from django.utils.text import get_valid_filename

from annotation import services, teams
from annotation.models import HIT, Item, Project, Worker
from annotation.task_types import get_task_type, sources_of
from annotation.task_types.base import GoldShare, Preview, ResponseInvalid, Source, SourceInput, TaskType
from argora.errors import FieldError, FileLineError
from argora.html import markdown_html
from argora.jobs import result_link
from argora.progress import null_progress
from corpus.importers.readers import read_text
from corpus.models import Topic

from . import sentences

# The largest file the studio takes (settings.ARGORA_STUDIO_MAX_UPLOAD_MB, from the environment); larger imports: the CLI.
MAX_UPLOAD_BYTES = settings.ARGORA_STUDIO_MAX_UPLOAD_MB * 1024 * 1024
UPLOAD_DIR = "studio-uploads"
UPLOAD_KEEP_SECONDS = 2 * 24 * 3600  # uploads never confirmed are removed after this long
MAX_PROBLEMS = 20     # problems listed for a bad file
SCAN_ROWS = 500       # rows of a bad file checked one by one for more problems
SETUP_FIELDS = ("assignments_per_item", "items_per_hit", "gold_rate")
SETTINGS_FIELDS = ("assignments_per_item", "items_per_hit", "gold_rate", "reward_cents", "time_estimate_seconds",
                   "reservation_timeout_seconds", "gold_min_items", "gold_min_accuracy", "max_hits_per_worker")
# the status a project may move to from each status (the studio's buttons)
TRANSITIONS = {
    Project.Status.DRAFT: (Project.Status.ACTIVE,),
    Project.Status.ACTIVE: (Project.Status.PAUSED, Project.Status.CLOSED),
    Project.Status.PAUSED: (Project.Status.ACTIVE, Project.Status.CLOSED),
    Project.Status.CLOSED: (),
}
GUIDELINES_KEY = "guidelines_markdown"   # project.config key of the guidelines' Markdown source
IMPORT_KEY = "studio_import"             # project.config key: where the items came from (job, source, file)
ADDITIONS_KEY = "studio_additions"       # project.config key: the items added since (job, source, file, summary)
ADDITIONS_KEPT = 100                     # additions listed in the config (the audit log keeps every one)


class SetupRefused(FieldError):
    """A set-up or settings change the studio refuses (``field: reason``)."""


class StudioImportFailed(Exception):
    """An import that wrote nothing; the message is what the person reads (``file:line: reason``)."""


# --- task types and their sources -----------------------------------------------------------------------------
def sources_module(tt: TaskType) -> ModuleType | None:
    """The task type's ``sources`` module; a sentence-built task type without one gets the corpus sources."""
    return sources_of(tt.name) or (sentences if tt.builds_from_sentences else None)


def sources_for(tt: TaskType) -> tuple[Source, ...]:
    """The task type's sources. The corpus sources (:mod:`.sentences`) take gold answers from the sentences' corpus
    stance, which only a task type with ``gold_from_sentence`` reads as an answer: for the others they offer no gold
    share (their ``gold_label`` is cleared)."""
    module = sources_module(tt)
    found = tuple(getattr(module, "SOURCES", ())) if module is not None else ()
    if type(tt).gold_from_sentence is TaskType.gold_from_sentence:
        found = tuple(replace(s, gold_label="") if s in sentences.SOURCES else s for s in found)
    return found


def source_named(tt: TaskType, name: str) -> Source:
    for source in sources_for(tt):
        if source.name == name:
            return source
    known = ", ".join(s.name for s in sources_for(tt)) or "none: this task type has no sources module"
    raise SetupRefused("source", f"{tt.label} items cannot come from {name!r} (known: {known})")


def default_config(tt: TaskType) -> dict:
    """The task type's config with its defaults filled in (what the new-project form shows), without the empty
    containers a task type keeps for itself (e.g. sampled pairs)."""
    try:
        config = tt.clean_config({})
    except ResponseInvalid:
        return {}
    return {k: v for k, v in config.items() if v not in ({}, [])}


def item_summary(project: Project, payload: dict) -> str:
    """One line naming an item (the studio's feedback list): the task type's ``sources.summary``, else its text."""
    try:
        module = sources_module(project.get_task_type())
    except KeyError:  # a project row of a task type that is not installed
        module = None
    fn = getattr(module, "summary", None)
    if fn is not None:
        return fn(payload or {})
    for key in ("text", "sentence", "conclusion", "topic"):
        if isinstance((payload or {}).get(key), str):
            return payload[key]
    return ""


# --- step 1: the project's set-up ----------------------------------------------------------------------------
def check_setup(*, name: str, task_type: str, config: Any, values: dict) -> Project:
    """An unsaved project for the set-up, checked as ``services.create_project`` checks it; raises
    :class:`SetupRefused` (``name``, ``task_type``, ``config.<key>``, a setting's name). Writes nothing."""
    if not (name or "").strip():
        raise SetupRefused("name", "give the project a name")
    try:
        tt = get_task_type(task_type)
    except KeyError as exc:
        raise SetupRefused("task_type", str(exc.args[0])) from None
    if config is not None and not isinstance(config, dict):
        raise SetupRefused("config", "expected a JSON object {key: value}")
    try:
        config = tt.clean_config(config)
    except ResponseInvalid as exc:
        raise SetupRefused(f"config.{exc.field}", exc.reason) from None
    fields = {**tt.project_defaults, **{key: value for key, value in values.items() if value is not None}}
    project = Project(name=name.strip(), slug="studio-check", task_type=tt.name, config=config, **fields)
    try:
        project.full_clean(exclude=["slug", "invite_token", "created_by"], validate_unique=False)
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise SetupRefused(field if field != "__all__" else "settings", " ".join(messages)) from None
    return project


# --- step 2: the upload, the source's options and the preview ------------------------------------------------
def _remove_old_uploads(root: Path) -> None:
    cutoff = time.time() - UPLOAD_KEEP_SECONDS
    for folder in root.iterdir() if root.is_dir() else ():
        try:
            if folder.is_dir() and folder.stat().st_mtime < cutoff:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            pass


def store_upload(uploaded, source: Source) -> dict:
    """Keep an uploaded file for the preview and the worker: ``{"path", "name", "size"}``. Refused (``file``) when it
    is empty, too large or not named like the source's files."""
    name = Path(getattr(uploaded, "name", "") or "").name
    if not name:
        raise SetupRefused("file", "choose a file to upload")
    if not name.lower().endswith(source.extensions):
        raise SetupRefused("file", f"{name}: a {source.label} file ends with {' or '.join(source.extensions)}")
    if uploaded.size > MAX_UPLOAD_BYTES:
        raise SetupRefused("file", f"{name} is {uploaded.size / 1024 / 1024:.1f} MB; the studio takes files up to "
                                   f"{MAX_UPLOAD_BYTES // 1024 // 1024} MB (import larger ones with the command line)")
    if uploaded.size == 0:
        raise SetupRefused("file", f"{name} is empty")
    root = Path(settings.MEDIA_ROOT) / UPLOAD_DIR
    root.mkdir(parents=True, exist_ok=True)
    _remove_old_uploads(root)
    folder = root / secrets.token_hex(12)
    folder.mkdir()
    safe = get_valid_filename(name)[:120] or "upload"
    path = folder / safe
    with open(path, "wb") as fh:
        for chunk in uploaded.chunks():
            fh.write(chunk)
    return {"path": str(path), "name": name, "size": uploaded.size}


def upload_path(stored: dict | None) -> Path | None:
    """The path of a stored upload, only when it lies in the studio's upload folder (what a session may name)."""
    if not stored or not isinstance(stored.get("path"), str):
        return None
    root = (Path(settings.MEDIA_ROOT) / UPLOAD_DIR).resolve()
    path = Path(stored["path"]).resolve()
    return path if root in path.parents and path.is_file() else None


def has_worker_items(project: Project | None) -> bool:
    """Whether a saved project has items for the workers (what a gold-only addition needs)."""
    return project is not None and project.pk is not None and \
        Item.objects.filter(project=project, is_gold=False).exists()


def gold_share(source: Source, gold: GoldShare | dict | None, *, adding_to: Project | None = None) -> GoldShare:
    """The checked gold share of an upload (``gold``: a GoldShare or ``{"mode", "n", "seed"}`` as the form sends
    it). Refused naming ``gold_mode``, ``gold_n`` or ``gold_seed``: a share of a source whose rows carry no answers, a
    first-N / percent share without N, every row gold unless items are added to a project that has items for the
    workers (``adding_to``)."""
    if gold is None:
        return GoldShare()
    if not isinstance(gold, GoldShare):
        values = dict(gold)
        numbers = {}
        for key, default in (("n", 0), ("seed", 13)):
            value = values.get(key)
            try:
                numbers[key] = default if value in (None, "") else int(value)
            except (TypeError, ValueError):
                raise SetupRefused(f"gold_{key}", "a whole number") from None
        try:
            gold = GoldShare(mode=values.get("mode") or "none", n=numbers["n"], seed=numbers["seed"])
        except FieldError as exc:
            raise SetupRefused(exc.field, exc.reason) from None
    if gold.mode == "none":
        return GoldShare(seed=gold.seed)
    if not source.gold_label:
        raise SetupRefused("gold_mode", f"{source.label} rows carry no answers: no gold items from them")
    if gold.mode == "first" and gold.n < 1:
        raise SetupRefused("gold_n", "how many of the first rows become gold items (1 or more)")
    if gold.mode == "percent" and gold.n < 1:
        raise SetupRefused("gold_n", "what share of the rows becomes gold items, in percent (1 to 100)")
    if gold.mode == "all" and not has_worker_items(adding_to):
        raise SetupRefused("gold_mode", "every row a gold item: only when adding to a project that has items for "
                                        "the workers; leave some rows for the workers")
    return gold


def source_input(source: Source, *, upload: dict | None = None, topics=(), limit: int | None = None,
                 options: dict | None = None, gold: GoldShare | dict | None = None,
                 adding_to: Project | None = None) -> SourceInput:
    """What the source reads, with its options and gold share (:func:`gold_share`) checked and their defaults
    filled in (:class:`SetupRefused` naming the option, ``gold_mode`` / ``gold_n`` / ``gold_seed``, or ``file``,
    ``topics``, ``limit``). ``adding_to``: the saved project the items are added to (none: a new project)."""
    options = dict(options or {})
    clean: dict[str, Any] = {}
    for option in source.options:
        value = options.get(option.name)
        if option.kind == "bool":
            clean[option.name] = bool(value) if value is not None else bool(option.default)
        elif option.kind == "int":
            if value in (None, ""):
                value = option.default if option.default is not None else option.minimum
            try:
                number = int(value)
            except (TypeError, ValueError):
                raise SetupRefused(option.name, "a whole number") from None
            if number < option.minimum or (option.maximum is not None and number > option.maximum):
                bounds = f"at least {option.minimum}" + (f" and at most {option.maximum}" if option.maximum else "")
                raise SetupRefused(option.name, f"{bounds}")
            clean[option.name] = number
        else:
            text = "" if value is None else str(value).strip()
            clean[option.name] = text[:200] or (option.default or "")
    share = gold_share(source, gold, adding_to=adding_to)
    if limit is not None and limit < 1:
        raise SetupRefused("limit", "at least 1 (or empty: no limit)")
    path, name = None, ""
    if source.is_upload:
        path = upload_path(upload)
        if path is None:
            raise SetupRefused("file", "upload the file again (the stored copy is gone)")
        name = upload["name"]
    topic_rows = list(Topic.objects.filter(pk__in=[int(t) for t in topics]).order_by("name")) if topics else []
    if len(topic_rows) != len(set(topics or ())):
        raise SetupRefused("topics", "a chosen topic no longer exists")
    return SourceInput(source=source, path=path, file_name=name, topics=topic_rows, limit=limit, options=clean,
                       gold=share)


def problem_text(exc: Exception, data: SourceInput | None) -> str:
    """What a person reads of a refused import: ``file:line: reason`` with the name they uploaded."""
    if isinstance(exc, FileLineError):
        shown = data.file_name if data is not None and data.path is not None and Path(exc.file) == data.path \
            else Path(exc.file).name
        return f"{shown}:{exc.line}: {exc.reason}"
    return str(exc)


def _row_chunks(text: str, layout: str) -> list[tuple[int, str, int]]:
    """``(line, text, header lines)`` of each row of a file as a file of its own (with the header of a CSV/TSV)."""
    if layout == "jsonl":
        return [(n, line, 0) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
    dialect = "excel-tab" if layout == "tsv" else "excel"
    reader = csv.reader(io.StringIO(text, newline=""), dialect=dialect)
    try:
        header = next(reader)
    except (StopIteration, csv.Error):
        return []
    chunks, last = [], reader.line_num
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return chunks
        except csv.Error:
            return chunks
        line, last = last + 1, reader.line_num
        out = io.StringIO()
        writer = csv.writer(out, dialect=dialect, lineterminator="\n")
        writer.writerow(header)
        writer.writerow(cells)
        chunks.append((line, out.getvalue(), 1))


def _every_problem(module, project, data: SourceInput, first: FileLineError) -> list[str]:
    """The problems of a file row by row (each row checked as a file of its own), with the first one found."""
    found = {first.line: problem_text(first, data)}
    try:
        text = read_text(data.path)
    except FileLineError:
        return list(found.values())
    folder = data.path.parent / f"rows-{secrets.token_hex(4)}"
    folder.mkdir()
    try:
        for line, chunk, header in _row_chunks(text, data.source.rows)[:SCAN_ROWS]:
            if len(found) >= MAX_PROBLEMS:
                break
            if line in found:
                continue
            row_file = folder / data.path.name
            row_file.write_text(chunk, encoding="utf-8")
            try:
                module.preview(project, replace(data, path=row_file))
            except FileLineError as exc:
                if exc.line > header:
                    found[line + exc.line - header - 1] = f"{data.file_name}:{line + exc.line - header - 1}: " \
                                                          f"{exc.reason}"
            except (FieldError, ValueError):
                pass  # not a problem of this row alone
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return [found[n] for n in sorted(found)]


def preview_import(project: Project, data: SourceInput) -> tuple[Preview | None, list[str]]:
    """What the import would make (the task type's ``sources.preview``) and every problem found; writes nothing."""
    module = sources_module(project.get_task_type())
    if module is None:
        return None, ["source: this task type says nowhere where its items come from (no sources module)"]
    try:
        preview = module.preview(project, data)
    except FileLineError as exc:
        if data.path is not None and data.source.rows:
            return None, _every_problem(module, project, data, exc)
        return None, [problem_text(exc, data)]
    except (FieldError, ValueError) as exc:
        return None, [problem_text(exc, data)]
    if project.pk is None and data.gold.active and preview.items == 0:
        return None, [f"gold_n: leave some rows for the workers ({data.gold.describe()}: {preview.gold} gold "
                      f"item(s), no item for the workers)"]
    return preview, []


# --- step 3: the import on a worker ---------------------------------------------------------------------------
def import_spec(project: Project, data: SourceInput, *, user=None) -> dict:
    """Everything the worker needs, as JSON: the checked set-up and the source."""
    return {"name": project.name, "task_type": project.task_type, "config": project.config,
            "settings": {key: getattr(project, key) for key in SETUP_FIELDS},
            "source": data.source.name, "path": str(data.path) if data.path else None, "file_name": data.file_name,
            "topics": [t.pk for t in data.topics], "limit": data.limit, "options": data.options,
            "gold": data.gold.as_dict(), "user": getattr(user, "pk", None)}


def addition_spec(project: Project, data: SourceInput, *, user=None) -> dict:
    """What the worker needs to add items to the saved ``project``: the project and the source (as
    :func:`import_spec`)."""
    return {"add_to": project.pk, "project": project.slug, "task_type": project.task_type,
            "source": data.source.name, "path": str(data.path) if data.path else None, "file_name": data.file_name,
            "topics": [t.pk for t in data.topics], "limit": data.limit, "options": data.options,
            "gold": data.gold.as_dict(), "user": getattr(user, "pk", None)}


def addition_job_id(project: Project) -> str:
    """A new job id (a UUID) for an addition to ``project`` that only this project's pages accept: its last 8 bytes
    are a keyed hash of the project and the first 8 (:func:`is_addition_job`)."""
    head = secrets.token_bytes(8)
    return str(uuid.UUID(bytes=head + _job_tag(project, head)))


def is_addition_job(project: Project, task_id) -> bool:
    raw = uuid.UUID(str(task_id)).bytes
    return secrets.compare_digest(raw[8:], _job_tag(project, raw[:8]))


def _job_tag(project: Project, head: bytes) -> bytes:
    return salted_hmac("argora.studio.addition", f"{project.pk}:{head.hex()}").digest()[:8]


def start_import(spec: dict, *, task_id: str | None = None) -> str:
    """Queue the import (``annotation.studio_import``, default queue) once the current transaction commits; returns
    the job's id (its page: ``/studio/jobs/<id>/``; an addition's: under its project)."""
    from annotation.tasks import studio_import  # a real cycle: annotation.tasks imports this module

    task_id = task_id or str(uuid.uuid4())
    transaction.on_commit(lambda: studio_import.apply_async(args=[spec], task_id=task_id))
    return task_id


def _spec_input(tt: TaskType, spec: dict) -> SourceInput:
    """The source input an upload spec names (the upload must still be there)."""
    source = source_named(tt, spec["source"])
    path = Path(spec["path"]) if spec.get("path") else None
    if source.is_upload and (path is None or not path.is_file()):
        raise SetupRefused("file", "the uploaded file is gone; upload it again")
    return SourceInput(source=source, path=path, file_name=spec.get("file_name") or "",
                       topics=list(Topic.objects.filter(pk__in=spec.get("topics") or []).order_by("name")),
                       limit=spec.get("limit"), options=spec.get("options") or {},
                       gold=GoldShare.from_dict(spec.get("gold")))


def _spec_user(spec: dict):
    return get_user_model().objects.filter(pk=spec.get("user")).first() if spec.get("user") else None


def run_import(spec: dict, *, progress=null_progress, job: str | None = None) -> dict:
    """Create the project, write its items through the task type's ``sources.write`` and build the HITs, in ONE
    transaction: on any problem nothing is written and :class:`StudioImportFailed` says why. Running it again for
    the same ``job`` returns the first result (a retried task makes no second project). A spec of
    :func:`addition_spec` adds the items to its project instead (:func:`run_addition`)."""
    if spec.get("add_to"):
        return run_addition(spec, progress=progress, job=job)
    if job:
        done = Project.objects.filter(**{f"config__{IMPORT_KEY}__job": job}).first()
        if done is not None:
            return _import_result(done, done.config[IMPORT_KEY].get("summary") or {})
    data = None
    try:
        tt = get_task_type(spec["task_type"])
        module = sources_module(tt)
        data = _spec_input(tt, spec)
        source, path = data.source, data.path
        user = _spec_user(spec)
        if data.gold.mode == "all":
            raise SetupRefused("gold_mode", "every row a gold item: only when adding to a project that has items "
                                            "for the workers")
        origin = {"job": job or "", "source": source.name, "source_label": source.label, "file": data.file_name,
                  "topics": [t.name for t in data.topics]}
        progress(0, None, "creating the project")
        with transaction.atomic():
            project = services.create_project(name=spec["name"], task_type=tt.name,
                                              config={**(spec.get("config") or {}), IMPORT_KEY: origin},
                                              created_by=user, **(spec.get("settings") or {}))
            summary = module.write(project, data, progress)
            project.refresh_from_db()
            summary = {"items": int(summary.get("items", 0)), "gold": int(summary.get("gold", 0))}
            if data.gold.active and not summary["items"]:
                raise SetupRefused("gold_n", "leave some rows for the workers")
            progress(0, None, "building HITs")
            services.build_hits(project)
            summary["hits"] = HIT.objects.filter(project=project).count()
            config = dict(project.config)
            config[IMPORT_KEY] = {**origin, "summary": summary}
            Project.objects.filter(pk=project.pk).update(config=config)
            project.config = config
    except (FileLineError, FieldError, ValueError) as exc:
        raise StudioImportFailed(problem_text(exc, data)) from None
    if path is not None:
        shutil.rmtree(path.parent, ignore_errors=True)
    return _import_result(project, summary)


def _import_result(project: Project, summary: dict) -> dict:
    return {"project": project.slug, **summary,
            **result_link(reverse("annotation:studio-project", args=[project.slug]), f"Open {project.name}")}


def addition_refused(project: Project) -> str:
    """Why items cannot be added to ``project`` now ("" when they can): a closed project takes none."""
    if project.status == Project.Status.CLOSED:
        return f"{project.name} is closed: a closed project takes no new items (make a new project instead)"
    return ""


def run_addition(spec: dict, *, progress=null_progress, job: str | None = None) -> dict:
    """Add the items of an upload (or a corpus selection) to the saved project of an :func:`addition_spec`, in ONE
    transaction: the task type's ``sources.write``, then HITs for the new items only (:func:`annotation.services.
    build_hits` puts only items that are in no HIT into new HITs: the project's HITs, assignments and answers stay
    as they are), the addition in the project's config and its audit line (``items.add``). A row whose item the
    project has already (the same corpus sentence or the same key) is skipped; nothing new at all, a closed
    project, a bad file: :class:`StudioImportFailed`, nothing written. Running it again for the same ``job``
    returns the first result."""
    project = Project.objects.filter(pk=spec.get("add_to")).first()
    if project is None:
        raise StudioImportFailed("project: the project is gone")
    if job:
        for done in (project.config or {}).get(ADDITIONS_KEY) or []:
            if done.get("job") == job:
                return {**_import_result(project, done.get("summary") or {}), "added": True}
    data = None
    try:
        tt = get_task_type(project.task_type)
        module = sources_module(tt)
        if module is None:
            raise SetupRefused("source", f"{tt.label} says nowhere where its items come from")
        data = _spec_input(tt, spec)
        user = _spec_user(spec)
        progress(0, None, "adding the items")
        with transaction.atomic():
            locked = Project.objects.select_for_update().get(pk=project.pk)
            refused = addition_refused(locked)
            if refused:
                raise SetupRefused("project", refused)
            if data.gold.mode == "all" and not has_worker_items(locked):
                raise SetupRefused("gold_mode", "every row a gold item: only when the project has items for the "
                                                "workers already")
            items = Item.objects.filter(project=locked)
            last = items.aggregate(last=Max("pk"))["last"] or 0
            had_sentences = set(items.filter(sentence__isnull=False).values_list("sentence_id", flat=True))
            had_keys = set(items.exclude(external_key="").values_list("external_key", flat=True))
            hits_before = HIT.objects.filter(project=locked).count()
            module.write(locked, data, progress)
            new = list(Item.objects.filter(project=locked, pk__gt=last)
                       .values_list("pk", "sentence_id", "external_key", "is_gold"))
            again = {pk for pk, sentence, key, _ in new if sentence in had_sentences or (key and key in had_keys)}
            if again:  # made by this write, in this transaction
                Item.objects.filter(pk__in=again).delete()
            kept = [row for row in new if row[0] not in again]
            if not kept:
                raise SetupRefused("items", "nothing to add: every row is in the project already" if again else
                                            "nothing to add: no rows")
            locked.refresh_from_db()
            progress(0, None, "building HITs")
            services.build_hits(locked)
            summary = {"items": sum(1 for row in kept if not row[3]), "gold": sum(1 for row in kept if row[3]),
                       "skipped": len(again), "hits": HIT.objects.filter(project=locked).count() - hits_before}
            addition = {"job": job or "", "source": data.source.name, "source_label": data.source.label,
                        "file": data.file_name, "topics": [t.name for t in data.topics],
                        "gold": data.gold.describe(), "summary": summary, "at": timezone.now().isoformat()}
            locked.refresh_from_db(fields=["config"])
            config = dict(locked.config or {})
            config[ADDITIONS_KEY] = ([*(config.get(ADDITIONS_KEY) or []), addition])[-ADDITIONS_KEPT:]
            Project.objects.filter(pk=locked.pk).update(config=config)
            teams.record(locked, user, "items.add", {  # (no key "items": the audit template reads .items)
                "source": data.source.name, "file": data.file_name, "gold_share": data.gold.describe(),
                "new_items": summary["items"], "new_gold": summary["gold"], "skipped": summary["skipped"],
                "new_hits": summary["hits"], "job": job or ""})
    except (FileLineError, FieldError, ValueError) as exc:
        raise StudioImportFailed(problem_text(exc, data)) from None
    if data.path is not None:
        shutil.rmtree(data.path.parent, ignore_errors=True)
    return {**_import_result(project, summary), "added": True}


# --- running the project ---------------------------------------------------------------------------------------
def update_settings(project: Project, values: dict, *, guidelines_markdown: str | None = None) -> Project:
    """Change the project's settings (``values``: any of :data:`SETTINGS_FIELDS`) and its guidelines (Markdown,
    stored as sanitised HTML and as its source in ``config["guidelines_markdown"]``). A change that would break
    running work is refused naming the field: items per HIT once HITs exist, fewer responses per item (R) than a HIT
    already has. Everything is checked before anything is written."""
    values = {key: value for key, value in values.items() if key in SETTINGS_FIELDS}
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        hits = HIT.objects.filter(project=locked)
        if "items_per_hit" in values and values["items_per_hit"] != locked.items_per_hit and hits.exists():
            raise SetupRefused("items_per_hit", f"{hits.count()} HIT(s) are built with {locked.items_per_hit} item(s) "
                                                f"each; the number cannot change now (make a new project instead)")
        if "assignments_per_item" in values:
            taken = hits.aggregate(most=Max("taken"))["most"] or 0
            if values["assignments_per_item"] is not None and values["assignments_per_item"] < taken:
                raise SetupRefused("assignments_per_item", f"a HIT already has {taken} worker(s) (answering or done); "
                                                           f"R cannot go below {taken}")
        for key, value in values.items():
            setattr(locked, key, value)
        config = dict(locked.config or {})
        if guidelines_markdown is not None:
            if len(guidelines_markdown) > 100_000:
                raise SetupRefused("guidelines", "at most 100,000 characters")
            locked.guidelines = markdown_html(guidelines_markdown)
            config[GUIDELINES_KEY] = guidelines_markdown
        locked.config = config
        try:
            locked.full_clean(exclude=["slug", "invite_token", "created_by", "task_type"], validate_unique=False)
        except ValidationError as exc:
            field, messages = next(iter(exc.message_dict.items()))
            raise SetupRefused(field if field != "__all__" else "settings", " ".join(messages)) from None
        Project.objects.filter(pk=locked.pk).update(config=config, guidelines=locked.guidelines,
                                                    **{key: getattr(locked, key) for key in values})
    project.refresh_from_db()
    return project


def allowed_statuses(project: Project) -> tuple[str, ...]:
    return tuple(TRANSITIONS.get(project.status, ()))


def change_status(project: Project, status: str) -> Project:
    """Move the project along draft -> active <-> paused -> closed (:func:`annotation.services.set_project_status`,
    which refuses to activate a project without HITs)."""
    if status not in Project.Status.values:
        raise SetupRefused("status", f"must be one of {', '.join(Project.Status.values)}")
    if status not in allowed_statuses(project):
        current = project.get_status_display().lower()
        choices = ", ".join(allowed_statuses(project)) or "nothing: a closed project stays closed"
        raise SetupRefused("status", f"a {current} project cannot become {status} (it can become: {choices})")
    return services.set_project_status(project, status)


def unblock(project: Project, worker: Worker) -> Worker:
    """Let a blocked worker of the project work again (:func:`annotation.services.unblock_worker`)."""
    if not worker.assignments.filter(project=project).exists():
        raise SetupRefused("worker", "this worker has no HIT in this project")
    return services.unblock_worker(worker)
