"""Krippendorff's unitized alpha (alpha_u) for span annotations over a continuum.

The coefficient of Krippendorff (1995, "On the reliability of unitizing contiguous data"; 2004, *Content
Analysis*, 2nd ed., sec. 12.5), in the formulation DKPro Agreement implements as
``KrippendorffAlphaUnitizingAgreement``: per category c, every coder's continuum [B, B+L) is split into the units
(spans) of category c and the gaps between them, and

* D_o(c) = 2 / (R (R-1) L^2) * sum over coder pairs of the distances of their intersecting segments, where two
  intersecting units cost (b1-b2)^2 + (e1-e2)^2, a unit lying wholly inside the other coder's gap costs l^2, and
  everything else costs 0;
* D_e(c) = 2/L * sum_units [ (N_c - 1)(2l^3 - 3l^2 + l)/3 + l^2 sum_{gaps g >= l} (g - l + 1) ]
  / (R L (R L - 1) - sum_units l (l - 1)), over all coders' units of c (N_c of them) and all coders' gaps;
* alpha_u(c) = 1 - D_o(c) / D_e(c) (0 when D_o = D_e, as in DKPro), and the overall
  alpha_u = 1 - mean_c D_o(c) / mean_c D_e(c).

Vectorised: the intersecting unit pairs come from one sort by begin and a ``searchsorted`` on the ends (a unit
overlaps only the units that start inside it), the "inside the other coder's gap" terms from the coders that do
*not* overlap a unit, and sum_{g >= l}(g - l + 1) from prefix sums over the sorted gaps. Units of one coder and one
category must not overlap (the model has no meaning for them; DKPro states the same restriction).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import AgreementError, AgreementInputError, AgreementUndefined


@dataclass
class UnitizedResult:
    alpha_u: float
    per_category: dict[str, dict[str, Any]]
    n_coders: int
    n_spans: int
    continuum_begin: int
    continuum_length: int
    observed_disagreement: float = 0.0
    expected_disagreement: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "alpha_u": self.alpha_u,
            "per_category": self.per_category,
            "n_coders": self.n_coders,
            "n_spans": self.n_spans,
            "n_units": self.n_spans,
            "continuum_begin": self.continuum_begin,
            "continuum_length": self.continuum_length,
            "observed_disagreement": self.observed_disagreement,
            "expected_disagreement": self.expected_disagreement,
            **self.extra,
        }


def _agreement(d_o: float, d_e: float) -> float:
    if math.isclose(d_o, d_e, rel_tol=1e-12, abs_tol=0.0) or d_o == d_e:
        return 0.0
    return 1.0 - d_o / d_e


def _category_disagreements(
    coder: np.ndarray, begin: np.ndarray, length: np.ndarray, R: int, B: int, L: int, index: np.ndarray
) -> tuple[float, float]:
    """(D_o, D_e) of one category; arrays hold that category's units, ``index`` their positions in the input."""
    order = np.lexsort((coder, begin))
    coder, begin, length, index = coder[order], begin[order], length[order], index[order]
    end = begin + length
    n = begin.size
    bf, ef, lf = begin.astype(np.float64), end.astype(np.float64), length.astype(np.float64)

    # --- observed: pairs (i, j), i before j in begin order, with begin_j < end_i (they intersect)
    stop = np.searchsorted(begin, end, side="left")
    cnt = stop - np.arange(n) - 1
    total = int(cnt.sum())
    if total:
        I = np.repeat(np.arange(n), cnt)
        starts = np.cumsum(cnt) - cnt
        J = I + 1 + (np.arange(total) - np.repeat(starts, cnt))
        same = coder[I] == coder[J]
        if same.any():
            k = int(np.argmax(same))
            a, b = sorted((int(index[I[k]]), int(index[J[k]])))
            raise _overlap_error(a, b)
        d_pairs = float(np.sum((bf[I] - bf[J]) ** 2 + (ef[I] - ef[J]) ** 2))
        keys = np.unique(np.concatenate([I.astype(np.int64) * R + coder[J], J.astype(np.int64) * R + coder[I]]))
        covered = np.bincount(keys // R, minlength=n)
    else:
        d_pairs = 0.0
        covered = np.zeros(n, dtype=np.int64)
    d_gap = float(np.sum(lf * lf * (R - 1 - covered)))
    d_o = 2.0 * (d_pairs + d_gap) / (R * (R - 1) * float(L) * float(L))

    # --- expected: all coders' gaps for this category
    by_coder = np.lexsort((begin, coder))
    cb, bb, eb = coder[by_coder], begin[by_coder], end[by_coder]
    first = np.ones(n, dtype=bool)
    first[1:] = cb[1:] != cb[:-1]
    last = np.ones(n, dtype=bool)
    last[:-1] = cb[1:] != cb[:-1]
    inner = bb[1:][~first[1:]] - eb[:-1][~first[1:]]
    gaps = np.concatenate(
        [bb[first] - B, inner, (B + L) - eb[last], np.full(R - np.unique(cb).size, L, dtype=np.int64)]
    )
    gaps = np.sort(gaps[gaps > 0]).astype(np.float64)
    csum = np.concatenate([[0.0], np.cumsum(gaps)])
    pos = np.searchsorted(gaps, lf, side="left")
    n_ge = gaps.size - pos
    sum_ge = csum[-1] - csum[pos]
    gap_term = sum_ge - (lf - 1.0) * n_ge  # sum_{g >= l} (g - l + 1)
    within = (n - 1) * (2.0 * lf**3 - 3.0 * lf**2 + lf) / 3.0
    numer = float(np.sum(within + lf * lf * gap_term)) * 2.0 / float(L)
    denom = float(R) * L * (float(R) * L - 1.0) - float(np.sum(lf * (lf - 1.0)))
    d_e = numer / denom
    return d_o, d_e


def _overlap_error(a: int, b: int) -> AgreementInputError:
    err = AgreementInputError(
        f"spans #{a + 1} and #{b + 1} overlap and have the same coder and category; merge or "
        "drop one (alpha_u needs non-overlapping units per coder and category)"
    )
    err.span_indices = (a, b)
    return err


def unitized_alpha(
    spans: Iterable[Sequence[Any]],
    continuum_length: int,
    *,
    continuum_begin: int = 0,
    coders: Iterable[Hashable] | None = None,
) -> UnitizedResult:
    """alpha_u of ``spans`` = iterable of ``(coder, begin, length, category)`` on [begin, begin + length).

    ``coders``: every coder of the study, including those who marked nothing (they count as one long gap); by default
    the coders that appear in ``spans``. Returns per-category ``alpha_u``, ``observed_disagreement``,
    ``expected_disagreement``, ``n_spans`` and the overall value.

    Errors: fewer than 2 coders, a span outside the continuum or of length <= 0, or two overlapping spans of one coder
    and category -> :class:`AgreementError` / :class:`AgreementInputError` (``span_indices`` = 0-based positions);
    no spans at all -> :class:`AgreementUndefined` (DKPro answers NaN there).
    """
    B, L = int(continuum_begin), int(continuum_length)
    if L <= 0:
        raise AgreementError(f"the continuum must have a positive length, got {continuum_length}")
    rows = list(spans)
    coder_ids: dict[Hashable, int] = {}
    if coders is not None:
        for c in coders:
            coder_ids.setdefault(c, len(coder_ids))
    cats: dict[Hashable, int] = {}
    n = len(rows)
    coder = np.empty(n, dtype=np.int64)
    begin = np.empty(n, dtype=np.int64)
    length = np.empty(n, dtype=np.int64)
    cat = np.empty(n, dtype=np.int64)
    for i, row in enumerate(rows):
        try:
            c, b, ln, k = row
        except (TypeError, ValueError):
            raise _span_error(i, "expected (coder, begin, length, category)") from None
        if coders is not None and c not in coder_ids:
            raise _span_error(i, f"coder {c!r} is not among the study's coders")
        if int(ln) <= 0:
            raise _span_error(i, f"length must be positive, got {ln}")
        if int(b) < B or int(b) + int(ln) > B + L:
            raise _span_error(i, f"span [{b}, {int(b) + int(ln)}) lies outside the continuum [{B}, {B + L})")
        coder[i] = coder_ids.setdefault(c, len(coder_ids))
        begin[i], length[i] = int(b), int(ln)
        cat[i] = cats.setdefault(k, len(cats))
    R = len(coder_ids)
    if R < 2:
        raise AgreementError(f"alpha_u needs at least 2 coders; got {R}")
    if n == 0:
        raise AgreementUndefined("alpha_u is undefined: there are no spans at all (no category to compare)")
    per_category: dict[str, dict[str, Any]] = {}
    d_os, d_es = [], []
    index = np.arange(n)
    for k, kid in cats.items():
        sel = cat == kid
        d_o, d_e = _category_disagreements(coder[sel], begin[sel], length[sel], R, B, L, index[sel])
        d_os.append(d_o)
        d_es.append(d_e)
        per_category[str(k)] = {
            "alpha_u": _agreement(d_o, d_e),
            "observed_disagreement": d_o,
            "expected_disagreement": d_e,
            "n_spans": int(sel.sum()),
        }
    d_o, d_e = float(np.mean(d_os)), float(np.mean(d_es))
    return UnitizedResult(
        alpha_u=_agreement(d_o, d_e),
        per_category=per_category,
        n_coders=R,
        n_spans=n,
        continuum_begin=B,
        continuum_length=L,
        observed_disagreement=d_o,
        expected_disagreement=d_e,
    )


def _span_error(i: int, reason: str) -> AgreementInputError:
    err = AgreementInputError(f"span #{i + 1}: {reason}")
    err.span_indices = (i,)
    return err


def spans_on_continuum(
    item_spans: Iterable[Sequence[Any]], item_lengths: Sequence[tuple[Hashable, int]]
) -> tuple[list[tuple[Any, int, int, Any]], int]:
    """Lay items end to end (in ``item_lengths`` order) and move each ``(coder, item, begin, length, category)``
    span to continuum coordinates. Returns ``(spans, continuum_length)`` for :func:`unitized_alpha`.

    Raises :class:`AgreementInputError` (``span_indices``) for an unknown item or a span that leaves its item.
    """
    offsets: dict[Hashable, tuple[int, int]] = {}
    total = 0
    for item, ln in item_lengths:
        if item in offsets:
            raise AgreementError(f"item {item!r} is listed twice in the item lengths")
        if int(ln) < 0:
            raise AgreementError(f"item {item!r} has a negative length {ln}")
        offsets[item] = (total, int(ln))
        total += int(ln)
    out = []
    for i, (coder, item, b, ln, category) in enumerate(item_spans):
        if item not in offsets:
            raise _span_error(i, f"item {item!r} has no length")
        off, item_len = offsets[item]
        b, ln = int(b), int(ln)
        if ln <= 0:
            raise _span_error(i, f"length must be positive, got {ln}")
        if b < 0 or b + ln > item_len:
            raise _span_error(i, f"span [{b}, {b + ln}) leaves item {item!r} of length {item_len}")
        out.append((coder, off + b, ln, category))
    return out, total
