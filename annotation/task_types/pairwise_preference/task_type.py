"""``pairwise_preference``: which of two arguments on the same topic and stance is more persuasive, and is each
fluent? (Arg-CTRL §7.1: generated vs. reference arguments, judged blind and in random order.)

The payload holds the two arguments with their system names (``a`` / ``b``); the HIT shows them as "Argument 1"
(left) and "Argument 2" (right), never showing system names. The server decides the placement per assignment
(:func:`annotation.task_types.pairwise_preference.pairwise.left_side`: a seeded per-item coin XOR the assignment's slot parity, so the R
assignments of an item alternate the order and a reload shows the same one); the HIT page renders it and the JSON
API payload says it (``"left"`` / ``"right"``). The response records the placement (``left`` and ``left_system``;
``left`` may be left out, the server fills it in), the choice (left / right / equal) and the fluency of both
arguments; aggregation and results map it back to systems. Refusals (HTTP 400 naming the field): an unknown field,
a missing choice / fluency, a ``left`` other than the server's placement for the assignment (or, without an
assignment, a missing one), a value that is not a choice.
"""

from __future__ import annotations

from annotation.agreement.records import build_matrix
from annotation.models import Item

from .. import register
from ..base import ResponseInvalid, TaskType
from . import pairwise


@register
class PairwisePreference(TaskType):
    name = "pairwise_preference"
    label = "Pairwise preference (persuasiveness and fluency)"
    template = "task_types/pairwise_preference/hit.html"
    script = "task_types/pairwise_preference/hit.js"
    stylesheet = "task_types/pairwise_preference/hit.css"
    project_defaults = {"assignments_per_item": 2, "items_per_hit": 5}
    items_howto = "import argument pairs with `manage.py ratings pairwise` (a JSONL file of a generation run)"
    results_page = ("annotation:ratings-results", "Rating results")
    config_keys: dict[str, str] = {}  # no options: each pair's payload holds all its page shows
    guidelines_template = "task_types/pairwise_preference/guidelines.html"
    keys_help = (
        (
            "<kbd>1</kbd> <kbd>2</kbd> <kbd>3</kbd>",
            "argument 1 / argument 2 / equally persuasive; then the fluency questions come up in turn",
        ),
        (
            "<kbd>Y</kbd> <kbd>N</kbd> (or <kbd>1</kbd> <kbd>2</kbd>)",
            "fluent / not fluent for the highlighted argument",
        ),
        ("<kbd>←</kbd> <kbd>→</kbd>", "move between the three questions of the item"),
        ("<kbd>↑</kbd> <kbd>↓</kbd> or <kbd>Tab</kbd>", "move between items"),
    )
    private_payload_keys = TaskType.private_payload_keys + ("key",)

    # --- set-up ---------------------------------------------------------------------------------
    def build_items(self, project, rows):
        """Rows ``{topic, stance, a: {system, text}, b: {system, text}}`` -> payloads (see
        :func:`annotation.task_types.ratings.items.read_pairs` for files, with line numbers)."""
        items = []
        for i, row in enumerate(rows):
            try:
                payload = {
                    "topic": str(row["topic"]),
                    "stance": str(row["stance"]),
                    "a": {"system": str(row["a"]["system"]), "text": str(row["a"]["text"])},
                    "b": {"system": str(row["b"]["system"]), "text": str(row["b"]["text"])},
                }
            except (KeyError, TypeError):
                raise ResponseInvalid(
                    f"rows[{i}]", "give topic, stance, a: {system, text}, b: {system, text}"
                ) from None
            if payload["a"]["system"] == payload["b"]["system"]:
                raise ResponseInvalid(f"rows[{i}]", "a and b must come from different systems")
            if row.get("key"):
                payload["key"] = str(row["key"])
            items.append(payload)
        return items

    def item_links(self, payload):
        key = payload.get("key")
        return {"external_key": str(key)[:200]} if key else {}

    def worker_payload(self, project, item, assignment=None):
        """Texts without system names; for an assignment also the placement (``"left"``/``"right"``)."""
        left = pairwise.left_side(assignment, item) if assignment is not None else None
        return pairwise.public_payload(item.payload, left)

    # --- rendering ------------------------------------------------------------------------------
    def item_context(self, project, item):
        payload = item.payload or {}
        return {
            "item": item,
            "topic": payload.get("topic", ""),
            "stance": payload.get("stance", ""),
            "a": (payload.get("a") or {}).get("text", ""),
            "b": (payload.get("b") or {}).get("text", ""),
            "swap": pairwise.SwapRule(item.pk),
        }

    # --- responses ------------------------------------------------------------------------------
    def validate_response(self, project, item, data, *, assignment=None):
        """With the ``assignment`` the server's placement is authoritative (``left`` filled in or checked)."""
        placement = pairwise.left_side(assignment, item) if assignment is not None else None
        return pairwise.clean_response(
            item.payload or {}, data, placement=placement
        )  # pairwise.Invalid is a ResponseInvalid

    def score_gold(self, project, gold, data):
        """1 when the winner (in system terms) matches the expected one, else 0."""
        expected = pairwise.judgement(gold.item.payload or {}, gold.expected or {})
        got = pairwise.judgement(gold.item.payload or {}, data)
        return 1.0 if expected["winner"] == got["winner"] else 0.0

    def aggregate(self, project, item, responses):
        return pairwise.aggregate(item.payload or {}, responses)

    def export_row(self, project, item, responses):
        payload = item.payload or {}
        return {
            "item_id": item.pk,
            "key": payload.get("key"),
            "topic": payload.get("topic"),
            "stance": payload.get("stance"),
            "a": payload.get("a"),
            "b": payload.get("b"),
            "judgements": [pairwise.judgement(payload, r) for r in responses],
            "aggregate": self.aggregate(project, item, responses),
        }

    # --- agreement ------------------------------------------------------------------------------
    def reliability_data(self, project, items_responses):
        """Nominal, one unit per item: the winning system or "tie" (placement-independent)."""
        ids = {r["item_id"] for r in items_responses}
        payloads = dict(Item.objects.filter(pk__in=ids).values_list("pk", "payload"))
        cells, units, _, _ = pairwise.agreement_cells(items_responses, payloads)
        return build_matrix(cells, units, "nominal")
