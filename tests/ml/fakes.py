"""A fake trainer kind for registry / loop / CLI tests: no real model, the "model" is a JSON file.

``hyperparameters["score"]`` (default: the share of train rows with a truthy ``label``) is the dev metric ``acc``;
``hyperparameters["fail"]`` raises inside training; ``hyperparameters["block_until"]`` (a path) makes training wait
until that file exists, writing ``hyperparameters["pid_file"]`` first (worker-kill tests).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ml.registry import TrainerSpec, TrainResult, register_trainer


def fake_train(req):
    hp = req.hyperparameters
    (req.output_dir / "weights.json").write_text(json.dumps({"rows": len(req.rows_train), "seed": req.seed}))
    if hp.get("pid_file"):
        Path(hp["pid_file"]).write_text(str(os.getpid()))
    if hp.get("block_until"):
        gate = Path(hp["block_until"])
        while not gate.exists():
            req.progress(0, 1, "waiting for the gate")
            time.sleep(0.1)
    if hp.get("fail"):
        raise RuntimeError("trainer exploded on purpose")
    score = hp.get("score")
    if score is None:
        score = sum(1 for r in req.rows_train if r.get("label")) / max(1, len(req.rows_train))
    req.progress(1, 1, "done")
    return TrainResult(metrics={"acc": float(score), "n_dev": len(req.rows_dev)})


def fake_load(path: Path):
    return json.loads((path / "weights.json").read_text())


def fake_evaluate(model, rows_dev):
    return {"acc": float(model.get("dev_score", 0.0))}


def register_fake(kind: str = "fake", **overrides) -> TrainerSpec:
    spec = TrainerSpec(
        kind=kind, train=fake_train, load=fake_load, primary_metric="acc", description="test double", **overrides
    )
    return register_trainer(spec)
