"""The one training toolkit of the ML trainers: seeds, devices, mixed precision, hyperparameters, optimiser and
schedule, the step loop, continuable runs and seed optimisation.

Every trainer kind (:mod:`ml.trainers`, :mod:`ml.generation.train`) trains through this module; the
sentence-transformers kinds (``crossencoder``, ``biencoder``, ``augsbert``: :mod:`ml.similarity.models`) keep the
library's own Trainers and take only the seed, the device and the hyperparameters from here.

Seeds, devices and CPU threads
    :func:`set_seed` (``random``, numpy, torch on every device), :func:`pick_device` (the given device, else
    ``cuda`` when available, else ``cpu``), :func:`autocast` (fp16 autocast on CUDA, nothing on CPU),
    :func:`without_denormals` (CPU: denormals flushed, one intra-op thread), :func:`apply_threads` (torch /
    OpenMP threads of a training process: ``manage.py train --threads N``, else ``$ARGORA_TORCH_THREADS``, else
    one on a CPU-only machine -- the default, since every worker process is one training -- and torch's own
    choice where CUDA trains).
Hyperparameters
    :func:`with_defaults` (the request's values over the kind's defaults) and :func:`resolve_hyperparameters`
    (defaults < ``$ARGORA_TRAINER_HYPERPARAMETERS[kind]`` < the request; unknown names refused; enumerated values
    checked). :func:`plan_steps` / :func:`total_steps`: optimisation steps and epochs from the data size.
Optimiser and schedule
    :func:`decay_groups` (parameter groups: weight decay except biases / norms, heads at their own learning rate),
    :func:`adamw` (AdamW + :func:`linear_warmup_decay`, linear warm-up then linear decay to 0).
The step loop
    :class:`TrainLoop`: epochs x batches; a callable gives each batch's loss (forward under :func:`autocast`), then
    zero_grad, backward (GradScaler on CUDA), gradients clipped to unit norm, optimiser and schedule step; progress
    through the :class:`argora.progress.Progress` protocol; dev evaluation at epoch ends or every N steps with the
    best weights kept and early stopping. Its :meth:`TrainLoop.steps` is a generator (it yields after every step),
    so a run can stop part-way and continue: :class:`LoopRun`, the run interface of
    :func:`ml.seeds.seed_optimise_runs`, and :func:`seeded_run` (AugSBERT §3.1 seed optimisation).
Budgets
    ``with training.budget(max_steps=N, max_seconds=S) as b:`` caps every :class:`TrainLoop` run inside it (the
    retrain loop, :mod:`ml.loop`): optimisation steps are counted across the loops of the block (seed probes
    included) and the wall clock from the block's start, both checked between steps; at the cap the loop stops
    as if it had reached its last step (a last dev evaluation when it evaluates, best weights restored) and
    ``b.capped`` says why (``"max_steps"`` / ``"max_seconds"``; ``""``: not capped). ``0`` = no cap. The
    sentence-transformers kinds train in the library's own Trainers and are not capped.

Importing this module is cheap (torch is imported by the functions that use it): :mod:`ml.rankers` (imported by
annotation when items are built) and :mod:`ml.generation.train` (imported at start-up) import it.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import json
import math
import os
import random
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from argora.progress import Progress, null_progress
from ml.errors import TrainerError
from ml.seeds import seed_optimise_runs

ENV_HYPERPARAMETERS = "ARGORA_TRAINER_HYPERPARAMETERS"


# --- seeds and devices -----------------------------------------------------------------------------


def set_seed(seed: int) -> None:
    """Seed ``random``, numpy's global generator and torch (CPU and every CUDA device)."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def pick_device(device: str | None = None) -> str:
    """``device`` if given, else ``"cuda"`` when available, else ``"cpu"``."""
    if device:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def is_cuda(device) -> bool:
    return str(device).startswith("cuda")


def autocast(device, enabled: bool = True):
    """fp16 autocast on CUDA; a no-op context on CPU (or when not ``enabled``)."""
    if enabled and is_cuda(device):
        import torch

        return torch.autocast("cuda", dtype=torch.float16)
    return contextlib.nullcontext()


ENV_THREADS = "ARGORA_TORCH_THREADS"


def thread_count(threads: int | None = None) -> int | None:
    """The torch threads a training run uses: ``threads`` when given (>= 1), else ``$ARGORA_TORCH_THREADS`` (a
    positive integer; ``0`` or ``auto``: torch's own choice, i.e. None), else 1 when no CUDA device is there
    (measured on a busy 2-core machine: one epoch of the tagger took 58 minutes on 2 threads, 8 on one, the
    threads waiting in OpenMP barriers), else None (leave torch's choice).
    Raises :class:`TrainerError` for a value that is not a positive integer."""
    if threads is not None:
        if int(threads) < 1:
            raise TrainerError(f"threads: must be >= 1, got {threads}")
        return int(threads)
    raw = os.environ.get(ENV_THREADS, "").strip().lower()
    if raw in ("0", "auto"):
        return None
    if raw:
        try:
            value = int(raw)
        except ValueError:
            raise TrainerError(f"{ENV_THREADS}: not a whole number ({raw!r})") from None
        if value < 1:
            raise TrainerError(f"{ENV_THREADS}: must be >= 1 (or 0 / auto), got {value}")
        return value
    import torch

    return None if torch.cuda.is_available() else 1


def apply_threads(threads: int | None = None) -> int:
    """Set torch's intra-op threads (and ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` for what starts later) to
    :func:`thread_count`; returns the threads torch uses now. The inter-op pool is set too when torch still
    allows it (only before its first parallel work)."""
    import torch

    n = thread_count(threads)
    if n is not None:
        if torch.get_num_threads() != n:
            torch.set_num_threads(n)
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = str(n)
        try:
            torch.set_num_interop_threads(n)
        except RuntimeError:  # the inter-op pool already started: it stays as it is
            pass
    return torch.get_num_threads()


_guard_depth = 0


@contextlib.contextmanager
def without_denormals(device):
    """On CPU, run the block with denormal floats flushed to zero, on one intra-op thread (both restored after).

    Small and warm-started models drift into denormal values within a few steps (softmax tails over a 30k
    vocabulary) and every CPU operation on them then takes the slow path. ``torch.set_flush_denormal`` sets only
    the calling thread's FTZ/DAZ flags; OpenMP worker threads keep the flags they were started with, so the block
    runs on the calling thread alone. Measured on this machine (2 cores): a 2-layer BERT decoder (hidden 32) took
    0.7-1.1 s per training step on 2 threads with denormals and 0.08 s on 1 thread without; the warm-started
    MiniLM decoder 7.8 s and 0.67 s. ``ARGORA_FLUSH_DENORMALS=0`` turns the guard off; on CUDA it does nothing.
    """
    global _guard_depth
    import torch

    if is_cuda(device) or os.environ.get("ARGORA_FLUSH_DENORMALS", "1") == "0":
        yield
        return
    threads = torch.get_num_threads()
    if _guard_depth == 0:
        torch.set_flush_denormal(True)
        torch.set_num_threads(1)
    _guard_depth += 1
    try:
        yield
    finally:
        _guard_depth -= 1
        if _guard_depth == 0:
            torch.set_flush_denormal(False)
            torch.set_num_threads(threads)


# --- hyperparameters and steps ---------------------------------------------------------------------


def with_defaults(defaults: Mapping, given: Mapping | None) -> dict:
    """The given hyperparameters over the defaults (names not checked)."""
    out = dict(defaults)
    out.update(given or {})
    return out


def resolve_hyperparameters(
    kind: str, defaults: Mapping, given: Mapping | None, *, choices: Mapping[str, Sequence] | None = None
) -> dict:
    """defaults < ``$ARGORA_TRAINER_HYPERPARAMETERS[kind]`` < ``given``; unknown names are refused, and so is a
    value of a ``choices`` name that is not one of its choices."""
    hp = dict(defaults)
    raw = os.environ.get(ENV_HYPERPARAMETERS, "").strip()
    if raw:
        try:
            env = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise TrainerError(f"{ENV_HYPERPARAMETERS}: not JSON ({exc.msg})") from None
        hp.update((env or {}).get(kind) or {})
    hp.update(given or {})
    unknown = sorted(set(hp) - set(defaults))
    if unknown:
        raise TrainerError(
            f"hyperparameters: unknown for {kind!r}: {', '.join(unknown)} (known: {', '.join(sorted(defaults))})"
        )
    for name, options in (choices or {}).items():
        if hp[name] not in options:
            raise TrainerError(f"hyperparameters: {name} must be one of {', '.join(options)}, got {hp[name]!r}")
    return hp


def plan_steps(n_units: int, batch_size: int, epochs: int, max_steps: int = 0, *, cap: bool = False) -> tuple[int, int]:
    """``(total optimisation steps, epochs)``: ``ceil(n_units / batch_size)`` steps an epoch (at least 1) times
    ``epochs``. ``max_steps > 0`` replaces that total (``cap``: caps it, unless ``epochs`` is 0); the epochs are then
    as many as the total needs."""
    per_epoch = max(1, math.ceil(max(1, n_units) / int(batch_size)))
    total = per_epoch * int(epochs)
    if max_steps and int(max_steps) > 0:
        total = min(total, int(max_steps)) if cap and epochs else int(max_steps)
    return total, math.ceil(total / per_epoch)


def total_steps(hp: Mapping, n_units: int, *, cap: bool = False) -> int:
    """At least one step: :func:`plan_steps` from ``hp["batch_size"]``, ``hp["epochs"]``, ``hp["max_steps"]``."""
    return max(
        1, plan_steps(n_units, int(hp["batch_size"]), int(hp["epochs"]), int(hp.get("max_steps") or 0), cap=cap)[0]
    )


# --- optimiser and schedule ------------------------------------------------------------------------


def decay_groups(
    model, *, lr: float, weight_decay: float, head_lr: float | None = None, head_names: Sequence[str] = ()
) -> list[dict]:
    """AdamW parameter groups of the trainable parameters: weight decay at ``lr``; no decay for biases, norms and
    other 1-d parameters; parameters under ``head_names`` (name prefixes) at ``head_lr`` (default ``lr``), no
    decay. Empty groups are left out."""
    head_lr = lr if head_lr is None else head_lr
    decay, no_decay, head = [], [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if any(name.startswith(h) for h in head_names):
            head.append(p)
        elif p.ndim < 2 or "norm" in name.lower():
            no_decay.append(p)
        else:
            decay.append(p)
    groups = [
        {"params": decay, "weight_decay": float(weight_decay), "lr": float(lr)},
        {"params": no_decay, "weight_decay": 0.0, "lr": float(lr)},
        {"params": head, "weight_decay": 0.0, "lr": float(head_lr)},
    ]
    return [g for g in groups if g["params"]]


def linear_warmup_decay(optimizer, total_steps: int, warmup_ratio: float, *, ramp: bool = False):
    """Linear warm-up over ``warmup_ratio`` of the steps, then linear decay to 0 at ``total_steps``.

    Default: ``int(total * ratio)`` warm-up steps starting at learning rate 0 (``transformers``'
    ``get_linear_schedule_with_warmup``). ``ramp``: ``round(total * ratio)`` warm-up steps, the first step already at
    ``1 / warmup`` of the rate (the ranker and valnov kinds)."""
    import torch

    total = max(1, int(total_steps))
    warmup = int(round(total * float(warmup_ratio))) if ramp else int(total * float(warmup_ratio))

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup if ramp else step / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def adamw(
    param_groups: list[dict], *, total_steps: int, warmup_ratio: float, weight_decay: float = 0.01, ramp: bool = False
):
    """``(optimizer, scheduler)``: AdamW over ``param_groups`` (``weight_decay`` for groups that name none) with
    :func:`linear_warmup_decay`."""
    import torch

    optimizer = torch.optim.AdamW(param_groups, weight_decay=float(weight_decay))
    return optimizer, linear_warmup_decay(optimizer, total_steps, warmup_ratio, ramp=ramp)


# --- batches ---------------------------------------------------------------------------------------


def shuffled_batches(rng: random.Random, n: int, size: int, *, shuffle: bool = True) -> Iterator[list[int]]:
    """One epoch: the indices ``0..n-1`` (shuffled by ``rng``) in batches of ``size``."""
    order = list(range(n))
    if shuffle:
        rng.shuffle(order)
    for k in range(0, len(order), size):
        yield order[k : k + size]


def endless_batches(rng: random.Random, n: int, size: int) -> Iterator[list[int]]:
    """Batches of ``size`` indices from an endless stream of shuffled passes over ``0..n-1`` (a batch may span
    two passes)."""
    queue: list[int] = []
    while True:
        if len(queue) < size:
            order = list(range(n))
            rng.shuffle(order)
            queue.extend(order)
        batch, queue = queue[:size], queue[size:]
        yield batch


# --- the step loop ---------------------------------------------------------------------------------

_END = object()  # an epoch's batches ran out


def higher(key: str) -> Callable[[dict, dict], bool]:
    """Dev metrics are better when ``key`` is higher (missing counts as 0)."""
    return lambda new, best: (new.get(key) or 0.0) > (best.get(key) or 0.0)


def lower(key: str) -> Callable[[dict, dict], bool]:
    """Dev metrics are better when ``key`` is lower (missing counts as infinite)."""
    return lambda new, best: new.get(key, math.inf) < best.get(key, math.inf)


def epoch_message(loop: TrainLoop, metrics: dict | None) -> str | None:
    """The default progress line: ``epoch E/N loss L`` after every step, nothing after an evaluation."""
    if metrics is not None:
        return None
    return f"epoch {loop.epoch}/{loop.epochs} loss {loop.last_loss:.4f}"


@dataclass
class Budget:
    """A step / wall-clock cap on the training runs of a :func:`budget` block (``0`` = no cap)."""

    max_steps: int = 0
    max_seconds: float = 0.0
    steps: int = 0
    started: float = field(default_factory=lambda: time.monotonic())
    capped: str = ""

    def exhausted(self) -> str:
        """Why no further step may run (``"max_steps"`` / ``"max_seconds"``), or ``""``."""
        if self.max_steps and self.steps >= self.max_steps:
            return "max_steps"
        if self.max_seconds and time.monotonic() - self.started >= self.max_seconds:
            return "max_seconds"
        return ""

    def as_dict(self) -> dict:
        return {
            "max_steps": self.max_steps,
            "max_seconds": self.max_seconds,
            "steps": self.steps,
            "seconds": round(time.monotonic() - self.started, 3),
            "capped": self.capped,
        }


_BUDGET: ContextVar[Budget | None] = ContextVar("argora_training_budget", default=None)


@contextlib.contextmanager
def budget(max_steps: int = 0, max_seconds: float = 0.0):
    """Cap the :class:`TrainLoop` runs inside the block (module docstring, "Budgets"); yields the :class:`Budget`."""
    current = Budget(max_steps=max(0, int(max_steps or 0)), max_seconds=max(0.0, float(max_seconds or 0)))
    token = _BUDGET.set(current)
    try:
        yield current
    finally:
        _BUDGET.reset(token)


def current_budget() -> Budget | None:
    return _BUDGET.get()


class TrainLoop:
    """Epochs x batches of optimisation steps over ``model``.

    ``batches(epoch)`` (``epoch`` from 0) gives an epoch's batches (an endless iterator with ``epochs=1`` for a
    step-counted run); ``loss_of(batch)`` runs the forward pass (under :func:`autocast` when ``amp``) and returns the
    loss. Each step: ``model.train()``, forward, ``zero_grad``, backward (scaled by a GradScaler on CUDA when
    ``amp``), gradients clipped to norm ``clip``, optimiser step, scheduler step. ``total`` steps at most.

    After each step ``describe(loop, None)`` may return a progress line for ``progress(step, total, line)``; after
    each evaluation ``describe(loop, metrics)``. Evaluation (``evaluate() -> metrics``, optional): at the end of
    every ``eval_epochs``-th epoch and of the last one (``eval_epochs=0``: never at epoch ends), and after every
    ``eval_steps``-th step and the last one (``eval_steps=0``: never). ``better(new, best)`` decides; with
    ``keep_best`` the best weights are copied (only when more training follows) and restored at the end, without it
    the last weights stay and ``best`` is their evaluation. ``patience``: stop after that many evaluations without
    improvement.

    State, readable while it runs and after: ``step``, ``epoch`` (from 1), ``last_loss``, ``history`` (``{"step",
    "epoch", "loss"}`` per step), ``evals`` (``{"epoch", "step", "loss", "metrics"}`` per evaluation; ``loss``: the
    last training loss), ``best`` (metrics) and ``best_eval`` (its entry in ``evals``).
    """

    def __init__(
        self,
        model,
        optimizer,
        scheduler,
        loss_of: Callable[[Any], Any],
        batches: Callable[[int], Iterable],
        *,
        device: str,
        total: int,
        epochs: int = 1,
        amp: bool = True,
        clip: float = 1.0,
        progress: Progress = null_progress,
        describe: Callable[[TrainLoop, dict | None], str | None] = epoch_message,
        evaluate: Callable[[], dict] | None = None,
        eval_epochs: int = 1,
        eval_steps: int = 0,
        better: Callable[[dict, dict], bool] | None = None,
        keep_best: bool = True,
        patience: int | None = None,
    ):
        import torch

        self.model, self.optimizer, self.scheduler = model, optimizer, scheduler
        self.loss_of, self.batches, self.device = loss_of, batches, str(device)
        self.total, self.epochs, self.amp, self.clip = int(total), int(epochs), bool(amp), float(clip)
        self.progress, self.describe = progress, describe
        self.evaluate, self.eval_epochs, self.eval_steps = evaluate, int(eval_epochs or 0), int(eval_steps or 0)
        self.better = better or (lambda new, best: False)
        self.keep_best, self.patience = keep_best, (int(patience) if patience else None)
        self.scaler = torch.amp.GradScaler("cuda") if self.amp and is_cuda(self.device) else None
        self.step, self.epoch, self.last_loss = 0, 0, None
        self.history: list[dict] = []
        self.evals: list[dict] = []
        self.best: dict | None = None
        self.best_eval: dict | None = None
        self._best_state = None
        self._since_best = 0
        self.capped = ""  # why a budget stopped the loop early ("max_steps" / "max_seconds"), "" when it did not
        self._evaluated_at = -1  # the step of the last evaluation

    def optimise(self, batch):
        """One optimisation step on ``batch``; returns the loss."""
        import torch

        self.model.train()
        with autocast(self.device, self.amp):
            loss = self.loss_of(batch)
        self.optimizer.zero_grad(set_to_none=True)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
            self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        self.last_loss = float(loss.detach().float().item())
        self.history.append({"step": self.step, "epoch": self.epoch, "loss": self.last_loss})
        self._report(None)
        return loss

    def _spend(self) -> bool:
        """Count the step against the budget of the block (if any); True when it is now spent."""
        current = _BUDGET.get()
        if current is None:
            return False
        current.steps += 1
        return bool(current.exhausted())

    def _over_budget(self) -> bool:
        """True (and ``capped`` set, on the loop and the budget) when the budget allows no further step."""
        current = _BUDGET.get()
        reason = current.exhausted() if current is not None else ""
        if reason:
            self.capped = current.capped = reason
        return bool(reason)

    def _report(self, metrics: dict | None) -> None:
        line = self.describe(self, metrics)
        if line is not None:
            self.progress(self.step, self.total, line)

    def _checkpoint(self, last: bool) -> bool:
        """Evaluate on dev, keep the best; True when patience ran out."""
        metrics = self.evaluate() or {}
        self._evaluated_at = self.step
        entry = {"epoch": self.epoch, "step": self.step, "loss": self.last_loss, "metrics": metrics}
        self.evals.append(entry)
        self._report(metrics)
        if self.best is None or self.better(metrics, self.best):
            self.best, self.best_eval, self._since_best = metrics, entry, 0
            if not last and self.keep_best:  # only worth a copy when more training follows
                self._best_state = copy.deepcopy({k: v.detach().cpu() for k, v in self.model.state_dict().items()})
            else:
                self._best_state = None  # the current weights are the best
            return False
        self._since_best += 1
        return self.patience is not None and self._since_best >= self.patience

    def steps(self) -> Generator[int, None, TrainLoop]:
        """The loop: yields the step count after every step; returns the loop (best weights restored)."""
        stop = False
        for epoch in range(self.epochs):
            self.epoch = epoch + 1
            batches = iter(self.batches(epoch))
            while self.step < self.total:
                if self._over_budget():
                    break
                batch = next(batches, _END)
                if batch is _END:
                    break
                self.optimise(batch)
                spent = self._spend()
                if (
                    self.evaluate is not None
                    and self.eval_steps
                    and (self.step % self.eval_steps == 0 or self.step >= self.total or spent)
                ):
                    stop = self._checkpoint(last=self.step >= self.total or spent)
                yield self.step
                if stop:
                    break
            last = self.epoch == self.epochs or self.step >= self.total or bool(self.capped)
            if stop:
                break
            if self.capped:  # stopped by the budget: one last evaluation of these weights, unless just done
                due = self.step > 0 and self._evaluated_at != self.step
            else:
                due = bool(self.eval_epochs) and (last or self.epoch % self.eval_epochs == 0)
            if self.evaluate is not None and due and self._checkpoint(last):
                break
            if last:
                break
        self._restore_best()
        return self

    def _restore_best(self) -> None:
        if self.best_eval is None or self.best_eval is self.evals[-1]:
            return
        if self._best_state is not None:
            self.model.load_state_dict(self._best_state)
            self._best_state = None
        else:  # keep_best off: the last weights stay, and so do their metrics
            self.best, self.best_eval = dict(self.evaluate() or {}), self.evals[-1]

    def run(self) -> TrainLoop:
        """Train to the end."""
        return LoopRun(self.steps()).finish()


class LoopRun:
    """A training loop written as a generator (it yields the step count after every optimisation step and returns
    its result) as a run that can be continued: ``run(steps)`` trains until ``steps`` steps are done and returns
    ``probe()`` (the dev primary metric at that point) -- the interface of :func:`ml.seeds.seed_optimise_runs`;
    :meth:`finish` trains to the end and returns what the loop returned."""

    def __init__(self, loop: Generator[int, None, Any], probe: Callable[[], float] | None = None):
        self._loop, self._probe = loop, probe
        self.done = 0
        self.result = None
        self._finished = False

    def train_to(self, steps: float) -> None:
        while not self._finished and self.done < steps:
            try:
                self.done = next(self._loop)
            except StopIteration as stop:
                self.result, self._finished = stop.value, True

    def __call__(self, steps: int) -> float:
        self.train_to(steps)
        return float(self._probe()) if self._probe is not None else 0.0

    def finish(self):
        self.train_to(math.inf)
        return self.result


def seeded_run(
    make_run: Callable[[int], Callable[[int], float]],
    hp: Mapping,
    *,
    seed: int,
    total: int,
    progress: Progress = null_progress,
) -> tuple[Any, int, dict]:
    """``(run, seed, probe scores)``: seed optimisation (AugSBERT §3.1, :func:`ml.seeds.seed_optimise_runs`) when
    ``hp["seeds"]`` lists several seeds -- each is trained to ``hp["probe_fraction"]`` (default 0.2) of ``total``
    steps, the best on dev is returned --, else a new run with the single listed seed or ``seed`` (no probes). The
    caller trains the run to the end."""
    seeds = [int(s) for s in (hp.get("seeds") or [])]
    if len(seeds) > 1:
        fraction = hp.get("probe_fraction")
        chosen, run, probes = seed_optimise_runs(
            make_run,
            seeds,
            total_steps=total,
            probe_fraction=0.2 if fraction is None else float(fraction),
            progress=progress,
        )
        gc.collect()  # the dropped runs (a run may refer to itself through its loop): free their models now
        return run, chosen, probes
    chosen = seeds[0] if seeds else int(seed)
    return make_run(chosen), chosen, {}
