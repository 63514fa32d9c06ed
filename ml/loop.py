"""Training entry points shared by the CLI, the Celery tasks and the admin, and the retrain loop.

Rows for a kind
    :func:`rows_from_file` (``manage.py train <kind> --data FILE``, ``ml.tasks.train(data=FILE)``) asks the kind's
    ``TrainerSpec.rows_from_file(path) -> (train, dev)`` first: a kind reads its own formats (the ranker kinds turn
    an Arg-CTRL App. F file into §3.1 Step 2a label rows, the tagger reads App. F and CoNLL, ...). Without one, the
    default reader takes

    - any JSONL: one row per line, as written;
    - a folder holding ``train.jsonl`` and ``dev.jsonl``: those two files.

    A single file is split into train / dev by its rows' ``split`` field when they have one (``train`` / ``dev``),
    else by :func:`ml.splits.stable_split` on the sentence (``sentence`` / ``text`` key): all n-grams of a
    sentence stay on one side. A bad line raises ``TrainerError("FILE:LINE: reason")``.

    With an explicit dev file (``--dev DEV``) every row of the training file is a training row (whatever its
    ``split`` says, and no hash split), every row of DEV a dev row. Rows marked ``split: "test"`` -- in either file,
    or inside the dev list a kind's ``rows_from_file`` returns -- are test rows, always:
    :func:`rows_from_file_parts` returns them apart, :func:`train_and_activate` hands them to
    :func:`ml.versions.train_version` as ``rows_test`` (test metrics only, never training or selection).

    :func:`rows_from_project` (the retrain loop) asks ``TrainerSpec.rows_from_project(project) -> (train, dev,
    n_labels)`` (each kind's own reader of the projects it learns from, e.g. :func:`ml.data.ranker_rows_from_project`:
    the human final answers -- adjudicated > gold > crowd vote; an imported reference is no label -- turned into
    label rows, split by sentence hash; ``n_labels`` = sentences with a human final answer); a kind without one
    cannot learn from projects.

Retrain loop (:func:`maybe_retrain`)
    After every stored submission (receiver in :mod:`ml.receivers`), ``ml.tasks.maybe_retrain(project_id)`` is
    enqueued on commit, at most once per ``ARGORA_RETRAIN_DEBOUNCE_SECONDS`` (default 60) per project (a cache
    lock). For each kind the project retrains (``project.engine["retrain_kinds"]``, else the ``retrain_kinds`` its
    task type declares in its own package, :attr:`annotation.task_types.base.TaskType.retrain_kinds`) it counts the
    human labels; when at least M =
    ``project.engine["retrain_every"]`` (else settings ``ARGORA_RETRAIN_EVERY``, default 50) were added since the
    data snapshot of the last version trained for it (``snapshot_labels``; the newest ready or archived one, so a
    version that lost the comparison resets the count too) -- or there is no version yet and there are M labels
    -- it trains a new version (parent = the active one) and activates it only if it is better on the dev split:
    when the spec has ``evaluate``, the active model is scored again on the *new* dev rows and the two are compared
    on the same rows; otherwise the stored dev metrics are compared. ``retrain_every: 0`` turns the loop off.
    A cache lock per (project, kind) keeps two workers from training the same thing at once.

    Labels are the project's *human* labels only: each spec's ``rows_from_project`` reads adjudications, gold
    items' expected answers and the aggregate of submitted crowd responses -- never an item's imported reference
    nor a model annotator's answers (e.g. :func:`ml.data.human_aspect_rows`), so a project imported from a corpus
    does not count its whole corpus as new labels.

Budget (``project.engine`` keys, else settings / environment)
    ``retrain_max_rows`` (``ARGORA_RETRAIN_MAX_ROWS``, default 20,000): a retrain whose train + dev + test rows
    exceed it is *refused* with the reason (nothing trained; the studio's retraining page raises the budget);
    ``retrain_max_steps`` (``ARGORA_RETRAIN_MAX_STEPS``, default 2,000) and ``retrain_max_seconds``
    (``ARGORA_RETRAIN_MAX_SECONDS``, default 1,800): training stops at the first cap reached, checked between
    optimisation steps (:func:`ml.training.budget`), and the version records it (``metrics["budget"]``:
    ``{"max_steps", "max_seconds", "steps", "seconds", "capped"}``). ``0`` = no limit.

Attempts (:class:`ml.models.RetrainAttempt`, written by :func:`record_attempt` only)
    ``queued`` when :func:`schedule_maybe_retrain` enqueues the check, then per kind ``running`` -> ``finished`` /
    ``failed``, or ``refused`` (over the budget) / ``skipped`` (too few new labels; only the latest skipped row
    of a kind is kept). :func:`retrain_status` is what the studio's project page shows (the
    ``annotation.providers.retrain_status`` slot); :func:`update_retrain_settings` changes ``retrain_every`` and
    the budget (the ``retrain_settings_update`` slot, the studio's retraining page), with an audit line.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from annotation import services, teams
from annotation.models import Project
from argora.debounce import enqueue_once
from argora.errors import FieldError
from argora.progress import Progress, null_progress

from . import registry, splits, training, versions
from .data import read_jsonl_objects
from .errors import TrainerError
from .models import ModelVersion, RetrainAttempt

log = logging.getLogger(__name__)

DEFAULT_RETRAIN_EVERY = 50
# the loop's settings: project.engine key -> (setting / environment variable, default); 0 = off / no limit
RETRAIN_SETTINGS = {
    "retrain_every": ("ARGORA_RETRAIN_EVERY", DEFAULT_RETRAIN_EVERY),
    "retrain_max_rows": ("ARGORA_RETRAIN_MAX_ROWS", 20_000),
    "retrain_max_steps": ("ARGORA_RETRAIN_MAX_STEPS", 2_000),
    "retrain_max_seconds": ("ARGORA_RETRAIN_MAX_SECONDS", 1_800),
}
ATTEMPTS_SHOWN = 20
DEBOUNCE_KEY = "argora:ml-maybe-retrain:{}"
TRAIN_LOCK_KEY = "argora:ml-retrain-lock:{}:{}"
TRAIN_LOCK_SECONDS = 6 * 3600
ACTIVATE_CHOICES = ("if_better", "always", "never")


def debounce_seconds() -> int:
    return int(
        getattr(settings, "ARGORA_RETRAIN_DEBOUNCE_SECONDS", os.environ.get("ARGORA_RETRAIN_DEBOUNCE_SECONDS", "60"))
    )


# --- rows from files -------------------------------------------------------------------------------


def _read_rows(path: Path) -> list[dict]:
    """The default reader of a kind without ``rows_from_file``: one row per JSONL line, as written."""
    return [row for _, row in read_jsonl_objects(path)]


def _group_key(row: dict):
    for key in ("sentence", "text", "argument_id", "item_id", "id"):
        if key in row:
            return row[key]
    return json.dumps(row, sort_keys=True, default=str)


def _parts(result) -> tuple[list[dict], list[dict], list[dict]]:
    """A ``rows_from_file`` result -- ``(train, dev)`` with test rows tagged ``split: "test"`` anywhere, or
    ``(train, dev, test)`` -- as three lists with every test row in the third."""
    train, dev, *rest = result
    train, test_train = splits.split_test(train)
    dev, test_dev = splits.split_test(dev)
    test = list(rest[0]) if rest else []
    return train, dev, test + test_dev + test_train


def _as(rows: list[dict], split: str) -> list[dict]:
    """Rows moved to another side: a ``split`` key they carry is rewritten (rows without one stay as they are)."""
    return [dict(r, split=split) if "split" in r and r["split"] != split else r for r in rows]


def rows_from_file_parts(kind: str, path, *, dev_path=None) -> tuple[list[dict], list[dict], list[dict]]:
    """(train, dev, test) rows of ``kind`` from a file or folder (see the module docstring)."""
    spec = registry.get_trainer(kind)
    path = Path(path)
    if spec.rows_from_file is not None and dev_path is None:
        return _parts(spec.rows_from_file(path))
    if path.is_dir():
        train_file, dev_file = path / "train.jsonl", path / "dev.jsonl"
        if not train_file.exists() or not dev_file.exists():
            raise TrainerError(f"{path}:0: a data folder must hold train.jsonl and dev.jsonl")
        path, dev_path = train_file, dev_file
    if not path.exists():
        raise TrainerError(f"{path}:0: no such file")
    if dev_path is not None:
        dev_path = Path(dev_path)
        if not dev_path.exists():
            raise TrainerError(f"{dev_path}:0: no such file")
        if spec.rows_from_file is not None:  # explicit dev file: every non-test row of each file, on its side
            train, held_out, test = _parts(spec.rows_from_file(path))
            dev_a, dev_b, dev_test = _parts(spec.rows_from_file(dev_path))
        else:
            train, test = splits.split_test(_read_rows(path))
            held_out = []
            dev_a, dev_test = splits.split_test(_read_rows(dev_path))
            dev_b = []
        return _as(train, "train") + _as(held_out, "train"), _as(dev_a, "dev") + _as(dev_b, "dev"), test + dev_test
    rows, test = splits.split_test(_read_rows(path))
    if any("split" in r for r in rows):
        train = [r for r in rows if r.get("split", "train") == "train"]
        dev = [r for r in rows if r.get("split") == "dev"]
        if train and dev:
            return train, dev, test
    train, dev = splits.stable_split(rows, key=_group_key)
    return train, dev, test


def rows_from_file(kind: str, path, *, dev_path=None) -> tuple[list[dict], list[dict]]:
    """(train, dev) rows of ``kind`` from a file or folder (test rows left out: :func:`rows_from_file_parts`)."""
    train, dev, _ = rows_from_file_parts(kind, path, dev_path=dev_path)
    return train, dev


# --- rows from a project ---------------------------------------------------------------------------


def rows_from_project(kind: str, project) -> tuple[list[dict], list[dict], int]:
    """(train, dev, n_labels) for ``kind`` from the project's aggregated labels."""
    spec = registry.get_trainer(kind)
    if spec.rows_from_project is not None:
        return spec.rows_from_project(project)
    raise TrainerError(
        f"kind: trainer {kind!r} cannot build rows from a {project.task_type!r} project "
        f"(its spec has no rows_from_project)"
    )


def snapshot_name(project, n_labels: int) -> str:
    return f"project:{project.slug}@{n_labels}"


# --- train + activate ------------------------------------------------------------------------------


def train_and_activate(
    kind: str,
    *,
    project=None,
    data=None,
    dev_data=None,
    rows=None,
    seed: int = 13,
    hyperparameters: dict | None = None,
    base_model: str | None = None,
    activate: str = "if_better",
    progress: Progress = null_progress,
    task_id: str = "",
) -> dict:
    """Train a version of ``kind`` and activate it per ``activate`` (``if_better`` / ``always`` / ``never``).

    Rows: ``rows=(train, dev[, test])`` given directly, else ``data`` (a file / folder, :func:`rows_from_file`), else the
    project's labels (:func:`rows_from_project`). Returns ``{"version": id, "status", "metrics", "activated",
    "active": id of the active version afterwards, "compared_with": ...}``.
    """
    if activate not in ACTIVATE_CHOICES:
        raise TrainerError(f"activate: {activate!r} is not one of {', '.join(ACTIVATE_CHOICES)}")
    spec = registry.get_trainer(kind)
    n_labels = None
    rows_test: list[dict] = []
    if rows is not None:
        rows_train, rows_dev, rows_test = _parts(rows)
        snapshot = "rows"
    elif data:
        rows_train, rows_dev, rows_test = rows_from_file_parts(kind, data, dev_path=dev_data)
        snapshot = str(Path(data).resolve())
    elif project is not None:
        rows_train, rows_dev, n_labels = rows_from_project(kind, project)
        rows_train, rows_dev, rows_test = _parts((rows_train, rows_dev))
        snapshot = snapshot_name(project, n_labels)
    else:
        raise TrainerError("data: give a data file or a project")
    if not rows_dev:
        raise TrainerError("data: no dev rows (the primary metric is computed on them)")
    request = {
        "kind": kind,
        "project_id": getattr(project, "pk", None),
        "data": str(data) if data else None,
        "dev_data": str(dev_data) if dev_data else None,
        "seed": seed,
        "hyperparameters": hyperparameters or {},
        "base_model": base_model,
        "activate": activate,
    }
    parent = registry.active_version(kind, project, exact=True)
    version = versions.train_version(
        kind,
        rows_train=rows_train,
        rows_dev=rows_dev,
        rows_test=rows_test,
        project=project,
        base_model=base_model,
        seed=seed,
        hyperparameters=hyperparameters,
        data_snapshot=snapshot,
        progress=progress,
        task_id=task_id,
        request=request,
        snapshot_labels=n_labels,
        parent=parent,
    )
    outcome: dict[str, Any] = {
        "version": version.pk,
        "kind": kind,
        "status": version.status,
        "metrics": version.metrics,
        "activated": False,
        "compared_with": None,
    }
    if activate == "always":
        outcome["activated"] = registry.activate(version)
    elif activate == "if_better":
        outcome.update(_activate_if_better(spec, version, rows_dev))
    active = registry.active_version(kind, project, exact=True)
    outcome["active"] = active.pk if active else None
    return outcome


def _activate_if_better(spec, version, rows_dev) -> dict:
    """Compare with the active version of the same scope on the same dev rows when the spec can evaluate."""
    current = registry.active_version(version.kind, version.project, exact=True)
    if current is None or current.pk == version.pk:
        return {"activated": registry.activate(version), "compared_with": None}
    compared: dict[str, Any] = {"version": current.pk, "stored_primary": current.primary_metric}
    if spec.evaluate is not None:
        try:
            model = registry.load_model(current)
            old_metrics = spec.evaluate(model, rows_dev)
            old = float(old_metrics[spec.primary_metric])
            compared.update(primary_on_new_dev=old, how="re-evaluated on the new dev rows")
        except Exception:  # noqa: BLE001 - an unloadable old model loses the comparison
            log.exception("could not evaluate active model version %s on the new dev rows", current.pk)
            old = None
            compared.update(how="active model could not be evaluated")
        better = spec.better(version.primary_metric, old)
        activated = registry.activate(version) if better else False
    else:
        compared["how"] = "stored dev metrics"
        activated = registry.activate(version, only_if_better=True)
    return {"activated": activated, "compared_with": compared}


# --- the retrain loop ------------------------------------------------------------------------------


def default_setting(key: str) -> int:
    """The value of a :data:`RETRAIN_SETTINGS` key for a project that does not set it (settings, else the
    environment, else the built-in default)."""
    name, default = RETRAIN_SETTINGS[key]
    value = getattr(settings, name, None)
    if value is None:
        value = os.environ.get(name, default)
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return default


def retrain_setting(project, key: str) -> int:
    """``project.engine[key]`` (an int >= 0), else :func:`default_setting`."""
    value = (project.engine or {}).get(key)
    if value is None:
        return default_setting(key)
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return default_setting(key)


def retrain_every(project) -> int:
    """M: labels between retrains (project.engine["retrain_every"], else ARGORA_RETRAIN_EVERY, default 50)."""
    return retrain_setting(project, "retrain_every")


def retrain_budget(project) -> dict:
    """``{"max_rows", "max_steps", "max_seconds"}`` of a retrain of ``project`` (0 = no limit)."""
    return {key[len("retrain_") :]: retrain_setting(project, key) for key in RETRAIN_SETTINGS if key != "retrain_every"}


def retrain_kinds(project) -> list[str]:
    """The kinds the loop retrains from ``project``: its ``engine["retrain_kinds"]``, else the ``retrain_kinds`` its
    task type declares (in its own package); none for a task type that is not installed. A kind the trainer
    registry does not know is skipped with the reason when the loop runs (:func:`maybe_retrain`)."""
    kinds = (project.engine or {}).get("retrain_kinds")
    if kinds is None:
        try:
            kinds = project.get_task_type().retrain_kinds
        except KeyError:
            kinds = ()
    return [k for k in kinds if isinstance(k, str)]


def schedule_maybe_retrain(project_id: int) -> bool:
    """Enqueue ``ml.tasks.maybe_retrain`` after commit, at most once per debounce window per project."""
    from .tasks import maybe_retrain  # cycle: the Celery task <-> service pair (ml.tasks imports this module)

    delay = debounce_seconds()
    enqueued = enqueue_once(
        DEBOUNCE_KEY.format(project_id), maybe_retrain, window=delay, args=[project_id], countdown=delay
    )
    if (
        enqueued
        and not RetrainAttempt.objects.filter(project_id=project_id, state=RetrainAttempt.State.QUEUED).exists()
    ):
        record_attempt(project_id, state=RetrainAttempt.State.QUEUED)
    return enqueued


# --- attempts (what the studio shows) ----------------------------------------------------------------


def record_attempt(
    project, kind: str = "", *, state: str, attempt: RetrainAttempt | None = None, **fields
) -> RetrainAttempt:
    """Write one :class:`~ml.models.RetrainAttempt` (``attempt`` given: update it) in ``state`` with ``fields``
    (``reason``, ``n_labels``, ``new_labels``, ``rows``, ``steps``, ``capped``, ``version``, ``task_id``). Times:
    ``started_at`` when running, ``finished_at`` when it ends (finished / refused / failed / skipped). A new
    ``skipped`` row replaces the older skipped rows of its kind."""
    project_id = project if isinstance(project, int) else project.pk
    now = timezone.now()
    values = dict(fields, state=state)
    if kind:
        values["kind"] = kind
    if state == RetrainAttempt.State.RUNNING:
        values["started_at"] = now
    elif state != RetrainAttempt.State.QUEUED:
        values["finished_at"] = now
    with transaction.atomic():
        if attempt is None:
            attempt = RetrainAttempt(project_id=project_id)
        for name, value in values.items():
            setattr(attempt, name, value)
        attempt.save()
        if state == RetrainAttempt.State.SKIPPED:
            (
                RetrainAttempt.objects.filter(project_id=project_id, kind=attempt.kind, state=state)
                .exclude(pk=attempt.pk)
                .delete()
            )
    return attempt


def _take_queued(project) -> RetrainAttempt | None:
    """The project's oldest queued check (the others, the same check enqueued again, are dropped)."""
    queued = list(RetrainAttempt.objects.filter(project=project, state=RetrainAttempt.State.QUEUED).order_by("id"))
    if len(queued) > 1:
        RetrainAttempt.objects.filter(pk__in=[a.pk for a in queued[1:]]).delete()
    return queued[0] if queued else None


def attempt_dict(attempt: RetrainAttempt | None) -> dict | None:
    if attempt is None:
        return None
    return {
        "id": attempt.pk,
        "kind": attempt.kind,
        "state": attempt.state,
        "reason": attempt.reason,
        "n_labels": attempt.n_labels,
        "new_labels": attempt.new_labels,
        "rows": attempt.rows,
        "steps": attempt.steps,
        "capped": attempt.capped,
        "version": attempt.version_id,
        "task_id": attempt.task_id,
        "created_at": attempt.created_at,
        "started_at": attempt.started_at,
        "finished_at": attempt.finished_at,
        "when": attempt.finished_at or attempt.started_at or attempt.created_at,
    }


def retrain_settings(project) -> dict:
    """The loop's settings of ``project``: ``{key: {"value", "default", "own": set on the project}}`` for each
    :data:`RETRAIN_SETTINGS` key."""
    engine = project.engine or {}
    return {
        key: {
            "value": retrain_setting(project, key),
            "default": default_setting(key),
            "own": engine.get(key) is not None,
        }
        for key in RETRAIN_SETTINGS
    }


def retrain_status(project) -> dict:
    """What the studio shows (``annotation.providers.retrain_status``): ``{"every", "budget", "settings", "kinds":
    [{"kind", "last": the latest attempt that is not a skipped check, "check": the latest attempt, "new_labels",
    "n_labels" (at that check)}], "queued": the pending check, "attempts": the latest attempts}`` (attempts as
    :func:`attempt_dict`)."""
    attempts = RetrainAttempt.objects.filter(project=project).select_related("version")
    kinds = []
    for kind in retrain_kinds(project):
        mine = attempts.filter(kind=kind)
        check = mine.first()
        last = mine.exclude(state=RetrainAttempt.State.SKIPPED).first()
        kinds.append(
            {
                "kind": kind,
                "last": attempt_dict(last),
                "check": attempt_dict(check),
                "new_labels": check.new_labels if check else None,
                "n_labels": check.n_labels if check else None,
            }
        )
    queued = attempts.filter(state=RetrainAttempt.State.QUEUED).order_by("id").first()
    return {
        "every": retrain_every(project),
        "budget": retrain_budget(project),
        "settings": retrain_settings(project),
        "kinds": kinds,
        "queued": attempt_dict(queued),
        "attempts": [attempt_dict(a) for a in attempts[:ATTEMPTS_SHOWN]],
    }


def update_retrain_settings(project, values: dict, *, user=None) -> dict:
    """Set the loop's settings of ``project`` (``values``: :data:`RETRAIN_SETTINGS` keys -> an int >= 0, or
    ``None`` / ``""`` for the default), in one transaction with an audit line (``retraining``). A bad value raises
    :class:`~argora.errors.FieldError` naming the key; nothing is written then. Returns :func:`retrain_settings`."""
    clean: dict[str, int | None] = {}
    for key, value in values.items():
        if key not in RETRAIN_SETTINGS:
            raise FieldError(key, f"not a retraining setting (known: {', '.join(RETRAIN_SETTINGS)})")
        clean[key] = services.clean_retrain_number(key, value)
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        engine = dict(locked.engine or {})
        before = {key: engine.get(key) for key in clean}
        for key, number in clean.items():
            if number is None:
                engine.pop(key, None)
            else:
                engine[key] = number
        after = {key: engine.get(key) for key in clean}
        Project.objects.filter(pk=locked.pk).update(engine=engine)
        project.engine = engine
        changed = teams.changes(before, after)
        if changed:
            teams.record(project, user, "retraining", changed)
    return retrain_settings(project)


def _snapshot_labels(version, prefix: str) -> int | None:
    if version.snapshot_labels is not None:
        return version.snapshot_labels
    if version.data_snapshot.startswith(prefix):
        try:
            return int(version.data_snapshot[len(prefix) :])
        except ValueError:
            pass
    return None


def last_snapshot_labels(kind: str, project) -> int | None:
    """Labels in the data snapshot of the last version trained from this project's labels -- the newest ready or
    archived one, active or not: a version that lost the comparison was still an attempt on those labels, and
    counting from the active one instead retrained at every check after a loss. 0 when only versions trained
    from elsewhere exist but one is active; None when there is none."""
    prefix = f"project:{project.slug}@"
    tried = ModelVersion.objects.filter(
        kind=kind, project=project, status__in=(ModelVersion.Status.READY, ModelVersion.Status.ARCHIVED)
    ).order_by("-pk")
    for version in tried:
        labels = _snapshot_labels(version, prefix)
        if labels is not None:
            return labels
    return 0 if registry.active_version(kind, project, exact=True) is not None else None


def maybe_retrain(project, *, progress: Progress = null_progress, task_id: str = "", force: bool = False) -> list[dict]:
    """Retrain every kind of ``project`` that has M new human labels, within the project's budget; one outcome
    dict per kind considered, and one :class:`~ml.models.RetrainAttempt` per kind (the queued check becomes the
    first one)."""
    every = retrain_every(project)
    budget = retrain_budget(project)
    queued = _take_queued(project)
    outcomes = []

    def record(kind, state, **fields):
        nonlocal queued
        attempt, queued = queued, None
        return record_attempt(project, kind, state=state, attempt=attempt, task_id=task_id, **fields)

    for kind in retrain_kinds(project):
        outcome: dict[str, Any] = {"kind": kind, "project": project.pk}
        if every <= 0 and not force:
            outcomes.append({**outcome, "skipped": "retrain_every is 0"})
            record(kind, RetrainAttempt.State.SKIPPED, reason="retrain_every is 0: retraining is off")
            continue
        try:
            spec = registry.get_trainer(kind)
        except TrainerError as exc:
            outcomes.append({**outcome, "skipped": str(exc)})
            record(kind, RetrainAttempt.State.SKIPPED, reason=str(exc))
            continue
        lock = TRAIN_LOCK_KEY.format(project.pk, kind)
        if not cache.add(lock, task_id or 1, timeout=TRAIN_LOCK_SECONDS):
            outcomes.append({**outcome, "skipped": "a retrain of this kind is running"})
            record(kind, RetrainAttempt.State.SKIPPED, reason="a retrain of this kind is running")
            continue
        try:
            try:
                rows_train, rows_dev, n_labels = rows_from_project(kind, project)
                rows_train, rows_dev, rows_test = _parts((rows_train, rows_dev))
            except TrainerError as exc:
                outcomes.append({**outcome, "skipped": str(exc)})
                record(kind, RetrainAttempt.State.SKIPPED, reason=str(exc))
                continue
            since = last_snapshot_labels(kind, project)
            new = n_labels - (since or 0)
            n_rows = len(rows_train) + len(rows_dev) + len(rows_test)
            outcome.update(labels=n_labels, since=since, new=new, every=every, rows=n_rows, budget=budget)
            counts = {"n_labels": n_labels, "new_labels": new, "rows": n_rows}
            if not force and new < every:
                reason = f"{new} new labels, retrain every {every}"
                outcomes.append({**outcome, "skipped": reason})
                record(kind, RetrainAttempt.State.SKIPPED, reason=reason, **counts)
                continue
            if not rows_dev or not rows_train:
                reason = "not enough labelled sentences for a train and a dev split"
                outcomes.append({**outcome, "skipped": reason})
                record(kind, RetrainAttempt.State.SKIPPED, reason=reason, **counts)
                continue
            if budget["max_rows"] and n_rows > budget["max_rows"]:
                reason = (
                    f"{n_rows} rows from {n_labels} labels exceed the budget of {budget['max_rows']} rows "
                    f"(retrain_max_rows): not trained; raise the budget on the project's retraining page"
                )
                outcomes.append({**outcome, "refused": reason})
                record(kind, RetrainAttempt.State.REFUSED, reason=reason, **counts)
                continue
            attempt = record(kind, RetrainAttempt.State.RUNNING, **counts)
            parent = registry.active_version(kind, project, exact=True)
            with training.budget(max_steps=budget["max_steps"], max_seconds=budget["max_seconds"]) as spent:
                try:
                    version = versions.train_version(
                        kind,
                        rows_train=rows_train,
                        rows_dev=rows_dev,
                        rows_test=rows_test,
                        project=project,
                        base_model=parent.base_model if parent is not None and parent.base_model else None,
                        seed=parent.seed if parent is not None else 13,
                        hyperparameters=parent.hyperparameters if parent is not None else None,
                        data_snapshot=snapshot_name(project, n_labels),
                        progress=progress,
                        task_id=f"{task_id}:{kind}" if task_id else "",
                        request={"kind": kind, "project_id": project.pk, "loop": True},
                        snapshot_labels=n_labels,
                        parent=parent,
                    )
                except Exception as exc:
                    record_attempt(
                        project,
                        kind,
                        state=RetrainAttempt.State.FAILED,
                        attempt=attempt,
                        reason=f"{type(exc).__name__}: {exc}"[:2000],
                        steps=spent.steps,
                    )
                    raise
            used = spent.as_dict()
            if version.status == ModelVersion.Status.READY:
                metrics = dict(version.metrics or {}, budget=used)
                ModelVersion.objects.filter(pk=version.pk).update(metrics=metrics)
                version.metrics = metrics
            reason = (
                f"stopped at the {spent.capped.replace('_', ' ')} budget after {spent.steps} steps"
                if spent.capped
                else ""
            )
            state = (
                RetrainAttempt.State.FINISHED
                if version.status == ModelVersion.Status.READY
                else RetrainAttempt.State.FAILED
            )
            if state == RetrainAttempt.State.FAILED:
                reason = version.error[:2000] or "training failed"
            outcome.update(version=version.pk, metrics=version.metrics, steps=spent.steps, capped=spent.capped)
            outcome.update(_activate_if_better(spec, version, rows_dev))
            if state == RetrainAttempt.State.FINISHED:
                reason = "; ".join(
                    filter(
                        None,
                        [
                            reason,
                            "activated" if outcome.get("activated") else "kept the active version (not better on dev)",
                        ],
                    )
                )
            record_attempt(
                project,
                kind,
                state=state,
                attempt=attempt,
                reason=reason,
                steps=spent.steps,
                capped=spent.capped,
                version=version,
            )
            outcomes.append(outcome)
        finally:
            cache.delete(lock)
    if queued is not None:  # no kind to retrain: the check is done
        record_attempt(
            project,
            state=RetrainAttempt.State.SKIPPED,
            attempt=queued,
            task_id=task_id,
            reason="the project retrains no trainer kind",
        )
    return outcomes
