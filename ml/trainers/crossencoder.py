"""Trainer kind ``crossencoder``: the BERT cross-encoder of AugSBERT (§5) on BWS similarity scores.

A sentence-transformers ``CrossEncoder`` (``num_labels=1``, sigmoid output in [0, 1]) trained with
``CrossEncoderTrainer`` + ``BinaryCrossEntropyLoss`` on the gold pairs (:mod:`ml.similarity.models`; paper
defaults lr 1e-5, batch 16; ``seeds=[...]`` for seed optimisation). Rows: the BWS JSONL export or a ``bws`` release
folder (:mod:`ml.similarity.data`; test rows ride in the dev list tagged ``split: "test"``), or a
``bws_similarity`` project. Metrics: dev / test Spearman x 100 and the Jaccard baseline (:mod:`ml.similarity.evaluation`).
Artifact: ``model/`` (``CrossEncoder.save_pretrained``).

    manage.py train crossencoder --data bws.jsonl [--epochs 1] [--hp seeds=[1,2,3,4,5]] --json
"""
from __future__ import annotations

from pathlib import Path

from ml import registry
from ml.encoders import default_encoder_path
from ml.similarity import data as sim_data
from ml.similarity import models as sim_models
from ml.similarity.evaluation import evaluate_model
from ml.training import resolve_hyperparameters

KIND = "crossencoder"


def train_pairs(request: registry.TrainRequest, which: str, kind: str, defaults: dict) -> registry.TrainResult:
    """Shared by ``crossencoder`` and ``biencoder``: one model on the gold train rows."""
    hp = resolve_hyperparameters(kind, defaults, request.hyperparameters)
    dev, test = sim_data.split_eval(request.rows_dev)
    rows_train = [r for r in request.rows_train if r.get("split", "train") == "train"]
    model, info = sim_models.train(which, rows_train, dev, base_model=request.base_model, hp=hp, seed=request.seed,
                                   progress=request.progress)
    model.save_pretrained(str(Path(request.output_dir) / "model"))
    batch = int(hp["eval_batch_size"])
    info["setting"] = sim_data.setting_of(rows_train, test)
    info["n_gold"] = len(rows_train)
    return registry.TrainResult(metrics=evaluate_model(model, dev, batch_size=batch),
                                test_metrics=evaluate_model(model, test, batch_size=batch) if test else None,
                                info=info)


def evaluate(model, rows_dev) -> dict:
    return evaluate_model(model, sim_data.split_eval(rows_dev)[0])


def default_base_model() -> str:
    return default_encoder_path()


def train(request: registry.TrainRequest) -> registry.TrainResult:
    return train_pairs(request, "cross", KIND, sim_models.CROSS_DEFAULTS)


def load(path: Path):
    return sim_models.load_cross_encoder(Path(path) / "model")


SPEC = registry.register_trainer(registry.TrainerSpec(
    kind=KIND, train=train, load=load, primary_metric="spearman", higher_is_better=True,
    description="BWS similarity cross-encoder (sentence-transformers CrossEncoder, sigmoid score; AugSBERT §5)",
    rows_from_file=sim_data.rows_from_file, rows_from_project=sim_data.rows_from_project, evaluate=evaluate,
    default_base_model=default_base_model,
    data_formats=sim_data.DATA_FORMATS))
