"""Evaluation as in AugSBERT Table 5: Spearman's rho x 100 between predicted and gold scores on the test split,
in-topic and cross-topic, the Jaccard word-overlap baseline alongside, mean and standard deviation over seeds.

Per trained version the trainers store (``ModelVersion.metrics``)::

    {"dev": {"spearman": 61.2, "jaccard_spearman": 6.3, "n": 478},          # primary: dev spearman
     "test": {"spearman": 58.0, "jaccard_spearman": 5.5, "n": 451},
     "info": {"setting": "in-topic", "strategy": "bm25", "k": 3, "seed": 13, "n_silver": 9236, ...}}

:func:`table` groups versions into Table 5's rows (``BERT`` = cross-encoder, ``SBERT`` = bi-encoder on gold,
``AugSBERT-<strategy>``, and ``Baseline (Jaccard)``) x settings (in-topic, cross-topic), each cell
``{"mean", "std", "n", "values"}`` over the versions' seeds (std: sample standard deviation, 0 for one run).
:func:`run_table5` trains the whole grid through the registry (one version per model, setting and seed; the
AugSBERT runs of a seed reuse that seed's cross-encoder version).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence

from argora.progress import Progress, null_progress
from ml.versions import train_version

from .data import split_rows
from .models import score_rows
from .stats import spearman100

_WORD = re.compile(r"\w+", re.UNICODE)
SETTINGS = ("in-topic", "cross-topic")
MODEL_ORDER = (
    "Baseline (Jaccard)",
    "BERT",
    "SBERT",
    "AugSBERT-random",
    "AugSBERT-kde",
    "AugSBERT-bm25",
    "AugSBERT-semantic",
    "AugSBERT-bm25+semantic",
)


def tokens(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text or "")}


def jaccard(a: str, b: str) -> float:
    """Word-overlap baseline: |A & B| / |A | B| of the lower-cased word sets."""
    ta, tb = tokens(a), tokens(b)
    union = ta | tb
    return len(ta & tb) / len(union) if union else 0.0


def jaccard_spearman(rows: Sequence[dict]) -> float:
    return spearman100([jaccard(r["argument1"], r["argument2"]) for r in rows], [r["score"] for r in rows])


def metrics(pred: Sequence[float], rows: Sequence[dict]) -> dict:
    """``{"spearman", "jaccard_spearman", "n"}`` of predictions on rows (both x 100)."""
    return {
        "spearman": spearman100(pred, [r["score"] for r in rows]),
        "jaccard_spearman": jaccard_spearman(rows),
        "n": len(rows),
    }


def evaluate_model(model, rows: Sequence[dict], *, batch_size: int = 64) -> dict:
    if not rows:
        return {"spearman": 0.0, "jaccard_spearman": 0.0, "n": 0}
    return metrics(score_rows(model, rows, batch_size=batch_size).tolist(), rows)


# --- Table 5 ---------------------------------------------------------------------------------------


def model_label(kind: str, info: dict) -> str:
    if kind == "crossencoder":
        return "BERT"
    if kind == "biencoder":
        return "SBERT"
    if kind == "augsbert":
        mode = info.get("mode", "in-domain")
        label = f"AugSBERT-{info.get('strategy', '?')}"
        return label if mode == "in-domain" else f"{label} (domain adaptation)"
    return kind


def cell(values: Iterable[float]) -> dict:
    values = [float(v) for v in values if isinstance(v, (int, float))]
    if not values:
        return {"mean": None, "std": None, "n": 0, "values": []}
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": round(statistics.fmean(values), 2), "std": round(std, 2), "n": len(values), "values": values}


def table(versions: Iterable, *, part: str = "test") -> dict:
    """Table 5 from model versions (ready ones with ``metrics[part]``): ``{"settings": [...], "rows": [{"model",
    "cells": {setting: cell}}]}``; the Jaccard baseline row takes every version's ``jaccard_spearman`` per data
    set once. Rows are ordered as in the paper."""
    values: dict[str, dict[str, list[float]]] = {}
    baseline: dict[str, dict[str, float]] = {}
    settings_seen: list[str] = []
    for v in versions:
        m = getattr(v, "metrics", None) or {}
        res = m.get(part) or {}
        if "spearman" not in res:
            continue
        info = m.get("info") or {}
        setting = info.get("setting", "in-topic")
        if setting not in settings_seen:
            settings_seen.append(setting)
        label = model_label(v.kind, info)
        values.setdefault(label, {}).setdefault(setting, []).append(res["spearman"])
        if "jaccard_spearman" in res:
            baseline.setdefault(setting, {})[f"{v.data_hash}:{info.get('split_seed', '')}"] = res["jaccard_spearman"]
    settings = [s for s in SETTINGS if s in settings_seen] + [s for s in settings_seen if s not in SETTINGS]
    rows = []
    if baseline:
        rows.append({"model": "Baseline (Jaccard)", "cells": {s: cell(baseline.get(s, {}).values()) for s in settings}})
    order = {name: i for i, name in enumerate(MODEL_ORDER)}
    for label in sorted(values, key=lambda name: (order.get(name, len(order)), name)):
        rows.append({"model": label, "cells": {s: cell(values[label].get(s, [])) for s in settings}})
    return {"settings": settings, "part": part, "rows": rows}


def format_table(t: dict) -> str:
    """Plain-text Table 5 (``mean ± std``)."""
    head = ["Model"] + [f"BWS ({s})" for s in t["settings"]]
    lines = [" | ".join(head)]
    for row in t["rows"]:
        cells = []
        for s in t["settings"]:
            c = row["cells"].get(s) or {}
            cells.append("—" if c.get("mean") is None else f"{c['mean']:.2f} ± {c['std']:.2f}")
        lines.append(" | ".join([row["model"]] + cells))
    return "\n".join(lines)


def run_table5(
    rows: Sequence[dict],
    *,
    strategies: Sequence[str] = ("bm25",),
    seeds: Sequence[int] = (1, 2, 3),
    settings: Sequence[str] = SETTINGS,
    hyperparameters: dict | None = None,
    base_model: str | None = None,
    cross_topics: dict | None = None,
    split_seed: int = 0,
    project=None,
    seed_opt: int = 0,
    progress: Progress = null_progress,
) -> dict:
    """Train cross-encoder, bi-encoder and AugSBERT-<strategy> for every setting and seed through the registry
    (``hyperparameters`` go to every kind; ``seed_opt`` > 1 gives each run that many seeds to optimise over, as the
    paper's 5) and return ``{"table": table(versions), "versions": [ids]}``. The versions stay in the registry
    (their metrics are what the staff page shows)."""
    hp = dict(hyperparameters or {})
    versions = []
    plan = [(s, seed) for s in settings for seed in seeds]
    total = len(plan) * (2 + len(strategies))
    done = 0
    for setting, seed in plan:
        parts = split_rows(rows, setting, seed=split_seed, topics=cross_topics if setting == "cross-topic" else None)
        train_rows, dev_rows = parts["train"], parts["dev"] + parts["test"]
        snapshot = f"table5:{setting}:split{split_seed}"
        run_hp = dict(hp)
        if seed_opt and seed_opt > 1:
            run_hp["seeds"] = [seed * 100 + i for i in range(seed_opt)]
        made = {}
        for kind in ("crossencoder", "biencoder"):
            made[kind] = train_version(
                kind,
                rows_train=train_rows,
                rows_dev=dev_rows,
                project=project,
                base_model=base_model,
                seed=seed,
                hyperparameters=run_hp,
                data_snapshot=snapshot,
            )
            versions.append(made[kind])
            done += 1
            progress(done, total, f"{setting} seed {seed}: {kind}")
        for strategy in strategies:
            aug_hp = dict(run_hp, strategy=strategy, cross_encoder=f"version:{made['crossencoder'].pk}")
            if made["biencoder"] is not None:
                aug_hp["gold_bi_encoder"] = f"version:{made['biencoder'].pk}"
            v = train_version(
                "augsbert",
                rows_train=train_rows,
                rows_dev=dev_rows,
                project=project,
                base_model=base_model,
                seed=seed,
                hyperparameters=aug_hp,
                data_snapshot=snapshot,
            )
            versions.append(v)
            done += 1
            progress(done, total, f"{setting} seed {seed}: AugSBERT-{strategy}")
    return {"table": table(versions), "versions": [v.pk for v in versions]}
