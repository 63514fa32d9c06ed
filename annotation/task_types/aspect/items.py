"""The payload of an aspect item (Arg-CTRL §3.1 Step 2b-3, App. A): the ranked first list, the second list, the
tokens free spans snap to, the arithmetic check, and the gold instruction. Used by the task type, the App. F import
(:mod:`.appf`) and the ranker loop."""

from __future__ import annotations

import hashlib
import random

from annotation.models import GoldItem
from corpus.tokens import token_offsets

from .candidates import candidates as make_candidates
from .candidates import span_id
from .rankers import get_active_ranker, rank

DEFAULT_TOP_K = 10
DEFAULT_TOP_K_CROSS_TOPIC = 15
STUDIES = ("in-topic", "cross-topic")


def arithmetic_check(text: str) -> dict:
    """A small sum, fixed per sentence text (so a rebuilt item asks the same question)."""
    rng = random.Random(int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:12], 16))
    a, b = rng.randint(1, 9), rng.randint(1, 9)
    return {"a": a, "b": b, "question": f"{a} + {b}"}


def ranker_topics(ranker) -> set[str] | None:
    """The (lower-cased) topics a trained ranker was trained on, from its registry version
    (``metrics["info"]["train_topics"]``); ``None`` when unknown (the baseline, or a version that recorded none)."""
    version = getattr(ranker, "version", None)
    info = ((getattr(version, "metrics", None) or {}).get("info") or {}) if version is not None else {}
    topics = info.get("train_topics")
    if not isinstance(topics, list) or not topics:  # none recorded (e.g. label rows without topics): unknown
        return None
    return {str(t).strip().lower() for t in topics}


def top_k_for(config: dict | None, ranker, topic: str) -> int:
    """Size of the first list for a sentence of ``topic`` (see the module docstring): ``top_k`` when the ranker
    saw the topic in training, ``top_k_cross_topic`` when it did not; without known training topics,
    ``config["study"] == "cross-topic"`` picks ``top_k_cross_topic``, else ``top_k``."""
    config = config or {}
    in_topic = int(config.get("top_k", DEFAULT_TOP_K))
    cross_topic = int(config.get("top_k_cross_topic", DEFAULT_TOP_K_CROSS_TOPIC))
    topics = ranker_topics(ranker)
    if topics is not None:
        return in_topic if (topic or "").strip().lower() in topics else cross_topic
    return cross_topic if config.get("study") == "cross-topic" else in_topic


def build_payload(
    text: str,
    topic: str,
    *,
    stance: str = "none",
    sentence_id: int | None = None,
    ranker=None,
    top_k: int | None = None,
    extra: list[tuple[int, int]] = (),
    project=None,
) -> dict:
    """The payload of one sentence: ranked first list (top-k), second list (the rest, sentence order).

    ``top_k``: the first list's size; ``None`` = :func:`top_k_for` (the project's config and the ranker).
    ``extra``: spans that must be offered even if the filters drop them (e.g. an imported gold aspect with
    a stopword at its edge); they go to the second list unless already offered.
    """
    ranker = ranker or get_active_ranker(project)
    if top_k is None:
        top_k = top_k_for(getattr(project, "config", None), ranker, topic)
    cands = make_candidates(text)
    ranked = rank(ranker, text, topic, cands)
    first = ranked[:top_k]
    first_ids = {c.id for c, _ in first}
    more = [c.as_dict() for c in cands if c.id not in first_ids]
    offered = first_ids | {c["id"] for c in more}
    for begin, length in extra:
        if span_id(begin, length) not in offered and 0 <= begin and length > 0 and begin + length <= len(text):
            more.append(
                {"id": span_id(begin, length), "begin": begin, "length": length, "text": text[begin : begin + length]}
            )
            offered.add(span_id(begin, length))
    more.sort(key=lambda c: (c["begin"], c["length"]))
    return {
        "sentence_id": sentence_id,
        "text": text,
        "topic": topic,
        "stance": stance,
        "candidates": [dict(c.as_dict(), score=round(s, 6)) for c, s in first],
        "more": more,
        "tokens": token_offsets(text),
        "check": arithmetic_check(text),
        "ranker": getattr(ranker, "name", type(ranker).__name__),
    }


def gold_instruction(expected: dict | None, text: str = "") -> str:
    """What a gold item asks (App. A's quality checks): ``Select 'kill birds' as the aspect of this sentence.``,
    ``Select 'clean' and 'expensive' as the aspects of this sentence.``, or, for "no aspect", ``Tick "No aspect in
    the sentence" for this sentence.``; ``""`` for an expected answer it cannot phrase."""
    expected = expected or {}
    spans = []
    for a in expected.get("aspects") or []:
        if not isinstance(a, dict):
            continue
        phrase = a.get("text")
        if not phrase and text and isinstance(a.get("begin"), int) and isinstance(a.get("length"), int):
            phrase = text[a["begin"] : a["begin"] + a["length"]]
        if phrase:
            spans.append((int(a.get("begin", 0)), str(phrase)))
    if not spans:
        return 'Tick "No aspect in the sentence" for this sentence.' if expected.get("no_aspect") else ""
    phrases = [f"'{p}'" for _, p in sorted(spans)]
    listed = phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]
    noun = "the aspect" if len(phrases) == 1 else "the aspects"
    return f"Select {listed} as {noun} of this sentence."


def gold_instructions_on(project) -> bool:
    return (getattr(project, "config", None) or {}).get("gold_instructions", True) is not False


def item_instruction(project, item) -> str:
    """The instruction shown with ``item``: ``payload["instruction"]`` when the key is there (``""`` = none), else
    for a gold item the one phrased from its ``GoldItem.expected`` (unless ``config["gold_instructions"]`` is
    false); ``""`` for an ordinary item."""
    payload = item.payload or {}
    if "instruction" in payload:
        return str(payload.get("instruction") or "")
    if not getattr(item, "is_gold", False) or not gold_instructions_on(project):
        return ""

    try:
        expected = item.gold.expected
    except GoldItem.DoesNotExist:
        return ""
    return gold_instruction(expected, payload.get("text", ""))
