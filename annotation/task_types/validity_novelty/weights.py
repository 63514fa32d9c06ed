"""Instance weights from annotator agreement (ValNov paper, sec. 3.1 eq. 2 and sec. 4.1 "individual weighting").

The rule
--------
Each instance gets ``w = 1 + points(validity confidence) + points(novelty confidence)`` where the points of a
confidence word (see :mod:`annotation.task_types.validity_novelty.aggregation`) are

=================  ======  =========================================================
confidence         points  meaning (R = 3)
=================  ======  =========================================================
very confident     2       all annotators agree
confident          1       two agree, the third said "don't know"
majority           0.25    two agree, the third disagrees
defeasible         0       no majority (tie, or "don't know" wins): the label is 0
=================  ======  =========================================================

so ``w`` runs from **1** (no agreement on either dimension) to **5** (full agreement on both), the range the paper
gives for the task-internal data. The points are not linear in the vote share on purpose: an abstention ("don't
know") is no counter-evidence, so "confident" is worth four times a contested "majority". The rule reproduces the
paper's two worked examples (App. A.1): majority + majority -> 1.5 (Example 1), very confident + majority -> 3.25
(Example 2), and matches the authors' released loader. The possible weights are 1, 1.25, 1.5, 2, 2.25, 3, 3.25, 4
and 5. The weight multiplies the instance's loss (``L_i = w_i * (...)``, eq. 2).

The same rule weights imported shared-task rows (from their ``Validity-Confidence`` / ``Novelty-Confidence``
words) and crowd items (from the words :func:`annotation.task_types.validity_novelty.aggregation.aggregate_dimension` derives).
The words describe a whole panel of annotators (three in the paper); a crowd item with fewer responses than its
panel gets the lowest word any completion could give (see "Incomplete items" in
:mod:`annotation.task_types.validity_novelty.aggregation`), so one vote of three weighs 1, never 5.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from itertools import product

from .confidence import (
    CONFIDENCE_WORDS,
    CONFIDENT,
    DEFEASIBLE,
    MAJORITY,
    VERY_CONFIDENT,
)

CONFIDENCE_POINTS = {VERY_CONFIDENT: 2.0, CONFIDENT: 1.0, MAJORITY: 0.25, DEFEASIBLE: 0.0}
MIN_WEIGHT, MAX_WEIGHT = 1.0, 5.0
POSSIBLE_WEIGHTS = tuple(
    sorted({1.0 + CONFIDENCE_POINTS[a] + CONFIDENCE_POINTS[b] for a, b in product(CONFIDENCE_WORDS, repeat=2)})
)


def instance_weight(validity_confidence: str, novelty_confidence: str) -> float:
    """``1 + points(validity_confidence) + points(novelty_confidence)``, in [1, 5] (see the module docstring)."""
    try:
        return MIN_WEIGHT + CONFIDENCE_POINTS[validity_confidence] + CONFIDENCE_POINTS[novelty_confidence]
    except KeyError as exc:
        raise ValueError(
            f"unknown confidence word {exc.args[0]!r} (expected one of: {', '.join(CONFIDENCE_WORDS)})"
        ) from None


def weight_distribution(weights: Iterable[float]) -> list[dict]:
    """``[{"weight", "count", "share"}]`` over every possible weight (zeros included), lowest weight first."""
    counts = Counter(float(w) for w in weights)
    total = sum(counts.values())
    values = sorted(set(POSSIBLE_WEIGHTS) | set(counts))
    return [
        {"weight": w, "count": counts.get(w, 0), "share": (counts.get(w, 0) / total) if total else 0.0} for w in values
    ]
