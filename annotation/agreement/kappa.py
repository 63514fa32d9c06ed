"""Cohen's kappa (pairwise and averaged over coder pairs), Fleiss' kappa and raw percentage agreement.

Cohen's kappa is scikit-learn's ``cohen_kappa_score`` on the units both coders labelled. Fleiss' kappa (Fleiss 1971)
takes a units x categories count table with the same number of ratings per unit (or a complete coders x units
matrix). Raw percentage agreement of several coders is the mean over units (with >= 2 labels) of the share of
agreeing coder pairs, which for two coders is simply the share of units on which they agree.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Hashable, Sequence

import numpy as np

from .alpha import _is_missing
from .errors import AgreementError, AgreementUndefined


def _labels_matrix(data: Any) -> tuple[np.ndarray, np.ndarray]:
    """(codes, present): coders x units int codes (-1 missing) for any labels; missing = None/NaN/''."""
    obj = np.asarray(data, dtype=object)
    if obj.ndim != 2:
        raise AgreementError(f"expected a coders x units matrix, got {obj.ndim} dimension(s)")
    present = ~np.vectorize(_is_missing, otypes=[bool])(obj) if obj.size else np.zeros(obj.shape, bool)
    labels = sorted({_norm(v) for v in obj[present]}, key=str)
    index = {lab: i for i, lab in enumerate(labels)}
    codes = np.full(obj.shape, -1, dtype=np.int64)
    codes[present] = [index[_norm(v)] for v in obj[present]]
    return codes, present


def _norm(v: Any) -> Any:
    # 1, 1.0 and "1" are the same label once read from a CSV; keep numbers as numbers where they are integral
    if isinstance(v, (bool, np.bool_)):
        return str(v)
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return str(int(v)) if float(v).is_integer() else repr(float(v))
    return str(v)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable], *, weights: str | None = None) -> float:
    """Cohen's (1960) kappa of two coders over the units both labelled (missing = None/NaN/'').

    ``weights``: None, "linear" or "quadratic" (passed to scikit-learn; weighted kappa needs numeric labels).
    Raises :class:`AgreementError` when no unit has both labels and :class:`AgreementUndefined` when chance
    agreement is 1 (both coders used one and the same label throughout: kappa = 0/0).
    """
    from sklearn.metrics import cohen_kappa_score

    if len(a) != len(b):
        raise AgreementError(f"the two coders label different numbers of units ({len(a)} vs {len(b)})")
    pairs = [(x, y) for x, y in zip(a, b) if not _is_missing(x) and not _is_missing(y)]
    if not pairs:
        raise AgreementError("no unit was labelled by both coders")
    if weights is None:
        x = [_norm(p[0]) for p in pairs]
        y = [_norm(p[1]) for p in pairs]
    else:
        try:
            x = [float(p[0]) for p in pairs]
            y = [float(p[1]) for p in pairs]
        except (TypeError, ValueError):
            raise AgreementError("weighted kappa needs numeric labels") from None
    if len(set(x) | set(y)) == 1:
        raise AgreementUndefined("kappa is undefined: both coders used one and the same label for every unit "
                                 "(chance agreement = 1, kappa = 0/0)")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        k = cohen_kappa_score(x, y, weights=weights)
    if not math.isfinite(k):
        raise AgreementUndefined("kappa is undefined on these labels (chance agreement = 1)")
    return float(k)


def percent_agreement(data: Any) -> float:
    """Raw agreement of a coders x units label matrix: mean over units with >= 2 labels of the share of agreeing
    coder pairs (two coders: the share of co-labelled units on which they agree)."""
    codes, present = _labels_matrix(data)
    m = present.sum(axis=0)
    keep = m >= 2
    if not keep.any():
        raise AgreementError("no pairable values: no unit has labels from 2 or more coders")
    codes, m = codes[:, keep], m[keep]
    V = int(codes.max()) + 1
    U = codes.shape[1]
    cols = np.broadcast_to(np.arange(U), codes.shape)
    mask = codes >= 0
    cnt = np.bincount(cols[mask] * V + codes[mask], minlength=U * V).reshape(U, V).astype(np.float64)
    agree = (cnt * (cnt - 1)).sum(axis=1) / (m * (m - 1.0))
    return float(agree.mean())


def pairwise_cohen_kappa(data: Any, coders: Sequence[Hashable] | None = None) -> dict[str, Any]:
    """Cohen's kappa for every pair of coders (rows of ``data``) and their mean.

    Pairs that share no unit or whose kappa is undefined are listed with ``kappa: None`` and a ``reason`` and left out
    of the mean. Returns ``{"kappa": mean, "pairs": [{"a", "b", "kappa", "percent_agreement", "n_units"}...],
    "n_pairs": k}``.
    """
    rows = [list(r) for r in np.asarray(data, dtype=object)]
    if len(rows) < 2:
        raise AgreementError(f"kappa needs at least 2 coders; got {len(rows)}")
    names = list(coders) if coders is not None else list(range(len(rows)))
    pairs = []
    for i, j in itertools.combinations(range(len(rows)), 2):
        both = [(x, y) for x, y in zip(rows[i], rows[j]) if not _is_missing(x) and not _is_missing(y)]
        entry: dict[str, Any] = {"a": names[i], "b": names[j], "n_units": len(both)}
        if not both:
            entry.update(kappa=None, percent_agreement=None, reason="no unit labelled by both")
        else:
            entry["percent_agreement"] = sum(_norm(x) == _norm(y) for x, y in both) / len(both)
            try:
                entry["kappa"] = cohen_kappa([x for x, _ in both], [y for _, y in both])
            except AgreementUndefined as exc:
                entry.update(kappa=None, reason=str(exc))
        pairs.append(entry)
    valid = [p["kappa"] for p in pairs if p["kappa"] is not None]
    if not valid:
        raise AgreementUndefined("kappa is undefined for every pair of coders: "
                                 + "; ".join(f"{p['a']}/{p['b']}: {p.get('reason')}" for p in pairs))
    return {"kappa": float(np.mean(valid)), "pairs": pairs, "n_pairs": len(valid)}


def fleiss_kappa(table: Any) -> float:
    """Fleiss' (1971) kappa of a units x categories table of counts (every unit rated by the same number n >= 2).

    P_i = (sum_j n_ij^2 - n) / (n (n - 1)), P = mean P_i, p_j = sum_i n_ij / (N n), P_e = sum_j p_j^2,
    kappa = (P - P_e) / (1 - P_e). Raises :class:`AgreementUndefined` when P_e = 1 (one category only).
    """
    t = np.asarray(table, dtype=np.float64)
    if t.ndim != 2 or t.shape[0] == 0 or t.shape[1] == 0:
        raise AgreementError("Fleiss' kappa needs a non-empty units x categories table of counts")
    if np.any(t < 0) or np.any(t != np.round(t)):
        raise AgreementError("Fleiss' kappa needs non-negative integer counts")
    n_i = t.sum(axis=1)
    n = n_i[0]
    if not np.all(n_i == n):
        bad = int(np.argmax(n_i != n))
        raise AgreementError(f"Fleiss' kappa needs the same number of ratings per unit: unit 1 has {n:g}, "
                             f"unit {bad + 1} has {n_i[bad]:g}")
    if n < 2:
        raise AgreementError(f"Fleiss' kappa needs at least 2 ratings per unit; got {n:g}")
    N = t.shape[0]
    P_i = ((t * t).sum(axis=1) - n) / (n * (n - 1))
    P = P_i.mean()
    p_j = t.sum(axis=0) / (N * n)
    P_e = float(np.dot(p_j, p_j))
    if math.isclose(P_e, 1.0):
        raise AgreementUndefined("Fleiss' kappa is undefined: every rating is the same category (P_e = 1)")
    return float((P - P_e) / (1.0 - P_e))


def fleiss_kappa_from_matrix(data: Any) -> float:
    """Fleiss' kappa of a complete coders x units label matrix (raises when a value is missing)."""
    codes, present = _labels_matrix(data)
    if codes.shape[0] < 2:
        raise AgreementError(f"Fleiss' kappa needs at least 2 coders; got {codes.shape[0]}")
    if not present.all():
        c, u = np.argwhere(~present)[0]
        raise AgreementError(f"Fleiss' kappa needs every unit rated by every coder: coder row {c + 1} has no label "
                             f"for unit {u + 1} (use alpha for data with missing values)")
    V = int(codes.max()) + 1
    U = codes.shape[1]
    cols = np.broadcast_to(np.arange(U), codes.shape)
    table = np.bincount((cols * V + codes).ravel(), minlength=U * V).reshape(U, V)
    return fleiss_kappa(table)


def kappa_report(data: Any, coders: Sequence[Hashable] | None = None) -> dict[str, Any]:
    """What ``manage.py agreement kappa`` prints: Cohen's kappa (2 coders) or its mean over pairs (more), raw
    percentage agreement, counts, and Fleiss' kappa when every coder labelled every unit."""
    codes, present = _labels_matrix(data)
    C = codes.shape[0]
    if C < 2:
        raise AgreementError(f"kappa needs at least 2 coders; got {C}")
    pw = pairwise_cohen_kappa(data, coders)
    out: dict[str, Any] = {"kappa": pw["kappa"], "percent_agreement": percent_agreement(data),
                           "n_units": int((present.sum(axis=0) >= 2).sum()), "n_coders": C}
    if C == 2:
        out["n_units"] = pw["pairs"][0]["n_units"]
    else:
        out["kappa_method"] = "mean of pairwise Cohen's kappa"
        out["pairs"] = pw["pairs"]
        if present.all():
            try:
                out["fleiss_kappa"] = fleiss_kappa_from_matrix(data)
            except AgreementUndefined:
                out["fleiss_kappa"] = None
    return out
