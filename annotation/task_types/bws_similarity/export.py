"""JSONL rows of the BWS argument similarity dataset and its two splits (AugSBERT sec. 4.1).

Row: ``{"pair_id", "topic", "argument1", "argument2", "score", "best", "worst", "appearances"}`` (score in
[0, 1], the counting score; the counts it came from), rows sorted by topic then pair id.

* cross-topic: fixed topics -- 5 for train, 1 for dev, 2 for test (named in the project config, ``splits``:
  ``{"train": [...], "dev": [...], "test": [...]}``); every exported topic must be named in exactly one part.
* in-topic: every topic's pairs shuffled (seeded) and cut in the paper's in-topic proportions (2471 / 478 / 451 of
  3400 for train / dev / test), so every part has about the same share of each topic.

:func:`write_files` writes the unsplit file and/or the three split files (``manage.py bws export``; the release
kind ``bws`` in :mod:`annotation.exporters` uses the same :func:`cross_topic` / :func:`in_topic`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path

from argora.jsonl import write_jsonl
from corpus.releases import check_export_args

SPLITS = ("train", "dev", "test")
IN_TOPIC_SIZES = (2471, 478, 451)
CROSS_TOPIC_SIZES = {"train": 5, "dev": 1, "test": 2}


def rows(scores: dict, pairs: dict) -> list[dict]:
    """``scores`` from :func:`.scoring.counting_scores`; ``pairs`` ``{pair_id: {"topic", "a", "b"}}``."""
    out = []
    for pid, s in scores.items():
        pair = pairs.get(pid) or {}
        out.append(
            {
                "pair_id": str(pid),
                "topic": pair.get("topic", s.get("topic", "")),
                "argument1": pair.get("a", ""),
                "argument2": pair.get("b", ""),
                "score": round(float(s["score"]), 6),
                "best": int(s["best"]),
                "worst": int(s["worst"]),
                "appearances": int(s["appearances"]),
            }
        )
    return sorted(out, key=lambda r: (r["topic"], r["pair_id"]))


def check_cross_topic(splits: dict, *, strict_sizes: bool = False) -> dict:
    """Validate ``{"train": [...], "dev": [...], "test": [...]}`` (disjoint, non-empty lists of topic names);
    ``strict_sizes`` also asks for the paper's 5 / 1 / 2 topics. Raises ``ValueError`` naming the key."""
    if not isinstance(splits, dict):
        raise ValueError('splits: expected {"train": [...], "dev": [...], "test": [...]}')
    unknown = set(splits) - set(SPLITS)
    if unknown:
        raise ValueError(f"splits.{sorted(unknown)[0]}: unknown part (expected train, dev, test)")
    seen: dict[str, str] = {}
    out = {}
    for part in SPLITS:
        topics = splits.get(part)
        if not isinstance(topics, list) or not topics or not all(isinstance(t, str) and t.strip() for t in topics):
            raise ValueError(f"splits.{part}: a non-empty list of topic names")
        if strict_sizes and len(topics) != CROSS_TOPIC_SIZES[part]:
            raise ValueError(f"splits.{part}: the paper's split has {CROSS_TOPIC_SIZES[part]} topic(s) here")
        for t in topics:
            if t.strip().lower() in seen:
                raise ValueError(f"splits.{part}: topic {t!r} is already in {seen[t.strip().lower()]}")
            seen[t.strip().lower()] = part
        out[part] = [t.strip() for t in topics]
    return out


def cross_topic(rows_: Iterable[dict], splits: dict) -> dict[str, list[dict]]:
    splits = check_cross_topic(splits)
    part_of = {t.lower(): part for part, topics in splits.items() for t in topics}
    out: dict[str, list[dict]] = {part: [] for part in SPLITS}
    for row in rows_:
        part = part_of.get(str(row["topic"]).lower())
        if part is None:
            raise ValueError(f"splits: topic {row['topic']!r} is in none of train, dev, test")
        out[part].append(row)
    return out


def in_topic(rows_: Iterable[dict], *, seed: int = 0, sizes: tuple[int, int, int] = IN_TOPIC_SIZES) -> dict:
    by_topic: dict[str, list[dict]] = {}
    for row in rows_:
        by_topic.setdefault(row["topic"], []).append(row)
    total = sum(sizes)
    out: dict[str, list[dict]] = {part: [] for part in SPLITS}
    for topic in sorted(by_topic):
        group = sorted(by_topic[topic], key=lambda r: r["pair_id"])
        random.Random(f"{seed}:{topic}").shuffle(group)
        n = len(group)
        n_dev = round(n * sizes[1] / total)
        n_test = round(n * sizes[2] / total)
        n_train = n - n_dev - n_test
        out["train"] += group[:n_train]
        out["dev"] += group[n_train : n_train + n_dev]
        out["test"] += group[n_train + n_dev :]
    for part in SPLITS:
        out[part].sort(key=lambda r: (r["topic"], r["pair_id"]))
    return out


def write_files(
    rows_: list[dict], out=None, *, split: str | None = None, out_dir=None, splits: dict | None = None, seed: int = 0
) -> dict[str, int]:
    """Write ``rows_`` to ``out`` (unsplit) and/or, with ``split``, to ``out_dir``/train|dev|test.jsonl
    (``splits``: the cross-topic topics). Every check runs before anything is written (``ValueError``). Returns
    rows per written path."""
    problem = check_export_args(out, split, out_dir, file_name="bws.jsonl")
    if problem:
        raise ValueError(problem)
    rows_ = list(rows_)
    parts = None
    if split == "cross-topic":
        if not splits:
            raise ValueError(
                "splits: name the train / dev / test topics (--train/--dev/--test, or the project's config.splits)"
            )
        parts = cross_topic(rows_, splits)
    elif split == "in-topic":
        parts = in_topic(rows_, seed=seed)
    written: dict[str, int] = {}
    if out is not None:
        written[str(out)] = write_jsonl(rows_, out)
    if parts is not None:
        for part in SPLITS:
            path = Path(out_dir) / f"{part}.jsonl"
            written[str(path)] = write_jsonl(parts[part], path)
    return written
