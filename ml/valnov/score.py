"""The ValNov score (Heinisch et al. 2022, Eq. 3) and the per-dimension F1 scores.

Labels are binary: ``1`` (valid / novel) or ``0`` (not valid / not novel; the shared task's ``-1`` is read as 0).
Gold labels may be unknown (``None``, or a ``0.5`` novelty tie -- the training targets of :mod:`.data`): an instance whose gold
validity *or* novelty is unknown is left out of the four-class score, and out of the F1 of the unknown dimension.
Predictions are probabilities or labels; ``>= threshold`` (0.5) is positive.

``valnov`` = (F1(valid&novel) + F1(valid&not-novel) + F1(not-valid&novel) + F1(not-valid&not-novel)) / 4, each
class's F1 one-vs-rest over the four-class labels. ``validity_f1`` / ``novelty_f1`` are the macro F1 over the two
classes of that dimension (the paper's "Val" / "Nov"). A class with no gold and no predicted instance has F1 = 0
(as scikit-learn's ``f1_score(..., labels=[...], zero_division=0)``), so a constant predictor scores at most 1/4
of its class's F1.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Sequence

VALID_NOVEL, VALID_NOT_NOVEL = "valid&novel", "valid&not-novel"
NOT_VALID_NOVEL, NOT_VALID_NOT_NOVEL = "not-valid&novel", "not-valid&not-novel"
CLASSES = (VALID_NOVEL, VALID_NOT_NOVEL, NOT_VALID_NOVEL, NOT_VALID_NOT_NOVEL)
CLASS_OF = {(1, 1): VALID_NOVEL, (1, 0): VALID_NOT_NOVEL, (0, 1): NOT_VALID_NOVEL, (0, 0): NOT_VALID_NOT_NOVEL}
LABELS_OF = {name: pair for pair, name in CLASS_OF.items()}
PRIMARY = "valnov"


def gold_label(value) -> int | None:
    """A gold value as 1 / 0, or None when unknown: 1 / True -> 1; 0 / False / -1 -> 0; None, 0.5 or anything
    else -> None. (Shared-task labels: convert a tie ``0`` with :func:`annotation.task_types.validity_novelty.aggregation.target` first.)"""
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    if v == 1.0:
        return 1
    if v in (0.0, -1.0):
        return 0
    return None


def pred_label(value, threshold: float = 0.5) -> int:
    return int(float(value) >= threshold)


def class_of(validity: int, novelty: int) -> str:
    return CLASS_OF[(int(validity), int(novelty))]


def f1(tp: int, fp: int, fn: int) -> float:
    denominator = 2 * tp + fp + fn
    return (2 * tp / denominator) if denominator else 0.0


def _f1_per_class(gold: Sequence, pred: Sequence, classes: Iterable) -> dict:
    out = {}
    for c in classes:
        tp = sum(1 for g, p in zip(gold, pred) if g == c and p == c)
        fp = sum(1 for g, p in zip(gold, pred) if g != c and p == c)
        fn = sum(1 for g, p in zip(gold, pred) if g == c and p != c)
        out[c] = f1(tp, fp, fn)
    return out


def valnov_scores(
    gold_validity: Sequence,
    gold_novelty: Sequence,
    pred_validity: Sequence,
    pred_novelty: Sequence,
    *,
    threshold: float = 0.5,
) -> dict:
    """``{"valnov", "validity_f1", "novelty_f1", "f1": {class: F1}, "n", "n_validity", "n_novelty",
    "confusion": {gold class: {pred class: count}}}`` (see the module docstring)."""
    if not (len(gold_validity) == len(gold_novelty) == len(pred_validity) == len(pred_novelty)):
        raise ValueError("gold and predicted label lists must have the same length")
    gv = [gold_label(v) for v in gold_validity]
    gn = [gold_label(v) for v in gold_novelty]
    pv = [pred_label(v, threshold) for v in pred_validity]
    pn = [pred_label(v, threshold) for v in pred_novelty]
    both = [i for i in range(len(gv)) if gv[i] is not None and gn[i] is not None]
    gold_cls = [class_of(gv[i], gn[i]) for i in both]
    pred_cls = [class_of(pv[i], pn[i]) for i in both]
    per_class = _f1_per_class(gold_cls, pred_cls, CLASSES)
    confusion = {g: dict.fromkeys(CLASSES, 0) for g in CLASSES}
    for g, p in zip(gold_cls, pred_cls):
        confusion[g][p] += 1
    iv = [i for i in range(len(gv)) if gv[i] is not None]
    inov = [i for i in range(len(gn)) if gn[i] is not None]
    val = _f1_per_class([gv[i] for i in iv], [pv[i] for i in iv], (1, 0))
    nov = _f1_per_class([gn[i] for i in inov], [pn[i] for i in inov], (1, 0))
    return {
        PRIMARY: sum(per_class.values()) / len(CLASSES),
        "validity_f1": (val[1] + val[0]) / 2,
        "novelty_f1": (nov[1] + nov[0]) / 2,
        "validity_f1_valid": val[1],
        "novelty_f1_novel": nov[1],
        "f1": per_class,
        "n": len(both),
        "n_validity": len(iv),
        "n_novelty": len(inov),
        "confusion": confusion,
    }


def score_rows(rows: Sequence[dict], predictions: Sequence[tuple[float, float]], *, threshold: float = 0.5) -> dict:
    """:func:`valnov_scores` of training rows (``validity`` / ``novelty`` targets) and ``(p_val, p_nov)`` pairs."""
    return valnov_scores(
        [r.get("validity") for r in rows],
        [r.get("novelty") for r in rows],
        [p[0] for p in predictions],
        [p[1] for p in predictions],
        threshold=threshold,
    )


def majority_baseline(rows_train: Sequence[dict], rows_dev: Sequence[dict]) -> dict:
    """The scores of always predicting the most frequent training class (known labels only) on ``rows_dev``."""
    from collections import Counter

    counts = Counter()
    for r in rows_train:
        v, n = gold_label(r.get("validity")), gold_label(r.get("novelty"))
        if v is not None and n is not None:
            counts[(v, n)] += 1
    v, n = counts.most_common(1)[0][0] if counts else (1, 0)
    return score_rows(rows_dev, [(float(v), float(n))] * len(rows_dev))


def random_baseline(rows: Sequence[dict], *, draws: int = 20, seed: int = 0) -> dict:
    """The mean scores of uniformly random labels on ``rows`` over ``draws`` seeded draws (the paper's "random
    baseline", 24.5 ValNov on the shared task's test set): ``{"valnov", "validity_f1", "novelty_f1"}``."""
    rng = random.Random(f"valnov-random:{seed}")
    keys = (PRIMARY, "validity_f1", "novelty_f1")
    total = dict.fromkeys(keys, 0.0)
    for _ in range(max(1, draws)):
        scores = score_rows(rows, [(float(rng.random() < 0.5), float(rng.random() < 0.5)) for _ in rows])
        for k in keys:
            total[k] += scores[k]
    return {k: v / max(1, draws) for k, v in total.items()}


def calibrate_threshold(gold: Sequence, probs: Sequence[float], *, default: float = 0.5) -> float:
    """The decision threshold on ``probs`` that maximises the macro F1 of the two classes of one head against
    ``gold`` (1 / 0; unknown gold left out): candidates are the midpoints between consecutive distinct
    probabilities (and ``default``); of equally good ones the closest to ``default``. ``default`` when the gold has
    one class only or fewer than two known labels."""
    known = [(float(p), label) for p, label in zip(probs, (gold_label(g) for g in gold)) if label is not None]
    if len({label for _, label in known}) < 2:
        return float(default)
    values = sorted({p for p, _ in known})
    candidates = {float(default)} | {(a + b) / 2 for a, b in itertools.pairwise(values)}
    golds = [label for _, label in known]

    def macro(threshold: float) -> float:
        per = _f1_per_class(golds, [int(p >= threshold) for p, _ in known], (1, 0))
        return (per[1] + per[0]) / 2

    return max(sorted(candidates), key=lambda t: (round(macro(t), 12), -abs(t - default)))
