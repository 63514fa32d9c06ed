"""Set-up services of the study studio: every write the studio pages make is one of these functions (or a function of
:mod:`annotation.services` that they call); the pages only show forms and results.

A new project is made in steps (:mod:`annotation.studio.new_views`):

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

One package, one concern per module: :mod:`.setup` (limits, config keys, errors, sources, step 1), this module (steps
2 and 3: the upload, the preview, the import and the addition on a worker), :mod:`.running` (settings, status,
unblocking); every name is read from here.
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
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Max
from django.urls import reverse
from django.utils import timezone
from django.utils.crypto import salted_hmac
from django.utils.text import get_valid_filename

from annotation import services, teams
from annotation.models import HIT, Item, Project
from annotation.task_types import get_task_type
from annotation.task_types.base import GoldShare, Preview, Source, SourceInput, TaskType
from argora.errors import FieldError, FileLineError
from argora.jobs import result_link
from argora.progress import null_progress
from corpus.importers.readers import read_text
from corpus.models import Topic

from .running import allowed_statuses, change_status, unblock, update_settings  # noqa: F401  (re-exported)
from .setup import (  # noqa: F401  (re-exported: callers read every studio service here)
    ADDITIONS_KEPT,
    ADDITIONS_KEY,
    GUIDELINES_KEY,
    IMPORT_KEY,
    MAX_PROBLEMS,
    SCAN_ROWS,
    SETTINGS_FIELDS,
    SETUP_FIELDS,
    TRANSITIONS,
    UPLOAD_DIR,
    UPLOAD_KEEP_SECONDS,
    SetupRefused,
    StudioImportFailed,
    check_setup,
    default_config,
    item_summary,
    source_named,
    sources_for,
    sources_module,
)

# The largest file the studio takes (settings.ARGORA_STUDIO_MAX_UPLOAD_MB, from the environment); larger imports: the CLI.
MAX_UPLOAD_BYTES = settings.ARGORA_STUDIO_MAX_UPLOAD_MB * 1024 * 1024


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
        raise SetupRefused(
            "file",
            f"{name} is {uploaded.size / 1024 / 1024:.1f} MB; the studio takes files up to "
            f"{MAX_UPLOAD_BYTES // 1024 // 1024} MB (import larger ones with the command line)",
        )
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
    return (
        project is not None and project.pk is not None and Item.objects.filter(project=project, is_gold=False).exists()
    )


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
        raise SetupRefused(
            "gold_mode",
            "every row a gold item: only when adding to a project that has items for "
            "the workers; leave some rows for the workers",
        )
    return gold


def source_input(
    source: Source,
    *,
    upload: dict | None = None,
    topics=(),
    limit: int | None = None,
    options: dict | None = None,
    gold: GoldShare | dict | None = None,
    adding_to: Project | None = None,
) -> SourceInput:
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
    return SourceInput(
        source=source, path=path, file_name=name, topics=topic_rows, limit=limit, options=clean, gold=share
    )


def problem_text(exc: Exception, data: SourceInput | None) -> str:
    """What a person reads of a refused import: ``file:line: reason`` with the name they uploaded."""
    if isinstance(exc, FileLineError):
        shown = (
            data.file_name
            if data is not None and data.path is not None and Path(exc.file) == data.path
            else Path(exc.file).name
        )
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
                    found[line + exc.line - header - 1] = (
                        f"{data.file_name}:{line + exc.line - header - 1}: {exc.reason}"
                    )
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
        return None, [
            f"gold_n: leave some rows for the workers ({data.gold.describe()}: {preview.gold} gold "
            f"item(s), no item for the workers)"
        ]
    return preview, []


# --- step 3: the import on a worker ---------------------------------------------------------------------------
def import_spec(project: Project, data: SourceInput, *, user=None) -> dict:
    """Everything the worker needs, as JSON: the checked set-up and the source."""
    return {
        "name": project.name,
        "task_type": project.task_type,
        "config": project.config,
        "settings": {key: getattr(project, key) for key in SETUP_FIELDS},
        "source": data.source.name,
        "path": str(data.path) if data.path else None,
        "file_name": data.file_name,
        "topics": [t.pk for t in data.topics],
        "limit": data.limit,
        "options": data.options,
        "gold": data.gold.as_dict(),
        "user": getattr(user, "pk", None),
    }


def addition_spec(project: Project, data: SourceInput, *, user=None) -> dict:
    """What the worker needs to add items to the saved ``project``: the project and the source (as
    :func:`import_spec`)."""
    return {
        "add_to": project.pk,
        "project": project.slug,
        "task_type": project.task_type,
        "source": data.source.name,
        "path": str(data.path) if data.path else None,
        "file_name": data.file_name,
        "topics": [t.pk for t in data.topics],
        "limit": data.limit,
        "options": data.options,
        "gold": data.gold.as_dict(),
        "user": getattr(user, "pk", None),
    }


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
    return SourceInput(
        source=source,
        path=path,
        file_name=spec.get("file_name") or "",
        topics=list(Topic.objects.filter(pk__in=spec.get("topics") or []).order_by("name")),
        limit=spec.get("limit"),
        options=spec.get("options") or {},
        gold=GoldShare.from_dict(spec.get("gold")),
    )


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
        done = Project.objects.filter(**{f"engine__{IMPORT_KEY}__job": job}).first()
        if done is not None:
            return _import_result(done, done.engine[IMPORT_KEY].get("summary") or {})
    data = None
    try:
        tt = get_task_type(spec["task_type"])
        module = sources_module(tt)
        data = _spec_input(tt, spec)
        source, path = data.source, data.path
        user = _spec_user(spec)
        if data.gold.mode == "all":
            raise SetupRefused(
                "gold_mode", "every row a gold item: only when adding to a project that has items for the workers"
            )
        origin = {
            "job": job or "",
            "source": source.name,
            "source_label": source.label,
            "file": data.file_name,
            "topics": [t.name for t in data.topics],
        }
        progress(0, None, "creating the project")
        with transaction.atomic():
            project = services.create_project(
                name=spec["name"],
                task_type=tt.name,
                config=spec.get("config") or {},
                engine={IMPORT_KEY: origin},
                created_by=user,
                **(spec.get("settings") or {}),
            )
            summary = module.write(project, data, progress)
            project.refresh_from_db()
            summary = {"items": int(summary.get("items", 0)), "gold": int(summary.get("gold", 0))}
            if data.gold.active and not summary["items"]:
                raise SetupRefused("gold_n", "leave some rows for the workers")
            progress(0, None, "building HITs")
            services.build_hits(project)
            summary["hits"] = HIT.objects.filter(project=project).count()
            engine = dict(project.engine or {})
            engine[IMPORT_KEY] = {**origin, "summary": summary}
            Project.objects.filter(pk=project.pk).update(engine=engine)
            project.engine = engine
    except (FileLineError, FieldError, ValueError) as exc:
        raise StudioImportFailed(problem_text(exc, data)) from None
    if path is not None:
        shutil.rmtree(path.parent, ignore_errors=True)
    return _import_result(project, summary)


def _import_result(project: Project, summary: dict) -> dict:
    return {
        "project": project.slug,
        **summary,
        **result_link(reverse("annotation:studio-project", args=[project.slug]), f"Open {project.name}"),
    }


def addition_refused(project: Project) -> str:
    """Why items cannot be added to ``project`` now ("" when they can): a closed project takes none."""
    if project.status == Project.Status.CLOSED:
        return f"{project.name} is closed: a closed project takes no new items (make a new project instead)"
    return ""


def run_addition(spec: dict, *, progress=null_progress, job: str | None = None) -> dict:
    """Add the items of an upload (or a corpus selection) to the saved project of an :func:`addition_spec`, in ONE
    transaction: the task type's ``sources.write``, then HITs for the new items only (:func:`annotation.services.
    build_hits` puts only items that are in no HIT into new HITs: the project's HITs, assignments and answers stay
    as they are), the addition in the project's engine keys and its audit line (``items.add``). A row whose item the
    project has already (the same corpus sentence or the same key) is skipped; nothing new at all, a closed
    project, a bad file: :class:`StudioImportFailed`, nothing written. Running it again for the same ``job``
    returns the first result."""
    project = Project.objects.filter(pk=spec.get("add_to")).first()
    if project is None:
        raise StudioImportFailed("project: the project is gone")
    if job:
        for done in (project.engine or {}).get(ADDITIONS_KEY) or []:
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
                raise SetupRefused(
                    "gold_mode", "every row a gold item: only when the project has items for the workers already"
                )
            items = Item.objects.filter(project=locked)
            last = items.aggregate(last=Max("pk"))["last"] or 0
            had_sentences = set(items.filter(sentence__isnull=False).values_list("sentence_id", flat=True))
            had_keys = set(items.exclude(external_key="").values_list("external_key", flat=True))
            hits_before = HIT.objects.filter(project=locked).count()
            module.write(locked, data, progress)
            new = list(
                Item.objects.filter(project=locked, pk__gt=last).values_list(
                    "pk", "sentence_id", "external_key", "is_gold"
                )
            )
            again = {pk for pk, sentence, key, _ in new if sentence in had_sentences or (key and key in had_keys)}
            if again:  # made by this write, in this transaction
                Item.objects.filter(pk__in=again).delete()
            kept = [row for row in new if row[0] not in again]
            if not kept:
                raise SetupRefused(
                    "items",
                    "nothing to add: every row is in the project already" if again else "nothing to add: no rows",
                )
            locked.refresh_from_db()
            progress(0, None, "building HITs")
            services.build_hits(locked)
            summary = {
                "items": sum(1 for row in kept if not row[3]),
                "gold": sum(1 for row in kept if row[3]),
                "skipped": len(again),
                "hits": HIT.objects.filter(project=locked).count() - hits_before,
            }
            addition = {
                "job": job or "",
                "source": data.source.name,
                "source_label": data.source.label,
                "file": data.file_name,
                "topics": [t.name for t in data.topics],
                "gold": data.gold.describe(),
                "summary": summary,
                "at": timezone.now().isoformat(),
            }
            locked.refresh_from_db(fields=["engine"])
            engine = dict(locked.engine or {})
            engine[ADDITIONS_KEY] = ([*(engine.get(ADDITIONS_KEY) or []), addition])[-ADDITIONS_KEPT:]
            Project.objects.filter(pk=locked.pk).update(engine=engine)
            teams.record(
                locked,
                user,
                "items.add",
                {  # (no key "items": the audit template reads .items)
                    "source": data.source.name,
                    "file": data.file_name,
                    "gold_share": data.gold.describe(),
                    "new_items": summary["items"],
                    "new_gold": summary["gold"],
                    "skipped": summary["skipped"],
                    "new_hits": summary["hits"],
                    "job": job or "",
                },
            )
    except (FileLineError, FieldError, ValueError) as exc:
        raise StudioImportFailed(problem_text(exc, data)) from None
    if data.path is not None:
        shutil.rmtree(data.path.parent, ignore_errors=True)
    return {**_import_result(project, summary), "added": True}
