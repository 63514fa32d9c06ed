"""The Augmented SBERT pipeline (AugSBERT §3.1, Fig. 2) and its domain adaptation mode (§3.2, Fig. 3).

In-domain (``mode="in-domain"``)
    1. a cross-encoder is trained on the gold training pairs (or an existing one is reused: ``cross_encoder`` =
       ``version:<id>`` of a ``crossencoder`` / ``augsbert`` version, or a folder);
    2. the sampling strategy (:mod:`.sampling`) proposes new pairs of the gold sentences (``semantic`` and
       ``bm25+semantic`` first train a bi-encoder on gold, or reuse ``gold_bi_encoder``);
    3. the cross-encoder labels them (the silver set; ``kde`` then keeps a pair with probability Q(s));
    4. the bi-encoder is trained on the gold pairs + silver (seed optimisation as configured). ``gold_labels``
       says what the gold pairs carry there: ``teacher`` (the default) the cross-encoder's scores, so every pair the
       bi-encoder sees is on the teacher's scale; ``gold`` their annotated scores, as in the paper. On a few hundred
       gold pairs the paper's mix of annotated and teacher scores stays at SBERT's level, the teacher's scores on
       every pair lift the bi-encoder above it (README "Similarity on small data", bench/RESULTS.md).
    No dev / test pair is ever sampled into the silver set: the evaluation measures pairs the bi-encoder never saw.
Domain adaptation (``mode="domain-adaptation"``)
    The cross-encoder comes from elsewhere -- ``cross_encoder`` (a version or folder trained on another project /
    topic set) or ``source_data`` (a BWS file whose train rows it is trained on here) -- and labels the *target*
    training pairs (the ``--data`` rows; their gold scores are not used for training) plus the strategy's pairs;
    the bi-encoder is trained on that silver set only. Dev / test rows of the target evaluate it.

Artifact: ``model/`` (the bi-encoder, a SentenceTransformer folder), ``cross-encoder/`` (when trained in this
run), ``silver.jsonl`` (the silver pairs with their cross-encoder scores and sampling source), ``augsbert.json``.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from argora.jsonl import write_jsonl
from argora.progress import Progress, null_progress
from ml.errors import TrainerError
from ml.models import ModelVersion

from . import models as sim_models
from . import sampling
from .data import load_splits, setting_of, split_eval
from .evaluation import evaluate_model

log = logging.getLogger(__name__)

MODES = ("in-domain", "domain-adaptation")
# bi-encoder stage: the shared names; cross-encoder stage: cross_<name> (None: the shared value; lr, epochs and
# architecture: the cross-encoder defaults of ml.similarity.models)
AUG_EXTRA = {
    "strategy": "bm25",
    "k": sampling.DEFAULT_K,
    "n_random": 0,
    "within_topic": True,
    "kde_bandwidth": 0.0,
    "mode": "in-domain",
    "cross_encoder": "",
    "cross_base_model": "",
    "gold_bi_encoder": "",
    "source_data": "",
    "label_batch_size": 64,
    "cross_architecture": None,
    "cross_lr": None,
    "cross_epochs": None,
    "cross_max_steps": None,
    "cross_batch_size": None,
    "cross_max_length": None,
    "cross_seeds": None,
    "cross_head_lr": None,
    "cross_freeze_embeddings": None,
    "cross_pooler_init": None,
    "cross_gate_init": None,
    "cross_gate_lr": None,
    "teacher_check": "warn",
    "gold_labels": "teacher",
}
TEACHER_CHECKS = ("warn", "refuse", "off")
GOLD_LABELS = ("teacher", "gold")
AUG_DEFAULTS = dict(sim_models.BI_DEFAULTS, **AUG_EXTRA)


class AugSBERTError(ValueError):
    pass


def _error(message: str) -> Exception:
    return TrainerError(message)


def cross_hp(hp: dict) -> dict:
    """The cross-encoder stage's hyperparameters: ``cross_<name>``, else the shared ``<name>`` for the names the
    two stages share (batch size, max length, ...), else the cross-encoder default of ``cross_architecture``;
    the learning rate and epochs are the cross-encoder's own unless ``cross_lr`` / ``cross_epochs`` are given."""
    defaults = sim_models.cross_defaults(hp.get("cross_architecture"))
    out = {}
    for name, default in defaults.items():
        value = hp.get(f"cross_{name}")
        if value is None and name not in ("lr", "epochs", "architecture") and name in sim_models.BI_DEFAULTS:
            value = hp.get(name)
        out[name] = value if value is not None else default
    return out


def bi_hp(hp: dict) -> dict:
    return {name: hp.get(name, default) for name, default in sim_models.BI_DEFAULTS.items()}


# --- reusing models --------------------------------------------------------------------------------


def resolve_model_path(ref: str, which: str) -> Path:
    """Folder of a cross-encoder (``which="cross"``) or bi-encoder (``"bi"``) named by ``version:<id>`` (a
    ``crossencoder`` / ``biencoder`` / ``augsbert`` version) or by a path (an artifact folder or the model itself)."""
    ref = str(ref).strip()
    if ref.startswith("version:"):
        try:
            v = ModelVersion.objects.get(pk=int(ref.split(":", 1)[1]))
        except (ValueError, ModelVersion.DoesNotExist):
            raise _error(f"hyperparameters: no model version {ref!r}") from None
        if not v.artifact_path:
            raise _error(f"hyperparameters: model version {v.pk} has no artifact (status {v.status})")
        folder = Path(v.artifact_path)
        wanted = {
            "cross": {"crossencoder": "model", "augsbert": "cross-encoder"},
            "bi": {"biencoder": "model", "augsbert": "model"},
        }[which]
        if v.kind not in wanted:
            raise _error(
                f"hyperparameters: version {v.pk} is a {v.kind!r} model, not a "
                f"{'cross' if which == 'cross' else 'bi'}-encoder"
            )
        path = folder / wanted[v.kind]
    else:
        path = Path(ref)
        sub = path / ("cross-encoder" if which == "cross" else "model")
        if (path / "argora-model.json").exists() and (sub.is_dir() or (path / "model").is_dir()):
            path = sub if sub.is_dir() else path / "model"
    if not path.is_dir():
        raise _error(f"hyperparameters: {ref!r} names no {which}-encoder folder ({path} is missing)")
    return path


# --- the teacher check -----------------------------------------------------------------------------


def teacher_baselines(dev: Sequence[dict], *, base_model: str, batch_size: int = 64) -> dict:
    """What the teacher must beat on the dev rows (Spearman x 100): ``jaccard`` (word overlap, the paper's
    baseline) and ``base_bi_encoder`` (the untrained base model's cosine: where the SBERT student starts)."""
    bi = sim_models.new_bi_encoder(base_model)
    return {
        "jaccard": evaluate_model(bi, dev, batch_size=batch_size)["jaccard_spearman"],
        "base_bi_encoder": sim_models.dev_spearman(bi, dev, batch_size=batch_size),
    }


def check_teacher(teacher_dev: float, baselines: dict, *, policy: str = "warn") -> str | None:
    """The warning when the cross-encoder's dev Spearman is below a baseline (None when it beats all); with
    ``policy="refuse"`` a :class:`TrainerError` instead. Silver labels from a teacher worse than the student's
    own starting point teach it noise (issue 23: AugSBERT 50.4 < SBERT 53.6 with such a teacher)."""
    worse = {name: value for name, value in baselines.items() if value is not None and teacher_dev <= value}
    if not worse:
        return None
    message = (
        f"AugSBERT teacher check: the cross-encoder's dev Spearman {teacher_dev:.1f} is not above "
        + ", ".join(f"{name} {value:.1f}" for name, value in worse.items())
        + "; its silver labels are likely to hurt the bi-encoder (train a better cross-encoder: more epochs, "
        "cross_head_lr, cross_lr; or give cross_encoder=version:<id>)"
    )
    if policy == "refuse":
        raise _error(f"hyperparameters: teacher_check=refuse: {message}")
    return message


# --- the pipeline ----------------------------------------------------------------------------------


def silver_set(
    strategy: str,
    rows_gold: Sequence[dict],
    cross_encoder,
    *,
    k: int = sampling.DEFAULT_K,
    seed: int = 0,
    encode=None,
    n_random: int = 0,
    within_topic: bool = True,
    kde_bandwidth: float | None = None,
    extra_pairs: Sequence[dict] = (),
    gold_scores=None,
    batch_size: int = 64,
    exclude: Sequence[dict] = (),
    progress: Progress = null_progress,
) -> tuple[list[dict], dict]:
    """Sample (``strategy``), label with ``cross_encoder`` and select; returns ``(silver rows, stats)``.
    ``extra_pairs`` (domain adaptation: the target's pairs) are labelled and kept as well; no pair of ``exclude``
    (the dev / test rows) is sampled."""
    pairs = list(extra_pairs) + sampling.candidates(
        strategy,
        rows_gold,
        k=k,
        seed=seed,
        encode=encode,
        n_random=n_random,
        within_topic=within_topic,
        exclude=sampling.gold_keys(exclude),
    )
    progress(0, 1, f"labelling {len(pairs)} pairs with the cross-encoder")
    scores = sim_models.predict(
        cross_encoder, [(p["argument1"], p["argument2"]) for p in pairs], batch_size=batch_size
    ).tolist()
    n_extra = len(extra_pairs)
    gold_scores = [r["score"] for r in rows_gold] if gold_scores is None else list(gold_scores)
    keep_sampled = sampling.select(
        strategy, pairs[n_extra:], scores[n_extra:], gold_scores, seed=seed, bandwidth=kde_bandwidth or None
    )
    keep = list(range(n_extra)) + [n_extra + i for i in keep_sampled]
    silver = [
        {
            "topic": pairs[i].get("topic", ""),
            "argument1": pairs[i]["argument1"],
            "argument2": pairs[i]["argument2"],
            "score": round(float(scores[i]), 6),
            "source": pairs[i].get("source", "target"),
            "silver": True,
        }
        for i in keep
    ]
    kept_scores = [s["score"] for s in silver]
    stats = {
        "n_candidates": len(pairs),
        "n_silver": len(silver),
        "silver_mean_score": round(sum(kept_scores) / len(kept_scores), 4) if kept_scores else None,
        "by_source": {src: sum(1 for s in silver if s["source"] == src) for src in {s["source"] for s in silver}},
    }
    progress(1, 1, f"silver set: {len(silver)} of {len(pairs)} labelled pairs kept")
    return silver, stats


def run(
    rows_train: Sequence[dict],
    rows_dev: Sequence[dict],
    *,
    base_model: str,
    hp: dict,
    seed: int,
    output_dir: Path,
    progress: Progress = null_progress,
) -> dict:
    """The pipeline for one trainer request; writes the artifact and returns ``{"dev", "test", "info"}``."""
    strategy = sampling.canonical(hp["strategy"])
    mode = hp["mode"]
    if mode not in MODES:
        raise _error(f"hyperparameters: mode {mode!r} is not one of {', '.join(MODES)}")
    k = int(hp["k"])
    if k < 1:
        raise _error("hyperparameters: k must be >= 1")
    gold_labels = hp.get("gold_labels") or "teacher"
    if gold_labels not in GOLD_LABELS:
        raise _error(f"hyperparameters: gold_labels must be one of {', '.join(GOLD_LABELS)}, got {gold_labels!r}")
    output_dir = Path(output_dir)
    dev, test = split_eval(rows_dev)
    rows_train = [r for r in rows_train if r.get("split", "train") == "train"]
    info: dict = {
        "strategy": strategy,
        "k": k,
        "mode": mode,
        "n_gold": len(rows_train),
        "gold_labels": gold_labels if mode == "in-domain" else None,
        "setting": setting_of(rows_train, test),
    }
    batch = int(hp["label_batch_size"])

    # 1. the cross-encoder
    source_rows = None
    if hp["cross_encoder"]:
        path = resolve_model_path(hp["cross_encoder"], "cross")
        cross = sim_models.load_cross_encoder(path)
        info["cross_encoder"] = str(hp["cross_encoder"])
    else:
        if mode == "domain-adaptation":
            if not hp["source_data"]:
                raise _error(
                    "hyperparameters: domain adaptation needs cross_encoder (version:<id> or a folder) "
                    "or source_data (a BWS file of the source domain)"
                )
            parts = load_splits(hp["source_data"])
            source_rows, source_dev = parts["train"], parts["dev"]
            info["cross_encoder"] = f"trained on {hp['source_data']}"
        else:
            source_rows, source_dev = rows_train, dev
            info["cross_encoder"] = "trained on the gold pairs"
        cross, ce_info = sim_models.train(
            "cross",
            source_rows,
            source_dev,
            base_model=hp["cross_base_model"] or base_model,
            hp=cross_hp(hp),
            seed=seed,
            progress=progress,
            label="cross-encoder ",
        )
        cross.save_pretrained(str(output_dir / "cross-encoder"))
        info["cross_encoder_seed"] = ce_info["seed"]
        info["cross_encoder_probe_scores"] = ce_info["probe_scores"]
    info["cross_encoder_dev"] = evaluate_model(cross, dev, batch_size=batch)["spearman"]
    info["cross_encoder_test"] = evaluate_model(cross, test, batch_size=batch)["spearman"] if test else None
    policy = hp.get("teacher_check") or "warn"
    if policy not in TEACHER_CHECKS:
        raise _error(f"hyperparameters: teacher_check must be one of {', '.join(TEACHER_CHECKS)}, got {policy!r}")
    info["warnings"] = []
    if policy != "off" and dev:
        baselines = teacher_baselines(dev, base_model=base_model, batch_size=batch)
        info["teacher_baselines_dev"] = baselines
        warning = check_teacher(info["cross_encoder_dev"], baselines, policy=policy)
        info["teacher_ok"] = warning is None
        if warning:
            info["warnings"].append(warning)
            log.warning(warning)
            print(f"WARNING: {warning}", file=sys.stderr, flush=True)
            progress(0, 1, warning)
    elif policy != "off":
        info["teacher_ok"] = None
        info["warnings"].append("AugSBERT teacher check skipped: no dev rows")

    # 2. the gold bi-encoder, for semantic search
    encode = None
    if sampling.needs_bi_encoder(strategy):
        if hp["gold_bi_encoder"]:
            gold_bi = sim_models.load_bi_encoder(resolve_model_path(hp["gold_bi_encoder"], "bi"))
        else:
            gold_rows = rows_train if mode == "in-domain" else (source_rows or [])
            if not gold_rows:
                raise _error(
                    "hyperparameters: semantic search in domain adaptation needs gold_bi_encoder or source_data"
                )
            gold_bi, _ = sim_models.train(
                "bi",
                gold_rows,
                dev,
                base_model=base_model,
                hp=bi_hp(hp),
                seed=seed,
                progress=progress,
                label="gold bi-encoder ",
            )
        info["gold_bi_encoder_dev"] = evaluate_model(gold_bi, dev, batch_size=batch)["spearman"]
        info["gold_bi_encoder_test"] = evaluate_model(gold_bi, test, batch_size=batch)["spearman"] if test else None

        def encode(texts, _model=gold_bi):
            return sim_models.encode(_model, texts, batch_size=batch)

    # 3. the silver set. Domain adaptation: the target's own pairs are labelled too, and they are all it trains on;
    # in-domain with gold_labels=teacher: the gold pairs are labelled too (source "gold"), in place of their scores
    adapt = mode == "domain-adaptation"
    relabel = adapt or gold_labels == "teacher"
    target_pairs = (
        [
            {
                "topic": r.get("topic", ""),
                "argument1": r["argument1"],
                "argument2": r["argument2"],
                "source": "target" if adapt else "gold",
            }
            for r in rows_train
        ]
        if relabel
        else []
    )
    gold_scores = ([r["score"] for r in (source_rows or [])] or None) if adapt else None
    silver, stats = silver_set(
        strategy,
        rows_train,
        cross,
        k=k,
        seed=seed,
        encode=encode,
        n_random=int(hp["n_random"]),
        within_topic=bool(hp["within_topic"]),
        kde_bandwidth=float(hp["kde_bandwidth"]) or None,
        extra_pairs=target_pairs,
        gold_scores=gold_scores,
        batch_size=batch,
        exclude=rows_dev,
        progress=progress,
    )
    train_rows = silver if relabel else list(rows_train) + silver
    info.update(stats)
    write_jsonl(silver, output_dir / "silver.jsonl")

    # 4. the bi-encoder on the gold pairs (annotated or teacher scores) + silver
    bi, bi_info = sim_models.train(
        "bi",
        train_rows,
        dev,
        base_model=base_model,
        hp=bi_hp(hp),
        seed=seed,
        progress=progress,
        label="AugSBERT bi-encoder ",
    )
    bi.save_pretrained(str(output_dir / "model"))
    info.update(
        seed=bi_info["seed"], probe_scores=bi_info["probe_scores"], steps=bi_info["steps"], n_train=len(train_rows)
    )
    dev_metrics = evaluate_model(bi, dev, batch_size=batch)
    test_metrics = evaluate_model(bi, test, batch_size=batch) if test else None
    (output_dir / "augsbert.json").write_text(
        json.dumps(dict(info, dev=dev_metrics, test=test_metrics), indent=2, default=str)
    )
    return {"dev": dev_metrics, "test": test_metrics, "info": info}
