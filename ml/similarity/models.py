"""Training and scoring the similarity models with sentence-transformers (AugSBERT §5).

Cross-encoder (hyperparameter ``architecture``)
    ``gated`` (default): :class:`ml.similarity.gated.GatedCrossEncoder`, the bi-encoder checkpoint reading both
    sentences in one sequence with learned gates on the attention between them, score the cosine of the two
    sentences' pooled tokens, trained with SBERT's loss and recipe (:data:`CROSS_DEFAULTS`).
    ``cls``: :class:`sentence_transformers.CrossEncoder` with ``num_labels=1``: a linear layer on ``[CLS]`` with
    sigmoid activation, scores in [0, 1]; trained with ``CrossEncoderTrainer`` and ``BinaryCrossEntropyLoss`` on
    the BWS scores (soft labels). Paper: lr 1e-5, batch 16 (:data:`CLS_DEFAULTS`: the issue-23 recipe below).
Bi-encoder (SBERT)
    :class:`sentence_transformers.SentenceTransformer` (the base model's modules, or Transformer + mean pooling for
    a plain Hugging Face model); trained with ``SentenceTransformerTrainer`` and ``CosineSimilarityLoss``; the
    score of a pair is the cosine of the two embeddings. Paper: lr 2e-5, batch 16, AdamW.

Seed optimisation (§3.1, App. D) when ``seeds`` lists several seeds: each seed is trained to ``probe_fraction``
(20 %) of the steps (the Trainer stops there and writes a checkpoint), the best on the dev Spearman is resumed from
its checkpoint to the end (:func:`ml.seeds.seed_optimise_runs`); checkpoints of the others are deleted.

Hyperparameters (:data:`CROSS_DEFAULTS`, :data:`BI_DEFAULTS`): epochs, max_steps (> 0: exactly this many steps),
batch_size, lr, head_lr (cross-encoder: the learning rate of the new classifier head, and of the pooler under it
when that is not started as the identity; 0 = ``lr``), pooler_init (cross-encoder: ``identity`` / ``keep``, see below), warmup_ratio, weight_decay, max_length,
eval_batch_size, seeds, probe_fraction, freeze_embeddings (keep the word-piece embedding matrix fixed: half the
parameters of a MiniLM, so 2-3x faster steps on a CPU and less room to memorise a tiny gold set).

The ``cls`` cross-encoder from a bi-encoder checkpoint (issue 23). The packaged all-MiniLM-L6-v2 is a sentence-transformers
model: trained with mean pooling, its BERT pooler was never trained (weights ~0.007) and the classifier on top is
new. With the paper's BERT-base recipe (lr 1e-5, head at the same rate, 1 epoch) the product of two near-zero
layers barely moves and the cross-encoder stays below the Jaccard baseline. The defaults therefore (1) start the
pooler of a converted sentence-transformers checkpoint as the identity (``pooler_init="identity"``: the head reads
``tanh`` of the [CLS] state, which the encoder's self-attention already fills), (2) train the head at its own
``head_lr`` 2e-3 and the encoder at 4e-5 (MiniLM's usual fine-tuning rate, higher than BERT-base's), and (3) run 3
epochs with 10 % linear warm-up. Even so it stays below SBERT on UKP ASPECT cross-topic, which is why ``gated`` is
the default (README "Similarity on small data", ``bench/quality.py``).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from argora.progress import Progress, null_progress
from ml import errors, training

from .stats import spearman100

log = logging.getLogger(__name__)

COMMON = {
    "epochs": 1,
    "max_steps": 0,
    "batch_size": 16,
    "warmup_ratio": 0.1,
    "weight_decay": 0.01,
    "max_length": 128,
    "eval_batch_size": 64,
    "seeds": [],
    "probe_fraction": 0.2,
    "freeze_embeddings": False,
}
ARCHITECTURES = ("gated", "cls")
# architecture "cls": the [CLS]-head cross-encoder of the paper, with the issue-23 recipe (head_lr, pooler_init)
CLS_DEFAULTS = dict(
    COMMON, architecture="cls", epochs=3, lr=4e-5, head_lr=2e-3, pooler_init="identity", gate_init=0.0, gate_lr=0.05
)
# the default, architecture "gated" (ml.similarity.gated): SBERT's recipe, plus the gates' own learning rate
CROSS_DEFAULTS = dict(CLS_DEFAULTS, architecture="gated", epochs=1, lr=2e-5)
# the defaults before issue 23 (the paper's BERT-base values): bench/quality.py --recipe old
OLD_CROSS_DEFAULTS = dict(CLS_DEFAULTS, epochs=1, lr=1e-5, head_lr=0.0, pooler_init="keep")
POOLER_INITS = ("identity", "keep")
BI_DEFAULTS = dict(COMMON, lr=2e-5)


def cross_defaults(architecture: str | None) -> dict:
    """The cross-encoder defaults of ``architecture`` (None: the default one, ``gated``)."""
    if architecture not in (None, *ARCHITECTURES):
        raise errors.TrainerError(
            f"hyperparameters: architecture must be one of {', '.join(ARCHITECTURES)}, got {architecture!r}"
        )
    return CLS_DEFAULTS if architecture == "cls" else CROSS_DEFAULTS


# --- models ----------------------------------------------------------------------------------------


def is_sentence_transformer_checkpoint(base_model: str) -> bool:
    """A sentence-transformers bi-encoder folder (``modules.json`` naming a Pooling module): its BERT pooler was
    never trained."""
    modules = Path(str(base_model)) / "modules.json"
    try:
        return "Pooling" in modules.read_text()
    except OSError:
        return False


def new_cross_encoder(base_model: str, *, max_length: int = 128, seed: int = 13, pooler_init: str = "keep"):
    """A new cross-encoder (one sigmoid output) on ``base_model``; ``pooler_init="identity"`` starts the pooler of
    a sentence-transformers checkpoint as the identity map (module docstring)."""
    import torch
    from sentence_transformers import CrossEncoder

    if pooler_init not in POOLER_INITS:
        raise errors.TrainerError(
            f"hyperparameters: pooler_init must be one of {', '.join(POOLER_INITS)}, got {pooler_init!r}"
        )
    training.set_seed(seed)  # the classifier head is initialised here
    model = CrossEncoder(str(base_model), num_labels=1, max_length=int(max_length), device=training.pick_device())
    if pooler_init == "identity" and is_sentence_transformer_checkpoint(base_model):
        for name, module in model.named_modules():
            if (
                name.endswith("pooler.dense")
                and isinstance(module, torch.nn.Linear)
                and module.in_features == module.out_features
            ):
                with torch.no_grad():
                    module.weight.copy_(torch.eye(module.in_features, dtype=module.weight.dtype))
                    module.bias.zero_()
    return model


def new_bi_encoder(base_model: str, *, max_length: int = 128, seed: int = 13):
    from sentence_transformers import SentenceTransformer

    training.set_seed(seed)
    model = SentenceTransformer(str(base_model), device=training.pick_device())
    model.max_seq_length = int(max_length)
    return model


def load_cross_encoder(path):
    """A saved cross-encoder of either architecture."""
    from sentence_transformers import CrossEncoder

    from .gated import GatedCrossEncoder, is_gated_folder  # torch + transformers: start-up cost

    if is_gated_folder(path):
        return GatedCrossEncoder.load(path, device=training.pick_device())
    return CrossEncoder(str(path), device=training.pick_device())


def load_bi_encoder(path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(path), device=training.pick_device())


def is_cross_encoder(model) -> bool:
    from sentence_transformers import CrossEncoder

    from .gated import GatedCrossEncoder  # torch + transformers: start-up cost

    return isinstance(model, (CrossEncoder, GatedCrossEncoder))


def predict(model, pairs: Sequence[tuple[str, str]], *, batch_size: int = 64) -> np.ndarray:
    """Scores of ``(a, b)`` pairs: the cross-encoder's sigmoid output, or the bi-encoder's cosine."""
    pairs = [(str(a), str(b)) for a, b in pairs]
    if not pairs:
        return np.zeros(0, dtype=np.float32)
    if is_cross_encoder(model):
        return np.asarray(model.predict(pairs, batch_size=batch_size, show_progress_bar=False), dtype=np.float32)
    texts = list(dict.fromkeys([a for a, _ in pairs] + [b for _, b in pairs]))
    emb = encode(model, texts, batch_size=batch_size)
    index = {t: i for i, t in enumerate(texts)}
    a = emb[[index[p[0]] for p in pairs]]
    b = emb[[index[p[1]] for p in pairs]]
    return (a * b).sum(axis=1)


def encode(model, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
    return np.asarray(
        model.encode(
            list(texts),
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        ),
        dtype=np.float32,
    )


def score_rows(model, rows: Sequence[dict], *, batch_size: int = 64) -> np.ndarray:
    return predict(model, [(r["argument1"], r["argument2"]) for r in rows], batch_size=batch_size)


def dev_spearman(model, rows: Sequence[dict], *, batch_size: int = 64) -> float:
    if not rows:
        return 0.0
    return spearman100(score_rows(model, rows, batch_size=batch_size), [r["score"] for r in rows])


# --- training --------------------------------------------------------------------------------------


def _dataset(rows: Sequence[dict]):
    from datasets import Dataset

    return Dataset.from_dict(
        {
            "sentence1": [r["argument1"] for r in rows],
            "sentence2": [r["argument2"] for r in rows],
            "score": [float(r["score"]) for r in rows],
        }
    )


def _freeze_word_embeddings(model, freeze: bool) -> None:
    if freeze:
        for name, param in model.named_parameters():
            if "word_embeddings" in name:
                param.requires_grad_(False)


def _cross_optimizer(model, hp: dict):
    """AdamW over the encoder (``lr``) and the head (``head_lr``, default ``lr``): the new classifier, and the pooler
    under it unless it starts as the identity (a sentence-embedding checkpoint such as all-MiniLM-L6-v2 never trained
    its pooler: near-zero weights, which need the head's rate; an identity pooler trained at the head's rate is
    scrambled within a few dozen Adam steps -- 2e-3 per entry and step on a 384 x 384 matrix -- and the cross-encoder
    then learns nothing). Handed to the ``CrossEncoderTrainer`` (``optimizers=``), which builds the linear warm-up /
    decay schedule on it."""
    import torch

    lr = float(hp["lr"])
    head_lr = float(hp.get("head_lr") or 0) or lr
    pooler_in_head = str(hp.get("pooler_init") or "keep") != "identity"
    decay = float(hp["weight_decay"])
    groups: dict[tuple[bool, bool], list] = {}
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        head = ".classifier." in f".{name}." or (pooler_in_head and ".pooler." in f".{name}.")
        no_decay = name.endswith(".bias") or "LayerNorm" in name or "layer_norm" in name
        groups.setdefault((head, no_decay), []).append(param)
    return torch.optim.AdamW(
        [
            {"params": params, "lr": head_lr if head else lr, "weight_decay": 0.0 if no_decay else decay}
            for (head, no_decay), params in groups.items()
        ],
        lr=lr,
    )


class _Run:
    """One seed's training run with a sentence-transformers Trainer, continuable: ``run(steps)`` trains until
    ``steps`` optimisation steps are done (stopping at a probe writes a checkpoint; continuing resumes from it) and
    returns the dev Spearman x 100 (the interface of :func:`ml.seeds.seed_optimise_runs`)."""

    def __init__(
        self,
        which: str,
        *,
        rows_train,
        rows_dev,
        base_model,
        hp,
        seed,
        steps_total,
        workdir: Path,
        progress: Progress,
        label: str,
    ):
        from transformers import PrinterCallback, TrainerCallback

        self.which, self.rows_dev, self.hp, self.seed = which, list(rows_dev), hp, int(seed)
        self.steps_total, self.done, self.checkpoint = int(steps_total), 0, None
        self.workdir = Path(workdir) / f"{which}-seed-{seed}"
        self.workdir.mkdir(parents=True, exist_ok=True)
        weakref.finalize(self, shutil.rmtree, str(self.workdir), True)
        cuda = training.is_cuda(training.pick_device())
        common = {
            "output_dir": str(self.workdir),
            "max_steps": self.steps_total,
            "per_device_train_batch_size": int(hp["batch_size"]),
            "learning_rate": float(hp["lr"]),
            "warmup_steps": float(hp["warmup_ratio"]),
            "weight_decay": float(hp["weight_decay"]),
            "save_strategy": "no",
            "eval_strategy": "no",
            "logging_strategy": "no",
            "report_to": "none",
            "disable_tqdm": True,
            "seed": self.seed,
            "data_seed": self.seed,
            "use_cpu": not cuda,
            "fp16": cuda,
            "dataloader_drop_last": False,
        }
        outer = self

        class Steps(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                if state.global_step % 10 == 0 or state.global_step == outer.steps_total:
                    progress(
                        state.global_step,
                        outer.steps_total,
                        f"{label}seed {outer.seed}: step {state.global_step}/{outer.steps_total}",
                    )
                if outer.stop_at and state.global_step >= outer.stop_at:
                    control.should_training_stop = True
                    control.should_save = True
                return control

        self.stop_at = 0
        freeze = bool(hp.get("freeze_embeddings"))
        if which == "cross":
            from sentence_transformers.cross_encoder import (
                CrossEncoderTrainer,
                CrossEncoderTrainingArguments,
                losses,
            )

            self.model = new_cross_encoder(
                base_model,
                max_length=hp["max_length"],
                seed=self.seed,
                pooler_init=str(hp.get("pooler_init") or "keep"),
            )
            _freeze_word_embeddings(self.model, freeze)
            self.trainer = CrossEncoderTrainer(
                model=self.model,
                args=CrossEncoderTrainingArguments(**common),
                train_dataset=_dataset(rows_train),
                loss=losses.BinaryCrossEntropyLoss(self.model),
                callbacks=[Steps()],
                optimizers=(_cross_optimizer(self.model, hp), None),
            )
        else:
            from sentence_transformers import (
                SentenceTransformerTrainer,
                SentenceTransformerTrainingArguments,
            )
            from sentence_transformers.sentence_transformer import losses

            self.model = new_bi_encoder(base_model, max_length=hp["max_length"], seed=self.seed)
            _freeze_word_embeddings(self.model, freeze)
            self.trainer = SentenceTransformerTrainer(
                model=self.model,
                args=SentenceTransformerTrainingArguments(**common),
                train_dataset=_dataset(rows_train),
                loss=losses.CosineSimilarityLoss(self.model),
                callbacks=[Steps()],
            )
        self.trainer.remove_callback(PrinterCallback)  # it prints the logs to stdout (the CLI's --json lives there)

    def __call__(self, steps: int) -> float:
        steps = min(int(steps), self.steps_total)
        if steps > self.done:
            if self.done == 0:
                self.stop_at = steps if steps < self.steps_total else 0
                self.trainer.train()
            else:
                self.stop_at = 0
                self.trainer.train(resume_from_checkpoint=self.checkpoint)
            self.done = steps
            if self.stop_at:
                self.checkpoint = str(self.workdir / f"checkpoint-{self.trainer.state.global_step}")
        return dev_spearman(self.model, self.rows_dev, batch_size=int(self.hp["eval_batch_size"]))


def train(
    which: str,
    rows_train: Sequence[dict],
    rows_dev: Sequence[dict],
    *,
    base_model: str,
    hp: dict,
    seed: int = 13,
    progress: Progress = null_progress,
    label: str = "",
) -> tuple[object, dict]:
    """Train a cross-encoder (``which="cross"``) or bi-encoder (``"bi"``) on ``rows_train``; returns
    ``(model, info)`` with ``info = {"seed", "probe_scores", "steps", "dev_spearman"}``."""
    if which not in ("cross", "bi"):
        raise ValueError(f"which: {which!r}")
    rows_train = list(rows_train)
    if not rows_train:
        raise errors.TrainerError("data: no training rows")
    steps = training.total_steps(hp, len(rows_train))
    workdir = Path(tempfile.mkdtemp(prefix=f"argora-{which}-"))
    try:

        def make(seed_):
            if which == "cross" and hp.get("architecture", "cls") == "gated":
                from .gated import GatedRun  # torch + transformers: start-up cost

                return GatedRun(
                    rows_train=rows_train,
                    rows_dev=rows_dev,
                    base_model=base_model,
                    hp=hp,
                    seed=seed_,
                    steps_total=steps,
                    progress=progress,
                    label=label,
                    score=lambda model, rows: dev_spearman(model, rows, batch_size=int(hp["eval_batch_size"])),
                )
            return _Run(
                which,
                rows_train=rows_train,
                rows_dev=rows_dev,
                base_model=base_model,
                hp=hp,
                seed=seed_,
                steps_total=steps,
                workdir=workdir,
                progress=progress,
                label=label,
            )

        run, chosen, probes = training.seeded_run(make, hp, seed=seed, total=steps, progress=progress)
        score = run(steps)
        return run.model, {
            "seed": chosen,
            "probe_scores": {str(k): v for k, v in probes.items()},
            "steps": steps,
            "dev_spearman": score,
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
