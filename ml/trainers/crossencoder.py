"""Trainer kind ``crossencoder``: the BERT cross-encoder of AugSBERT (§5) on BWS similarity scores.

A cross-encoder (architecture below) trained on the gold pairs (:mod:`ml.similarity.models`; paper
defaults lr 1e-5, batch 16; ``seeds=[...]`` for seed optimisation). Rows: the BWS JSONL export or a ``bws`` release
folder (:mod:`ml.similarity.data`; test rows ride in the dev list tagged ``split: "test"``), or a
``bws_similarity`` project. Metrics: dev / test Spearman x 100 and the Jaccard baseline (:mod:`ml.similarity.evaluation`).
Artifact: ``model/`` (the model's ``save_pretrained``) and ``similarity.json`` (the training topics, so that
:func:`evaluate` can tell in-topic from cross-topic rows).

Architectures (``--hp architecture=...``; issue 23):
    ``gated`` (the default, :mod:`ml.similarity.gated`): the bi-encoder checkpoint reads the pair as one sequence,
    each sentence in its bi-encoder form, with learned per-head gates on the attention between the two sentences;
    score: the cosine of the two sentences' pooled tokens; SBERT's recipe (lr 2e-5, batch 16, one epoch,
    :data:`ml.similarity.models.CROSS_DEFAULTS`). On UKP ASPECT cross-topic it is above SBERT.
    ``cls``: the paper's cross-encoder, a sentence-transformers ``CrossEncoder`` (sigmoid head on ``[CLS]``),
    with the pooler of a bi-encoder checkpoint started as the identity, head at lr 2e-3, encoder at 4e-5, 3 epochs
    (:data:`ml.similarity.models.CLS_DEFAULTS`); from MiniLM it stays below SBERT there (``bench/quality.py``).

Test rows (``split: "test"``) are never trained on nor selected on; the version's ``metrics.test`` holds their
Spearman x 100 beside Jaccard's and the setting (``in-topic`` / ``cross-topic``).

    manage.py train crossencoder --data bws.jsonl [--epochs 1] [--hp seeds=[1,2,3,4,5]] --json
"""

from __future__ import annotations

import json
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
    dev, test = sim_data.split_eval(eval_rows(request))
    rows_train = [r for r in request.rows_train if r.get("split", "train") == "train"]
    model, info = sim_models.train(
        which, rows_train, dev, base_model=request.base_model, hp=hp, seed=request.seed, progress=request.progress
    )
    model.save_pretrained(str(Path(request.output_dir) / "model"))
    write_topics(request.output_dir, rows_train)
    batch = int(hp["eval_batch_size"])
    info["setting"] = sim_data.setting_of(rows_train, test)
    info["n_gold"] = len(rows_train)
    dev_metrics = evaluate_model(model, dev, batch_size=batch)
    test_metrics = None
    if test:
        test_metrics = dict(evaluate_model(model, test, batch_size=batch), setting=info["setting"])
    return registry.TrainResult(metrics=dev_metrics, test_metrics=test_metrics, info=info)


TOPICS_FILE = "similarity.json"


def eval_rows(request: registry.TrainRequest) -> list[dict]:
    """The request's dev rows and its test rows (``request.rows_test`` and any ``split: "test"`` row of the dev
    list), the test ones tagged ``split: "test"`` (what :func:`ml.similarity.data.split_eval` separates)."""
    return list(request.rows_dev) + [dict(r, split="test") for r in getattr(request, "rows_test", None) or []]


def write_topics(output_dir, rows_train) -> None:
    """``similarity.json``: the topics the model was trained on (what makes an evaluated row in- or cross-topic)."""
    topics = sorted({r.get("topic", "") for r in rows_train})
    (Path(output_dir) / TOPICS_FILE).write_text(json.dumps({"train_topics": topics}, indent=2))


def with_topics(model, folder: Path):
    """The loaded model with ``argora_train_topics`` (None for an artifact from before ``similarity.json``)."""
    path = Path(folder) / TOPICS_FILE
    model.argora_train_topics = json.loads(path.read_text())["train_topics"] if path.exists() else None
    return model


def evaluate(model, rows) -> dict:
    """``models evaluate`` / the retrain loop: Spearman x 100 (and Jaccard's) on the rows not tagged ``split:
    "test"`` (all rows when every one is); ``in_topic`` / ``cross_topic``: the same on the rows whose topic the
    model was / was not trained on (when the artifact records its topics); ``test``: all of that on the test rows
    when there are both."""
    dev, test = sim_data.split_eval(rows)
    topics = getattr(model, "argora_train_topics", None)

    def one(part):
        out = evaluate_model(model, part)
        if topics is not None:
            seen = set(topics)
            for name, subset in (
                ("in_topic", [r for r in part if r.get("topic", "") in seen]),
                ("cross_topic", [r for r in part if r.get("topic", "") not in seen]),
            ):
                out[name] = evaluate_model(model, subset) if subset else None
        return out

    out = one(dev or test)
    if dev and test:
        out["test"] = one(test)
    return out


def default_base_model() -> str:
    return default_encoder_path()


def train(request: registry.TrainRequest) -> registry.TrainResult:
    defaults = sim_models.cross_defaults((request.hyperparameters or {}).get("architecture"))
    return train_pairs(request, "cross", KIND, defaults)


def load(path: Path):
    return with_topics(sim_models.load_cross_encoder(Path(path) / "model"), Path(path))


SPEC = registry.register_trainer(
    registry.TrainerSpec(
        kind=KIND,
        train=train,
        load=load,
        primary_metric="spearman",
        higher_is_better=True,
        description="BWS similarity cross-encoder (gated cross-attention over a bi-encoder checkpoint, or the "
        "[CLS] CrossEncoder of AugSBERT §5)",
        rows_from_file=sim_data.rows_from_file,
        rows_from_project=sim_data.rows_from_project,
        evaluate=evaluate,
        default_base_model=default_base_model,
        data_formats=sim_data.DATA_FORMATS,
    )
)
