"""The alternative annotator test ("alt-test"): may a model's (an LLM's) labels stand in for a human's?

Calderon, Reichart & Dror, "The Alternative Annotator Test for LLM-as-a-Judge: How to Statistically Justify Replacing
Human Annotators with LLMs" (ACL 2025, arXiv 2501.10970). This is a port of the reference implementation (the
``alt_test`` function of ``alt_test_example.ipynb`` in the public repository nitaytech/AltTest), number for number: the
tests reproduce the winning rates, advantage probabilities and verdicts that notebook prints for its data.

The procedure, for one model and ``m`` human annotators:

1. Only instances that at least ``min_humans_per_instance`` (2) humans annotated *and* the model annotated are kept.
2. Leave one human ``h`` out at a time. On every instance ``i`` that ``h`` annotated, score the left-out human's label
   and the model's label against the labels of the *remaining* humans on ``i`` (``accuracy``: the share of them it
   equals; ``neg_rmse``: minus the root mean squared difference). Per instance, two indicators: the model wins
   (``model score >= human score``) and the human wins (``human score >= model score``) -- a tie counts for both.
3. A one-sided one-sample t-test of ``d_i = human indicator - model indicator`` against ``epsilon``
   (H0: mean d >= epsilon, H1: mean d < epsilon; ``scipy.stats.ttest_1samp(..., alternative="less")``). ``epsilon``
   is the cost-benefit margin: the human is handicapped by it because the model is cheaper and faster (the paper's
   rule of thumb: 0.2 for experts, 0.15 for skilled annotators, 0.1 for crowd workers).
   Humans with fewer than ``min_instances`` (30) such instances are left out (the t-test needs them).
4. The m p-values are corrected for multiple testing with the Benjamini-Yekutieli step-up procedure at level
   ``alpha`` (the reference's ``q_fdr`` = 0.05). A rejected null means the model "wins" against that human.
5. **Winning rate** = share of tested humans whose null is rejected; the model **passes** when it is >= 0.5.
   **Advantage probability** = the mean over tested humans of the share of instances where the model is at least
   as good as that human (for comparing models: higher is better; it does not depend on epsilon).

Argora adds, where the reference prints or divides by zero: ``problems`` (why there is no verdict: ``passed`` is
``None``) and ``notes`` (what was left out but did not stop the test). The paper recommends at least three humans
(:data:`MIN_HUMANS`); with fewer tested humans there is no verdict. ``None`` labels count as "not annotated".
Pure functions over plain dicts: the CLI (``manage.py agreement alt-test``) and the dashboards call :func:`alt_test`.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from argora.errors import FieldError

from .errors import AgreementError

MIN_HUMANS = 3  # the paper's recommendation (FAQ: "at least three human annotators and not two")
MIN_HUMANS_PER_INSTANCE = 2  # reference: min_humans_per_instance
MIN_INSTANCES = 30  # reference: min_instances_per_human (the t-test's normality assumption)
DEFAULT_EPSILON = 0.2  # reference default (expert annotators)
DEFAULT_ALPHA = 0.05  # reference: q_fdr
PASS_WINNING_RATE = 0.5


class AltTestInputError(FieldError, AgreementError):
    """Bad input to :func:`alt_test`: ``field: reason`` (a :class:`~argora.errors.FieldError` and an
    :class:`~annotation.agreement.AgreementError`, so both kinds of caller catch it)."""


def accuracy(pred: Any, annotations: Sequence[Any]) -> float:
    """Share of ``annotations`` equal to ``pred``."""
    return float(np.mean([pred == ann for ann in annotations]))


def neg_rmse(pred: float, annotations: Sequence[float]) -> float:
    """Minus the root mean squared difference between ``pred`` and ``annotations`` (higher = closer)."""
    return -1 * float(np.sqrt(np.mean([(pred - ann) ** 2 for ann in annotations])))


SCORINGS: dict[str, Callable[[Any, Sequence[Any]], float]] = {"accuracy": accuracy, "neg_rmse": neg_rmse}
NUMERIC_SCORINGS = {"neg_rmse"}


@dataclass
class AltTestResult:
    winning_rate: float | None
    advantage_probability: float | None
    passed: bool | None
    epsilon: float
    alpha: float
    scoring: str
    min_instances: int
    n_humans: int  # humans in the input
    n_tested: int  # humans the test compared with (enough shared instances)
    n_instances: int  # instances kept (>= 2 humans and the model)
    per_annotator: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # why there is no verdict (passed is None)
    notes: list[str] = field(default_factory=list)  # what was left out without stopping the test

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe (no NaN)."""
        return asdict(self)


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise AltTestInputError(name, f"must be a number, got {value!r}")
    try:
        return float(value)
    except ValueError:
        raise AltTestInputError(name, f"must be a number, got {value!r}") from None


def _check_params(scoring, epsilon, alpha, min_instances, min_humans_per_instance):
    if callable(scoring):
        name, fn = getattr(scoring, "__name__", "custom"), scoring
    elif scoring in SCORINGS:
        name, fn = scoring, SCORINGS[scoring]
    else:
        raise AltTestInputError("scoring", f"unknown scoring {scoring!r}; one of {', '.join(SCORINGS)}")
    epsilon, alpha = _number("epsilon", epsilon), _number("alpha", alpha)
    if not (0 <= epsilon < 1):
        raise AltTestInputError("epsilon", f"must be at least 0 and below 1, got {epsilon}")
    if not (0 < alpha < 1):
        raise AltTestInputError("alpha", f"must be between 0 and 1, got {alpha}")
    if isinstance(min_instances, bool) or not isinstance(min_instances, int) or min_instances < 2:
        raise AltTestInputError("min_instances", f"must be an integer of at least 2, got {min_instances!r}")
    if (
        isinstance(min_humans_per_instance, bool)
        or not isinstance(min_humans_per_instance, int)
        or min_humans_per_instance < 2
    ):
        raise AltTestInputError(
            "min_humans_per_instance", f"must be an integer of at least 2, got {min_humans_per_instance!r}"
        )
    return name, fn, epsilon, alpha


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def _check_labels(humans, model, numeric: bool) -> None:
    if not isinstance(humans, Mapping):
        raise AltTestInputError("humans", "must map each annotator to {instance: label}")
    if not isinstance(model, Mapping):
        raise AltTestInputError("model", "must map each instance to a label")
    for h, anns in humans.items():
        if not isinstance(anns, Mapping):
            raise AltTestInputError(f"humans.{h}", "must map each instance to a label")
        if numeric:
            for i, v in anns.items():
                if v is not None and not _is_number(v):
                    raise AltTestInputError(f"humans.{h}.{i}", f"neg_rmse needs numbers, got {v!r}")
    if numeric:
        for i, v in model.items():
            if v is not None and not _is_number(v):
                raise AltTestInputError(f"model.{i}", f"neg_rmse needs numbers, got {v!r}")


def _ttest_less(differences: list[int], epsilon: float) -> float:
    """p-value of H0 mean >= epsilon vs H1 mean < epsilon (NaN when the data give none, e.g. no variation at 0)."""
    from scipy.stats import ttest_1samp  # scipy.stats: 0.7 s at every manage.py start-up otherwise

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(ttest_1samp(differences, epsilon, alternative="less").pvalue)


def benjamini_yekutieli(p_values: Sequence[float], q: float) -> tuple[list[bool], list[float]]:
    """Benjamini-Yekutieli step-up at FDR level ``q``: (rejected, BY-adjusted p-values).

    Rejection is the reference's ``by_procedure`` (reject the hypotheses up to the largest rank ``k`` with
    ``p_(k) <= k/m * q / H_m``); the adjusted p-values are ``scipy.stats.false_discovery_control(method="by")``
    (a hypothesis is rejected exactly when its adjusted p-value is <= q). A NaN p-value is never rejected and still
    counts in ``m`` (as in the reference).
    """
    p = np.array(p_values, dtype=float)
    m = len(p)
    if m == 0:
        return [], []
    filled = np.where(np.isnan(p), 1.0, p)
    order = np.argsort(filled, kind="stable")
    harmonic = np.sum(1.0 / np.arange(1, m + 1))
    thresholds = (np.arange(1, m + 1) / m) * (q / harmonic)
    below = np.nonzero(filled[order] <= thresholds)[0]
    rejected = np.zeros(m, dtype=bool)
    if below.size:
        rejected[order[: below[-1] + 1]] = True
    from scipy.stats import false_discovery_control  # scipy.stats: start-up cost (see _ttest_less)

    adjusted = false_discovery_control(filled, method="by")
    return [bool(r) for r in rejected], [float(a) for a in adjusted]


def alt_test(
    humans: Mapping[Hashable, Mapping[Hashable, Any]],
    model: Mapping[Hashable, Any],
    *,
    scoring: str | Callable[[Any, Sequence[Any]], float] = "accuracy",
    epsilon: float = DEFAULT_EPSILON,
    alpha: float = DEFAULT_ALPHA,
    min_instances: int = MIN_INSTANCES,
    min_humans_per_instance: int = MIN_HUMANS_PER_INSTANCE,
) -> AltTestResult:
    """Run the alt-test of one ``model`` (``{instance: label}``) against ``humans`` (``{annotator: {instance:
    label}}``). ``scoring`` is ``"accuracy"``, ``"neg_rmse"`` (numbers) or a function ``(pred, [labels]) -> score``
    (higher = better aligned). Raises :class:`AltTestInputError` on bad parameters or non-numeric labels for
    ``neg_rmse``; data that are too few give ``passed=None`` and ``problems``, not an exception."""
    name, score, epsilon, alpha = _check_params(scoring, epsilon, alpha, min_instances, min_humans_per_instance)
    _check_labels(humans, model, numeric=name in NUMERIC_SCORINGS)
    model = {i: v for i, v in model.items() if v is not None}
    humans = {h: {i: v for i, v in anns.items() if v is not None} for h, anns in humans.items()}

    # who annotated each instance; keep instances with enough humans that the model annotated too
    annotators_of: dict[Hashable, list[Hashable]] = {}
    for h, anns in humans.items():
        for i in anns:
            annotators_of.setdefault(i, []).append(h)
    kept = {i for i, hs in annotators_of.items() if len(hs) >= min_humans_per_instance and i in model}
    notes: list[str] = []
    dropped = len(annotators_of) - len(kept)
    if dropped:
        notes.append(
            f"{dropped} of {len(annotators_of)} instances left out: fewer than {min_humans_per_instance} "
            f"humans annotated them or the model did not"
        )

    rows: list[dict[str, Any]] = []
    tested: list[dict[str, Any]] = []
    for h, anns in humans.items():
        instances = [i for i in anns if i in kept]
        row: dict[str, Any] = {
            "annotator": h,
            "n": len(instances),
            "tested": False,
            "model_wins": None,
            "human_wins": None,
            "advantage_probability": None,
            "p_value": None,
            "corrected_p_value": None,
            "rejected": False,
        }
        rows.append(row)
        if len(instances) < min_instances:
            notes.append(
                f"annotator {h} has {len(instances)} shared instances, fewer than {min_instances}: left out of the test"
            )
            continue
        model_ind, human_ind = [], []
        for i in instances:
            others = [humans[o][i] for o in annotators_of[i] if o != h]
            human_score = score(anns[i], others)
            model_score = score(model[i], others)
            model_ind.append(1 if model_score >= human_score else 0)
            human_ind.append(1 if human_score >= model_score else 0)
        diff = [e - m for e, m in zip(human_ind, model_ind)]
        row.update(
            tested=True,
            model_wins=sum(model_ind),
            human_wins=sum(human_ind),
            advantage_probability=float(np.mean(model_ind)),
            p_value=_ttest_less(diff, epsilon),
        )
        tested.append(row)

    rejected, adjusted = benjamini_yekutieli([r["p_value"] for r in tested], alpha)
    for row, rej, adj in zip(tested, rejected, adjusted):
        row["rejected"] = rej
        row["corrected_p_value"] = None if math.isnan(row["p_value"]) else adj
        if math.isnan(row["p_value"]):
            row["p_value"] = None

    problems: list[str] = []
    if not model:
        problems.append("the model annotated no instances")
    if len(humans) < MIN_HUMANS:
        problems.append(
            f"fewer than {MIN_HUMANS} humans: {len(humans)} annotator(s); the test needs at least {MIN_HUMANS}"
        )
    elif len(tested) < MIN_HUMANS:
        problems.append(
            f"only {len(tested)} of {len(humans)} humans share at least {min_instances} instances "
            f"(each annotated by {min_humans_per_instance}+ humans and the model); the test needs "
            f"{MIN_HUMANS} such humans"
        )
    winning_rate = (sum(rejected) / len(tested)) if tested else None
    advantage = float(np.mean([r["advantage_probability"] for r in tested])) if tested else None
    passed = None if problems else bool(winning_rate >= PASS_WINNING_RATE)
    return AltTestResult(
        winning_rate=winning_rate,
        advantage_probability=advantage,
        passed=passed,
        epsilon=epsilon,
        alpha=alpha,
        scoring=name,
        min_instances=min_instances,
        n_humans=len(humans),
        n_tested=len(tested),
        n_instances=len(kept),
        per_annotator=rows,
        problems=problems,
        notes=notes,
    )


__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_EPSILON",
    "MIN_HUMANS",
    "MIN_HUMANS_PER_INSTANCE",
    "MIN_INSTANCES",
    "SCORINGS",
    "AltTestInputError",
    "AltTestResult",
    "accuracy",
    "alt_test",
    "benjamini_yekutieli",
    "neg_rmse",
]
