"""Trainer kind ``valnov``: validity / novelty of conclusions (Heinisch et al. 2022), one encoder + two sigmoid heads.

Model: :class:`ml.valnov.model.ValNovModel` over ``premise [SEP] conclusion`` (base: the request's ``base_model``,
default the packaged all-MiniLM-L6-v2). Loss: :func:`ml.valnov.loss.valnov_loss` (Eq. 2, MSE per task, a task's loss
0 where its label is unknown) with instance weights :func:`ml.valnov.data.effective_weights`. Rows:
:mod:`ml.valnov.data` (the ArgMining 2022 CSV layout or JSONL; a ``validity_novelty`` project).

Hyperparameters (defaults after the paper: Adam(W) lr 3e-5, weight decay 3e-7, batch 8, dev check every quarter
epoch with patience 4, alpha = beta = gamma = 0.5; several runs, the best on dev kept), merged as
``DEFAULTS < $ARGORA_TRAINER_HYPERPARAMETERS["valnov"] < request``:

    epochs, max_steps (> 0: at most this many steps), batch_size, lr, head_lr (default = lr), weight_decay,
    warmup_ratio, max_length, pooling (mean / cls), dropout, alpha, beta, gamma,
    weighting (uniform / dataset / individual), dataset_weights ({dataset: w}), synthetic_factor,
    eval_every (dev checks per epoch, 4 = every quarter epoch), patience (checks without improvement), runs
    (independent runs with seeds seed, seed+1, ...; the best dev ValNov is kept), threshold, eval_batch_size.

Metrics on ``rows_dev`` (:mod:`ml.valnov.score`): primary ``valnov`` (Eq. 3), ``validity_f1``, ``novelty_f1``, the F1
of each class, and ``baseline_valnov`` (always the majority training class) for reference.
"""
from __future__ import annotations

import gc
import math
import random
import time
from pathlib import Path

import torch

from ml import registry, training
from ml.encoders import default_encoder_path
from ml.valnov.data import (
    WEIGHTINGS,
    class_counts,
    effective_weights,
    rows_from_file,
    rows_from_project,
)
from ml.valnov.loss import targets_tensor, valnov_loss
from ml.valnov.model import ValNovModel, ValNovPredictor, load_model
from ml.valnov.score import gold_label, majority_baseline, score_rows

KIND = "valnov"
DEFAULTS = {"epochs": 3, "max_steps": 0, "batch_size": 8, "lr": 3e-5, "head_lr": None, "weight_decay": 3e-7,
            "warmup_ratio": 0.1, "max_length": 128, "pooling": "mean", "dropout": 0.1,
            "alpha": 0.5, "beta": 0.5, "gamma": 0.5, "weighting": "individual", "dataset_weights": {},
            "synthetic_factor": 0.5, "eval_every": 4, "patience": 4, "runs": 3, "threshold": 0.5,
            "eval_batch_size": 64}


def resolve_hyperparameters(given: dict | None) -> dict:
    """:func:`ml.training.resolve_hyperparameters` of the kind (``weighting`` checked), runs and batch size >= 1."""
    hp = training.resolve_hyperparameters(KIND, DEFAULTS, given, choices={"weighting": WEIGHTINGS})
    if int(hp["runs"]) < 1 or int(hp["batch_size"]) < 1:
        raise registry.TrainerError("hyperparameters: runs and batch_size must be >= 1")
    return hp


def default_base_model() -> str:
    return default_encoder_path()


def _has_labels(row: dict) -> bool:
    return row.get("validity") is not None or row.get("novelty") is not None


class Run:
    """One training run: fresh heads on a fresh copy of the base encoder, early stopping on the dev ValNov
    (:class:`ml.training.TrainLoop`: a dev check every ``eval_interval`` steps, ``patience`` checks)."""

    def __init__(self, *, seed: int, base_model: str, rows_train: list[dict], weights: list[float],
                 rows_dev: list[dict], hp: dict, device: str, progress, label: str):
        training.set_seed(seed)
        self.seed, self.hp, self.device, self.progress, self.label = seed, hp, device, progress, label
        self.model = ValNovModel.from_base(base_model, max_length=int(hp["max_length"]), pooling=hp["pooling"],
                                           dropout=float(hp["dropout"])).to(device)
        self.predictor = ValNovPredictor(self.model, threshold=float(hp["threshold"]),
                                         batch_size=int(hp["eval_batch_size"]), device=device)
        self.rows_dev = rows_dev
        self.enc = self.model.encode_pairs([r["premise"] for r in rows_train], [r["conclusion"] for r in rows_train])
        self.tv = targets_tensor([r.get("validity") for r in rows_train])
        self.tn = targets_tensor([r.get("novelty") for r in rows_train])
        self.w = torch.tensor(weights, dtype=torch.float32)
        self.n = len(rows_train)
        bs = int(hp["batch_size"])
        self.steps_per_epoch = max(1, math.ceil(self.n / bs))
        self.steps_total = training.total_steps(hp, self.n, cap=True)
        self.eval_interval = max(1, round(self.steps_per_epoch / max(1, int(hp["eval_every"]))))
        lr = float(hp["lr"])
        head_lr = float(hp["head_lr"]) if hp.get("head_lr") not in (None, "") else lr
        head_params = list(self.model.validity_head.parameters()) + list(self.model.novelty_head.parameters())
        self.optimizer, self.scheduler = training.adamw(
            [{"params": list(self.model.encoder.parameters()), "lr": lr}, {"params": head_params, "lr": head_lr}],
            total_steps=self.steps_total, warmup_ratio=float(hp["warmup_ratio"]),
            weight_decay=float(hp["weight_decay"]), ramp=True)
        self.rng = random.Random(seed)
        self.loop = training.TrainLoop(
            self.model, self.optimizer, self.scheduler, self.loss,
            lambda epoch: training.endless_batches(self.rng, self.n, bs), device=device, total=self.steps_total,
            amp=False, progress=progress, describe=self._describe, evaluate=self.evaluate, eval_epochs=0,
            eval_steps=self.eval_interval, better=training.higher("valnov"), patience=int(hp["patience"]))
        self.best_score, self.best_step, self.best_metrics = None, 0, None
        self.checks: list[dict] = []

    def loss(self, batch: list[int]):
        hp = self.hp
        pv, pn = self.model(**self.model.collate(self.enc, batch, self.device))
        idx = torch.tensor(batch)
        return valnov_loss(pv, pn, self.tv[idx].to(self.device), self.tn[idx].to(self.device),
                           self.w[idx].to(self.device), alpha=float(hp["alpha"]), beta=float(hp["beta"]),
                           gamma=float(hp["gamma"]))

    def _describe(self, loop: training.TrainLoop, metrics: dict | None) -> str | None:
        if metrics is None:
            return None
        return (f"{self.label}step {loop.step}/{loop.total}, loss {loop.last_loss:.4f}, "
                f"dev ValNov {metrics['valnov']:.4f}")

    @property
    def done(self) -> int:
        return self.loop.step

    def evaluate(self) -> dict:
        return score_rows(self.rows_dev, self.predictor.predict_rows(self.rows_dev),
                          threshold=float(self.hp["threshold"]))

    def train(self) -> float:
        loop = self.loop.run()
        self.checks = [{"step": e["step"], "valnov": round(e["metrics"]["valnov"], 6), "loss": round(e["loss"], 6)}
                       for e in loop.evals]
        self.best_metrics, self.best_step = loop.best, loop.best_eval["step"]
        self.best_score = loop.best["valnov"]
        self.model.eval()
        return float(self.best_score)


def train(request) -> registry.TrainResult:
    hp = resolve_hyperparameters(request.hyperparameters)
    rows_train = [r for r in request.rows_train if _has_labels(r)]
    if not rows_train:
        raise registry.TrainerError("data: no training rows with a known validity or novelty")
    rows_dev = [r for r in request.rows_dev
                if gold_label(r.get("validity")) is not None and gold_label(r.get("novelty")) is not None]
    if not rows_dev:
        raise registry.TrainerError("data: no dev rows with known validity and novelty (early stopping and model "
                                    "selection need them; give --dev FILE or a file with more topics)")
    weights = effective_weights(rows_train, hp["weighting"], dataset_weights=hp["dataset_weights"],
                                synthetic_factor=float(hp["synthetic_factor"]))
    device = training.pick_device()
    base_model = request.base_model or default_base_model()
    started = time.monotonic()
    best, runs = None, []
    n_runs = int(hp["runs"])
    for k in range(n_runs):
        seed = int(request.seed) + k
        run = Run(seed=seed, base_model=base_model, rows_train=rows_train, weights=weights, rows_dev=rows_dev, hp=hp,
                  device=device, progress=request.progress, label=f"run {k + 1}/{n_runs} (seed {seed}): ")
        score = run.train()
        runs.append({"seed": seed, "valnov": float(score), "best_step": run.best_step, "steps": run.done,
                     "checks": run.checks})
        if best is None or score > best.best_score:
            best = run
        else:
            del run
            gc.collect()  # a run refers to itself through its loop: free its model now
    metrics = dict(best.best_metrics)
    metrics["baseline_valnov"] = majority_baseline(rows_train, rows_dev)["valnov"]
    best.predictor.save(Path(request.output_dir))
    return registry.TrainResult(metrics=metrics, info={
        "seed": best.seed, "runs": runs, "steps": best.done, "best_step": best.best_step, "hyperparameters": hp,
        "device": device, "train_rows": len(rows_train), "dev_rows": len(rows_dev),
        "train_classes": class_counts(rows_train), "dev_classes": class_counts(rows_dev),
        "synthetic_train_rows": sum(1 for r in rows_train if r.get("synthetic")),
        "train_seconds": round(time.monotonic() - started, 3)})


def load(path: Path, *, device: str | None = None):
    return load_model(path, device=device)


def evaluate(model, rows_dev) -> dict:
    return score_rows(rows_dev, model.predict_rows(rows_dev), threshold=model.threshold)


registry.register_trainer(registry.TrainerSpec(
    kind=KIND, train=train, load=load, primary_metric="valnov", higher_is_better=True,
    description="validity / novelty of conclusions: one encoder, two sigmoid heads, weighted multi-task MSE "
                "(Heinisch et al. 2022); ValNov score (mean F1 of the four classes) on dev",
    rows_from_file=rows_from_file, rows_from_project=rows_from_project, evaluate=evaluate,
    default_base_model=default_base_model,
    data_formats="ArgMining 2022 ValNov CSV (topic,Premise,Conclusion,Validity,Validity-Confidence,Novelty,"
                 "Novelty-Confidence[,Instance-Weight,Synthetic,split]) or the same keys as JSONL",
))
