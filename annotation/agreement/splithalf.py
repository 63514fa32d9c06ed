"""Split-half reliability of scores or rankings (AugSBERT sec. 4.1: BWS votes split in half per task, each half
scored on its own, Spearman between the two halves' scores, 25 random splits averaged).

Generic: the input is, per annotation unit (a HIT item, a BWS 4-tuple...), the list of ``(annotator, judgement)``;
``score_fn`` turns any collection of ``(unit, judgement)`` into ``{item: score}`` (BWS passes its counting scores;
:func:`mean_scores` covers plain ratings). For every repetition each unit's annotators are shuffled and split into
two halves (sizes floor(m/2) and ceil(m/2); the odd one goes to a random half), both halves are scored, and Spearman's
rho is taken over the items scored in both. Reported: ``rho`` = the mean raw split-half correlation over the
repetitions (what AugSBERT reports, 0.66 on their data); with ``spearman_brown=True`` also
``rho_spearman_brown`` = 2 rho / (1 + rho) applied to that mean, the estimate for the full (not halved) set of
annotators; ``reported`` names the one to quote.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .errors import AgreementError, AgreementUndefined

Judgements = Mapping[Hashable, Sequence[tuple[Hashable, Any]]]
ScoreFn = Callable[[list[tuple[Hashable, Any]]], Mapping[Hashable, float]]


def mean_scores(judgements: list[tuple[Hashable, Any]]) -> dict[Hashable, float]:
    """Score function for ratings: the unit is the item, the judgement a number; score = mean rating."""
    sums: dict[Hashable, list[float]] = defaultdict(lambda: [0.0, 0])
    for unit, value in judgements:
        s = sums[unit]
        s[0] += float(value)
        s[1] += 1
    return {u: s[0] / s[1] for u, s in sums.items()}


def spearman_brown(r: float, factor: float = 2.0) -> float:
    """Spearman-Brown prophecy: reliability of a test ``factor`` times as long (2 = from half to full)."""
    if not -1.0 <= r <= 1.0:
        raise AgreementError(f"a correlation must lie in [-1, 1], got {r}")
    denom = 1.0 + (factor - 1.0) * r
    if denom == 0:
        raise AgreementUndefined("Spearman-Brown is undefined for this correlation (1 + (k-1) r = 0)")
    return factor * r / denom


def split_half_reliability(
    judgements: Judgements,
    score_fn: ScoreFn = mean_scores,
    *,
    n_splits: int = 25,
    seed: int = 0,
    spearman_brown_correction: bool = False,
    min_items: int = 3,
) -> dict[str, Any]:
    """Mean split-half Spearman correlation over ``n_splits`` seeded random splits (see the module doc).

    Units with fewer than 2 judgements cannot be split and are skipped (counted in ``n_units_skipped``).
    A split whose halves share fewer than ``min_items`` scored items, or where one half's scores are constant,
    gives no correlation and is counted in ``n_splits_undefined``; if no split gives one,
    :class:`AgreementUndefined` is raised.
    """
    from scipy.stats import spearmanr

    if n_splits < 1:
        raise AgreementError(f"n_splits must be >= 1, got {n_splits}")
    units = []
    skipped = 0
    for unit, items in judgements.items():
        items = list(items)
        if len(items) < 2:
            skipped += 1
            continue
        units.append((unit, items))
    if not units:
        raise AgreementError("split-half needs units with at least 2 judgements; none has")
    rng = np.random.default_rng(seed)
    rhos: list[float] = []
    undefined = 0
    n_items: list[int] = []
    for _ in range(n_splits):
        half_a: list[tuple[Hashable, Any]] = []
        half_b: list[tuple[Hashable, Any]] = []
        for unit, items in units:
            perm = rng.permutation(len(items))
            k = len(items) // 2
            if len(items) % 2 and rng.random() < 0.5:
                k += 1
            half_a.extend((unit, items[i][1]) for i in perm[:k])
            half_b.extend((unit, items[i][1]) for i in perm[k:])
        sa, sb = score_fn(half_a), score_fn(half_b)
        common = [it for it in sa if it in sb]
        n_items.append(len(common))
        if len(common) < max(2, min_items):
            undefined += 1
            continue
        xa = np.array([sa[it] for it in common], dtype=np.float64)
        xb = np.array([sb[it] for it in common], dtype=np.float64)
        if np.ptp(xa) == 0 or np.ptp(xb) == 0:
            undefined += 1
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rho = float(spearmanr(xa, xb).statistic)
        if math.isnan(rho):
            undefined += 1
            continue
        rhos.append(rho)
    if not rhos:
        raise AgreementUndefined(
            f"split-half reliability is undefined: none of the {n_splits} splits gave a "
            f"correlation (too few common items or constant scores)"
        )
    mean_rho = float(np.mean(rhos))
    out: dict[str, Any] = {
        "rho": mean_rho,
        "rho_std": float(np.std(rhos)),
        "per_split": rhos,
        "n_splits": n_splits,
        "n_splits_undefined": undefined,
        "seed": seed,
        "n_units": len(units),
        "n_units_skipped": skipped,
        "n_items_mean": float(np.mean(n_items)),
        "reported": "rho",
        "method": "mean Spearman rho between random halves of each unit's annotators",
    }
    if spearman_brown_correction:
        out["rho_spearman_brown"] = spearman_brown(mean_rho)
        out["reported"] = "rho_spearman_brown"
        out["method"] += "; Spearman-Brown (k=2) applied to the mean rho"
    return out


def judgements_from_records(records: Iterable[tuple[Hashable, Hashable, Any]]) -> dict[Hashable, list]:
    """``(unit, annotator, judgement)`` rows -> the ``{unit: [(annotator, judgement), ...]}`` input."""
    out: dict[Hashable, list] = defaultdict(list)
    for unit, annotator, judgement in records:
        out[unit].append((annotator, judgement))
    return dict(out)
