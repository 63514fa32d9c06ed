"""Aggregating yes / no / don't-know votes per dimension, as in the ValNov paper (Heinisch et al. 2022, sec. 4.1).

Every response rates two dimensions of a conclusion given its premise: ``validity`` and ``novelty``, each ``"yes"``,
``"no"`` or ``"dont_know"``. Per dimension the votes are counted and:

* the **label** is the majority: the choice with strictly more votes than each other choice. ``yes`` -> ``1``,
  ``no`` -> ``-1``. A tie at the top, or a majority of "don't know", gives ``0`` (the shared task's "tie / unknown").
* the **training target** follows the paper: validity ``1 -> 1.0``, ``-1 -> 0.0``, ``0 -> None`` (unknown: the
  validity loss is not computed); novelty ``1 -> 1.0``, ``-1 -> 0.0``, ``0 -> 0.5`` ("a tie in novelty as 1/2, since
  the conclusion seems to contain degrees of novelty").
* the **confidence word** is the one of the shared-task data description (written for R = 3, generalised to any R):

  ================ ======================================================= ===================
  word             votes                                                   R = 3 example
  ================ ======================================================= ===================
  very confident   every vote is the majority choice (unanimous yes / no)  yes, yes, yes
  confident        a yes / no majority and nobody voted the opposite;      yes, yes, don't know
                   the rest said "don't know"
  majority         a yes / no majority and at least one opposite vote      yes, yes, no
  defeasible       no majority: a tie at the top or "don't know" wins       yes, no, don't know;
                   (label 0)                                               dk, dk, yes; dk, dk, dk
  ================ ======================================================= ===================

  No votes at all: label 0, ``defeasible``, ``n = 0``.

Incomplete items (ValNov §4.1: the words and the instance weights come from the agreement of *three* annotators).
The words above describe a complete panel. A project passes ``expected`` = :func:`expected_votes` (its R, and at
least :data:`MIN_CONFIDENCE_VOTES` = 3, the paper's panel); an item with fewer votes than that is **incomplete**
(``complete: False``) and gets only what every completion of its missing votes would agree on: the label when all
completions give the same label (else 0), and the *lowest* confidence word over those completions (else
``defeasible``). So one "yes" out of R = 3 is label 0 / defeasible (the other two could both say "no"), two "yes"
out of 3 are label 1 / majority (the third could say "no"), never "very confident"; the instance weight follows the
words. Incomplete aggregates never replace an imported label in the export
(:func:`annotation.task_types.validity_novelty.results.export_records`). Without ``expected`` the votes given are
taken as the whole panel (the plain rule above, for files and tests).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from .confidence import CONFIDENT, DEFEASIBLE, MAJORITY, VERY_CONFIDENT
from .weights import instance_weight

YES, NO, DONT_KNOW = "yes", "no", "dont_know"
CHOICES = (YES, NO, DONT_KNOW)
CHOICE_TEXT = {YES: "yes", NO: "no", DONT_KNOW: "don't know"}
DIMENSIONS = ("validity", "novelty")


LABELS = (1, -1, 0)  # the shared task's labels: 1 yes, -1 no, 0 tie / unknown
# the smallest panel whose unanimity is "very confident": the three annotators of the shared-task data (ValNov §4.1)
MIN_CONFIDENCE_VOTES = 3
_RANK = {DEFEASIBLE: 0, MAJORITY: 1, CONFIDENT: 2, VERY_CONFIDENT: 3}
LABEL_OF_CHOICE = {YES: 1, NO: -1}
CHOICE_OF_LABEL = {1: YES, -1: NO}


@dataclass(frozen=True)
class DimensionResult:
    """The aggregate of one dimension of one item."""

    label: int  # 1, -1 or 0
    confidence: str  # one of CONFIDENCE_WORDS
    target: float | None  # the training target (see :func:`target`)
    counts: dict  # {"yes": n, "no": n, "dont_know": n}
    n: int  # votes counted
    expected: int = 0  # votes a complete panel has (0: the votes given are the panel)
    complete: bool = True  # n >= expected: the words are final; else the guaranteed lower bound

    def as_dict(self) -> dict:
        return asdict(self)


def target(dimension: str, label: int) -> float | None:
    """The paper's regression target of a label: 1 -> 1.0, -1 -> 0.0; 0 -> None (validity) or 0.5 (novelty)."""
    if dimension not in DIMENSIONS:
        raise ValueError(f"unknown dimension {dimension!r} (expected validity or novelty)")
    if label == 1:
        return 1.0
    if label == -1:
        return 0.0
    if label == 0:
        return None if dimension == "validity" else 0.5
    raise ValueError(f"label must be 1, -1 or 0, got {label!r}")


def count_votes(votes: Iterable[str | None]) -> dict[str, int]:
    """``{"yes", "no", "dont_know"}`` counts; ``None`` / empty votes are skipped, anything else is a ValueError."""
    counts = Counter()
    for vote in votes:
        if vote is None or vote == "":
            continue
        if vote not in CHOICES:
            raise ValueError(f"a vote must be one of {', '.join(CHOICES)}, got {vote!r}")
        counts[vote] += 1
    return {choice: counts[choice] for choice in CHOICES}


def expected_votes(project) -> int:
    """Votes a complete panel of ``project`` has: its R (``assignments_per_item``), at least
    :data:`MIN_CONFIDENCE_VOTES`."""
    return max(int(getattr(project, "assignments_per_item", 0) or 0), MIN_CONFIDENCE_VOTES)


def _label_and_word(counts: dict[str, int]) -> tuple[int, str]:
    n = sum(counts.values())
    top = max(counts.values()) if n else 0
    leaders = [c for c in CHOICES if counts[c] == top] if n else []
    if len(leaders) == 1 and leaders[0] in LABEL_OF_CHOICE:
        winner = leaders[0]
        opposite = counts[NO if winner == YES else YES]
        if counts[winner] == n:
            return LABEL_OF_CHOICE[winner], VERY_CONFIDENT
        return LABEL_OF_CHOICE[winner], CONFIDENT if opposite == 0 else MAJORITY
    return 0, DEFEASIBLE


def _guaranteed(counts: dict[str, int], missing: int) -> tuple[int, str]:
    """The label every completion of ``missing`` further votes agrees on (else 0) and the lowest word among them."""
    outcomes = set()
    for a in range(missing + 1):
        for b in range(missing + 1 - a):
            c = missing - a - b
            outcomes.add(_label_and_word({YES: counts[YES] + a, NO: counts[NO] + b, DONT_KNOW: counts[DONT_KNOW] + c}))
    labels = {label for label, _ in outcomes}
    if len(labels) != 1:
        return 0, DEFEASIBLE
    return labels.pop(), min((word for _, word in outcomes), key=_RANK.__getitem__)


def aggregate_dimension(dimension: str, votes: Iterable[str | None], *, expected: int | None = None) -> DimensionResult:
    """Majority label, confidence word and target of one dimension (rules in the module docstring); ``expected``:
    the votes of a complete panel (fewer votes: the guaranteed label and word, ``complete`` False)."""
    counts = count_votes(votes)
    n = sum(counts.values())
    if expected is not None and n < expected:
        label, confidence = _guaranteed(counts, expected - n)
        return DimensionResult(
            label=label,
            confidence=confidence,
            target=target(dimension, label),
            counts=counts,
            n=n,
            expected=expected,
            complete=False,
        )
    label, confidence = _label_and_word(counts)
    return DimensionResult(
        label=label,
        confidence=confidence,
        target=target(dimension, label),
        counts=counts,
        n=n,
        expected=expected or n,
        complete=True,
    )


def aggregate_responses(responses: Iterable[Mapping], *, expected: int | None = None) -> dict:
    """The aggregate of an item from its responses ``{"validity": choice, "novelty": choice}``::

        {"validity": DimensionResult.as_dict(), "novelty": {...}, "weight": w, "n": responses,
         "expected": votes of a complete panel, "complete": bool}

    ``weight`` is :func:`annotation.task_types.validity_novelty.weights.instance_weight` of the two confidence words;
    ``expected`` (a project's :func:`expected_votes`): see "Incomplete items" in the module docstring.
    """
    responses = [r for r in responses if isinstance(r, Mapping)]
    out: dict = {
        dim: aggregate_dimension(dim, (r.get(dim) for r in responses), expected=expected).as_dict()
        for dim in DIMENSIONS
    }
    out["weight"] = instance_weight(out["validity"]["confidence"], out["novelty"]["confidence"])
    out["n"] = len(responses)
    out["expected"] = expected or len(responses)
    out["complete"] = all(out[dim]["complete"] for dim in DIMENSIONS)
    return out
