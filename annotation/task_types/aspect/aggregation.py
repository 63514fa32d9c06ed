"""From R crowd responses (and expert decisions) to the aspects of a sentence.

Voting (:func:`aggregate_responses`): every response votes for the spans it selected (``begin``, ``length``).
A span is accepted when its votes reach the threshold ``t``; by default ``t`` is a strict majority of R,
``R // 2 + 1`` (R = the project's ``assignments_per_item``: with R = 8 a span needs 5 votes, with R = 4 it
needs 3, so 2 of 4 is *not* accepted). ``project.config["threshold"]`` sets ``t`` (a whole number of votes).

Ties and overlaps: accepted spans that overlap cannot all be aspects (App. A: aspects must not overlap).
Overlapping accepted spans are resolved greedily: more votes first; equal votes -> the shorter span (the
guidelines: "aspects should be as short as possible"), then the earlier one. The losers are listed under
``"dropped"``.

"No aspect": ``no_aspect`` is true when no span is accepted and the "no aspect" votes reach ``t``. When
neither spans nor "no aspect" reach ``t`` the item is ``"resolved": False`` (an expert should adjudicate).

Overrides (:func:`final_answer`), strongest first: an expert's adjudicated answer in
``Item.payload["adjudicated"]``, the GoldItem's expected answer, the crowd vote (when the item has
responses), the reference imported with the item (``payload["reference"]``).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable

from django.core.exceptions import ObjectDoesNotExist
from django.db import transaction

from annotation.models import Assignment, Item, Response
from annotation.selectors import unverified_q

from ..base import ResponseInvalid
from .candidates import parse_span, span_id


def default_threshold(r: int) -> int:
    """Strict majority of R."""
    return int(r) // 2 + 1


def project_threshold(project) -> int:
    t = (getattr(project, "config", None) or {}).get("threshold")
    if t is None:
        return default_threshold(getattr(project, "assignments_per_item", 1) or 1)
    return int(t)


def _spans(data: dict) -> list[tuple[int, int, str]]:
    out = []
    for a in (data or {}).get("aspects") or []:
        out.append((int(a["begin"]), int(a["length"]), str(a.get("text", ""))))
    return out


def aggregate_responses(responses: Iterable[dict], *, threshold: int, text: str | None = None) -> dict:
    """Vote over cleaned responses (``{"aspects": [{begin, length, text}], "no_aspect", "not_in_lists"}``)."""
    if threshold < 1:
        raise ValueError("threshold must be at least 1 vote")
    responses = list(responses)
    votes: Counter = Counter()
    texts: dict[tuple[int, int], str] = {}
    no_aspect = not_in_lists = 0
    for data in responses:
        seen = set()
        for begin, length, span_text in _spans(data):
            if (begin, length) in seen:
                continue
            seen.add((begin, length))
            votes[(begin, length)] += 1
            texts.setdefault((begin, length), text[begin : begin + length] if text is not None else span_text)
        no_aspect += bool((data or {}).get("no_aspect"))
        not_in_lists += bool((data or {}).get("not_in_lists"))
    accepted = [span for span, n in votes.items() if n >= threshold]
    accepted.sort(key=lambda s: (-votes[s], s[1], s[0]))
    kept: list[tuple[int, int]] = []
    dropped: list[tuple[int, int]] = []
    for begin, length in accepted:
        if any(begin < b + l and b < begin + length for b, l in kept):
            dropped.append((begin, length))
        else:
            kept.append((begin, length))
    kept.sort()
    is_none = not kept and no_aspect >= threshold
    return {
        "aspects": [{"begin": b, "length": l, "text": texts[(b, l)]} for b, l in kept],
        "no_aspect": is_none,
        "resolved": bool(kept) or is_none,
        "votes": {span_id(b, l): n for (b, l), n in sorted(votes.items())},
        "dropped": [span_id(b, l) for b, l in sorted(dropped)],
        "no_aspect_votes": no_aspect,
        "not_in_lists_votes": not_in_lists,
        "threshold": threshold,
        "n": len(responses),
        "source": "crowd",
    }


def _answer(aspects, no_aspect: bool, source: str, text: str) -> dict:
    spans = sorted((int(a["begin"]), int(a["length"])) for a in aspects or [])
    return {
        "aspects": [{"begin": b, "length": l, "text": text[b : b + l]} for b, l in spans],
        "no_aspect": bool(no_aspect) and not spans,
        "resolved": True,
        "source": source,
    }


def final_answer(project, item, responses: list[dict] | None = None) -> dict:
    """The aspects an item ends up with (see the module docstring for the order of precedence).

    ``responses``: cleaned response data of the item; read from the database when ``None``.
    """
    payload = item.payload or {}
    text = payload.get("text", "")
    adjudicated = payload.get("adjudicated")
    if isinstance(adjudicated, dict):
        return _answer(adjudicated.get("aspects"), adjudicated.get("no_aspect", False), "adjudicated", text)
    if item.pk is not None and getattr(item, "is_gold", False):
        try:
            gold = item.gold  # one query, or none when loaded with select_related("gold")
        except ObjectDoesNotExist:
            gold = None
        if gold is not None:
            expected = gold.expected or {}
            return _answer(expected.get("aspects"), expected.get("no_aspect", False), "gold", text)
    if responses is None:
        responses = item_responses(item)
    if responses:
        result = aggregate_responses(responses, threshold=project_threshold(project), text=text)
        return result
    reference = payload.get("reference")
    if isinstance(reference, dict):
        return _answer(reference.get("aspects"), reference.get("no_aspect", False), "reference", text)
    return {"aspects": [], "no_aspect": False, "resolved": False, "source": "none"}


def item_responses(item) -> list[dict]:
    """Cleaned response data of submitted / approved assignments of ``item``."""
    return list(
        Response.objects.filter(item=item, assignment__status__in=Assignment.DONE)
        .exclude(unverified_q("assignment__"))
        .order_by("id")
        .values_list("data", flat=True)
    )


def adjudicate(item, aspects: list, *, no_aspect: bool = False, by: str = "") -> dict:
    """Store an expert's final answer in ``item.payload["adjudicated"]`` (overrides the crowd vote).

    ``aspects``: spans as ``{"begin", "length"}`` / ``[begin, length]`` / ``"begin:length"``; they must lie
    inside the sentence and must not overlap (they need not be among the offered candidates).
    """
    text = (item.payload or {}).get("text", "")
    spans = []
    for i, raw in enumerate(aspects or []):
        span = parse_span(raw)
        if span is None:
            raise ResponseInvalid(f"aspects[{i}]", f"not a span: {raw!r}")
        begin, length = span
        if begin < 0 or length <= 0 or begin + length > len(text):
            raise ResponseInvalid(f"aspects[{i}]", f"{span_id(begin, length)} is outside the sentence")
        spans.append((begin, length))
    spans.sort()
    for (b1, l1), (b2, l2) in itertools.pairwise(spans):
        if b2 < b1 + l1:
            raise ResponseInvalid("aspects", f"{span_id(b1, l1)} and {span_id(b2, l2)} overlap")
    if no_aspect and spans:
        raise ResponseInvalid("no_aspect", "an answer with aspects cannot also be 'no aspect'")
    decided = {
        "aspects": [{"begin": b, "length": l, "text": text[b : b + l]} for b, l in spans],
        "no_aspect": bool(no_aspect),
        "by": str(by),
    }
    with transaction.atomic():
        locked = Item.objects.select_for_update().get(pk=item.pk)
        payload = dict(locked.payload or {})
        payload["adjudicated"] = decided
        locked.payload = payload
        locked.save(update_fields=["payload"])
    item.payload = payload
    return decided
