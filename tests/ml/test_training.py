"""The ML training toolkit (:mod:`ml.training`): seeds, devices, hyperparameters, steps, optimiser and schedule, the
step loop with dev evaluation / best weights / early stopping, continuable runs and seed optimisation."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch

from ml import training
from ml.errors import TrainerError

# --- seeds, devices, hyperparameters ---------------------------------------------------------------


def test_set_seed_seeds_random_numpy_and_torch():
    def draw():
        return random.random(), float(np.random.rand()), float(torch.rand(1))

    training.set_seed(5)
    first = draw()
    training.set_seed(5)
    assert draw() == first
    training.set_seed(6)
    assert draw() != first
    training.set_seed(2**32 + 5)  # numpy takes the seed modulo 2**32
    assert float(np.random.rand()) == first[1]


def test_pick_device_keeps_a_given_device():
    assert training.pick_device("cpu") == "cpu" and training.pick_device("cuda:1") == "cuda:1"
    assert training.pick_device() == ("cuda" if torch.cuda.is_available() else "cpu")
    assert training.is_cuda("cuda:0") and not training.is_cuda("cpu")


def test_resolve_hyperparameters_layers_refuses_unknown_names_and_checks_choices(monkeypatch):
    defaults = {"lr": 1.0, "epochs": 2, "eval": "a"}
    monkeypatch.setenv(training.ENV_HYPERPARAMETERS, json.dumps({"k": {"lr": 2.0, "epochs": 3}, "other": {"lr": 9}}))
    assert training.resolve_hyperparameters("k", defaults, {"epochs": 4}) == {"lr": 2.0, "epochs": 4, "eval": "a"}
    with pytest.raises(TrainerError, match=r"unknown for 'k': bogus \(known: epochs, eval, lr\)"):
        training.resolve_hyperparameters("k", defaults, {"bogus": 1})
    with pytest.raises(TrainerError, match=r"eval must be one of a, b, got 'c'"):
        training.resolve_hyperparameters("k", defaults, {"eval": "c"}, choices={"eval": ("a", "b")})
    monkeypatch.setenv(training.ENV_HYPERPARAMETERS, "{nope")
    with pytest.raises(TrainerError, match="ARGORA_TRAINER_HYPERPARAMETERS: not JSON"):
        training.resolve_hyperparameters("k", defaults, {})
    assert training.with_defaults({"a": 1, "b": 2}, {"b": 3, "c": 4}) == {"a": 1, "b": 3, "c": 4}


def test_plan_steps_replaces_or_caps_the_total_with_max_steps():
    assert training.plan_steps(10, 4, 3) == (9, 3)  # 3 steps an epoch
    assert training.plan_steps(10, 4, 3, 20) == (20, 7)  # max_steps replaces the total
    assert training.plan_steps(10, 4, 3, 5, cap=True) == (5, 2)  # ... or caps it
    assert training.plan_steps(10, 4, 3, 20, cap=True) == (9, 3)
    assert training.plan_steps(10, 4, 0, 5, cap=True) == (5, 2)  # no epochs: max_steps it is
    assert training.plan_steps(0, 4, 2) == (2, 2)  # at least one step an epoch
    assert training.total_steps({"batch_size": 4, "epochs": 0, "max_steps": 0}, 10) == 1
    assert training.total_steps({"batch_size": 4, "epochs": 2, "max_steps": 3}, 10) == 3


# --- optimiser and schedule ------------------------------------------------------------------------


def _rates(scheduler, optimizer, steps):
    out = []
    for _ in range(steps):
        out.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return out


def test_linear_warmup_decay_matches_transformers_and_the_ramp_style():
    from transformers import get_linear_schedule_with_warmup

    def opt():
        return torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1.0)

    for total, ratio in ((10, 0.1), (7, 0.3), (5, 0.0)):
        a, b = opt(), opt()
        ours = training.linear_warmup_decay(a, total, ratio)
        theirs = get_linear_schedule_with_warmup(b, int(total * ratio), total)
        assert _rates(ours, a, total) == _rates(theirs, b, total)
    a = opt()  # ramp: round(10 * .25) = 2 warm-up steps, the first already at 1/2
    assert _rates(training.linear_warmup_decay(a, 10, 0.25, ramp=True), a, 10) == pytest.approx(
        [0.5, 1.0, 1.0, 7 / 8, 6 / 8, 5 / 8, 4 / 8, 3 / 8, 2 / 8, 1 / 8]
    )


def test_decay_groups_spare_biases_and_norms_and_put_heads_at_their_rate():
    model = torch.nn.ModuleDict(
        {"body": torch.nn.Linear(3, 3), "LayerNorm": torch.nn.LayerNorm(3), "head": torch.nn.Linear(3, 1)}
    )
    model["body"].bias.requires_grad_(False)
    groups = training.decay_groups(model, lr=0.1, weight_decay=0.01, head_lr=1.0, head_names=("head",))
    named = {id(p): n for n, p in model.named_parameters()}
    assert [([named[id(p)] for p in g["params"]], g["lr"], g["weight_decay"]) for g in groups] == [
        (["body.weight"], 0.1, 0.01),
        (["LayerNorm.weight", "LayerNorm.bias"], 0.1, 0.0),
        (["head.weight", "head.bias"], 1.0, 0.0),
    ]
    optimizer, _ = training.adamw(groups, total_steps=4, warmup_ratio=0.0)
    assert isinstance(optimizer, torch.optim.AdamW) and len(optimizer.param_groups) == 3


# --- the step loop ---------------------------------------------------------------------------------


class Scripted:
    """A one-weight model, trained by the loop; ``evaluate`` returns the next scripted dev loss and remembers the
    weight it saw."""

    def __init__(self, dev_losses):
        torch.manual_seed(0)
        self.model = torch.nn.Linear(1, 1, bias=False)
        self.dev_losses = list(dev_losses)
        self.seen = []  # (weight, dev loss) per evaluation

    def weight(self) -> float:
        return float(self.model.weight.detach())

    def evaluate(self) -> dict:
        loss = self.dev_losses[len(self.seen)]
        self.seen.append((self.weight(), loss))
        return {"loss": loss}

    def loop(self, *, total=8, epochs=4, batches_per_epoch=2, **kw):
        opt, sched = training.adamw(
            [{"params": list(self.model.parameters()), "lr": 0.1}], total_steps=total, warmup_ratio=0.0
        )
        x = torch.ones(1, 1)
        return training.TrainLoop(
            self.model,
            opt,
            sched,
            lambda b: ((self.model(x) - 5.0) ** 2).mean(),
            lambda epoch: iter(range(batches_per_epoch)),
            device="cpu",
            total=total,
            epochs=epochs,
            evaluate=self.evaluate,
            better=training.lower("loss"),
            **kw,
        )


def test_loop_keeps_the_best_epoch_and_stops_early():
    s = Scripted([3.0, 1.0, 2.0, 2.5, 0.5])
    lines = []
    loop = s.loop(total=10, epochs=5, patience=2, progress=lambda done, total, desc: lines.append((done, total, desc)))
    assert loop.run() is loop
    assert [(e["epoch"], e["step"]) for e in loop.evals] == [(1, 2), (2, 4), (3, 6), (4, 8)]  # stopped: patience 2
    assert loop.step == 8 and len(loop.history) == 8 and loop.history[2]["epoch"] == 2
    assert loop.best == {"loss": 1.0} and loop.best_eval["epoch"] == 2
    assert s.weight() == s.seen[1][0]  # the weights of epoch 2 are back
    assert [ln[:2] for ln in lines] == [(i, 10) for i in range(1, 9)]
    assert lines[0][2] == f"epoch 1/5 loss {loop.history[0]['loss']:.4f}"


def test_loop_without_keep_best_keeps_the_last_weights_and_their_metrics():
    s = Scripted([1.0, 2.0, 3.0, 4.0, 4.5])
    loop = s.loop(keep_best=False).run()
    assert len(loop.evals) == 4 and len(s.seen) == 5  # one evaluation an epoch, then one of the last weights
    assert loop.best == {"loss": 4.5} and loop.best_eval is loop.evals[-1]
    assert [w for w, _ in s.seen[-2:]] == [s.weight(), s.weight()]


def test_loop_evaluates_every_few_epochs_or_steps():
    s = Scripted([5.0, 4.0, 3.0, 2.0, 1.0, 0.5])
    loop = s.loop(total=8, epochs=4, eval_epochs=3).run()
    assert [e["epoch"] for e in loop.evals] == [3, 4]  # every 3rd epoch and the last one
    s = Scripted([5.0, 4.0, 3.0, 2.0, 1.0, 0.5])
    loop = s.loop(total=7, epochs=1, batches_per_epoch=100, eval_epochs=0, eval_steps=3).run()
    assert [e["step"] for e in loop.evals] == [3, 6, 7] and loop.step == 7  # every 3 steps and the last one
    assert loop.best_eval["step"] == 7 and s.weight() == s.seen[-1][0]


def test_a_loop_run_continues_where_it_stopped():
    straight = Scripted([3.0, 1.0, 2.0, 2.5])
    straight.loop().run()
    s = Scripted([3.0, 1.0, 2.0, 2.5])
    loop = s.loop()
    run = training.LoopRun(loop.steps(), lambda: loop.step * 10)
    assert run(3) == 30 and loop.step == 3 and len(loop.evals) == 1
    assert run.finish() is loop and loop.step == 8
    assert s.weight() == straight.weight() and s.seen == straight.seen


def test_loop_run_continues_a_generator_loop_and_seed_optimisation_keeps_the_best():
    """The generator-based run: probing stops mid-loop, the best seed's run continues to the end; the others are
    dropped after their probe."""
    trained = {}

    def loop(seed, total=10):
        for step in range(1, total + 1):
            trained[seed] = step
            yield step
        return ("result", seed)

    def make_run(seed):
        return training.LoopRun(loop(seed), lambda: {1: 0.2, 2: 0.9, 3: 0.5}[seed] * trained[seed])

    run, seed, probes = training.seeded_run(make_run, {"seeds": [1, 2, 3], "probe_fraction": 0.2}, seed=7, total=10)
    result = run.finish()
    assert probes == {1: pytest.approx(0.4), 2: pytest.approx(1.8), 3: pytest.approx(1.0)}  # each probed at 2 steps
    assert seed == 2 and result == ("result", 2)
    assert trained == {1: 2, 2: 10, 3: 2}  # only the best went on
    run, seed, probes = training.seeded_run(make_run, {}, seed=7, total=10)  # no seeds: the given seed, no probes
    assert (run.finish(), seed, probes) == (("result", 7), 7, {})
    run, seed, probes = training.seeded_run(make_run, {"seeds": [3]}, seed=7, total=10)  # one seed: that one
    assert (run.finish(), seed, probes) == (("result", 3), 3, {})


def test_batches_one_epoch_or_an_endless_stream():
    assert sorted(i for b in training.shuffled_batches(random.Random(1), 5, 2) for i in b) == [0, 1, 2, 3, 4]
    assert list(training.shuffled_batches(random.Random(1), 5, 2, shuffle=False)) == [[0, 1], [2, 3], [4]]
    stream = training.endless_batches(random.Random(1), 5, 2)
    batches = [next(stream) for _ in range(5)]
    assert [len(b) for b in batches] == [2] * 5
    assert sorted(i for b in batches for i in b) == sorted(list(range(5)) * 2)  # two passes, one batch spans both


def test_denormal_guard_runs_on_one_thread_and_restores_the_thread_count(monkeypatch):
    before = torch.get_num_threads()
    tiny = torch.tensor([1e-39], dtype=torch.float32)  # a denormal float32
    with training.without_denormals("cpu"):
        assert torch.get_num_threads() == 1
        with training.without_denormals("cpu"):  # nested: still guarded
            assert float(tiny * 1.0) == 0.0  # flushed to zero
        assert float(tiny * 1.0) == 0.0
    assert torch.get_num_threads() == before and float(tiny * 1.0) != 0.0
    monkeypatch.setenv("ARGORA_FLUSH_DENORMALS", "0")
    with training.without_denormals("cpu"):
        assert torch.get_num_threads() == before and float(tiny * 1.0) != 0.0
