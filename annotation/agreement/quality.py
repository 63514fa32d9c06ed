"""Worker quality: agreement with the leave-one-out majority, gold accuracy, crowd-model competence.

Records are plain tuples so that the same functions serve the CLI, the dashboards and tests:
``(worker, unit, label)`` for labels, ``(worker, correct)`` for gold answers.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Hashable, Iterable

from .errors import AgreementError


def loo_majority_agreement(records: Iterable[tuple[Hashable, Hashable, Hashable]]) -> dict[Hashable, dict[str, Any]]:
    """Per worker: how often their label equals the majority label of the *other* workers on the same unit.

    A tie among the others' top labels gives 1/k credit when the worker's label is one of the k tied labels (the
    expected agreement under a random tie-break). Units where nobody else answered are not counted.
    Returns ``{worker: {"agreement": float | None, "n": units counted}}`` (``None`` when n = 0).
    """
    by_unit: dict[Hashable, list[tuple[Hashable, Hashable]]] = defaultdict(list)
    for worker, unit, label in records:
        by_unit[unit].append((worker, label))
    score: dict[Hashable, float] = defaultdict(float)
    count: dict[Hashable, int] = defaultdict(int)
    workers: set[Hashable] = set()
    for unit, answers in by_unit.items():
        total = Counter(label for _, label in answers)
        for worker, label in answers:
            workers.add(worker)
            others = total.copy()
            others[label] -= 1
            others = +others  # drop zero counts
            if not others:
                continue
            top = max(others.values())
            tied = [lab for lab, c in others.items() if c == top]
            count[worker] += 1
            if label in tied:
                score[worker] += 1.0 / len(tied)
    return {w: {"agreement": (score[w] / count[w]) if count[w] else None, "n": count[w]} for w in workers}


def gold_accuracy(records: Iterable[tuple[Hashable, bool]]) -> dict[Hashable, dict[str, Any]]:
    """Per worker accuracy on gold items from ``(worker, correct)`` records: ``{"accuracy", "correct", "n"}``."""
    n: dict[Hashable, int] = defaultdict(int)
    ok: dict[Hashable, int] = defaultdict(int)
    for worker, correct in records:
        n[worker] += 1
        ok[worker] += bool(correct)
    return {w: {"accuracy": ok[w] / n[w], "correct": ok[w], "n": n[w]} for w in n}


def crowd_competence(records: Iterable[tuple[Hashable, Hashable, Hashable]], *, method: str = "dawid_skene",
                     n_iter: int = 100, seed: int = 0, n_restarts: int = 10) -> dict[str, Any]:
    """Worker competence and aggregated labels from a crowd-aggregation model (crowd-kit).

    ``method="dawid_skene"``: competence = sum_c prior(c) * P(worker says c | truth c) from the fitted confusion
    matrices (the worker's expected accuracy). ``method="mace"``: competence = the posterior probability that the
    worker is not spamming (MACE's 1 - theta); ``n_restarts`` (MACE only) trades time for a better optimum.
    Returns ``{"method", "competence": {worker: float}, "labels": {unit: label}}``.
    """
    import warnings

    import pandas as pd

    rows = [(unit, worker, label) for worker, unit, label in records]
    if not rows:
        raise AgreementError("crowd competence needs at least one (worker, unit, label) record")
    df = pd.DataFrame(rows, columns=["task", "worker", "label"])
    if df["worker"].nunique() < 2:
        raise AgreementError("crowd competence needs at least 2 workers")
    with warnings.catch_warnings():
        # crowd-kit 1.4.2 uses pandas' deprecated inplace= (Pandas4Warning on pandas 3.x): noise, not our problem
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            from pandas.errors import Pandas4Warning
            warnings.simplefilter("ignore", Pandas4Warning)
        except ImportError:
            pass
        return _fit(df, method, n_iter, seed, n_restarts)


def _fit(df, method: str, n_iter: int, seed: int, n_restarts: int) -> dict[str, Any]:
    import pandas as pd

    if method == "dawid_skene":
        from crowdkit.aggregation import DawidSkene

        model = DawidSkene(n_iter=n_iter).fit(df)
        priors = model.priors_
        errors = model.errors_
        competence = {}
        for worker in df["worker"].unique():
            acc = 0.0
            for label, prior in priors.items():
                try:
                    acc += float(prior) * float(errors.loc[(worker, label), label])
                except KeyError:
                    pass  # the worker never used this label: P(says c | c) = 0
            competence[worker] = acc
        labels = model.labels_
    elif method == "mace":
        from crowdkit.aggregation import MACE

        model = MACE(n_iter=n_iter, n_restarts=n_restarts, random_state=seed).fit(df)
        names = pd.factorize(df["worker"])[1]
        competence = {w: float(model.spamming_[i, 1]) for i, w in enumerate(names)}
        labels = model.labels_
    else:
        raise AgreementError(f"unknown crowd model {method!r}; choose dawid_skene or mace")
    return {"method": method, "competence": competence, "labels": {k: v for k, v in labels.items()}}
