"""Values as a person reads them on staff pages: numbers with thousands separators and 3 decimals, metric and key
names in words, a job's progress as one line and its result as label/value rows (never a JSON dump)."""

from __future__ import annotations

import math
import re
from typing import Any

# whole keys with a better name than their words
NAMES = {
    "acc": "accuracy",
    "n_train": "train rows",
    "n_dev": "dev rows",
    "n_test": "test rows",
    "ppl": "perplexity",
    "release_id": "release",
    "primary": "primary value",
    "primary_metric": "primary metric",
}
# words written as acronyms (or in their usual spelling) wherever they appear in a key
WORDS = {
    "f1": "F1",
    "ndcg": "nDCG",
    "map": "MAP",
    "mrr": "MRR",
    "auc": "AUC",
    "roc": "ROC",
    "bleu": "BLEU",
    "rouge": "ROUGE",
    "rougel": "ROUGE-L",
    "rouge_l": "ROUGE-L",
    "meteor": "METEOR",
    "mse": "MSE",
    "mae": "MAE",
    "rmse": "RMSE",
    "bm25": "BM25",
    "kde": "KDE",
    "id": "id",
    "ids": "ids",
    "url": "URL",
    "sha256": "SHA-256",
    "bio": "BIO",
    "kb": "KB",
    "bws": "BWS",
    "lr": "learning rate",
    "acc": "accuracy",
}
SPLIT = re.compile(r"[_\s]+")
HEX_DIGEST = re.compile(r"^[0-9a-f]{32,}$")
MAX_LIST = 8


def number(value: float | int) -> str:
    """``6000 -> "6,000"``, ``0.22424242 -> "0.224"``, ``1234.5678 -> "1,234.568"``, ``0.0000123 -> "1.23e-05"``
    (3 decimals; 3 significant digits for what 3 decimals would show as 0)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if value == 0:
        return "0"
    if abs(value) < 0.0005:
        return f"{value:.3g}"
    text = f"{value:,.3f}"
    return text.rstrip("0").rstrip(".") if value.is_integer() else text


def words(key: Any) -> str:
    """A key or metric name in words, as it reads inside a sentence: ``"n_train" -> "train rows"``,
    ``"f1_macro" -> "F1 macro"``, ``"ndcg@5" -> "nDCG@5"``, ``"debate_nodes" -> "debate nodes"``."""
    key = str(key)
    lowered = key.lower()
    if lowered in NAMES:
        return NAMES[lowered]
    if lowered in WORDS:
        return WORDS[lowered]
    out = []
    for word in SPLIT.split(key.strip()):
        stem, at, k = word.partition("@")
        if word:
            out.append(WORDS.get(stem.lower(), stem) + at + k)
    return " ".join(out) or key


def label(key: Any) -> str:
    """:func:`words` as a heading: ``"n_train" -> "Train rows"``, ``"rouge_l" -> "ROUGE-L"``."""
    text = words(key)
    return text[0].upper() + text[1:] if text[:1].islower() and not text.startswith("nDCG") else text


def value_text(value: Any) -> str:
    """One value as text: numbers via :func:`number`; a flat dict as ``"6,000 sentences · 3 topics"``; a list as
    its first items; a long hex digest shortened; ``None`` as a dash."""
    if value is None or value == "":
        return "—"
    if isinstance(value, (bool, int, float)):
        return number(value)
    if isinstance(value, str):
        return value[:12] + "…" if HEX_DIGEST.match(value) else value
    if isinstance(value, dict):
        if not value:
            return "none"
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value.values()):  # counts: the non-zero
            return " · ".join(f"{number(v)} {words(k)}" for k, v in value.items() if v) or "none"
        return " · ".join(f"{words(k)}: {value_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        if not value:
            return "none"
        if all(isinstance(v, dict) for v in value):
            return f"{len(value):,} {'entry' if len(value) == 1 else 'entries'}"
        shown = ", ".join(value_text(v) for v in value[:MAX_LIST])
        return shown + (f" and {len(value) - MAX_LIST:,} more" if len(value) > MAX_LIST else "")
    return str(value)


def summary(result: Any, *, skip: tuple[str, ...] = (), depth: int = 3) -> list[tuple[str, str]]:
    """A task's result as ``(label, text)`` rows for a ``<dl>``: one row per key of a dict (keys in ``skip`` left
    out); a nested dict of counts stays one row (``"3 topics · 6,000 sentences"``), any other nested dict gives a
    row per key, labelled with the path (``"Metrics · dev · accuracy"``), ``depth`` levels deep; any other result
    is one row."""
    if result is None:
        return []
    if not isinstance(result, dict):
        return [("Result", value_text(result))]
    rows: list[tuple[str, str]] = []

    def walk(prefix: str, value: Any, level: int) -> None:
        counts = isinstance(value, dict) and all(isinstance(v, int) and not isinstance(v, bool) for v in value.values())
        if isinstance(value, dict) and value and not counts and level < depth:
            for k, v in value.items():
                walk(f"{prefix} · {words(k)}", v, level + 1)
        else:
            rows.append((prefix, value_text(value)))

    for key, value in result.items():
        if key in skip:
            continue
        if isinstance(value, dict):
            walk(label(key), value, 1)
        else:
            rows.append((label(key), value_text(value)))
    return rows


def progress_text(progress: dict | None) -> str:
    """``{"done": 412, "total": 1000, "description": "importing"}`` -> ``"412 of 1,000 (41%) — importing"``;
    without a total ``"412 so far — importing"``."""
    if not progress:
        return ""
    done, total = progress.get("done"), progress.get("total")
    description = str(progress.get("description") or "")
    parts = ""
    if isinstance(done, (int, float)) and isinstance(total, (int, float)) and total:
        percent = progress.get("percent")
        if not isinstance(percent, (int, float)):
            percent = 100.0 * done / total
        parts = f"{number(int(done))} of {number(int(total))} ({percent:.0f}%)"
    elif isinstance(done, (int, float)):
        parts = f"{number(int(done))} so far"
    elif isinstance(progress.get("percent"), (int, float)):
        parts = f"{progress['percent']:.0f}%"
    return " — ".join(p for p in (parts, description) if p)
