"""Naive pure-Python reference implementations, written straight from the definitions, loop by loop.

They exist to cross-check the vectorised code (tests) and as the slow baseline of ``bench/agreement.py``; never use
them on real data sizes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and v == "")


def naive_alpha(data: Sequence[Sequence[Any]], level: str = "nominal") -> float:
    """Krippendorff (2011): coincidence matrix o_ck, margins n_c, alpha = 1 - (n-1) sum o d / sum n_c n_k d."""
    n_units = len(data[0]) if data else 0
    o: dict[tuple[Any, Any], float] = defaultdict(float)
    for u in range(n_units):
        vals = [row[u] for row in data if not _missing(row[u])]
        m = len(vals)
        if m < 2:
            continue
        for i in range(m):
            for j in range(m):
                if i != j:
                    o[(vals[i], vals[j])] += 1.0 / (m - 1)
    n_c: dict[Any, float] = defaultdict(float)
    for (c, _k), w in o.items():
        n_c[c] += w
    n = sum(n_c.values())
    values = sorted(n_c)

    def delta(c, k):
        if level == "nominal":
            return 0.0 if c == k else 1.0
        if level == "interval":
            return (c - k) ** 2
        if level == "ratio":
            return 0.0 if c + k == 0 else ((c - k) / (c + k)) ** 2
        lo, hi = (c, k) if c <= k else (k, c)
        between = sum(n_c[g] for g in values if lo <= g <= hi)
        return (between - (n_c[c] + n_c[k]) / 2.0) ** 2

    d_o = sum(w * delta(c, k) for (c, k), w in o.items())
    d_e = sum(n_c[c] * n_c[k] * delta(c, k) for c in values for k in values)
    return 1.0 - (n - 1) * d_o / d_e


def _segments(units: list[tuple[int, int]], B: int, L: int) -> list[tuple[int, int, bool]]:
    """A coder's continuum as (begin, end, is_unit) segments: the units and the gaps between them."""
    segs, pos = [], B
    for b, e in sorted(units):
        if b > pos:
            segs.append((pos, b, False))
        segs.append((b, e, True))
        pos = e
    if pos < B + L:
        segs.append((pos, B + L, False))
    return segs


def _distance(s: tuple[int, int, bool], t: tuple[int, int, bool]) -> float:
    (b1, e1, u1), (b2, e2, u2) = s, t
    if u1 and u2:
        return float((b1 - b2) ** 2 + (e1 - e2) ** 2)
    if u1 and not u2 and b2 <= b1 and e1 <= e2:
        return float((e1 - b1) ** 2)
    if u2 and not u1 and b1 <= b2 and e2 <= e1:
        return float((e2 - b2) ** 2)
    return 0.0


def naive_unitized_alpha(
    spans: Sequence[tuple[Hashable, int, int, Hashable]],
    continuum_length: int,
    continuum_begin: int = 0,
    coders: Sequence[Hashable] | None = None,
) -> dict[str, Any]:
    """alpha_u by sweeping every coder pair's segments (Krippendorff 1995/2004). Returns overall and per category."""
    B, L = continuum_begin, continuum_length
    coder_list = list(coders) if coders is not None else list(dict.fromkeys(s[0] for s in spans))
    R = len(coder_list)
    cats = list(dict.fromkeys(s[3] for s in spans))
    per = {}
    for cat in cats:
        units = {c: [(b, b + ln) for (cc, b, ln, k) in spans if cc == c and k == cat] for c in coder_list}
        segs = {c: _segments(units[c], B, L) for c in coder_list}
        total = 0.0
        for i in range(R):
            for j in range(i + 1, R):
                for s in segs[coder_list[i]]:
                    for t in segs[coder_list[j]]:
                        if s[0] < t[1] and t[0] < s[1]:  # the two segments intersect
                            total += _distance(s, t)
        d_o = 2.0 * total / (R * (R - 1) * L * L)
        lengths = [e - b for c in coder_list for (b, e) in units[c]]
        gaps = [e - b for c in coder_list for (b, e, is_unit) in segs[c] if not is_unit]
        N = len(lengths)
        acc = 0.0
        for ln in lengths:
            acc += (N - 1) * (2 * ln**3 - 3 * ln**2 + ln) / 3.0
            acc += ln * ln * sum(g - ln + 1 for g in gaps if g >= ln)
        d_e = acc * 2.0 / L / (R * L * (R * L - 1) - sum(ln * (ln - 1) for ln in lengths))
        per[cat] = (d_o, d_e)
    agree = lambda d_o, d_e: 0.0 if math.isclose(d_o, d_e, rel_tol=1e-12) else 1.0 - d_o / d_e  # noqa: E731
    d_o = sum(v[0] for v in per.values()) / len(per)
    d_e = sum(v[1] for v in per.values()) / len(per)
    return {"alpha_u": agree(d_o, d_e), "per_category": {k: agree(*v) for k, v in per.items()}}
