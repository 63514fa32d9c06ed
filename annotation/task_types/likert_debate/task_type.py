"""``likert_debate``: rate a debate transcript (multi-turn, speakers alternating) on style, content, strategy and
overall quality, each 1-4 (debate trees §3, Table 6; 5-10 reviewers per debate, R = 5 by default).

Payload: ``{"debate_id", "system" ("human" or a model name), "topic", "turns": [{"speaker", "text"}...], "key"}``;
workers never see the system. Response: ``{"style": 1-4, "content": 1-4, "strategy": 1-4, "overall": 1-4}``
(the no-JS form posts the radios ``item-<id>-<criterion>``). Refusals (HTTP 400 naming the field): an unknown field,
a missing criterion, a rating that is not 1, 2, 3 or 4. See :mod:`annotation.task_types.likert_debate.likert` for the results.
"""

from __future__ import annotations

from annotation.agreement.records import build_matrix

from .. import register
from ..base import ResponseInvalid, TaskType
from . import likert


@register
class LikertDebate(TaskType):
    name = "likert_debate"
    label = "Debate rating (style, content, strategy, overall; 1-4)"
    template = "task_types/likert_debate/hit.html"
    script = "task_types/likert_debate/hit.js"
    stylesheet = "task_types/likert_debate/hit.css"
    project_defaults = {"assignments_per_item": 5, "items_per_hit": 1}
    items_howto = "import debates with `manage.py ratings likert` (a JSONL file or imported debate trees)"
    results_page = ("annotation:ratings-results", "Rating results")
    config_keys: dict[str, str] = {}  # no options: each debate's payload holds all its page shows
    guidelines_template = "task_types/likert_debate/guidelines.html"
    keys_help = (
        (
            "<kbd>1</kbd>…<kbd>4</kbd>",
            "rate the highlighted criterion (style, content, strategy, overall in turn), then on to the next",
        ),
        (
            "<kbd>S</kbd> <kbd>C</kbd> <kbd>T</kbd> <kbd>O</kbd> or <kbd>←</kbd> <kbd>→</kbd>",
            "pick style / content / strategy / overall",
        ),
        ("<kbd>PgDn</kbd> <kbd>PgUp</kbd>", "scroll the transcript"),
        ("<kbd>↑</kbd> <kbd>↓</kbd> or <kbd>Tab</kbd>", "move between debates"),
    )
    private_payload_keys = TaskType.private_payload_keys + ("system", "source", "key", "debate_id")

    # --- set-up ---------------------------------------------------------------------------------
    def project_warnings(self, project):
        warning = likert.reviewer_warning(project)
        return [warning] if warning else []

    def build_items(self, project, rows):
        """Rows ``{id, system, topic?, turns: [{speaker, text}...]}`` -> payloads (files: :mod:`.items`)."""
        items = []
        for i, row in enumerate(rows):
            try:
                turns = [{"speaker": str(t["speaker"]), "text": str(t["text"])} for t in row["turns"]]
                payload = {
                    "debate_id": str(row["id"]),
                    "system": str(row["system"]),
                    "topic": str(row.get("topic") or ""),
                    "turns": turns,
                    "key": f"debate:{row['id']}",
                }
            except (KeyError, TypeError):
                raise ResponseInvalid(f"rows[{i}]", "give id, system and turns: [{speaker, text}...]") from None
            if len(turns) < 2:
                raise ResponseInvalid(f"rows[{i}]", "a debate needs at least 2 turns")
            items.append(payload)
        return items

    def item_links(self, payload):
        key = payload.get("key")
        return {"external_key": str(key)[:200]} if key else {}

    def worker_payload(self, project, item, assignment=None):
        return likert.public_payload(item.payload)

    # --- rendering ------------------------------------------------------------------------------
    def item_context(self, project, item):
        payload = item.payload or {}
        speakers = []
        for t in payload.get("turns") or []:
            if t.get("speaker") not in speakers:
                speakers.append(t.get("speaker"))
        turns = [
            {
                "speaker": t.get("speaker", ""),
                "text": t.get("text", ""),
                "number": n,
                "side": speakers.index(t.get("speaker")) % 2 if t.get("speaker") in speakers else 0,
            }
            for n, t in enumerate(payload.get("turns") or [], start=1)
        ]
        return {
            "item": item,
            "topic": payload.get("topic", ""),
            "turns": turns,
            "criteria": [
                {"field": c, "title": likert.TITLES[c], "key": likert.KEYS[c], "text": likert.QUESTIONS[c]}
                for c in likert.CRITERIA
            ],
            "scale": [{"value": v, "word": likert.SCALE_WORDS[v]} for v in likert.SCALE],
        }

    # --- responses ------------------------------------------------------------------------------
    def validate_response(self, project, item, data, *, assignment=None):
        return likert.clean_response(data, partial=item.pk is None)  # likert.Invalid is a ResponseInvalid

    def score_gold(self, project, gold, data):
        """Mean over the expected criteria of 1 - |difference| / 3 (a rating one off scores 2/3)."""
        expected = {c: v for c, v in (gold.expected or {}).items() if c in likert.CRITERIA}
        if not expected:
            return 1.0
        return sum(1 - abs(int(data.get(c, v)) - int(v)) / 3 for c, v in expected.items()) / len(expected)

    def aggregate(self, project, item, responses):
        return likert.aggregate(responses)

    def export_row(self, project, item, responses):
        payload = item.payload or {}
        return {
            "item_id": item.pk,
            "debate_id": payload.get("debate_id"),
            "system": payload.get("system"),
            "topic": payload.get("topic"),
            "turns": payload.get("turns"),
            "ratings": [{c: r.get(c) for c in likert.CRITERIA} for r in responses],
            "aggregate": self.aggregate(project, item, responses),
        }

    # --- agreement ------------------------------------------------------------------------------
    def reliability_data(self, project, items_responses):
        """Ordinal; one unit per (debate, criterion). The results page reports each criterion separately."""
        cells, units = {}, {}
        for r in items_responses:
            for c in likert.CRITERIA:
                value = (r.get("data") or {}).get(c)
                if isinstance(value, int):
                    cells[(r["coder"], (r["item_id"], c))] = value
                    units[(r["item_id"], c)] = r["item_id"]
        return build_matrix(cells, units, "ordinal")
