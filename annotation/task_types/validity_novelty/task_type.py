"""``validity_novelty``: is a conclusion valid, and is it novel, given its premise? (ValNov, Heinisch et al. 2022)

One item = one premise (with its debate topic) and one conclusion. Each of R annotators (R = 3 by default, the
project's ``assignments_per_item``) rates two dimensions, each yes / no / don't know:

* **validity** -- the conclusion follows from the premise (there is a logical inference linking them);
* **novelty** -- the conclusion adds premise-related content that goes beyond what the premise says.

Item payload (``annotation.task_types.validity_novelty.results.import_file`` builds it from a shared-task CSV / JSONL row)::

    {"topic": "...", "premise": "...", "conclusion": "...", "key": "valnov:<hash>#<n>",
     "reference": {"validity": 1, "validity_confidence": "very confident", "novelty": -1,
                   "novelty_confidence": "majority"},           # imported labels (optional), never shown
     "extra": {"column": "value"}}                              # the file's other columns, written back on export

Response (JSON API, or the no-JS form radios ``item-<id>-validity`` / ``item-<id>-novelty``)::

    {"validity": "yes" | "no" | "dont_know", "novelty": "yes" | "no" | "dont_know"}

Refusals (HTTP 400 naming the field): an unknown field; a missing dimension; a value that is not one of the three
choices. Gold items (``manage.py valnov import --as-gold``) expect the imported labels; a dimension whose label is 0
(tie / unknown) is left out of the expected answer and not scored.

Aggregation (:mod:`annotation.task_types.validity_novelty.aggregation`): majority per dimension; a tie in validity or a "don't know"
majority is unknown (0), a tie in novelty is 0 with target 0.5; a confidence word per dimension; the instance weight
(:mod:`annotation.task_types.validity_novelty.weights`) from 1 (no agreement) to 5 (full agreement on both dimensions).
"""

from __future__ import annotations

from annotation.agreement.records import build_matrix
from annotation.task_types.validity_novelty.aggregation import aggregate_responses, expected_votes

from .. import register
from ..base import ResponseInvalid, TaskType

CHOICES = ("yes", "no", "dont_know")
DIMENSIONS = ("validity", "novelty")
CHOICE_LABELS = (("yes", "Yes"), ("no", "No"), ("dont_know", "Don't know"))
QUESTIONS = {
    "validity": ("Validity", "V", "Does the conclusion follow from the premise?"),
    "novelty": ("Novelty", "N", "Does the conclusion go beyond the premise?"),
}


@register
class ValidityNovelty(TaskType):
    name = "validity_novelty"
    label = "Validity and novelty of a conclusion"
    template = "task_types/validity_novelty/hit.html"
    script = "task_types/validity_novelty/hit.js"
    stylesheet = "task_types/validity_novelty/hit.css"
    project_defaults = {"assignments_per_item": 3}
    items_howto = "import the shared-task CSV / JSONL with `manage.py valnov import`"
    results_page = ("annotation:valnov", "Validity / novelty results")
    config_keys = {
        "columns": "the imported file's columns in order, merged by each import and written back on export "
        "(default none)",
    }
    guidelines_template = "task_types/validity_novelty/guidelines.html"
    keys_help = (
        (
            "<kbd>1</kbd> <kbd>2</kbd> <kbd>3</kbd>",
            "yes / no / don't know for the highlighted question: validity "
            "first, then novelty, then on to the next item",
        ),
        ("<kbd>V</kbd> or <kbd>N</kbd> then <kbd>1</kbd>…<kbd>3</kbd>", "answer (or change) validity or novelty"),
        ("<kbd>↑</kbd> <kbd>↓</kbd> or <kbd>Tab</kbd>", "move between items"),
    )

    # --- set-up ---------------------------------------------------------------------------------
    def clean_config(self, config):
        config = dict(config or {})
        columns = config.get("columns")
        if columns is not None:
            if not isinstance(columns, list) or not all(isinstance(c, str) and c for c in columns):
                raise ResponseInvalid("columns", "a list of column names (the imported file's header)")
            if len(set(columns)) != len(columns):
                raise ResponseInvalid("columns", "column names must be distinct")
        return config

    def build_items(self, project, rows):
        """Rows with ``topic``, ``premise``, ``conclusion`` (dicts or objects) -> payloads."""
        items = []
        for row in rows:
            get = row.get if isinstance(row, dict) else (lambda k, d="", r=row: getattr(r, k, d))
            premise, conclusion = str(get("premise", "") or ""), str(get("conclusion", "") or "")
            if not premise.strip() or not conclusion.strip():
                raise ResponseInvalid("premise" if not premise.strip() else "conclusion", "must not be empty")
            payload = {"topic": str(get("topic", "") or ""), "premise": premise, "conclusion": conclusion}
            for key in ("key", "reference", "extra"):
                if get(key, None) is not None:
                    payload[key] = get(key, None)
            items.append(payload)
        return items

    def item_links(self, payload):
        key = payload.get("key")
        return {"external_key": str(key)[:200]} if key else {}

    # --- rendering ------------------------------------------------------------------------------
    def item_context(self, project, item):
        payload = item.payload or {}
        # only what the worker may see: never the imported reference labels
        return {
            "item": item,
            "topic": payload.get("topic", ""),
            "premise": payload.get("premise", ""),
            "conclusion": payload.get("conclusion", ""),
            "questions": [
                {
                    "field": dim,
                    "title": QUESTIONS[dim][0],
                    "key": QUESTIONS[dim][1],
                    "text": QUESTIONS[dim][2],
                    "choices": [
                        {"value": v, "text": t, "number": n} for n, (v, t) in enumerate(CHOICE_LABELS, start=1)
                    ],
                }
                for dim in DIMENSIONS
            ],
        }

    # --- responses ------------------------------------------------------------------------------
    def validate_response(self, project, item, data, *, assignment=None):
        if not isinstance(data, dict):
            raise ResponseInvalid("validity", 'expected an object {"validity": ..., "novelty": ...}')
        extra = set(data) - set(DIMENSIONS)
        if extra:
            raise ResponseInvalid(sorted(map(str, extra))[0], "unknown field")
        setting_up_gold = item.pk is None  # a gold answer leaves out a dimension whose label is tie / unknown
        cleaned = {}
        for dim in DIMENSIONS:
            value = data.get(dim)
            if isinstance(value, list):  # a repeated form field
                value = value[-1] if value else None
            if value is None or value == "":
                if setting_up_gold:
                    continue
                raise ResponseInvalid(dim, f"answer {dim}: yes, no or don't know")
            if not isinstance(value, str) or value not in CHOICES:
                raise ResponseInvalid(dim, f"{value!r} is not a choice (expected one of: {', '.join(CHOICES)})")
            cleaned[dim] = value
        return cleaned

    def score_gold(self, project, gold, data):
        """Mean over the dimensions the gold answer names of 1 (same choice) / 0; 1.0 when it names none."""
        expected = {d: v for d, v in (gold.expected or {}).items() if d in DIMENSIONS}
        if not expected:
            return 1.0
        return sum(1.0 for d, v in expected.items() if data.get(d) == v) / len(expected)

    def aggregate(self, project, item, responses):
        # an item with fewer votes than the project's panel gets the guaranteed words only (aggregation docstring)
        return aggregate_responses(responses, expected=expected_votes(project))

    def aggregate_text(self, aggregate):
        """``validity 1 (very confident) · novelty 0 (defeasible)``, and how many votes of the panel are in."""
        if not isinstance(aggregate, dict) or not all(isinstance(aggregate.get(d), dict) for d in DIMENSIONS):
            return ""
        text = " · ".join(f"{d} {aggregate[d].get('label')} ({aggregate[d].get('confidence')})" for d in DIMENSIONS)
        if aggregate.get("complete") is False:
            text += f" · provisional: {aggregate.get('n')} of {aggregate.get('expected')} votes"
        return text

    def export_row(self, project, item, responses):
        payload = item.payload or {}
        return {
            "item_id": item.pk,
            "topic": payload.get("topic"),
            "premise": payload.get("premise"),
            "conclusion": payload.get("conclusion"),
            "votes": [{d: r.get(d) for d in DIMENSIONS} for r in responses],
            "reference": payload.get("reference"),
            "aggregate": self.aggregate(project, item, responses),
        }

    # --- agreement ------------------------------------------------------------------------------
    def reliability_data(self, project, items_responses):
        """Nominal; one unit per (item, dimension), "don't know" is a category of its own. The staff results page
        (:mod:`annotation.task_types.validity_novelty.results`) reports each dimension separately."""
        cells, unit_item = {}, {}
        for r in items_responses:
            for dim in DIMENSIONS:
                value = (r.get("data") or {}).get(dim)
                if value in (None, ""):
                    continue
                cells[(r["coder"], (r["item_id"], dim))] = str(value)
                unit_item[(r["item_id"], dim)] = r["item_id"]
        return build_matrix(cells, unit_item, "nominal")
