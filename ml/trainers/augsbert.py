"""Trainer kind ``augsbert``: Augmented SBERT (AugSBERT §3): cross-encoder on gold -> silver pairs sampled by a
strategy and labelled by it -> bi-encoder on gold + silver (:mod:`ml.similarity.augsbert`).

Hyperparameters (:data:`ml.similarity.augsbert.AUG_DEFAULTS`): ``strategy`` (random | kde | bm25 | semantic |
bm25+semantic, default bm25), ``k`` (top-k neighbours, default 3), ``n_random`` (random / KDE pool size),
``within_topic``, ``kde_bandwidth``, ``mode`` (in-domain | domain-adaptation), ``cross_encoder`` (``version:<id>``
or a folder: reuse instead of training), ``gold_bi_encoder`` (for semantic search), ``source_data`` (domain
adaptation: the source BWS file), the bi-encoder's epochs / max_steps / batch_size / lr / seeds / ... and the
cross-encoder's ``cross_<name>`` overrides (``cross_lr`` default 1e-5).

    manage.py train augsbert --data bws.jsonl --hp strategy=bm25 --hp k=3 --json

The loaded model is the bi-encoder; ``metrics.info`` records the strategy, k, silver set size and the
cross-encoder's own dev / test Spearman.

Teacher check (``teacher_check``: warn (default) / refuse / off; issue 23): before labelling silver pairs the
cross-encoder's dev Spearman is compared with the Jaccard baseline and with the untrained base bi-encoder (where
the student starts); when it is not above both, a warning goes to stderr and the log and into
``metrics.info["warnings"]`` (``teacher_ok: false``), or the run fails with ``refuse``.
"""

from __future__ import annotations

from pathlib import Path

from ml import errors, registry
from ml.similarity import augsbert as pipeline
from ml.similarity import data as sim_data
from ml.similarity import models as sim_models
from ml.similarity.sampling import SamplingError
from ml.trainers.crossencoder import default_base_model, eval_rows, evaluate, with_topics, write_topics
from ml.training import resolve_hyperparameters

KIND = "augsbert"


def train(request: registry.TrainRequest) -> registry.TrainResult:
    hp = resolve_hyperparameters(KIND, pipeline.AUG_DEFAULTS, request.hyperparameters)
    try:
        out = pipeline.run(
            request.rows_train,
            eval_rows(request),
            base_model=request.base_model,
            hp=hp,
            seed=request.seed,
            output_dir=Path(request.output_dir),
            progress=request.progress,
        )
    except (pipeline.AugSBERTError, SamplingError) as exc:
        raise errors.TrainerError(f"hyperparameters: {exc}") from None
    write_topics(request.output_dir, [r for r in request.rows_train if r.get("split", "train") == "train"])
    test = dict(out["test"], setting=out["info"]["setting"]) if out["test"] else None
    return registry.TrainResult(metrics=out["dev"], test_metrics=test, info=out["info"])


def load(path: Path):
    return with_topics(sim_models.load_bi_encoder(Path(path) / "model"), Path(path))


SPEC = registry.register_trainer(
    registry.TrainerSpec(
        kind=KIND,
        train=train,
        load=load,
        primary_metric="spearman",
        higher_is_better=True,
        description="Augmented SBERT: bi-encoder on gold + cross-encoder-labelled silver pairs (strategy, k)",
        rows_from_file=sim_data.rows_from_file,
        rows_from_project=sim_data.rows_from_project,
        evaluate=evaluate,
        default_base_model=default_base_model,
        data_formats=sim_data.DATA_FORMATS,
    )
)
