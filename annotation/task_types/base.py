"""The task-type plug-in interface. One task type = one module under ``annotation/task_types/``.

A task type says how to build items from corpus rows, how to render one item inside the HIT page
(a template + an optional small script), how to validate a response (always on the server), how to
score a gold item, how to aggregate the responses of an item and how to export it.
"""
from __future__ import annotations

from typing import Any, Iterable


class ResponseInvalid(Exception):
    """A response (or a config / gold answer) that breaks the task type's schema.

    ``field`` names what is wrong (e.g. ``"label"``); the API answers HTTP 400 ``{"errors": {field: reason}}``.
    """

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class TaskType:
    name: str = ""
    label: str = ""
    template: str = ""
    script: str | None = None
    # Task-specific keyboard help for the instructions panel: (keys as HTML, what they do). The panel adds the
    # keys every HIT shares (Enter submits, ? toggles the instructions).
    keys_help: tuple[tuple[str, str], ...] = ()
    # Guidelines shown when the project has none of its own (a template under templates/annotation/guidelines/).
    guidelines_template: str | None = None

    def default_guidelines(self) -> str:
        if not self.guidelines_template:
            return ""
        from django.template.loader import render_to_string

        return render_to_string(self.guidelines_template)

    # --- project set-up -----------------------------------------------------------------------
    def clean_config(self, config: dict | None) -> dict:
        """Check and normalise ``project.config``; raise :class:`ResponseInvalid` naming the key."""
        return dict(config or {})

    def build_items(self, project, rows: Iterable[Any]) -> list[dict]:
        """Corpus rows (e.g. a Sentence queryset) -> item payloads."""
        raise NotImplementedError

    def item_links(self, payload: dict) -> dict:
        """Model fields of the Item that a payload implies (``sentence_id``, ``external_key``)."""
        return {}

    # --- what a worker may see -----------------------------------------------------------------
    # Payload keys that hold answers or bookkeeping (imported reference labels, an expert's adjudication,
    # pass-through columns of an import). They never leave the server towards a worker; keys starting with
    # "_" are private too. A task type with more such keys extends this tuple.
    private_payload_keys: tuple[str, ...] = ("reference", "adjudicated", "extra", "gold")

    def worker_payload(self, project, item, assignment=None) -> dict:
        """The item payload as a worker's client may receive it (JSON API, MTurk page); ``assignment`` is the
        worker's assignment when there is one (a task type may add per-assignment details, e.g. a placement)."""
        return {key: value for key, value in (item.payload or {}).items()
                if key not in self.private_payload_keys and not key.startswith("_")}

    # --- rendering ----------------------------------------------------------------------------
    def item_context(self, project, item) -> dict:
        """What the template needs for one item."""
        return {"item": item, "payload": item.payload, "config": project.config}

    # --- responses ----------------------------------------------------------------------------
    def validate_response(self, project, item, data, *, assignment=None) -> dict:
        """Cleaned data, or raise :class:`ResponseInvalid`. ``assignment``: the assignment the response is
        submitted for (None for gold answers and imports). It is passed only to task types whose method takes it,
        so an override may leave it out."""
        raise NotImplementedError

    def score_gold(self, project, gold, data: dict) -> float:
        """1.0 correct ... 0.0 wrong; ``gold.tolerance`` applies. Default: exact equality."""
        return 1.0 if data == gold.expected else 0.0

    def aggregate(self, project, item, responses: list[dict]) -> dict:
        raise NotImplementedError

    def export_row(self, project, item, responses: list[dict]) -> dict:
        return {"item_id": item.pk, "external_key": item.external_key, "payload": item.payload,
                "responses": responses, "aggregate": self.aggregate(project, item, responses)}

    def __repr__(self) -> str:
        return f"<TaskType {self.name}>"

    # --- agreement --------------------------------------------------------------------------------
    def reliability_data(self, project, items_responses) -> dict:
        """Reliability data for agreement figures (see :mod:`annotation.agreement.project`): ``{"level",
        "coders", "units", "unit_item", "matrix"}`` (+ ``"unitized"`` for spans) from the response records
        ``items_responses``. Task types without one are given by ``annotation.agreement.project``'s registry."""
        raise NotImplementedError(f"task type {self.name!r} gives no reliability data")
