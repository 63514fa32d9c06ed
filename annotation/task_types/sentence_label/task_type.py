"""``sentence_label``: choose one label from a list for each sentence.

payload ``{"sentence_id", "text", "topic"}``; ``project.config["labels"]`` a list of strings;
response ``{"label": "<one of labels>"}``; aggregate = majority label with counts and share; a tie at the top keeps a
deterministic ``label`` (the first tied label in the config's order), lists every tied label under ``tied`` (only
present on a tie), and the dashboards say "tie: pro / con", never "majority".
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from annotation.agreement.records import build_matrix

from .. import register
from ..base import ResponseInvalid, TaskType

DEFAULT_LABELS = ["pro", "con", "none"]


@register
class SentenceLabel(TaskType):
    name = "sentence_label"
    label = "Sentence label (choose one)"
    template = "task_types/sentence_label/hit.html"
    is_default = True  # what create_project makes when no task type is named
    builds_from_sentences = True
    adjudication_template = "task_types/sentence_label/adjudicate.html"
    script = "task_types/sentence_label/hit.js"
    retrain_kinds = ("argument",)  # the retrain loop trains the argument / stance classifier from the final labels
    config_keys = {"labels": 'the labels offered, in order: distinct strings (default ["pro", "con", "none"])'}
    keys_help = (
        ("<kbd>1</kbd>…<kbd>9</kbd>", "choose for the highlighted item, then move on"),
        (
            "<kbd>↑</kbd> <kbd>↓</kbd> or <kbd>Tab</kbd>",
            "move between items; <kbd>←</kbd> <kbd>→</kbd> change the choice",
        ),
    )

    def labels(self, project) -> list[str]:
        labels = (project.config or {}).get("labels") or DEFAULT_LABELS
        return [str(label) for label in labels]

    def clean_config(self, config):
        config = dict(config or {})
        labels = config.get("labels", DEFAULT_LABELS)
        if not isinstance(labels, list) or not labels:
            raise ResponseInvalid("labels", "give a non-empty list of labels")
        cleaned = [str(label).strip() for label in labels]
        if any(not label for label in cleaned):
            raise ResponseInvalid("labels", "labels must not be empty strings")
        if len(set(cleaned)) != len(cleaned):
            raise ResponseInvalid("labels", "labels must be distinct")
        config["labels"] = cleaned
        return config

    def build_items(self, project, rows):
        items = []
        for sentence in rows:
            topic = getattr(sentence, "topic", None)
            items.append({"sentence_id": sentence.pk, "text": sentence.text, "topic": str(topic) if topic else ""})
        return items

    def gold_from_sentence(self, project, sentence, payload):
        """A sentence's corpus stance as the expected label (``create_project --gold-from-stance``)."""
        return {"label": sentence.stance}

    def item_links(self, payload):
        sentence_id = payload.get("sentence_id")
        links = {}
        if isinstance(sentence_id, int):
            links["sentence_id"] = sentence_id
            links["external_key"] = f"sentence:{sentence_id}"
        return links

    def page_context(self, project):
        return {"labels": self.labels(project)}  # one label set for every item of the page

    def item_context(self, project, item):
        return {
            "item": item,
            "payload": item.payload,
            "text": item.payload.get("text", ""),
            "topic": item.payload.get("topic", ""),
        }

    def validate_response(self, project, item, data, *, assignment=None):
        if not isinstance(data, dict):
            raise ResponseInvalid("label", 'expected an object {"label": ...}')
        extra = set(data) - {"label"}
        if extra:
            raise ResponseInvalid(sorted(extra)[0], "unknown field")
        label = data.get("label")
        if label is None or label == "":
            raise ResponseInvalid("label", "choose a label")
        if not isinstance(label, str) or label not in self.labels(project):
            raise ResponseInvalid("label", f"must be one of: {', '.join(self.labels(project))}")
        return {"label": label}

    def score_gold(self, project, gold, data):
        return 1.0 if data.get("label") == (gold.expected or {}).get("label") else 0.0

    def aggregate(self, project, item, responses):
        counts = Counter(r.get("label") for r in responses if r.get("label") is not None)
        total = sum(counts.values())
        if not total:
            return {"label": None, "counts": {}, "share": 0.0, "n": 0}
        order = {label: i for i, label in enumerate(self.labels(project))}
        # majority; ties broken by the order of the labels in the config (stable, documented) and listed in "tied"
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], order.get(kv[0], len(order)), str(kv[0])))
        label, count = ranked[0]
        out = {"label": label, "counts": dict(counts), "share": count / total, "n": total}
        tied = [lab for lab, c in ranked if c == count]
        if len(tied) > 1:
            out["tied"] = tied
        return out

    def export_row(self, project, item, responses):
        agg = self.aggregate(project, item, responses)
        return {
            "item_id": item.pk,
            "sentence_id": item.payload.get("sentence_id"),
            "text": item.payload.get("text"),
            "topic": item.payload.get("topic"),
            "labels": [r.get("label") for r in responses],
            "label": agg["label"],
            "share": agg["share"],
            "n": agg["n"],
            **({"tied": agg["tied"]} if "tied" in agg else {}),
        }

    def answer_text(self, answer):
        return (
            str(answer.get("label")) if isinstance(answer, dict) and "label" in answer else super().answer_text(answer)
        )

    def aggregate_text(self, aggregate):
        """``majority: pro (2 of 3)``, ``tie: pro / con (1 each of 2)``, ``pro (1 response)``."""
        if not isinstance(aggregate, dict) or aggregate.get("label") is None:
            return ""
        n = aggregate.get("n") or 0
        counts = aggregate.get("counts") or {}
        tied = aggregate.get("tied") or []
        if len(tied) > 1:
            return f"tie: {' / '.join(map(str, tied))} ({counts.get(tied[0], 0)} each of {n})"
        label = str(aggregate["label"])
        if n < 2:
            return f"{label} (1 response)"
        return f"majority: {label} ({counts.get(aggregate['label'], 0)} of {n})"

    # --- agreement and adjudication -----------------------------------------------------------
    def reliability_data(self, project, records):
        """Nominal: one unit per item, the coder's label (a coder's later answer to the same item wins)."""
        cells: dict[tuple[str, Any], Any] = {}
        unit_item: dict[Any, int] = {}
        for r in records:
            label = r["data"].get("label")
            if label in (None, ""):
                continue
            cells[(r["coder"], r["item_id"])] = str(label)
            unit_item[r["item_id"]] = r["item_id"]
        return build_matrix(cells, unit_item, "nominal")

    def adjudication_form(self, project, item_row):
        return {"labels": self.labels(project)}

    def parse_adjudication(self, project, post):
        return {"label": post.get("label", "")}
