"""Spearman's rho x 100, the figure of every similarity model (AugSBERT Table 5): its own module so that the models
(:mod:`ml.similarity.models`, dev selection) and the evaluation (:mod:`ml.similarity.evaluation`, which scores
through the models) share it without importing each other."""

from __future__ import annotations

import math
from collections.abc import Sequence


def spearman100(pred: Sequence[float], gold: Sequence[float]) -> float:
    """Spearman's rho x 100 (0.0 where undefined: fewer than 2 rows or a constant side)."""
    from scipy.stats import spearmanr  # scipy: a start-up cost

    pred, gold = list(map(float, pred)), list(map(float, gold))
    if len(pred) < 2 or len(set(pred)) < 2 or len(set(gold)) < 2:
        return 0.0
    rho = spearmanr(pred, gold).statistic
    return 0.0 if rho is None or math.isnan(rho) else round(float(rho) * 100, 4)
