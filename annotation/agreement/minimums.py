"""How much data a figure needs before the dashboards and results pages show it without the mark "too few ratings".

Every figure on a dashboard or results page states its n (units, coders, items, responses, comparisons, ratings,
pairs: whatever the figure rests on). Below the minimum here the figure is still computed and shown -- the maths does
not change -- but it is marked **too few ratings**, with its n and the minimum in the tooltip, and a CSV / JSON
carries the same n so a reader can apply their own threshold. The minimums are conventions of this project, chosen so
that one more or one less rating cannot swing the figure by a large amount; the README's "Agreement" section lists
them too.

=========================  =====  ===========================================================================
figure                     min    n counted
=========================  =====  ===========================================================================
alpha / alpha_u, percent   10     pairable units (units with values from 2 or more coders); below 10 one
agreement, Cohen's kappa,         disagreement moves alpha by more than 0.1. Fleiss' kappa counts the units
Fleiss' kappa                     it uses (those with the most common number of ratings).
per-item agreement         3      responses to the item (the ValNov / BWS panels have 3-4; 2 responses give
                                  one pair, so the share is 0 or 1)
per-worker figures         5      LOO agreement: units the worker shares with others; gold accuracy: gold
                                  items answered; Dawid-Skene competence: units shared with other workers
                                  (none at all: "n/a (no overlap)" -- a worker nobody else overlaps with is
                                  their own majority, so any crowd model rates them ~1.0)
BWS split-half rho         10     pairs scored in both halves (per topic and overall)
BWS pair score             4      judgements that showed the pair (AugSBERT: each tuple by 4 workers)
pairwise win / tie / loss  10     comparisons of the system (and judgements for the fluency rate)
shares, fluency rate
Likert mean +- SD          5      ratings in the cell (debate trees: 5-10 reviewers per debate)
label distributions,       10     items counted (ValNov crowd labels, crowd-vs-imported agreement)
shares of items
suggestion acceptance      10     accept / reject decisions on model suggestions
=========================  =====  ===========================================================================
"""

from __future__ import annotations

TOO_FEW = "too few ratings"

MIN_UNITS = 10
MIN_ITEM_RESPONSES = 3
MIN_WORKER_UNITS = 5
MIN_SPLIT_HALF_PAIRS = 10
MIN_BWS_APPEARANCES = 4
MIN_COMPARISONS = 10
MIN_LIKERT_RATINGS = 5
MIN_ITEMS = 10
MIN_DECISIONS = 10

#: every minimum with what it counts (the README table and the pages' footnotes read it)
MINIMUMS = {
    "units": (MIN_UNITS, "pairable units (values from 2+ coders)"),
    "item_responses": (MIN_ITEM_RESPONSES, "responses to the item"),
    "worker_units": (MIN_WORKER_UNITS, "units / gold items of the worker"),
    "split_half_pairs": (MIN_SPLIT_HALF_PAIRS, "pairs scored in both halves"),
    "bws_appearances": (MIN_BWS_APPEARANCES, "judgements that showed the pair"),
    "comparisons": (MIN_COMPARISONS, "comparisons"),
    "likert_ratings": (MIN_LIKERT_RATINGS, "ratings"),
    "items": (MIN_ITEMS, "items"),
    "decisions": (MIN_DECISIONS, "decisions"),
}


def too_few(n, minimum: int) -> bool:
    """True when ``n`` (None = nothing counted) is below ``minimum``."""
    return n is None or int(n) < int(minimum)


def why(n, minimum: int, unit: str) -> str:
    """The tooltip of the mark: ``"too few ratings: 3 units (minimum 10)"``."""
    return f"{TOO_FEW}: {0 if n is None else int(n)} {unit} (minimum {int(minimum)})"


def mark(n, minimum: int, unit: str) -> dict:
    """``{"n", "min", "too_few", "why"}`` of one figure, what the templates show next to it."""
    return {
        "n": 0 if n is None else int(n),
        "min": int(minimum),
        "too_few": too_few(n, minimum),
        "why": why(n, minimum, unit),
    }
