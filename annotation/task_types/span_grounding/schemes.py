"""Argument schemes (ArgU §3.1: Kondo et al.'s BASN idioms, from Walton's schemes) and multi-label aggregation.

The paper's label set is six Walton-based schemes plus "Others"; after annotation it merges the rare
"Goal From Means" into "Means for Goal" (:data:`MERGED`, applied by :func:`canonical` when a project asks for it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

WALTON_SCHEMES = [
    "Means for Goal",
    "Goal from Means",
    "From Consequence",
    "Source Knowledge",
    "Source Authority",
    "Rule or Principle",
]
OTHERS = "Others"
DEFAULT_SCHEMES = WALTON_SCHEMES + [OTHERS]
# ArgU §3.1.2: "we observe very few examples of the 'Goal From Means' scheme ... and combine it with the more
# prevalent 'Means for Goal' scheme, resulting in six argument schemes".
MERGED = {"Goal from Means": "Means for Goal"}


def canonical(name: str, *, merge_goal_from_means: bool = False) -> str:
    return MERGED.get(name, name) if merge_goal_from_means else name


def control_code(name: str) -> str:
    """``"From Consequence"`` -> ``"<from_consequence>"`` (the ArgU control-code spelling, Table 6)."""
    return "<" + "_".join(name.lower().split()) + ">"


def clean_scheme_list(schemes) -> list[str]:
    """A project's scheme list: non-empty, distinct, stripped strings; ``ValueError`` with the reason otherwise."""
    if not isinstance(schemes, list) or not schemes:
        raise ValueError("give a non-empty list of scheme names")
    cleaned = [str(s).strip() for s in schemes]
    if any(not s for s in cleaned):
        raise ValueError("scheme names must not be empty")
    if len({s.lower() for s in cleaned}) != len(cleaned):
        raise ValueError("scheme names must be distinct")
    return cleaned


def match_scheme(value: str, schemes: list[str]) -> str | None:
    """The configured spelling of ``value`` (case- and space-insensitive; control codes accepted), or None."""
    key = " ".join(str(value).replace("_", " ").strip("<> ").lower().split())
    for s in schemes:
        if " ".join(s.lower().split()) == key:
            return s
    return None


def aggregate_schemes(answers: Iterable[list[str]], schemes: list[str], *, threshold: int | None = None) -> dict:
    """Multi-label majority: each scheme chosen by at least ``threshold`` of the ``n`` answers (default a strict
    majority, ``n // 2 + 1``) is kept, in the configured order. An empty list means "no scheme".

    Returns ``{"schemes": [...], "counts": {name: votes}, "n": n, "top": name | None}`` (``top``: the most chosen
    scheme, ties by configured order: the single-label view the generator's control code needs).
    """
    answers = [list(a) for a in answers]
    n = len(answers)
    counts = Counter(s for a in answers for s in set(a))
    need = threshold if threshold is not None else n // 2 + 1
    order = {s: i for i, s in enumerate(schemes)}
    kept = [s for s in schemes if n and counts.get(s, 0) >= need]
    kept += sorted(s for s in counts if s not in order and counts[s] >= need and n)
    top = None
    if counts:
        top = min(counts, key=lambda s: (-counts[s], order.get(s, len(order)), s))
    return {
        "schemes": kept,
        "counts": {s: counts[s] for s in sorted(counts, key=lambda s: order.get(s, len(order)))},
        "n": n,
        "top": top,
    }
