"""Krippendorff's alpha for nominal, ordinal, interval and ratio data with missing values.

Input is a reliability matrix: one row per coder, one column per unit, missing values as ``NaN`` / ``None``
(nominal data may also be labels such as ``"pro"``; ``None``, ``NaN`` and ``""`` are missing).

    alpha = 1 - (n - 1) * sum_ck o_ck d_ck / sum_ck n_c n_k d_ck          (Krippendorff 2011, eq. for D_o / D_e)

with ``o`` the coincidence matrix of the pairable units (units with >= 2 values), ``n_c`` its margins and ``n`` the
number of pairable values. The `krippendorff` package computes exactly this, but it materialises a
units x values x values array for interval/ratio data (a 0-100 slider: ~830 MiB; 12,270 distinct real-valued BWS
scores: a 3.7 TiB MemoryError). Here nothing is ever of size values x values per unit:

* nominal: per-unit value counts (sum_c n_uc^2) by one compare per code (up to 16 integral codes) or one
  ``bincount`` over unit x value keys (more), ``D_e`` from the value margins;
* interval: per-unit sums of squared deviations, sum_{i != j}(x_i - x_j)^2 = 2 m sum_i (x_i - mean)^2, and the same
  identity over all pairable values for ``D_e`` -- O(units x coders) memory, any number of distinct values;
* ordinal: Krippendorff's ordinal metric is an interval metric on the "mid-rank" of each value,
  d_ck = (t_k - t_c)^2 with t_v = (n_1 + ... + n_{v-1}) + n_v / 2, so it reuses the interval path;
* ratio: d = ((a - b) / (a + b))^2 does not decompose, so ``D_o`` is summed over coder pairs
  (O(units x coders^2) time, O(units) memory) and ``D_e`` over distinct-value pairs in blocks (bounded memory).

Results agree with the `krippendorff` package wherever the package can run (tests check this), and with
Krippendorff's (2011) worked example: nominal 0.743, ordinal 0.815, interval 0.849, ratio 0.797.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import AgreementError, AgreementUndefined

LEVELS = ("nominal", "ordinal", "interval", "ratio")

# bincount over units x values keys is used while units * values stays below this; otherwise np.unique.
_BINCOUNT_MAX = 50_000_000
# the ratio D_e double sum runs in blocks of distinct values of about this many pairs (x 8 bytes, ~4 temporaries)
_RATIO_BLOCK_PAIRS = 2_000_000
# the vectorised bootstrap keeps a resamples x units multiplicity matrix of at most this many cells (x 8 bytes)
_BOOTSTRAP_BLOCK_CELLS = 2_000_000
# ... and a units x values count table (nominal) of at most this many cells; larger tables resample one at a time
_BOOTSTRAP_TABLE_MAX = 5_000_000
# resample patterns of per-unit terms instead of units when there are at least this many units per pattern
_PATTERN_RATIO = 4


@dataclass
class AlphaResult:
    alpha: float
    level: str
    n_units: int  # pairable units (>= 2 values)
    n_coders: int  # rows of the matrix that hold at least one value
    n_values: int  # pairable values
    observed_disagreement: float
    expected_disagreement: float
    n_units_total: int = 0
    ci: dict[str, Any] | None = field(default=None)

    def as_dict(self) -> dict[str, Any]:
        out = {
            "alpha": self.alpha,
            "level": self.level,
            "n_units": self.n_units,
            "n_coders": self.n_coders,
            "n_values": self.n_values,
            "n_units_total": self.n_units_total,
            "observed_disagreement": self.observed_disagreement,
            "expected_disagreement": self.expected_disagreement,
        }
        if self.ci is not None:
            out["ci"] = self.ci
        return out


def _check_level(level: str) -> str:
    if level not in LEVELS:
        raise AgreementError(f"unknown level of measurement {level!r}; choose one of {', '.join(LEVELS)}")
    return level


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, str):
        return v.strip() == ""
    try:
        return bool(np.isnan(v))
    except (TypeError, ValueError):
        return False


def reliability_matrix(data: Any, level: str = "nominal") -> np.ndarray:
    """``data`` (coders x units, array-like) as a float matrix with NaN for missing values.

    Numbers stay numbers. Labels are only allowed at the nominal level, where they are mapped to codes 0..V-1
    (in sorted order of their string form). Raises :class:`AgreementError` on a ragged or non-2-D input, on labels
    at a metric level, on infinite values and on negative values at the ratio level.
    """
    _check_level(level)
    if isinstance(data, np.ndarray) and data.dtype.kind in "fiub":
        X = np.asarray(data, dtype=np.float64)
    else:
        try:
            X = np.asarray(data, dtype=np.float64)
        except (TypeError, ValueError):
            try:
                obj = np.asarray(data, dtype=object)
            except ValueError as exc:
                raise AgreementError(f"the reliability matrix is ragged: {exc}") from None
            if obj.ndim != 2:
                raise AgreementError(f"expected a coders x units matrix, got {obj.ndim} dimension(s)") from None
            missing = np.vectorize(_is_missing, otypes=[bool])(obj) if obj.size else np.zeros(obj.shape, bool)
            if level != "nominal":
                for (r, c), v in np.ndenumerate(obj):
                    if not missing[r, c]:
                        try:
                            float(v)
                        except (TypeError, ValueError):
                            raise AgreementError(
                                f"coder row {r + 1}, unit column {c + 1}: {v!r} is not a number "
                                f"({level} data must be numeric)"
                            ) from None
                X = np.full(obj.shape, np.nan)
                X[~missing] = [float(v) for v in obj[~missing]]
            else:
                labels = sorted({str(v) for v in obj[~missing]})
                index = {lab: i for i, lab in enumerate(labels)}
                X = np.full(obj.shape, np.nan)
                X[~missing] = [index[str(v)] for v in obj[~missing]]
    if X.ndim != 2:
        raise AgreementError(f"expected a coders x units matrix, got {X.ndim} dimension(s)")
    finite = np.isfinite(X)
    if np.any(np.isinf(X)):
        raise AgreementError("the reliability matrix holds an infinite value")
    if level == "ratio" and np.any(X[finite] < 0):
        raise AgreementError("ratio data must be non-negative (the ratio metric divides by a + b)")
    return X


def _pairable(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    present = ~np.isnan(X)
    m = present.sum(axis=0)
    keep = m >= 2
    if not keep.all():
        X, present, m = X[:, keep], present[:, keep], m[keep]
    return X, present, m


def _interval_sums(X: np.ndarray, present: np.ndarray, m: np.ndarray) -> tuple[float, float, int]:
    """(sum_u sum_{i != j} d_ij / (m_u - 1), sum over all pairable value pairs i != j of d_ij, n) for d = (a-b)^2."""
    Z = np.where(present, X, 0.0)
    mean_u = Z.sum(axis=0) / m
    dev = np.where(present, X - mean_u, 0.0)
    ss_u = np.einsum("ij,ij->j", dev, dev)
    d_o = float(np.sum(2.0 * m * ss_u / (m - 1)))
    vals = X[present]
    n = int(vals.size)
    centred = vals - vals.mean()
    d_e = float(2.0 * n * np.dot(centred, centred))
    return d_o, d_e, n


def _ordinal_ranks(X: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Replace each value by its mid-rank t_v among the pairable values (the ordinal metric becomes interval)."""
    vals = X[present]
    _uniq, inv, counts = np.unique(vals, return_inverse=True, return_counts=True)
    t = np.cumsum(counts) - counts / 2.0
    T = np.full(X.shape, np.nan)
    T[present] = t[inv]
    return T


def _value_codes(X: np.ndarray, present: np.ndarray) -> tuple[np.ndarray, int]:
    """Integer codes 0..V-1 of the values (-1 where missing) and V. Integral values in a modest range (label codes,
    Likert points) are coded by offset, without a sort; anything else through ``np.unique``."""
    vals = X[present]
    lo, hi = float(vals.min()), float(vals.max())
    codes = np.full(X.shape, -1, dtype=np.int64)
    if hi - lo < 1_000_000 and np.all(vals == np.floor(vals)):
        codes[present] = (vals - lo).astype(np.int64)
        return codes, int(hi - lo) + 1
    uniq, inv = np.unique(vals, return_inverse=True)
    codes[present] = inv
    return codes, int(uniq.size)


def _nominal_sums(X: np.ndarray, present: np.ndarray, m: np.ndarray) -> tuple[float, float, int]:
    U = X.shape[1]
    n = int(m.sum())
    lo, hi = float(np.nanmin(X)), float(np.nanmax(X))
    if hi - lo < 16 and float(np.nanmax(X - np.floor(X))) == 0.0:
        # few integral codes (labels, Likert points): one compare per code over the coders x units matrix
        sq_u = np.zeros(U)
        counts = []
        for v in np.arange(lo, hi + 1.0):
            cnt = np.count_nonzero(X == v, axis=0).astype(np.float64)
            counts.append(cnt.sum())
            sq_u += cnt * cnt
        n_c = np.array(counts)
        mf = m.astype(np.float64)
        d_o = float(np.sum((mf * mf - sq_u) / (mf - 1.0)))
        return d_o, float(n) * n - float(np.dot(n_c, n_c)), n
    codes, V = _value_codes(X, present)
    n_c = np.bincount(codes[present], minlength=V).astype(np.float64)
    if U * V <= _BINCOUNT_MAX:
        keys = (np.arange(U, dtype=np.int64) * V + codes)[present]
        cnt = np.bincount(keys, minlength=U * V).astype(np.float64).reshape(U, V)
        sq_u = np.einsum("ij,ij->i", cnt, cnt)
    else:
        keys = (np.arange(U, dtype=np.int64) * V + codes)[present]
        ukeys, cnt = np.unique(keys, return_counts=True)
        sq_u = np.bincount(ukeys // V, weights=cnt.astype(np.float64) ** 2, minlength=U)
    mf = m.astype(np.float64)
    d_o = float(np.sum((mf * mf - sq_u) / (mf - 1.0)))
    d_e = float(n) * n - float(np.dot(n_c, n_c))
    return d_o, d_e, n


def _ratio_delta(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    s = a + b
    with np.errstate(invalid="ignore", divide="ignore"):
        d = ((a - b) / s) ** 2
    return np.where(s == 0, 0.0, d)


def _ratio_sums(X: np.ndarray, present: np.ndarray, m: np.ndarray) -> tuple[float, float, int]:
    C = X.shape[0]
    pair_sum = np.zeros(X.shape[1])
    for i in range(C):
        for j in range(i + 1, C):
            both = present[i] & present[j]
            if both.any():
                d = _ratio_delta(X[i], X[j])
                pair_sum += np.where(both, d, 0.0)
    d_o = float(np.sum(2.0 * pair_sum / (m - 1)))
    vals = X[present]
    n = int(vals.size)
    uniq, counts = np.unique(vals, return_counts=True)
    counts = counts.astype(np.float64)
    d_e = 0.0
    block = max(1, _RATIO_BLOCK_PAIRS // max(1, uniq.size))
    for start in range(0, uniq.size, block):
        blk = uniq[start : start + block]
        w = counts[start : start + block]
        d = _ratio_delta(blk[:, None], uniq[None, :])
        d_e += float(w @ (d @ counts))
    return d_o, d_e, n


def alpha_report(
    data: Any, level: str = "nominal", *, bootstrap: int = 0, seed: int = 0, confidence: float = 0.95
) -> AlphaResult:
    """Krippendorff's alpha with its parts (D_o, D_e, counts) and, when ``bootstrap`` > 0, a percentile CI.

    Raises :class:`AgreementError` when there is nothing to compare (fewer than 2 coders, no unit with 2 values)
    and :class:`AgreementUndefined` when all pairable values are identical (D_e = 0: alpha is 0/0).
    """
    _check_level(level)
    X = reliability_matrix(data, level)
    _C, U_total = X.shape
    coders_with_values = int(np.sum(~np.all(np.isnan(X), axis=1))) if X.size else 0
    if coders_with_values < 2:
        raise AgreementError(f"alpha needs at least 2 coders with values; got {coders_with_values}")
    res = _alpha_core(X, level)
    d_o_sum, d_e_sum, n, n_units = res
    alpha = 1.0 - (n - 1) * d_o_sum / d_e_sum
    out = AlphaResult(
        alpha=float(alpha),
        level=level,
        n_units=n_units,
        n_coders=coders_with_values,
        n_values=n,
        observed_disagreement=d_o_sum / n,
        expected_disagreement=d_e_sum / (n * (n - 1)),
        n_units_total=U_total,
    )
    if bootstrap:
        out.ci = bootstrap_alpha(X, level, n_boot=bootstrap, seed=seed, confidence=confidence)
    return out


def _alpha_core(X: np.ndarray, level: str) -> tuple[float, float, int, int]:
    Xp, present, m = _pairable(X)
    n_units = int(Xp.shape[1])
    if n_units == 0:
        raise AgreementError("no pairable values: no unit has values from 2 or more coders")
    if level == "nominal":
        d_o, d_e, n = _nominal_sums(Xp, present, m)
    elif level == "interval":
        d_o, d_e, n = _interval_sums(Xp, present, m)
    elif level == "ordinal":
        d_o, d_e, n = _interval_sums(_ordinal_ranks(Xp, present), present, m)
    else:
        d_o, d_e, n = _ratio_sums(Xp, present, m)
    if d_e <= 0.0 or not np.isfinite(d_e):
        raise AgreementUndefined(
            "alpha is undefined: all pairable values are identical (expected disagreement "
            "D_e = 0), so agreement cannot be told apart from chance"
        )
    return d_o, d_e, n, n_units


def krippendorff_alpha(data: Any, level: str = "nominal") -> float:
    """Krippendorff's alpha of a coders x units matrix (missing = NaN/None; see :func:`alpha_report`)."""
    return alpha_report(data, level).alpha


def bootstrap_alpha(
    data: Any, level: str = "nominal", *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95
) -> dict[str, Any]:
    """Percentile bootstrap CI for alpha, resampling units (columns) with replacement; seeded (numpy PCG64).

    Replicates in which alpha is undefined (e.g. a resample with no variation) are skipped and counted in
    ``n_undefined``; if more than half are undefined the CI is refused with :class:`AgreementUndefined`.

    Nominal and interval data are resampled all at once: alpha's sums are sums over units of per-unit terms
    (D_o; the value counts n_c, or the sums of x and x^2, for D_e), so a resample is a multiplicity vector
    w (how often each unit was drawn) and every replicate's sums are one matrix product ``W @ per_unit``
    (in blocks of resamples, bounded memory) -- the very draws of the one-resample-at-a-time loop, so the same CI
    (tests check it). Where units repeat a few patterns of terms (labels of a handful of coders: 8 coders and 3
    labels give at most 45 count vectors), the pattern counts of a resample are drawn directly from their
    multinomial distribution, which is the distribution of resampling units (another stream of random numbers, so
    a CI within Monte Carlo error of the loop's, still seeded). Ordinal (mid-ranks depend on the resample's value
    counts) and ratio data recompute each replicate.
    """
    if not 0.0 < confidence < 1.0:
        raise AgreementError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if n_boot < 1:
        raise AgreementError(f"n_boot must be >= 1, got {n_boot}")
    X = reliability_matrix(data, level)
    Xp, present, m = _pairable(X)  # resampling unpairable units changes nothing but the cost
    U = Xp.shape[1]
    if U == 0:
        raise AgreementError("no pairable values: no unit has values from 2 or more coders")
    rng = np.random.default_rng(seed)
    per_unit = _per_unit_terms(Xp, present, m, level)
    if per_unit is None:
        values, undefined = _bootstrap_loop(Xp, level, n_boot, rng)
    else:
        values, undefined = _bootstrap_vectorised(per_unit, level, n_boot, rng)
    if len(values) < max(1, n_boot // 2):
        raise AgreementUndefined(f"bootstrap CI undefined: alpha was undefined in {undefined} of {n_boot} resamples")
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return {
        "low": float(low),
        "high": float(high),
        "confidence": confidence,
        "n_boot": n_boot,
        "seed": seed,
        "n_undefined": undefined,
        "method": "percentile bootstrap over units (resampled with replacement)",
    }


def _bootstrap_loop(Xp: np.ndarray, level: str, n_boot: int, rng) -> tuple[list[float], int]:
    U = Xp.shape[1]
    values, undefined = [], 0
    for _ in range(n_boot):
        idx = rng.integers(0, U, size=U)
        try:
            d_o, d_e, n, _ = _alpha_core(Xp[:, idx], level)
        except AgreementUndefined:
            undefined += 1
            continue
        values.append(1.0 - (n - 1) * d_o / d_e)
    return values, undefined


def _per_unit_terms(Xp: np.ndarray, present: np.ndarray, m: np.ndarray, level: str) -> np.ndarray | None:
    """Units x terms whose column sums give alpha's sums (see :func:`_terms_alpha`), or None where alpha does not
    decompose over units (ordinal, ratio) or the nominal count table would be too large."""
    mf = m.astype(np.float64)
    U = Xp.shape[1]
    if level == "nominal":
        codes, V = _value_codes(Xp, present)
        if U * V > _BOOTSTRAP_TABLE_MAX:
            return None
        keys = (np.arange(U, dtype=np.int64) * V + codes)[present]
        cnt = np.bincount(keys, minlength=U * V).astype(np.float64).reshape(U, V)
        d_o = (mf * mf - np.einsum("ij,ij->i", cnt, cnt)) / (mf - 1.0)
        return np.column_stack([d_o, mf, cnt])
    if level == "interval":
        centre = float(Xp[present].mean())
        Z = np.where(present, Xp - centre, 0.0)
        s1 = Z.sum(axis=0)
        s2 = np.einsum("ij,ij->j", Z, Z)
        d_o = 2.0 * mf * (s2 - s1 * s1 / mf) / (mf - 1.0)
        return np.column_stack([d_o, mf, s1, s2])
    return None


def _terms_alpha(T: np.ndarray, level: str) -> tuple[np.ndarray, np.ndarray]:
    """(alpha, defined) per row of summed per-unit terms (rows = resamples)."""
    d_o, n = T[:, 0], T[:, 1]
    if level == "nominal":
        n_c = T[:, 2:]
        d_e = n * n - np.einsum("ij,ij->i", n_c, n_c)
        defined = d_e > 0.5  # whole numbers: 0 exactly when every value is the same
    else:
        s1, s2 = T[:, 2], T[:, 3]
        ss = s2 - s1 * s1 / n
        d_e = 2.0 * n * ss
        # 0 when every value is the same; rounding can leave a tiny positive rest of the two large terms
        defined = ss > 1e-12 * s2
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (n - 1.0) * d_o / d_e
    return alpha, defined


def _bootstrap_vectorised(per_unit: np.ndarray, level: str, n_boot: int, rng) -> tuple[list[float], int]:
    U = per_unit.shape[0]
    patterns, _inverse, counts = np.unique(per_unit, axis=0, return_inverse=True, return_counts=True)
    if patterns.shape[0] * _PATTERN_RATIO <= U:
        # few distinct per-unit terms (labels from a handful of coders repeat the same count vectors): how often each
        # pattern is drawn in U draws with replacement is multinomial(U, pattern shares) -- the same distribution as
        # drawing units, at the cost of patterns instead of units per resample
        N = rng.multinomial(U, counts / U, size=n_boot).astype(np.float64)
        alpha, defined = _terms_alpha(N @ patterns, level)
        return alpha[defined].tolist(), int((~defined).sum())
    block = max(1, min(n_boot, _BOOTSTRAP_BLOCK_CELLS // max(1, U)))
    values: list[np.ndarray] = []
    undefined = 0
    done = 0
    while done < n_boot:
        b = min(block, n_boot - done)
        idx = rng.integers(0, U, size=(b, U))  # the same draws as b calls of rng.integers(0, U, size=U)
        W = (
            np.bincount((np.arange(b, dtype=np.int64)[:, None] * U + idx).ravel(), minlength=b * U)
            .reshape(b, U)
            .astype(np.float64)
        )
        alpha, defined = _terms_alpha(W @ per_unit, level)
        values.append(alpha[defined])
        undefined += int((~defined).sum())
        done += b
    return np.concatenate(values).tolist(), undefined
