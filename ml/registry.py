"""The model registry: trainer kinds (what a kind trains, loads, scores and annotates), and which version of a kind is
active, with activation, rollback and a per-process cache of loaded models.

Trainer kinds
    A module ``ml/trainers/<kind>.py`` (every module of that package is imported at first use) calls
    :func:`register_trainer` with a :class:`TrainerSpec`: how to ``train`` (a :class:`TrainRequest` in, a
    :class:`TrainResult` out, the artifact written into ``request.output_dir``), how to ``load`` an artifact
    folder, which dev metric decides (``primary_metric`` / ``higher_is_better``), and optionally where the rows
    come from: ``rows_from_file(path) -> (train, dev)`` (``manage.py train <kind> --data FILE``, the
    ``ml.tasks.train`` task) and ``rows_from_project(project) -> (train, dev, n_labels)`` (the retrain loop,
    :mod:`ml.loop`), plus ``evaluate(model, rows) -> metrics`` so the loop can score the active model on the
    new dev split before deciding, a training run can score the test rows of a kind whose trainer does not, and
    ``manage.py models evaluate VERSION --data FILE`` can score any version on any file. ``evaluate`` scores every
    row it is given (whatever its ``split``) and reports, beside each figure, the baseline of the kind's paper as
    ``<baseline>_<metric>`` (``majority_f1_macro``, ``jaccard_spearman``, ...; :func:`ml.metrics.baseline_of`).
    A kind whose model can annotate corpus sentences fills ``silver`` (a :class:`SilverSpec`: how to predict a
    batch, whether it predicts stances, what its release rows add); :mod:`ml.silver` asks only that.

    Training a version is :func:`ml.versions.train_version`; the errors are :mod:`ml.errors`, the row splits
    :mod:`ml.splits`, seed optimisation :mod:`ml.seeds`.

Activation
    One active version per ``(kind, project)`` (``project=None``: global); :func:`active_version` prefers the
    project's, then the global one. :func:`activate` with ``only_if_better=True`` activates only when the dev
    primary metric beats the active version's (strictly; the first version always wins). :func:`rollback`
    archives the active version and re-activates the one active before it. :func:`load_model` loads an
    artifact once per process (LRU of ``ARGORA_MODEL_CACHE_SIZE``, default 4).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from argora.progress import Progress, null_progress

from .errors import TrainerError
from .models import ModelVersion

log = logging.getLogger(__name__)


# --- specs -----------------------------------------------------------------------------------------


@dataclass
class TrainRequest:
    kind: str
    rows_train: list[dict]
    rows_dev: list[dict]
    base_model: str | None
    seed: int
    hyperparameters: dict
    output_dir: Path
    progress: Progress = null_progress
    project: Any = None  # the annotation.Project (or None) the version is for; informative
    # rows marked split "test": only for TrainResult.test_metrics of the final model, never for training or
    # selection (ml.versions scores them with spec.evaluate when the trainer leaves test_metrics empty)
    rows_test: list[dict] = field(default_factory=list)


@dataclass
class TrainResult:
    metrics: dict  # must contain the spec's primary_metric, computed on rows_dev
    test_metrics: dict | None = None  # the final model on request.rows_test (None: ml.versions evaluates them)
    info: dict = field(default_factory=dict)  # anything else worth recording (chosen seed, steps, ...)


@dataclass(frozen=True)
class SilverSpec:
    """How a kind's model annotates corpus sentences in a silver run (:mod:`ml.silver`).

    ``predict(model, batch) -> [prediction]``: one prediction per sentence of the batch (an :class:`ml.silver.Batch`:
    ``texts``, ``topic_names()``, ``variables()``, ``batch_size``), each a dict with ``spans`` and optionally
    ``schemes`` (scheme -> probability), ``confidence``, ``stance`` / ``stance_probability`` / ``stance_probs``.
    ``stances``: the kind predicts a stance per sentence (pro / con / none): a sentence counts as labelled when it is
    pro or con, and its runs can select the arguments of a later run (``options["arguments_from_run"]``).
    ``release_row(row, label, sentence) -> row``: the kind's own fields of a release row (a :class:`SilverLabel` of
    the run and its :class:`~corpus.models.Sentence`), e.g. the App. F shape of the tagger's.
    """

    predict: Callable[[Any, Any], list[dict]]
    stances: bool = False
    release_row: Callable[[dict, Any, Any], dict] | None = None


@dataclass
class TrainerSpec:
    kind: str
    train: Callable[[TrainRequest], TrainResult]
    load: Callable[[Path], Any]
    primary_metric: str
    higher_is_better: bool = True
    description: str = ""
    # where rows come from (optional; a kind without them can still be trained by ml.versions.train_version):
    rows_from_file: Callable[[Path], tuple[list[dict], list[dict]]] | None = None
    rows_from_project: Callable[[Any], tuple[list[dict], list[dict], int]] | None = None
    evaluate: Callable[[Any, list[dict]], dict] | None = None  # (loaded model, rows of any split) -> metrics
    default_base_model: Callable[[], str] | str | None = None
    data_formats: str = ""  # one line for --help: which files rows_from_file reads
    silver: SilverSpec | None = None  # how its model annotates corpus sentences (None: no silver runs of this kind)

    def better(self, new: float | None, old: float | None) -> bool:
        if new is None:
            return False
        if old is None:
            return True
        return new > old if self.higher_is_better else new < old

    def base_model_for(self, base_model: str | None) -> str | None:
        if base_model:
            return base_model
        default = self.default_base_model
        return default() if callable(default) else default


_TRAINERS: dict[str, TrainerSpec] = {}


def register_trainer(spec: TrainerSpec) -> TrainerSpec:
    if not spec.kind:
        raise TrainerError("a trainer spec needs a kind")
    _TRAINERS[spec.kind] = spec
    return spec


def unregister_trainer(kind: str) -> None:
    """For tests that register a throw-away kind."""
    _TRAINERS.pop(kind, None)


def _discover() -> None:
    import ml.trainers  # noqa: F401  (plug-in discovery at first use: torch is a start-up cost; they import this one)


def get_trainer(kind: str) -> TrainerSpec:
    if kind not in _TRAINERS:
        _discover()
    try:
        return _TRAINERS[kind]
    except KeyError:
        raise TrainerError(
            f"kind: unknown trainer kind {kind!r} (known: {', '.join(trainer_kinds()) or 'none'})"
        ) from None


def trainer_kinds() -> list[str]:
    _discover()
    return sorted(_TRAINERS)


def silver_kinds() -> list[str]:
    """The kinds whose models can annotate corpus sentences (a spec with ``silver``)."""
    return [kind for kind in trainer_kinds() if _TRAINERS[kind].silver is not None]


# --- activation ------------------------------------------------------------------------------------


def _scope(qs, kind: str, project):
    qs = qs.filter(kind=kind)
    return qs.filter(project=project) if project is not None else qs.filter(project__isnull=True)


def active_version(kind: str, project=None, *, exact: bool = False):
    """The active version of ``kind`` for ``project`` (else the global one unless ``exact``); None if none."""
    if project is not None:
        found = _scope(ModelVersion.objects.filter(is_active=True), kind, project).first()
        if found is not None or exact:
            return found
    return _scope(ModelVersion.objects.filter(is_active=True), kind, None).first()


def activate(version, *, only_if_better: bool = False) -> bool:
    """Make ``version`` the active one of its (kind, project). Returns whether it is active afterwards.

    ``only_if_better``: activate only if its dev primary metric is strictly better than the active version's of
    the same scope (per the spec's ``higher_is_better``); with no active version it always wins.
    Raises ``ValueError`` for a version that is not ready (or archived with its artifact).
    """
    with transaction.atomic():
        version = ModelVersion.objects.select_for_update().get(pk=version.pk)
        if version.status not in (ModelVersion.Status.READY, ModelVersion.Status.ARCHIVED) or not version.artifact_path:
            raise ValueError(f"model version {version.pk} is {version.status}; only a ready version can be activated")
        if not Path(version.artifact_path).is_dir():
            raise ValueError(f"model version {version.pk}: artifact folder {version.artifact_path} is missing")
        current = list(
            _scope(ModelVersion.objects.select_for_update().filter(is_active=True), version.kind, version.project)
        )
        current = current[0] if current else None
        if current is not None and current.pk == version.pk:
            return True
        if only_if_better and current is not None:
            spec = get_trainer(version.kind)
            if not spec.better(version.primary_metric, current.primary_metric):
                log.info(
                    "model version %s (%s=%s) is not better than active %s (%s); not activated",
                    version.pk,
                    spec.primary_metric,
                    version.primary_metric,
                    current.pk,
                    current.primary_metric,
                )
                return False
        if current is not None:
            ModelVersion.objects.filter(pk=current.pk).update(is_active=False)
        ModelVersion.objects.filter(pk=version.pk).update(
            is_active=True, status=ModelVersion.Status.READY, activated_at=timezone.now()
        )
    return True


def deactivate(kind: str, project=None) -> None:
    _scope(ModelVersion.objects.filter(is_active=True), kind, project).update(is_active=False)


def _rollback_target(scope, current):
    candidates = scope.filter(status=ModelVersion.Status.READY, is_active=False).exclude(artifact_path="")
    if current is None:
        return candidates.order_by("-activated_at", "-created_at", "-pk").first()
    return (
        candidates.filter(activated_at__isnull=False, activated_at__lte=current.activated_at or timezone.now())
        .exclude(pk=current.pk)
        .order_by("-activated_at", "-pk")
        .first()
        or candidates.filter(created_at__lte=current.created_at)
        .exclude(pk=current.pk)
        .order_by("-created_at", "-pk")
        .first()
    )


def rollback_target(kind: str, project=None):
    """The version :func:`rollback` would re-activate now, or None when there is no earlier version to roll back
    to (the pages offer "Roll back" only when there is one)."""
    scope = _scope(ModelVersion.objects.all(), kind, project)
    return _rollback_target(scope, scope.filter(is_active=True).first())


def rollback(kind: str, project=None):
    """Archive the active version of (kind, project) and re-activate the one that was active before it
    (else the newest other ready version trained before it). Returns the re-activated version or None (then
    nothing changed: there is no earlier ready version)."""
    with transaction.atomic():
        scope = _scope(ModelVersion.objects.select_for_update(), kind, project)
        current = scope.filter(is_active=True).first()
        previous = _rollback_target(scope, current)
        if previous is None:
            return None
        if current is not None:
            ModelVersion.objects.filter(pk=current.pk).update(is_active=False, status=ModelVersion.Status.ARCHIVED)
        ModelVersion.objects.filter(pk=previous.pk).update(is_active=True, activated_at=timezone.now())
    previous.refresh_from_db()
    return previous


# --- loading ---------------------------------------------------------------------------------------

_cache: OrderedDict[tuple, Any] = OrderedDict()
_cache_lock = threading.Lock()


def _cache_size() -> int:
    return int(getattr(settings, "ARGORA_MODEL_CACHE_SIZE", os.environ.get("ARGORA_MODEL_CACHE_SIZE", "4")))


def load_model(version) -> Any:
    """``spec.load(artifact folder)`` of a ready version, cached per process (LRU)."""
    if not version.artifact_path:
        raise ValueError(f"model version {version.pk} has no artifact (status {version.status})")
    key = (version.pk, version.kind, version.artifact_path)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    model = get_trainer(version.kind).load(Path(version.artifact_path))
    with _cache_lock:
        _cache[key] = model
        _cache.move_to_end(key)
        while len(_cache) > max(1, _cache_size()):
            _cache.popitem(last=False)
    return model


def clear_model_cache() -> None:
    with _cache_lock:
        _cache.clear()
