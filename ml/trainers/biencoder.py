"""Trainer kind ``biencoder``: SBERT on BWS similarity scores (the gold-only baseline of AugSBERT Table 5).

A sentence-transformers ``SentenceTransformer`` trained with ``SentenceTransformerTrainer`` +
``CosineSimilarityLoss`` on the gold pairs (paper defaults lr 2e-5, batch 16, AdamW; ``seeds=[...]`` for seed
optimisation); a pair's score is the cosine of its embeddings. Rows, metrics: as ``crossencoder``
(:mod:`ml.trainers.crossencoder`). Artifact: ``model/`` (``SentenceTransformer.save_pretrained``).

    manage.py train biencoder --data bws.jsonl --json
"""

from __future__ import annotations

from pathlib import Path

from ml import registry
from ml.similarity import data as sim_data
from ml.similarity import models as sim_models
from ml.trainers.crossencoder import default_base_model, evaluate, train_pairs, with_topics

KIND = "biencoder"


def train(request: registry.TrainRequest) -> registry.TrainResult:
    return train_pairs(request, "bi", KIND, sim_models.BI_DEFAULTS)


def load(path: Path):
    return with_topics(sim_models.load_bi_encoder(Path(path) / "model"), Path(path))


SPEC = registry.register_trainer(
    registry.TrainerSpec(
        kind=KIND,
        train=train,
        load=load,
        primary_metric="spearman",
        higher_is_better=True,
        description="BWS similarity bi-encoder (SBERT, cosine) on gold pairs",
        rows_from_file=sim_data.rows_from_file,
        rows_from_project=sim_data.rows_from_project,
        evaluate=evaluate,
        default_base_model=default_base_model,
        data_formats=sim_data.DATA_FORMATS,
    )
)
