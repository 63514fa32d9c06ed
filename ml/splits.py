"""How training rows are split: the test rows apart (never trained or selected on), a stable train / dev split by a
hash of a group key, and the hash of a data snapshot.

Used by the trainers' row readers (``rows_from_file`` / ``rows_from_project``), the retrain loop (:mod:`ml.loop`)
and the training runs (:mod:`ml.versions`); no Django, no model: importing it is free.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any


def data_hash(rows_train: Iterable[dict], rows_dev: Iterable[dict], rows_test: Iterable[dict] = ()) -> str:
    """sha256 of the canonical JSON lines of the rows (sorted keys), train then dev (then test, when any)."""
    h = hashlib.sha256()
    rows_test = list(rows_test)
    parts = (("train", rows_train), ("dev", rows_dev)) + ((("test", rows_test),) if rows_test else ())
    for part, rows in parts:
        h.update(f"#{part}\n".encode())
        for row in rows:
            h.update(json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str).encode())
            h.update(b"\n")
    return h.hexdigest()


def is_test(row: dict) -> bool:
    """A row marked for the test split (never trained or selected on)."""
    return isinstance(row, dict) and row.get("split") == "test"


def split_test(rows: Iterable[dict]) -> tuple[list[dict], list[dict]]:
    """``(rows not marked test, rows marked split "test")``, order kept."""
    rows = list(rows)
    return [r for r in rows if not is_test(r)], [r for r in rows if is_test(r)]


def untagged(rows: Iterable[dict]) -> list[dict]:
    """The rows without their ``split`` key: what ``spec.evaluate`` gets, so a kind's evaluate that keeps to its
    dev rows (``split_eval``) scores every row it is handed."""
    return [{k: v for k, v in r.items() if k != "split"} if "split" in r else r for r in rows]


def stable_split(
    rows: Sequence[dict],
    *,
    key: str | Callable[[dict], Any] = "sentence",
    dev_fraction: float = 0.2,
    salt: str = "argora-dev",
) -> tuple[list[dict], list[dict]]:
    """Split rows into (train, dev) by a hash of a group key (all rows of one sentence land on the same side).

    The side of a group depends only on its key, so the dev split of a growing project keeps its old members:
    successive versions of the retrain loop are compared on overlapping dev sets. If the hash puts every group on
    one side, the last group (in order) goes to the other so that both sides are non-empty when there are >= 2.
    """
    keyfn = key if callable(key) else (lambda row: row.get(key))
    groups: OrderedDict[str, list[dict]] = OrderedDict()
    for row in rows:
        groups.setdefault(json.dumps(keyfn(row), sort_keys=True, default=str), []).append(row)
    dev_keys = set()
    for g in groups:
        digest = hashlib.sha256(f"{salt}:{g}".encode()).digest()
        if int.from_bytes(digest[:8], "big") / 2**64 < dev_fraction:
            dev_keys.add(g)
    names = list(groups)
    if len(names) >= 2 and dev_fraction > 0:
        if not dev_keys:
            dev_keys.add(names[-1])
        elif len(dev_keys) == len(names):
            dev_keys.discard(names[-1])
    train = [r for g in names if g not in dev_keys for r in groups[g]]
    dev = [r for g in names if g in dev_keys for r in groups[g]]
    return train, dev
