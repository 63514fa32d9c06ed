"""The task-type contract. One task type = one package under ``annotation/task_types/<name>/`` (see the package doc).

The engine (allocation, submission, the HIT page, the agreement dashboards, releases, ``create_project``, the retrain
loop) never names a task type: it asks the registered :class:`TaskType` what it needs to know. A task type says which
keys of a project's config it takes (:attr:`TaskType.config_keys`; the engine's own keys, :data:`ENGINE_KEYS`, are never
among them and live in ``Project.engine``), how to build items (from corpus sentences or its own rows), how to render
one item in the HIT page (a template + an optional script and stylesheet), how to validate a response (always on the
server), how to score a gold item, aggregate and export an item, what its reliability data for the agreement engine are,
how an expert adjudicates an item, where its results page is, and what the engine should do on its behalf after a
recompute or when labels grow.

Where a task type's items come from is said by its package's ``sources`` module (found by name, like ``urls``;
:func:`annotation.task_types.sources_of`), which the studio (``/studio/``) reads to offer uploads and corpus selections
for a new project. It holds:

- ``SOURCES``: a tuple of :class:`Source` -- an upload format (name, file extensions, a one-line description, an
  example, the options it takes such as "as gold") or a corpus selection (topics + a limit, no file);
- ``preview(project, data: SourceInput) -> Preview``: read and check everything (every row of the file, what the
  corpus must hold), write nothing; the first items readably and the counts. A problem raises the error the
  importers raise (``corpus.importers.ImportFailed``: ``file:line: reason``, or a :class:`~argora.errors.FieldError`);
- ``write(project, data: SourceInput, progress) -> dict``: make the items (and gold items) of the saved ``project``
  with the same all-or-nothing importers the CLI uses (the caller holds one transaction around it and builds the
  HITs afterwards); returns a summary such as ``{"items": 12, "gold": 2}``;
- optionally ``summary(payload) -> str``: one line that names an item (the studio lists feedback with its items).

A task type without a ``sources`` module that builds its items from corpus sentences gets the corpus sources (UKP TSV,
JSONL arguments, a corpus selection: :mod:`annotation.studio.sentences`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from django.template.loader import render_to_string

from argora.errors import FieldError


class ResponseInvalid(FieldError):
    """A response (or a config / gold answer / adjudication) that breaks the task type's schema; the API answers
    HTTP 400 ``{"errors": {field: reason}}``."""


# The engine's own keys of a project, kept in ``Project.engine`` and never in ``Project.config`` (the task type's
# options): no task type may declare one in :attr:`TaskType.config_keys`, and :meth:`TaskType.checked_config` refuses
# one in a config. Defined here, in the contract both sides read: ``annotation.models`` imports
# ``annotation.task_types`` (``validate_task_type``), so importing it from there would be an import circle.
# ``annotation.models.ENGINE_KEYS`` is this one.
# Each engine key -> where a researcher sets it instead, for the refusal of :meth:`TaskType.checked_config`.
_RETRAINING_PAGE = "set it on the project's Model retraining page in the studio"
ENGINE_KEY_HOMES: Mapping[str, str] = MappingProxyType(
    {
        "item_order": "set it on the project's settings page in the studio, under Item order",
        "guidelines_markdown": "edit the guidelines on the project's settings page in the studio",
        "retrain_kinds": "give it with the project's engine settings (create_project's engine), not in its config",
        "retrain_every": _RETRAINING_PAGE,
        "retrain_max_rows": _RETRAINING_PAGE,
        "retrain_max_steps": _RETRAINING_PAGE,
        "retrain_max_seconds": _RETRAINING_PAGE,
        "studio_import": "the studio records it itself when it imports the project's items",
        "studio_additions": "the studio records it itself when items are added to the project",
    }
)
ENGINE_KEYS = frozenset(ENGINE_KEY_HOMES)


class TaskType:
    name: str = ""
    label: str = ""
    package: str = ""  # dotted path of the task type's package (set by ``register``)
    template: str = ""
    # Static files of the HIT page (``task_types/<package>/<file>``, the package's ``static/<file>``): the script
    # runs after the engine's, the stylesheet is linked in the page's <head> after the engine's (hit.css), on every
    # page that shows the task type's template (HIT, MTurk, training and feedback pages).
    script: str | None = None
    stylesheet: str | None = None
    # Task-specific keyboard help for the instructions panel: (keys as HTML, what they do). The panel adds the
    # keys every HIT shares (Enter submits, ? toggles the instructions).
    keys_help: tuple[tuple[str, str], ...] = ()
    # Guidelines shown when the project has none of its own (a template name, e.g. task_types/<name>/guidelines.html)
    guidelines_template: str | None = None
    # The task type ``create_project`` makes when none is named (exactly one registered task type says so).
    is_default: bool = False
    # Settings of a new project of this type unless given (e.g. {"assignments_per_item": 4}).
    project_defaults: dict = {}

    def project_warnings(self, project) -> list[str]:
        """Set-up choices the researcher should hear about (the admin shows them on save); none by default."""
        return []

    def default_guidelines(self) -> str:
        return render_to_string(self.guidelines_template) if self.guidelines_template else ""

    # --- project set-up -----------------------------------------------------------------------
    # Every key of ``Project.config`` the task type reads or writes (its code, templates, sources, results, releases,
    # commands, and what ``ml/`` reads for it) -> one line: what it means and its default. A config with any other
    # key is refused when a project is made (:meth:`checked_config`); the studio lists these next to the config box.
    # Never one of :data:`ENGINE_KEYS`.
    config_keys: Mapping[str, str] = MappingProxyType({})

    def clean_config(self, config: dict | None) -> dict:
        """Check and normalise ``project.config``; raise :class:`ResponseInvalid` naming the key."""
        return dict(config or {})

    def checked_config(self, config: dict | None) -> dict:
        """``config`` as the engine takes it for a new project (``create_project``, the studio's set-up): every key
        must be one of :attr:`config_keys` -- an engine key (:data:`ENGINE_KEYS`, kept in ``Project.engine``) or an
        unknown one (a typo such as ``top-k``) is refused with :class:`ResponseInvalid` naming it, instead of being
        stored and never read -- then :meth:`clean_config` checks the values and fills in the defaults."""
        if isinstance(config, Mapping):
            keys = sorted(map(str, config))
            for key in keys:
                if key in ENGINE_KEYS:
                    raise ResponseInvalid(
                        key,
                        f"{key} is an engine setting (Project.engine), not an option of the {self.label} task "
                        f"type: {ENGINE_KEY_HOMES[key]}",
                    )
            for key in keys:
                if key not in self.config_keys:
                    options = ", ".join(sorted(self.config_keys)) or "none (it takes no config)"
                    raise ResponseInvalid(key, f"not an option of task type {self.name}; its options: {options}")
        return self.clean_config(config)

    # Whether build_items takes corpus Sentence rows (``manage.py create_project`` and the project set-up use it);
    # a task type whose items come from its own files or designs says how in ``items_howto``.
    builds_from_sentences: bool = False
    items_howto: str = ""

    def build_items(self, project, rows: Iterable[Any]) -> list[dict]:
        """Rows (corpus Sentences when :attr:`builds_from_sentences`, else the task type's own) -> item payloads."""
        raise NotImplementedError

    def gold_from_sentence(self, project, sentence, payload: dict) -> dict | None:
        """The expected answer of a gold item built from a corpus sentence (its imported label, e.g. the stance),
        or ``None`` when the sentence carries no answer for this task type."""
        return None

    def item_links(self, payload: dict) -> dict:
        """Model fields of the Item that a payload implies (``sentence_id``, ``external_key``)."""
        return {}

    # --- what a worker may see -----------------------------------------------------------------
    # Payload keys that hold answers or bookkeeping (imported reference labels, an expert's adjudication,
    # pass-through columns of an import) or that lead to them (the corpus ids of the item's sentence: the corpus
    # holds its label). They never leave the server towards a worker; keys starting with "_" are private too. A
    # task type with more such keys extends this tuple.
    private_payload_keys: tuple[str, ...] = ("reference", "adjudicated", "extra", "gold", "sentence_id", "argument_id")

    def worker_payload(self, project, item, assignment=None) -> dict:
        """The item payload as a worker's client may receive it (JSON API, MTurk page); ``assignment`` is the
        worker's assignment when there is one (a task type may add per-assignment details, e.g. a placement)."""
        return {
            key: value
            for key, value in (item.payload or {}).items()
            if key not in self.private_payload_keys and not key.startswith("_")
        }

    # --- rendering ----------------------------------------------------------------------------
    def page_context(self, project) -> dict:
        """What every item of a HIT page shares, read from the task type's own config keys (e.g. a label set); the
        engine knows none of them. :meth:`item_context` may override a key; empty by default."""
        return {}

    def item_context(self, project, item) -> dict:
        """What the template needs for one item."""
        return {"item": item, "payload": item.payload, "config": project.config}

    # --- responses ----------------------------------------------------------------------------
    def validate_response(self, project, item, data, *, assignment=None) -> dict:
        """Cleaned data, or raise :class:`ResponseInvalid`. ``assignment``: the assignment the response is
        submitted for (None for gold answers, adjudications and imports)."""
        raise NotImplementedError

    def score_gold(self, project, gold, data: dict) -> float:
        """1.0 correct ... 0.0 wrong; ``gold.tolerance`` applies. Default: exact equality."""
        return 1.0 if data == gold.expected else 0.0

    def aggregate(self, project, item, responses: list[dict]) -> dict:
        raise NotImplementedError

    def export_row(self, project, item, responses: list[dict]) -> dict:
        return {
            "item_id": item.pk,
            "external_key": item.external_key,
            "payload": item.payload,
            "responses": responses,
            "aggregate": self.aggregate(project, item, responses),
        }

    def answer_text(self, answer) -> str:
        """A one-line reading of a response or final answer (dashboards, CSV)."""
        if not isinstance(answer, dict):
            return str(answer)
        return ", ".join(f"{k}={v}" for k, v in answer.items())

    def aggregate_text(self, aggregate: dict) -> str:
        """A one-line reading of :meth:`aggregate`'s result (the dashboards' "majority" column); empty by default."""
        return ""

    def __repr__(self) -> str:
        return f"<TaskType {self.name}>"

    # --- agreement --------------------------------------------------------------------------------
    def reliability_data(self, project, records: list[dict]) -> dict:
        """Reliability data for the agreement engine (:mod:`annotation.agreement.table`): ``{"level", "coders",
        "units", "unit_item", "matrix"}`` (build it with :func:`annotation.agreement.records.build_matrix`;
        + ``"unitized"`` for spans) from the response records. A task type whose reliability is not a coders x
        units matrix raises ``NotImplementedError`` and says where it is reported in :attr:`reliability_note`."""
        raise NotImplementedError(f"task type {self.name!r} gives no reliability data")

    reliability_note: str = ""

    def on_recompute(self, project, *, force: bool = False) -> None:
        """Called by the debounced agreement recompute after submissions (e.g. to refresh stored scores)."""

    # --- adjudication: an expert's final answer for one item --------------------------------------
    # A template fragment inside the adjudication <form> (context: ``project``, ``it`` = the item row of the
    # dashboard, ``form`` = :meth:`adjudication_form`); the default asks for the answer as JSON.
    adjudication_template: str = "annotation/dashboard/_adjudicate_json.html"

    def adjudication_form(self, project, item_row: dict) -> dict:
        """What the adjudication form offers for one item row of the dashboard (labels, spans seen...)."""
        return {}

    def parse_adjudication(self, project, post) -> Any:
        """The answer an expert posted with :attr:`adjudication_template` (``None`` when it cannot be read)."""
        try:
            return json.loads(post.get("answer") or "")
        except ValueError:
            return None

    def adjudicate(self, project, item, answer: dict, *, expert) -> dict:
        """Check an expert's final answer (like a worker's response) and apply what the task type keeps besides
        the :class:`~annotation.models.Adjudication` row; returns the cleaned answer to store. Runs inside the
        adjudication service's transaction; raises :class:`ResponseInvalid`."""
        return self.validate_response(project, item, answer)

    # --- pages ------------------------------------------------------------------------------------
    # ``(url name, link text)`` of the task type's own results page (its urls module), linked from the dashboards.
    results_page: tuple[str, str] | None = None

    # --- models in the loop ----------------------------------------------------------------------
    # Trainer kinds the retrain loop trains from a project of this type unless its config names others.
    retrain_kinds: tuple[str, ...] = ()

    # --- releases ----------------------------------------------------------------------------------
    # The task type's own release kinds (its ``release`` module registers them); ``annotations`` is offered for a
    # project of any type besides these (annotation/studio/releases.py).
    release_kinds: tuple[str, ...] = ()


# --- item sources (a task type package's ``sources`` module; see the module doc) ----------------------------------
@dataclass(frozen=True)
class SourceOption:
    """An option of a :class:`Source` that the studio asks for: a checkbox (``"bool"``), a whole number (``"int"``,
    at least ``minimum``, at most ``maximum``) or one line of text (``"text"``)."""

    name: str
    label: str
    kind: str = "bool"
    default: Any = None
    help: str = ""
    minimum: int = 0
    maximum: int | None = None


@dataclass(frozen=True)
class GoldShare:
    """Which rows of an upload that carries labels become gold items (their expected answer: the row's own label;
    the other rows become items for the workers): none, the first ``n`` rows, ``n`` percent of the rows drawn at
    random with ``seed`` (the same rows for the same file and seed), or every row (a gold-only addition to a project
    that has items already). The studio asks for it on every source with a :attr:`Source.gold_label`."""

    mode: str = "none"  # one of GOLD_MODES
    n: int = 0  # "first": rows; "percent": 0..100
    seed: int = 13

    def __post_init__(self):
        if self.mode not in GOLD_MODES:
            raise FieldError("gold_mode", f"one of {', '.join(GOLD_MODES)}, not {self.mode!r}")
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 0:
            raise FieldError("gold_n", "a whole number, 0 or more")
        if self.mode == "percent" and self.n > 100:
            raise FieldError("gold_n", f"a share in percent (0 to 100), not {self.n}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise FieldError("gold_seed", "a whole number")

    @property
    def active(self) -> bool:
        return self.mode == "all" or (self.mode in ("first", "percent") and self.n > 0)

    def rows(self, total: int) -> set[int]:
        """The 0-based indexes (in file order) of the gold rows among ``total`` rows."""
        if self.mode == "all":
            return set(range(total))
        if self.mode == "first":
            return set(range(min(self.n, total)))
        if self.mode == "percent":
            k = min(total, round(total * self.n / 100))
            return set(random.Random(self.seed).sample(range(total), k))
        return set()

    def split(self, rows: list) -> tuple[list, list]:
        """``(gold rows, other rows)``, each in file order."""
        chosen = self.rows(len(rows))
        return ([r for i, r in enumerate(rows) if i in chosen], [r for i, r in enumerate(rows) if i not in chosen])

    def describe(self) -> str:
        if self.mode == "all":
            return "every row is a gold item"
        if self.mode == "first" and self.n:
            return f"the first {self.n} row(s) are gold items"
        if self.mode == "percent" and self.n:
            return f"{self.n}% of the rows, drawn with seed {self.seed}, are gold items"
        return "no gold items"

    def as_dict(self) -> dict:
        return {"mode": self.mode, "n": self.n, "seed": self.seed}

    @classmethod
    def from_dict(cls, value: dict | None) -> GoldShare:
        value = value or {}
        return cls(mode=value.get("mode", "none"), n=value.get("n", 0), seed=value.get("seed", 13))


GOLD_MODES = ("none", "first", "percent", "all")


@dataclass(frozen=True)
class Source:
    """One way to make a project's items: an upload format (``extensions`` given: the file's name must end with one
    of them) or, without extensions, a selection from the corpus (topics + a limit). ``rows``: how the file is laid
    out row by row (``"jsonl"``, ``"csv"``, ``"tsv"``, or ``""``), so that the studio can list every bad row and not
    only the first one."""

    name: str
    label: str
    description: str
    extensions: tuple[str, ...] = ()
    example: str = ""
    options: tuple[SourceOption, ...] = ()
    rows: str = ""
    # What a gold item's expected answer is when a row of this source is made gold (e.g. "its aspects", "its
    # stance"); empty: the source's rows carry no labels, and the studio offers no gold share for it.
    gold_label: str = ""

    @property
    def is_upload(self) -> bool:
        return bool(self.extensions)


@dataclass
class SourceInput:
    """What a source reads: the stored upload (``path``; ``file_name`` is the name the researcher uploaded, used in
    ``file:line`` messages) or the corpus selection (``topics``: corpus Topic rows, none = all; ``limit``), and the
    source's options (``{option name: value}``, defaults filled in)."""

    source: Source
    path: Path | None = None
    file_name: str = ""
    topics: list = field(default_factory=list)
    limit: int | None = None
    options: dict = field(default_factory=dict)
    gold: GoldShare = field(default_factory=GoldShare)  # which rows become gold items (sources with a gold_label)


@dataclass
class Preview:
    """What an import would make, before anything is written: ``items`` (+ ``gold`` gold items), the first rows as
    text cells under ``columns``, and ``notes`` a person should read (topics created, rows already present...)."""

    items: int
    gold: int = 0
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
