"""Pairwise preference (Arg-CTRL §7.1): plain functions over payloads and responses.

Item payload (built by :mod:`.items`)::

    {"topic": "...", "stance": "pro", "key": "pair:<hash>#1",
     "a": {"system": "arg-ctrl", "text": "..."}, "b": {"system": "reference", "text": "..."}}

Placement (the server decides it; :func:`left_side`): which of ``a`` / ``b`` is shown on the left for an assignment
is ``coin(item) XOR (slot mod 2)``, where ``coin(item)`` is a coin seeded by the item id and ``slot`` is the
assignment's place among the assignments of its HIT (0 for the first reservation, 1 for the second, ...; expired
reservations keep their place). So the R assignments of an item alternate the order: with R = 2 every pair is seen
once in each order, with any R the orders differ by at most one, and which order comes first is itself random per
item. Expired reservations still count, so after an expiry the balance can be off by one more. The placement is
deterministic (a reload shows the same order), the HIT page and the JSON API payload (``"left"``) show it, and a
submission that claims another placement is refused (``left``). Without an assignment (a preview, gold answers)
the payload order is used. Workers never see system names (:func:`public_payload`).

The slot is stable: reserving an assignment takes the HIT's row lock before the assignment row is inserted, so the
assignments of one HIT get increasing ids in the order they commit, and the count of earlier ones never changes --
unless staff delete an earlier assignment of the same HIT (``services.do_release_assignment``): then the later ones
move up a slot, an open reservation among them shows the other order on its next load, and a submission made from
the old page is refused (``left``) rather than stored under the wrong placement.

Response (positions, as the worker saw them)::

    {"left": "a" | "b",                 # which payload argument was shown on the left (may be left out when
                                        # submitted for an assignment: the server fills in its placement)
     "left_system": "<system>",         # stored by the server (optional on input; must match)
     "choice": "left" | "right" | "equal",
     "fluent_left": true | false, "fluent_right": true | false}

:func:`judgement` maps a response back to systems (winner, tie, fluency per system); everything downstream
(aggregation, results, agreement) works on judgements, so a swapped placement is counted for the right system.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from typing import Any

from annotation.models import Assignment

from ..base import ResponseInvalid

SIDES = ("a", "b")
CHOICES = ("left", "right", "equal")
TIE = "tie"
FIELDS = ("left", "left_system", "choice", "fluent_left", "fluent_right")
_YES = {"yes", "true", "1", "fluent"}
_NO = {"no", "false", "0", "not_fluent"}


class Invalid(ResponseInvalid):
    """A pairwise response that breaks the schema (``field``: ``reason``)."""


# --- placement ------------------------------------------------------------------------------------
def item_coin(item_id: Any) -> bool:
    """A coin seeded by the item id: does the first assignment of the item see ``b`` on the left?"""
    digest = hashlib.sha256(f"argora-pairwise:{item_id}".encode()).digest()
    return bool(digest[0] & 1)


def swapped_at(item_id: Any, slot: int) -> bool:
    """True when argument ``b`` goes on the left for the assignment in ``slot`` (0, 1, ...) of the item's HIT."""
    return item_coin(item_id) != bool(int(slot) % 2)


def assignment_slot(assignment: Any) -> int | None:
    """The assignment's place among the assignments of its HIT, by id (an Assignment, or its id; None: none):
    ``Assignment.hit_slot``, read once per instance, so a page or a submission asks once."""
    if assignment in (None, ""):
        return None
    if not isinstance(assignment, Assignment):
        assignment = Assignment.objects.filter(pk=assignment).only("pk", "hit_id").first()
        if assignment is None:
            return None
    return assignment.hit_slot


def _item_id(item: Any) -> Any:
    return getattr(item, "pk", item)


def swapped(assignment: Any, item: Any) -> bool:
    """True when argument ``b`` goes on the left for this assignment (an Assignment or its id) and item (an Item or
    its id); no assignment (a preview): never."""
    slot = assignment_slot(assignment)
    if slot is None or _item_id(item) in (None, ""):
        return False
    return swapped_at(_item_id(item), slot)


def left_side(assignment: Any, item: Any) -> str:
    """The payload side (``"a"`` / ``"b"``) shown on the left for this assignment and item."""
    return "b" if swapped(assignment, item) else "a"


class SwapRule:
    """``assignment in rule``: is the pair swapped for that assignment? (lets a template decide the order with
    ``{% if assignment in ctx.swap %}``, since item contexts are built without the assignment)."""

    def __init__(self, item_id: int):
        self.item_id = item_id

    def __contains__(self, assignment) -> bool:
        return swapped(assignment, self.item_id)


def other(side: str) -> str:
    return "b" if side == "a" else "a"


def system_of(payload: dict, side: str) -> str:
    return str(((payload or {}).get(side) or {}).get("system", ""))


def public_payload(payload: dict, left: str | None = None) -> dict:
    """What a worker's client may see: topic, stance and the two texts, never the system names; with ``left``
    (the placement for the worker's assignment) also ``"left"`` / ``"right"``: show ``payload[left]`` as
    "Argument 1" (left) and ``payload[right]`` as "Argument 2" (right)."""
    payload = payload or {}
    out = {
        "topic": payload.get("topic", ""),
        "stance": payload.get("stance", ""),
        "a": {"text": (payload.get("a") or {}).get("text", "")},
        "b": {"text": (payload.get("b") or {}).get("text", "")},
    }
    if left in SIDES:
        out.update({"left": left, "right": other(left)})
    return out


# --- responses ------------------------------------------------------------------------------------
def _flag(field: str, value) -> bool:
    if isinstance(value, list):  # a repeated form field
        value = value[-1] if value else None
    if isinstance(value, bool):
        return value
    if value is None or value == "":
        raise Invalid(field, f"say whether the {field.split('_')[1]} argument is fluent (yes or no)")
    if isinstance(value, str) and value.strip().lower() in _YES:
        return True
    if isinstance(value, str) and value.strip().lower() in _NO:
        return False
    raise Invalid(field, f"{value!r} is not yes or no")


def clean_response(payload: dict, data, *, placement: str | None = None) -> dict:
    """The stored form of a response, or :class:`Invalid` naming the field.

    ``placement`` is the side the server showed on the left for the worker's assignment (:func:`left_side`): then
    ``left`` may be left out (the server fills it in) and a ``left`` that differs from it is refused. Without it
    (gold answers, imports) ``left`` is required."""
    if not isinstance(data, dict):
        raise Invalid("choice", 'expected an object {"left", "choice", "fluent_left", "fluent_right"}')
    extra = set(data) - set(FIELDS)
    if extra:
        raise Invalid(sorted(map(str, extra))[0], "unknown field")
    left = data.get("left")
    if isinstance(left, list):
        left = left[-1] if left else None
    systems = {side: system_of(payload, side) for side in SIDES}
    if left in (None, "") and placement in SIDES:
        left = placement
    if left in (None, ""):
        raise Invalid("left", "say which argument (a or b) was shown on the left")
    if left not in SIDES:
        # a client may name the system instead of the side
        named = [side for side, system in systems.items() if system and left == system]
        if len(named) != 1:
            raise Invalid("left", f"{left!r} is neither a nor b")
        left = named[0]
    if placement in SIDES and left != placement:
        raise Invalid(
            "left",
            f"argument {placement} was shown on the left for this assignment, not {left}; "
            f'show the pair in the order the server gives (the payload\'s "left")',
        )
    left_system = data.get("left_system")
    if left_system not in (None, "") and left_system != systems[left]:
        raise Invalid("left_system", f"{left_system!r} is not the system of argument {left}")
    choice = data.get("choice")
    if isinstance(choice, list):
        choice = choice[-1] if choice else None
    if choice in (None, ""):
        raise Invalid("choice", "choose the more persuasive argument (left, right) or equal")
    if choice not in CHOICES:
        raise Invalid("choice", f"{choice!r} is not a choice (expected one of: {', '.join(CHOICES)})")
    return {
        "left": left,
        "left_system": systems[left],
        "choice": choice,
        "fluent_left": _flag("fluent_left", data.get("fluent_left")),
        "fluent_right": _flag("fluent_right", data.get("fluent_right")),
    }


def judgement(payload: dict, data: dict) -> dict:
    """A stored response in system terms: ``{"left_system", "right_system", "winner" (system or "tie"),
    "winner_position" ("left" / "right" / None), "fluent": {system: bool}}``."""
    left = data.get("left") if data.get("left") in SIDES else "a"
    left_system, right_system = system_of(payload, left), system_of(payload, other(left))
    choice = data.get("choice")
    winner = left_system if choice == "left" else right_system if choice == "right" else TIE
    return {
        "left_system": left_system,
        "right_system": right_system,
        "winner": winner,
        "winner_position": choice if choice in ("left", "right") else None,
        "fluent": {left_system: bool(data.get("fluent_left")), right_system: bool(data.get("fluent_right"))},
    }


def aggregate(payload: dict, responses: list[dict]) -> dict:
    """One item: wins per system, ties, fluent votes per system, the majority winner (or "tie" / None)."""
    systems = [system_of(payload, s) for s in SIDES]
    wins: Counter = Counter()
    fluent: Counter = Counter()
    ties = 0
    for r in responses:
        j = judgement(payload, r)
        if j["winner"] == TIE:
            ties += 1
        else:
            wins[j["winner"]] += 1
        for system, ok in j["fluent"].items():
            fluent[system] += int(ok)
    n = len(responses)
    ranked = sorted([(wins.get(s, 0), s) for s in systems] + [(ties, TIE)], reverse=True)
    if not n:
        winner = None
    elif ranked[0][0] > ranked[1][0]:
        winner = ranked[0][1]
    else:
        winner = TIE
    return {
        "n": n,
        "wins": {s: wins.get(s, 0) for s in systems},
        "ties": ties,
        "winner": winner,
        "fluent": {s: fluent.get(s, 0) for s in systems},
    }


# --- results --------------------------------------------------------------------------------------
def system_table(pairs: list[tuple[dict, dict]]) -> list[dict]:
    """Per system over ``(payload, response)`` pairs: comparisons, wins, ties, losses and their shares (each judgement
    counts once for both of its systems), fluency rate. Sorted by win share, then name."""
    rows: dict[str, dict] = defaultdict(
        lambda: {"n": 0, "wins": 0, "ties": 0, "losses": 0, "fluent": 0, "left": 0, "opponents": Counter()}
    )
    for payload, data in pairs:
        j = judgement(payload, data)
        for system, opponent in ((j["left_system"], j["right_system"]), (j["right_system"], j["left_system"])):
            row = rows[system]
            row["n"] += 1
            row["opponents"][opponent] += 1
            row["fluent"] += int(j["fluent"][system])
            row["left"] += int(system == j["left_system"])
            if j["winner"] == TIE:
                row["ties"] += 1
            elif j["winner"] == system:
                row["wins"] += 1
            else:
                row["losses"] += 1
    out = []
    for system, row in rows.items():
        n = row["n"]
        out.append(
            {
                "system": system,
                "n": n,
                "wins": row["wins"],
                "ties": row["ties"],
                "losses": row["losses"],
                "win_share": row["wins"] / n,
                "tie_share": row["ties"] / n,
                "loss_share": row["losses"] / n,
                "win_or_tie_share": (row["wins"] + row["ties"]) / n,
                "fluent": row["fluent"],
                "fluency_rate": row["fluent"] / n,
                "shown_left": row["left"],
                "opponents": ", ".join(sorted(row["opponents"])),
            }
        )
    out.sort(key=lambda r: (-r["win_share"], r["system"]))
    return out


def position_table(pairs: list[tuple[dict, dict]]) -> dict:
    """How often the left / right argument was chosen (a position bias check)."""
    counts = Counter(data.get("choice") for _, data in pairs)
    n = sum(counts.values())
    return {
        "n": n,
        **{c: counts.get(c, 0) for c in CHOICES},
        **{f"{c}_share": (counts.get(c, 0) / n if n else None) for c in CHOICES},
    }


def agreement_cells(records: list[dict], payloads: dict[int, dict]) -> tuple[dict, dict, dict, dict]:
    """Reliability cells for persuasiveness (unit = item, value = winner system or "tie") and fluency (unit =
    (item, system), value = "fluent" / "not fluent"); both in system terms, so placement does not matter."""
    persuasion, fluency, p_units, f_units = {}, {}, {}, {}
    for r in records:
        payload = payloads.get(r["item_id"])
        if payload is None or not r.get("data"):
            continue
        j = judgement(payload, r["data"])
        persuasion[(r["coder"], r["item_id"])] = j["winner"]
        p_units[r["item_id"]] = r["item_id"]
        for system, ok in j["fluent"].items():
            fluency[(r["coder"], (r["item_id"], system))] = "fluent" if ok else "not fluent"
            f_units[(r["item_id"], system)] = r["item_id"]
    return persuasion, p_units, fluency, f_units


__all__ = [
    "CHOICES",
    "FIELDS",
    "SIDES",
    "TIE",
    "Invalid",
    "SwapRule",
    "aggregate",
    "agreement_cells",
    "assignment_slot",
    "clean_response",
    "item_coin",
    "judgement",
    "left_side",
    "position_table",
    "public_payload",
    "swapped",
    "swapped_at",
    "system_table",
]
