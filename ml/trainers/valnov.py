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
    (independent runs with seeds seed, seed+1, ...; the best dev ValNov is kept), threshold, eval_batch_size,
    class_weighting (balanced / none), calibrate (true / false).

Both classes of each head (issue 23): on the shared task's 750 training rows the paper's recipe never predicts
"novel" (novel conclusions are the rare class; Heinisch et al. §5.2 report the same). Two defaults prevent that:
``class_weighting="balanced"`` scales each task's loss by ``n / (2 n_class)`` of the instance's class
(:func:`ml.valnov.loss.class_weights`), and ``calibrate=True`` picks each head's decision threshold on the dev rows
(the macro F1 of that head's two classes, :func:`ml.valnov.score.calibrate_threshold`) at every dev check; the kept
model has the thresholds folded into its heads' biases (:meth:`ml.valnov.model.ValNovModel.shift_thresholds`), so
0.5 stays its threshold everywhere. ``class_weighting=none calibrate=false`` is the paper's recipe.

Rows tagged ``split: "test"`` (:mod:`ml.valnov.data` passes them inside the dev list) are never trained on nor used
for selection or calibration: they give the version's ``test`` metrics.

Metrics on the dev rows (:mod:`ml.valnov.score`): primary ``valnov`` (Eq. 3), ``validity_f1``, ``novelty_f1``, the F1
of each class, ``thresholds`` (the calibrated ones), ``predicted_classes`` (how many rows each head put in each class),
and the baselines ``baseline_valnov`` (always the majority training class) and ``random_valnov`` (uniformly random
labels; the paper's random baseline); the same on the test rows.
"""

from __future__ import annotations

import gc
import math
import random
import time
from pathlib import Path

import torch

from ml import errors, registry, training
from ml.encoders import default_encoder_path
from ml.valnov.data import (
    WEIGHTINGS,
    class_counts,
    effective_weights,
    rows_from_file,
    rows_from_project,
)
from ml.valnov.loss import class_weights, targets_tensor, valnov_loss
from ml.valnov.model import ValNovModel, ValNovPredictor, load_model
from ml.valnov.score import calibrate_threshold, gold_label, majority_baseline, random_baseline, score_rows

KIND = "valnov"
DEFAULTS = {
    "epochs": 3,
    "max_steps": 0,
    "batch_size": 8,
    "lr": 3e-5,
    "head_lr": None,
    "weight_decay": 3e-7,
    "warmup_ratio": 0.1,
    "max_length": 128,
    "pooling": "mean",
    "dropout": 0.1,
    "alpha": 0.5,
    "beta": 0.5,
    "gamma": 0.5,
    "weighting": "individual",
    "dataset_weights": {},
    "synthetic_factor": 0.5,
    "eval_every": 4,
    "patience": 4,
    "runs": 3,
    "threshold": 0.5,
    "eval_batch_size": 64,
    "class_weighting": "balanced",
    "calibrate": True,
}
CLASS_WEIGHTINGS = ("balanced", "none")


def resolve_hyperparameters(given: dict | None) -> dict:
    """:func:`ml.training.resolve_hyperparameters` of the kind (``weighting`` checked), runs and batch size >= 1."""
    hp = training.resolve_hyperparameters(
        KIND, DEFAULTS, given, choices={"weighting": WEIGHTINGS, "class_weighting": CLASS_WEIGHTINGS}
    )
    hp["calibrate"] = _flag(hp["calibrate"])
    if int(hp["runs"]) < 1 or int(hp["batch_size"]) < 1:
        raise errors.TrainerError("hyperparameters: runs and batch_size must be >= 1")
    return hp


def default_base_model() -> str:
    return default_encoder_path()


def _flag(value) -> bool:
    if isinstance(value, str):
        if value.strip().lower() not in ("1", "0", "true", "false", "yes", "no"):
            raise errors.TrainerError(f"hyperparameters: calibrate must be true or false, got {value!r}")
        return value.strip().lower() in ("1", "true", "yes")
    return bool(value)


def predicted_classes(probabilities, threshold: float = 0.5) -> dict:
    """How many rows each head puts in each class: ``{"valid", "not_valid", "novel", "not_novel"}``."""
    v = sum(1 for p in probabilities if p[0] >= threshold)
    n = sum(1 for p in probabilities if p[1] >= threshold)
    return {"valid": v, "not_valid": len(probabilities) - v, "novel": n, "not_novel": len(probabilities) - n}


def scores(rows: list[dict], probabilities, thresholds=(0.5, 0.5)) -> dict:
    """:func:`ml.valnov.score.score_rows` with one threshold per head (probabilities are shifted so that each
    threshold sits at 0.5), plus ``predicted_classes``."""
    tv, tn = (float(t) for t in thresholds)
    shifted = [(p[0] - tv + 0.5, p[1] - tn + 0.5) for p in probabilities]
    out = score_rows(rows, shifted, threshold=0.5)
    out["predicted_classes"] = predicted_classes(shifted)
    return out


def _has_labels(row: dict) -> bool:
    return row.get("validity") is not None or row.get("novelty") is not None


class Run:
    """One training run: fresh heads on a fresh copy of the base encoder, early stopping on the dev ValNov
    (:class:`ml.training.TrainLoop`: a dev check every ``eval_interval`` steps, ``patience`` checks)."""

    def __init__(
        self,
        *,
        seed: int,
        base_model: str,
        rows_train: list[dict],
        weights: list[float],
        rows_dev: list[dict],
        hp: dict,
        device: str,
        progress,
        label: str,
    ):
        training.set_seed(seed)
        self.seed, self.hp, self.device, self.progress, self.label = seed, hp, device, progress, label
        self.model = ValNovModel.from_base(
            base_model, max_length=int(hp["max_length"]), pooling=hp["pooling"], dropout=float(hp["dropout"])
        ).to(device)
        self.predictor = ValNovPredictor(
            self.model, threshold=float(hp["threshold"]), batch_size=int(hp["eval_batch_size"]), device=device
        )
        self.rows_dev = rows_dev
        self.enc = self.model.encode_pairs([r["premise"] for r in rows_train], [r["conclusion"] for r in rows_train])
        self.tv = targets_tensor([r.get("validity") for r in rows_train])
        self.tn = targets_tensor([r.get("novelty") for r in rows_train])
        self.w = torch.tensor(weights, dtype=torch.float32)
        balanced = hp["class_weighting"] == "balanced"
        self.wv = torch.tensor(
            class_weights([r.get("validity") for r in rows_train]) if balanced else [1.0] * len(rows_train),
            dtype=torch.float32,
        )
        self.wn = torch.tensor(
            class_weights([r.get("novelty") for r in rows_train]) if balanced else [1.0] * len(rows_train),
            dtype=torch.float32,
        )
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
            total_steps=self.steps_total,
            warmup_ratio=float(hp["warmup_ratio"]),
            weight_decay=float(hp["weight_decay"]),
            ramp=True,
        )
        self.rng = random.Random(seed)
        self.loop = training.TrainLoop(
            self.model,
            self.optimizer,
            self.scheduler,
            self.loss,
            lambda epoch: training.endless_batches(self.rng, self.n, bs),
            device=device,
            total=self.steps_total,
            amp=False,
            progress=progress,
            describe=self._describe,
            evaluate=self.evaluate,
            eval_epochs=0,
            eval_steps=self.eval_interval,
            better=training.higher("valnov"),
            patience=int(hp["patience"]),
        )
        self.best_score, self.best_step, self.best_metrics = None, 0, None
        self.checks: list[dict] = []

    def loss(self, batch: list[int]):
        hp = self.hp
        pv, pn = self.model(**self.model.collate(self.enc, batch, self.device))
        idx = torch.tensor(batch)
        return valnov_loss(
            pv,
            pn,
            self.tv[idx].to(self.device),
            self.tn[idx].to(self.device),
            self.w[idx].to(self.device),
            alpha=float(hp["alpha"]),
            beta=float(hp["beta"]),
            gamma=float(hp["gamma"]),
            weight_validity=self.wv[idx].to(self.device),
            weight_novelty=self.wn[idx].to(self.device),
        )

    def _describe(self, loop: training.TrainLoop, metrics: dict | None) -> str | None:
        if metrics is None:
            return None
        return (
            f"{self.label}step {loop.step}/{loop.total}, loss {loop.last_loss:.4f}, dev ValNov {metrics['valnov']:.4f}"
        )

    @property
    def done(self) -> int:
        return self.loop.step

    def evaluate(self) -> dict:
        """Dev scores; with ``calibrate`` at each head's threshold chosen on these dev rows (kept in the metrics)."""
        probabilities = self.predictor.predict_rows(self.rows_dev)
        t = float(self.hp["threshold"])
        thresholds = (t, t)
        if self.hp["calibrate"]:
            thresholds = (
                calibrate_threshold(
                    [r.get("validity") for r in self.rows_dev], [p[0] for p in probabilities], default=t
                ),
                calibrate_threshold(
                    [r.get("novelty") for r in self.rows_dev], [p[1] for p in probabilities], default=t
                ),
            )
        out = scores(self.rows_dev, probabilities, thresholds)
        out["thresholds"] = {"validity": float(thresholds[0]), "novelty": float(thresholds[1])}
        return out

    def train(self) -> float:
        loop = self.loop.run()
        self.checks = [
            {"step": e["step"], "valnov": round(e["metrics"]["valnov"], 6), "loss": round(e["loss"], 6)}
            for e in loop.evals
        ]
        self.best_metrics, self.best_step = loop.best, loop.best_eval["step"]
        self.best_score = loop.best["valnov"]
        self.model.eval()
        return float(self.best_score)


def train(request) -> registry.TrainResult:
    hp = resolve_hyperparameters(request.hyperparameters)
    rows_train = [r for r in request.rows_train if _has_labels(r)]
    if not rows_train:
        raise errors.TrainerError("data: no training rows with a known validity or novelty")
    tagged_test = [dict(r, split="test") for r in getattr(request, "rows_test", None) or []]
    known = [
        r
        for r in list(request.rows_dev) + tagged_test
        if gold_label(r.get("validity")) is not None and gold_label(r.get("novelty")) is not None
    ]
    rows_dev = [r for r in known if r.get("split") != "test"]
    rows_test = [r for r in known if r.get("split") == "test"]
    if not rows_dev:
        raise errors.TrainerError(
            "data: no dev rows with known validity and novelty (early stopping and model "
            "selection need them; give --dev FILE or a file with more topics)"
        )
    weights = effective_weights(
        rows_train,
        hp["weighting"],
        dataset_weights=hp["dataset_weights"],
        synthetic_factor=float(hp["synthetic_factor"]),
    )
    device = training.pick_device()
    base_model = request.base_model or default_base_model()
    started = time.monotonic()
    best, runs = None, []
    n_runs = int(hp["runs"])
    for k in range(n_runs):
        seed = int(request.seed) + k
        run = Run(
            seed=seed,
            base_model=base_model,
            rows_train=rows_train,
            weights=weights,
            rows_dev=rows_dev,
            hp=hp,
            device=device,
            progress=request.progress,
            label=f"run {k + 1}/{n_runs} (seed {seed}): ",
        )
        score = run.train()
        runs.append(
            {"seed": seed, "valnov": float(score), "best_step": run.best_step, "steps": run.done, "checks": run.checks}
        )
        if best is None or score > best.best_score:
            best = run
        else:
            del run
            gc.collect()  # a run refers to itself through its loop: free its model now
    metrics = dict(best.best_metrics)
    thresholds = metrics.get("thresholds") or {"validity": float(hp["threshold"]), "novelty": float(hp["threshold"])}
    best.model.shift_thresholds(thresholds["validity"], thresholds["novelty"])
    best.predictor.threshold = 0.5
    with_baselines(metrics, rows_train, rows_dev)
    test_metrics = None
    if rows_test:
        test_metrics = with_baselines(scores(rows_test, best.predictor.predict_rows(rows_test)), rows_train, rows_test)
    best.predictor.save(Path(request.output_dir), calibrated=thresholds if hp["calibrate"] else None)
    return registry.TrainResult(
        metrics=metrics,
        test_metrics=test_metrics,
        info={
            "seed": best.seed,
            "runs": runs,
            "steps": best.done,
            "best_step": best.best_step,
            "hyperparameters": hp,
            "device": device,
            "train_rows": len(rows_train),
            "dev_rows": len(rows_dev),
            "test_rows": len(rows_test),
            "thresholds": thresholds,
            "train_classes": class_counts(rows_train),
            "dev_classes": class_counts(rows_dev),
            "synthetic_train_rows": sum(1 for r in rows_train if r.get("synthetic")),
            "train_seconds": round(time.monotonic() - started, 3),
        },
    )


def load(path: Path, *, device: str | None = None):
    return load_model(path, device=device)


def with_baselines(metrics: dict, rows_train: list[dict], rows: list[dict]) -> dict:
    """Adds ``baseline_valnov`` (the majority training class) and ``random_valnov`` / ``random_validity_f1`` /
    ``random_novelty_f1`` (uniformly random labels) on ``rows``; returns ``metrics``."""
    metrics["baseline_valnov"] = majority_baseline(rows_train, rows)["valnov"]
    rnd = random_baseline(rows)
    metrics.update(
        random_valnov=rnd["valnov"], random_validity_f1=rnd["validity_f1"], random_novelty_f1=rnd["novelty_f1"]
    )
    return metrics


def evaluate(model, rows) -> dict:
    """``models evaluate`` / the retrain loop: the scores (and the random baseline) of a loaded model on the rows
    not tagged ``split: "test"`` (all rows when every one is), plus ``test`` (the same on the test rows) when
    there are both. Rows with an unknown validity or novelty count only in that dimension's F1."""
    dev = [r for r in rows if r.get("split") != "test"]
    test = [r for r in rows if r.get("split") == "test"]

    def one(part):
        t = float(getattr(model, "threshold", 0.5))
        out = scores(part, model.predict_rows(part), (t, t))
        rnd = random_baseline(part)
        out.update(
            random_valnov=rnd["valnov"], random_validity_f1=rnd["validity_f1"], random_novelty_f1=rnd["novelty_f1"]
        )
        return out

    out = one(dev or test)
    if dev and test:
        out["test"] = one(test)
    return out


registry.register_trainer(
    registry.TrainerSpec(
        kind=KIND,
        train=train,
        load=load,
        primary_metric="valnov",
        higher_is_better=True,
        description="validity / novelty of conclusions: one encoder, two sigmoid heads, weighted multi-task MSE "
        "(Heinisch et al. 2022); ValNov score (mean F1 of the four classes) on dev",
        rows_from_file=rows_from_file,
        rows_from_project=rows_from_project,
        evaluate=evaluate,
        default_base_model=default_base_model,
        data_formats="ArgMining 2022 ValNov CSV (topic,Premise,Conclusion,Validity,Validity-Confidence,Novelty,"
        "Novelty-Confidence[,Instance-Weight,Synthetic,split]) or the same keys as JSONL",
    )
)
