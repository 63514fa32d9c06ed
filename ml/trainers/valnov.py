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

import copy
import json
import math
import os
import random
import time
from pathlib import Path

import torch

from ml import registry

KIND = "valnov"
DEFAULTS = {"epochs": 3, "max_steps": 0, "batch_size": 8, "lr": 3e-5, "head_lr": None, "weight_decay": 3e-7,
            "warmup_ratio": 0.1, "max_length": 128, "pooling": "mean", "dropout": 0.1,
            "alpha": 0.5, "beta": 0.5, "gamma": 0.5, "weighting": "individual", "dataset_weights": {},
            "synthetic_factor": 0.5, "eval_every": 4, "patience": 4, "runs": 3, "threshold": 0.5,
            "eval_batch_size": 64}
ENV_HYPERPARAMETERS = "ARGORA_TRAINER_HYPERPARAMETERS"


def resolve_hyperparameters(given: dict | None) -> dict:
    hp = dict(DEFAULTS)
    raw = os.environ.get(ENV_HYPERPARAMETERS, "").strip()
    if raw:
        try:
            env = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise registry.TrainerError(f"{ENV_HYPERPARAMETERS}: not JSON ({exc.msg})") from None
        hp.update((env or {}).get(KIND) or {})
    hp.update(given or {})
    unknown = sorted(set(hp) - set(DEFAULTS))
    if unknown:
        raise registry.TrainerError(f"hyperparameters: unknown for {KIND!r}: {', '.join(unknown)} "
                                    f"(known: {', '.join(sorted(DEFAULTS))})")
    from ml.valnov.data import WEIGHTINGS

    if hp["weighting"] not in WEIGHTINGS:
        raise registry.TrainerError(f"hyperparameters: weighting must be one of {', '.join(WEIGHTINGS)}")
    if int(hp["runs"]) < 1 or int(hp["batch_size"]) < 1:
        raise registry.TrainerError("hyperparameters: runs and batch_size must be >= 1")
    return hp


def set_seed(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def default_base_model() -> str:
    from ml.encoders import default_encoder_path

    return default_encoder_path()


def _has_labels(row: dict) -> bool:
    return row.get("validity") is not None or row.get("novelty") is not None


class Run:
    """One training run: fresh heads on a fresh copy of the base encoder, early stopping on the dev ValNov."""

    def __init__(self, *, seed: int, base_model: str, rows_train: list[dict], weights: list[float],
                 rows_dev: list[dict], hp: dict, device: str, progress, label: str):
        from ml.valnov.loss import targets_tensor
        from ml.valnov.model import ValNovModel, ValNovPredictor

        set_seed(seed)
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
        steps = int(hp["epochs"]) * self.steps_per_epoch
        if int(hp.get("max_steps") or 0) > 0:
            steps = min(steps, int(hp["max_steps"])) if int(hp["epochs"]) > 0 else int(hp["max_steps"])
        self.steps_total = max(1, steps)
        self.eval_interval = max(1, round(self.steps_per_epoch / max(1, int(hp["eval_every"]))))
        lr = float(hp["lr"])
        head_lr = float(hp["head_lr"]) if hp.get("head_lr") not in (None, "") else lr
        head_params = list(self.model.validity_head.parameters()) + list(self.model.novelty_head.parameters())
        self.optimizer = torch.optim.AdamW([{"params": list(self.model.encoder.parameters()), "lr": lr},
                                            {"params": head_params, "lr": head_lr}],
                                           weight_decay=float(hp["weight_decay"]))
        warmup = int(round(self.steps_total * float(hp["warmup_ratio"])))
        total = self.steps_total

        def factor(step: int) -> float:
            if warmup > 0 and step < warmup:
                return (step + 1) / warmup
            return max(0.0, (total - step) / max(1, total - warmup))

        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, factor)
        self.rng = random.Random(seed)
        self.best_score, self.best_state, self.best_step, self.best_metrics = None, None, 0, None
        self.done, self.losses, self.checks = 0, [], []

    def evaluate(self) -> dict:
        from ml.valnov.score import score_rows

        return score_rows(self.rows_dev, self.predictor.predict_rows(self.rows_dev),
                          threshold=float(self.hp["threshold"]))

    def train(self) -> float:
        from ml.valnov.loss import valnov_loss

        hp = self.hp
        bs = int(hp["batch_size"])
        patience, waited = int(hp["patience"]), 0
        queue: list[int] = []
        while self.done < self.steps_total:
            if len(queue) < bs:
                order = list(range(self.n))
                self.rng.shuffle(order)
                queue.extend(order)
            batch, queue = queue[:bs], queue[bs:]
            self.model.train()
            pv, pn = self.model(**self.model.collate(self.enc, batch, self.device))
            idx = torch.tensor(batch)
            loss = valnov_loss(pv, pn, self.tv[idx].to(self.device), self.tn[idx].to(self.device),
                               self.w[idx].to(self.device), alpha=float(hp["alpha"]), beta=float(hp["beta"]),
                               gamma=float(hp["gamma"]))
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
            self.scheduler.step()
            self.done += 1
            self.losses.append(float(loss.detach()))
            if self.done % self.eval_interval == 0 or self.done == self.steps_total:
                metrics = self.evaluate()
                score = metrics["valnov"]
                self.checks.append({"step": self.done, "valnov": round(score, 6), "loss": round(self.losses[-1], 6)})
                self.progress(self.done, self.steps_total, f"{self.label}step {self.done}/{self.steps_total}, "
                                                           f"loss {self.losses[-1]:.4f}, dev ValNov {score:.4f}")
                if self.best_score is None or score > self.best_score:
                    self.best_score, self.best_step, self.best_metrics = score, self.done, metrics
                    self.best_state = copy.deepcopy({k: v.detach().cpu() for k, v in self.model.state_dict().items()})
                    waited = 0
                else:
                    waited += 1
                    if waited >= patience:
                        break
        self.model.load_state_dict(self.best_state)
        self.model.eval()
        return float(self.best_score)


def train(request) -> registry.TrainResult:
    from ml.valnov.data import class_counts, effective_weights
    from ml.valnov.model import torch_device
    from ml.valnov.score import gold_label, majority_baseline

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
    device = torch_device()
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
    from ml.valnov.model import load_model

    return load_model(path, device=device)


def evaluate(model, rows_dev) -> dict:
    from ml.valnov.score import score_rows

    return score_rows(rows_dev, model.predict_rows(rows_dev), threshold=model.threshold)


def _rows_from_file(path):
    from ml.valnov.data import rows_from_file

    return rows_from_file(path)


def _rows_from_project(project):
    from ml.valnov.data import rows_from_project

    return rows_from_project(project)


registry.register_trainer(registry.TrainerSpec(
    kind=KIND, train=train, load=load, primary_metric="valnov", higher_is_better=True,
    description="validity / novelty of conclusions: one encoder, two sigmoid heads, weighted multi-task MSE "
                "(Heinisch et al. 2022); ValNov score (mean F1 of the four classes) on dev",
    rows_from_file=_rows_from_file, rows_from_project=_rows_from_project, evaluate=evaluate,
    default_base_model=default_base_model,
    data_formats="ArgMining 2022 ValNov CSV (topic,Premise,Conclusion,Validity,Validity-Confidence,Novelty,"
                 "Novelty-Confidence[,Instance-Weight,Synthetic,split]) or the same keys as JSONL",
))
