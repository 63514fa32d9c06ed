"""The confidence words of a validity / novelty aggregate (ValNov 2022, Heinisch et al.: "very confident",
"confident", "majority", "defeasible"), most to least agreement.

A leaf module: :mod:`.aggregation` derives the words from an item's votes and :mod:`.weights` turns them into an
instance weight; both read them here, so neither imports the other's constants.
"""

from __future__ import annotations

VERY_CONFIDENT, CONFIDENT, MAJORITY, DEFEASIBLE = "very confident", "confident", "majority", "defeasible"
CONFIDENCE_WORDS = (VERY_CONFIDENT, CONFIDENT, MAJORITY, DEFEASIBLE)  # most to least agreement
