"""Tuple design for Best-Worst Scaling (Kiritchenko & Mohammad 2016, "Capturing reliable fine-grained sentiment
associations by crowdsourcing and Best-Worst Scaling"): ``2N`` tuples of 4 for ``N`` items, so that every item
appears in 8 tuples.

Construction: the ``size * T`` slots are filled by concatenated random permutations of the items (plus the head of
one more permutation for the remainder), then cut into tuples of ``size``. Every full permutation gives each item
one slot and the partial one at most one more, so item frequencies differ by at most one. A tuple that got the same
item twice (at a permutation boundary) is repaired by swapping the duplicate with a slot of another tuple where the
swap creates no duplicate; swaps keep the frequencies. Seeded and reproducible.

(``bwsample`` 0.7.0 on PyPI samples overlapping BWS sets but does not promise equal item frequencies, so this
small design is written here.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np

TUPLE_SIZE = 4


def default_n_tuples(n_items: int) -> int:
    """Kiritchenko & Mohammad: 2N tuples for N items."""
    return 2 * n_items


def make_tuples(
    items: Sequence[Hashable], n_tuples: int | None = None, *, size: int = TUPLE_SIZE, seed: int = 0
) -> list[tuple]:
    """``n_tuples`` (default 2N) tuples of ``size`` distinct items; see the module doc."""
    items = list(items)
    n = len(items)
    if len(set(items)) != n:
        raise ValueError("items must be distinct")
    if size < 2:
        raise ValueError("size must be at least 2")
    if n < size:
        raise ValueError(f"{n} items cannot fill a tuple of {size}")
    t = default_n_tuples(n) if n_tuples is None else int(n_tuples)
    if t < 1:
        raise ValueError("n_tuples must be at least 1")
    rng = np.random.default_rng(seed)
    slots = size * t
    passes, rem = divmod(slots, n)
    parts = [rng.permutation(n) for _ in range(passes)]
    if rem:
        parts.append(rng.permutation(n)[:rem])
    grid = np.concatenate(parts).reshape(t, size)
    _repair(grid, rng)
    return [tuple(items[k] for k in row) for row in grid.tolist()]


def _has_dup(row) -> bool:
    return len(set(row)) != len(row)


def _repair(grid: np.ndarray, rng: np.random.Generator) -> None:
    t, size = grid.shape
    bad = [r for r in range(t) if _has_dup(grid[r].tolist())]
    for r in bad:
        for _ in range(100000):
            row = grid[r].tolist()
            seen: set = set()
            p = next((k for k, v in enumerate(row) if v in seen or seen.add(v)), None)
            if p is None:
                break
            other = int(rng.integers(t))
            q = int(rng.integers(size))
            if other == r:
                continue
            a, b = grid[r, p], grid[other, q]
            if b in grid[r] or a in grid[other]:
                continue
            grid[r, p], grid[other, q] = b, a
        else:  # pragma: no cover - needs a pathological N close to size
            raise RuntimeError("could not build a tuple design without repeated items; use more items")


def design_stats(tuples: Sequence[Sequence[Hashable]]) -> dict:
    """Frequencies (min / max per item), tuples with a repeated item, and co-occurring item pairs seen twice+."""
    freq = Counter(x for tup in tuples for x in tup)
    cooc: Counter = Counter()
    for tup in tuples:
        s = sorted(map(str, tup))
        for a in range(len(s)):
            for b in range(a + 1, len(s)):
                cooc[(s[a], s[b])] += 1
    return {
        "tuples": len(tuples),
        "items": len(freq),
        "min_freq": min(freq.values(), default=0),
        "max_freq": max(freq.values(), default=0),
        "tuples_with_repeats": sum(1 for tup in tuples if _has_dup(list(tup))),
        "repeated_cooccurrences": sum(1 for v in cooc.values() if v > 1),
    }
