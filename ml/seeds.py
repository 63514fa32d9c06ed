"""Seed optimisation (AugSBERT §3.1, App. D): every seed is trained to ``probe_fraction`` (20 %) of the steps, the
best on the dev set is kept and the trainer continues only that one to the end.

The training toolkit's continuable runs (:class:`ml.training.LoopRun`, :func:`ml.training.seeded_run`) and the
sentence-transformers kinds (:mod:`ml.similarity.models`) search seeds through :func:`seed_optimise_runs`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from argora.progress import Progress, null_progress


def seed_optimise_runs(
    train_fn_factory: Callable[[int], Callable[[int], float]],
    seeds: Iterable[int],
    *,
    total_steps: int,
    probe_fraction: float = 0.2,
    higher_is_better: bool = True,
    progress: Progress = null_progress,
) -> tuple[int, Callable[[int], float], dict[int, float]]:
    """Probe every seed to ``probe_fraction`` of ``total_steps``; return ``(best seed, its run, probe scores)``.

    ``train_fn_factory(seed)`` returns a run: ``run(steps) -> dev score`` trains (continuing where it stopped) until
    ``steps`` optimisation steps are done and returns the dev score. The caller continues the best run with
    ``run(total_steps)``; the other runs are dropped. Ties go to the earlier seed.
    """
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds: give at least one seed")
    probe = max(1, min(int(total_steps), round(total_steps * probe_fraction)))
    scores: dict[int, float] = {}
    best_seed, best_run, best_score = None, None, None
    for i, seed in enumerate(seeds):
        run = train_fn_factory(seed)
        score = float(run(probe))
        scores[seed] = score
        progress(i + 1, len(seeds), f"seed {seed}: {score:.4f} at {probe}/{total_steps} steps")
        if best_score is None or (score > best_score if higher_is_better else score < best_score):
            best_seed, best_run, best_score = seed, run, score
        else:
            del run
    return best_seed, best_run, scores


def seed_optimise(
    train_fn_factory,
    seeds,
    *,
    total_steps: int,
    probe_fraction: float = 0.2,
    higher_is_better: bool = True,
    progress: Progress = null_progress,
) -> int:
    """The best seed (see :func:`seed_optimise_runs`)."""
    return seed_optimise_runs(
        train_fn_factory,
        seeds,
        total_steps=total_steps,
        probe_fraction=probe_fraction,
        higher_is_better=higher_is_better,
        progress=progress,
    )[0]
