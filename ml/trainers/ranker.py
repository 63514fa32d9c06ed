"""Trainer kind ``ranker``: the Arg-CTRL §3.1 Step 2b aspect ranker, a cross-encoder.

Model
    A sentence-transformers :class:`~sentence_transformers.CrossEncoder` with ``num_labels=1`` over the pair
    ``(sentence, candidate n-gram)`` (``[CLS] sentence [SEP] n-gram [SEP]``), regressing the Step 2a score
    (#aspect tokens / n, :mod:`ml.data`) with the mean squared error on the raw output (identity activation).
    Base model: the request's ``base_model`` (a name or a local path), default the packaged all-MiniLM-L6-v2
    (:func:`ml.encoders.default_encoder_path`). Ranking a sentence costs one forward pass per candidate (~100);
    see ``span_ranker`` for the one-pass alternative.

Hyperparameters (defaults from the paper: 5 epochs, lr 5e-5, batch 8), merged in this order: :data:`DEFAULTS`,
``ARGORA_TRAINER_HYPERPARAMETERS`` (environment, JSON ``{"ranker": {...}, "span_ranker": {...}}``; handy for a
CPU worker), the request's ``hyperparameters``:

    epochs, max_steps (> 0: train exactly this many steps instead), batch_size, lr, weight_decay, warmup_ratio,
    max_length (tokens of the pair), eval_batch_size, seeds (a list: seed optimisation, AugSBERT §3.1 -- each seed
    is trained for probe_fraction of the steps, the best on dev recall@10 is trained to the end), probe_fraction,
    eval (``"in-topic"``, the default, or ``"cross-topic"``; see below; ``manage.py train ... --eval``).

Training: length-bucketed dynamic padding, AdamW with linear warm-up/decay, fp16 autocast + grad scaling on CUDA.
Inference: batches sorted by length, dynamic padding, ``torch.inference_mode()``, half precision on CUDA.
Metrics on ``rows_dev``: recall@5/10/15/20 (primary ``recall@10``, :mod:`ml.metrics`), MSE, and the baseline
ranker's recall@10 on the same rows for reference. These dev figures are the *in-topic* setting of Table 2 (dev
sentences of the training topics). With ``eval = "cross-topic"`` the trainer also reports the *cross-topic* setting,
leave-one-topic-out over train + dev rows (:func:`ml.metrics.cross_topic`): for each topic a fresh model (same
hyperparameters, the request's seed, no seed optimisation) is trained on the other topics and ranks that topic's
sentences; ``cross_topic_recall@5/10/15/20`` are the means over the held-out topics (per-topic figures in the
version's ``info["cross_topic"]``). It costs one extra training per topic and needs rows of >= 2 topics; the
primary metric stays the in-topic dev recall@10. Artifact: ``<output_dir>/model`` (``CrossEncoder.save_pretrained``)
+ ``ranker.json`` (max_length).
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from argora.progress import null_progress
from ml import errors, registry, training
from ml.data import (
    SentenceRows,
    group_sentences,
    leave_one_topic_out,
    ranker_rows_from_project,
    read_jsonl_objects,
    read_ranker_rows,
    split_by_sentence,
)
from ml.encoders import default_encoder_path
from ml.inference import length_sorted_batches
from ml.metrics import KS, PRIMARY, baseline_scorer, evaluate_scorer
from ml.similarity.data import split_eval

KIND = "ranker"
DEFAULTS = {
    "epochs": 5,
    "max_steps": 0,
    "batch_size": 8,
    "lr": 5e-5,
    "weight_decay": 0.01,
    "warmup_ratio": 0.1,
    "max_length": 128,
    "eval_batch_size": 128,
    "seeds": [],
    "probe_fraction": 0.2,
    "eval": "in-topic",
}
EVAL_SETTINGS = ("in-topic", "cross-topic")
CHOICES = {"eval": EVAL_SETTINGS}  # checked by ml.training.resolve_hyperparameters


# --- shared by the ranker trainers -----------------------------------------------------------------


class StepRun:
    """A training run that can be continued: ``run(steps)`` trains until ``steps`` optimisation steps are done and
    returns the dev primary metric (the interface of :func:`ml.seeds.seed_optimise_runs`). Subclasses set
    ``self.module``, call :meth:`setup_optimiser` with its param groups, implement ``loss(batch_units)`` and
    ``scorer()``. Batches: an endless stream of shuffled passes over the units (:func:`ml.training.endless_batches`);
    the steps: :class:`ml.training.TrainLoop`."""

    def __init__(
        self,
        *,
        seed: int,
        hp: dict,
        n_units: int,
        steps_total: int,
        dev_groups: Sequence[SentenceRows],
        device: str,
        progress: Callable = null_progress,
        label: str = "",
    ):
        self.seed, self.hp, self.n_units, self.steps_total = seed, hp, n_units, steps_total
        self.dev_groups, self.device, self.progress, self.label = list(dev_groups), device, progress, label
        self._rng = random.Random(seed)
        self.target = 0

    def setup_optimiser(self, param_groups: list[dict]) -> None:
        """AdamW over ``[{"params": [...], "lr": ...}, ...]`` + linear warm-up/decay over ``steps_total``."""
        self.optimizer, self.scheduler = training.adamw(
            param_groups,
            total_steps=self.steps_total,
            warmup_ratio=float(self.hp["warmup_ratio"]),
            weight_decay=float(self.hp["weight_decay"]),
            ramp=True,
        )
        size = int(self.hp["batch_size"])
        self.loop = training.TrainLoop(
            self.module,
            self.optimizer,
            self.scheduler,
            self.loss,
            lambda epoch: training.endless_batches(self._rng, self.n_units, size),
            device=self.device,
            total=self.steps_total,
            progress=self.progress,
            describe=self._describe,
        )
        self._run = training.LoopRun(self.loop.steps())

    def _describe(self, loop: training.TrainLoop, metrics: dict | None) -> str | None:
        if metrics is None and (loop.step % 10 == 0 or loop.step == self.target):
            return f"{self.label}step {loop.step}/{loop.total}, loss {loop.last_loss:.4f}"
        return None

    @property
    def done(self) -> int:
        return self.loop.step

    def __call__(self, steps: int) -> float:
        """Train to ``steps`` and return the dev primary metric (a seed probe)."""
        self.train_to(steps)
        return float(evaluate_scorer(self.scorer(), self.dev_groups)[PRIMARY]) if self.dev_groups else 0.0

    def train_to(self, steps: int) -> None:
        self.target = min(int(steps), self.steps_total)
        self._run.train_to(self.target)
        self.module.eval()


def train_runs(
    request,
    kind: str,
    defaults: dict,
    new_run: Callable[..., StepRun],
    units_of: Callable[[list[dict]], Sequence],
    count_key: str,
) -> tuple[StepRun, dict, dict, dict | None, dict]:
    """Shared by ``ranker`` and ``span_ranker``: the hyperparameters, the run of the (seed-optimised) seed trained to
    the end, its dev metrics (:func:`finish_metrics`; seeds are chosen on them), its test metrics (the rows of
    ``request.rows_dev`` tagged ``split: "test"``, :func:`evaluate`; never used for any choice) and, with ``eval =
    "cross-topic"``, the leave-one-topic-out figures over the train + dev rows (a fresh run per held-out topic).
    ``new_run(units=..., seed=..., ...)`` builds a :class:`StepRun` over ``units_of(rows)``.
    Returns ``(run, hp, metrics, test metrics or None, info)``."""
    hp = training.resolve_hyperparameters(kind, defaults, request.hyperparameters, choices=CHOICES)
    rows_train = list(request.rows_train)
    units = units_of(rows_train)
    if not units:
        raise errors.TrainerError("data: no training rows")
    rows_dev, rows_test = split_eval(request.rows_dev)  # test rows (split "test") only give the test metrics
    rows_test = list(getattr(request, "rows_test", None) or []) + rows_test  # the registry passes them apart
    dev_groups = group_sentences(rows_dev)
    device = training.pick_device()
    steps = training.total_steps(hp, len(units))
    base_model = request.base_model or default_base_model()
    started = time.monotonic()

    def make_run(seed: int) -> StepRun:
        return new_run(
            base_model=base_model,
            units=units,
            seed=seed,
            hp=hp,
            steps_total=steps,
            dev_groups=dev_groups,
            device=device,
            progress=request.progress,
            label=f"seed {seed}: ",
        )

    run, seed, probes = training.seeded_run(make_run, hp, seed=request.seed, total=steps, progress=request.progress)
    run.train_to(steps)
    metrics = finish_metrics(run.scorer(), rows_train, rows_dev, dev_groups)
    test_metrics = evaluate(run.scorer(), rows_test) if rows_test else None
    extra = {}
    if hp["eval"] == "cross-topic":

        def train_fold(fold_rows: list[dict], topic: str):
            fold_units = units_of(fold_rows)
            fold = new_run(
                base_model=base_model,
                units=fold_units,
                seed=int(request.seed),
                hp=hp,
                steps_total=training.total_steps(hp, len(fold_units)),
                dev_groups=[],
                device=device,
                progress=null_progress,
            )
            fold.train_to(fold.steps_total)
            return fold.scorer()

        flat, extra["cross_topic"] = cross_topic_metrics(request, hp, train_fold, rows=rows_train + rows_dev)
        metrics.update(flat)
    info = {
        "seed": seed,
        "seed_probes": probes,
        "steps": run.done,
        "hyperparameters": hp,
        "device": device,
        count_key: len(units),
        "final_loss": run.loop.last_loss,
        "test_sentences": len(group_sentences(rows_test)),
        "train_seconds": round(time.monotonic() - started, 3),
        "train_topics": sorted({str(r.get("topic") or "") for r in rows_train} - {""}),  # in- vs cross-topic top-k
        **extra,
    }
    return run, hp, metrics, test_metrics, info


def cross_topic_metrics(
    request, hp: dict, train_fold: Callable[[list[dict], str], object], *, rows: Sequence[dict] | None = None
) -> tuple[dict, dict]:
    """Leave-one-topic-out recall@k over ``rows`` (default: the request's train + dev rows; the cross-topic setting
    of Arg-CTRL Table 2). ``train_fold(rows_of_the_other_topics, held_out_topic)`` trains a fresh model and returns
    its scorer. Each held-out topic is scored by :func:`evaluate` (recall@k, the oracle recall of its candidates,
    the lexical baseline on the same sentences). Returns ``(flat metrics {"cross_topic_recall@k",
    "cross_topic_baseline_recall@k", "cross_topic_oracle_recall": means over topics}, {"topics", "per_topic":
    {topic: ...}})``."""
    rows = list(request.rows_train) + list(request.rows_dev) if rows is None else list(rows)
    topics = sorted({str(r.get("topic") or "") for r in rows})
    if len(topics) < 2:
        raise errors.TrainerError(
            f"eval: cross-topic needs rows of at least 2 topics, got {len(topics)} "
            f"({', '.join(repr(t) for t in topics) or 'none'})"
        )
    results = {}
    for n, (topic, fold_train, fold_test) in enumerate(leave_one_topic_out(rows, topics), start=1):
        request.progress(n, len(topics), f"cross-topic: held-out topic {topic!r}")
        if fold_train and fold_test:
            results[topic] = evaluate(train_fold(fold_train, topic), fold_test)

    def clean(v):
        return None if isinstance(v, float) and math.isnan(v) else v

    keys = (*(f"recall@{k}" for k in KS), *(f"baseline_recall@{k}" for k in KS), "oracle_recall")
    per_topic = {t: {key: clean(m[key]) for key in (*keys, "sentences")} for t, m in results.items()}
    flat = {}
    for key in keys:
        vals = [m[key] for m in per_topic.values() if m["sentences"] and m[key] is not None]
        flat[f"cross_topic_{key}"] = sum(vals) / len(vals) if vals else None
    return flat, {"setting": "cross-topic (leave-one-topic-out)", "topics": len(per_topic), "per_topic": per_topic}


def oracle_recall(groups: Sequence[SentenceRows]) -> float:
    """The best recall any ranking of the candidates can reach: per sentence with gold aspects, the share of its gold
    spans that are candidates at all (a gold aspect longer than the candidates' 4 tokens never is), averaged over
    those sentences like recall@k (0.0 when none has gold)."""
    vals = []
    for g in groups:
        gold = {tuple(x) for x in g.gold}
        if gold:
            vals.append(len(gold & {tuple(x) for x in g.spans}) / len(gold))
    return sum(vals) / len(vals) if vals else 0.0


def ranking_eval(scorer, rows, baseline) -> dict:
    """recall@k (+ mse, counts) of ``scorer`` on ``rows`` (ranker rows or grouped sentences), beside the
    ``baseline`` scorer's recall@k (``baseline_recall@k``) and the candidates' :func:`oracle_recall`."""
    rows = list(rows)
    groups = rows if rows and isinstance(rows[0], SentenceRows) else group_sentences(rows)
    metrics = evaluate_scorer(scorer, groups, KS)
    base = evaluate_scorer(baseline, groups, KS)
    metrics.update({f"baseline_recall@{k}": base[f"recall@{k}"] for k in KS})
    metrics["oracle_recall"] = oracle_recall(groups)
    return metrics


def finish_metrics(scorer, rows_train, rows_dev, dev_groups) -> dict:
    """Dev metrics: :func:`ranking_eval` with the lexical baseline's document frequencies from the training
    sentences (in-topic: the dev sentences' topics are training topics)."""
    return ranking_eval(scorer, dev_groups, baseline_scorer(rows_train))


# --- the cross-encoder -----------------------------------------------------------------------------


def _identity():
    return torch.nn.Identity()


class CrossEncoderRanker:
    """A loaded (or just trained) cross-encoder ranker: ``score`` / ``score_groups`` / ``score_pairs``."""

    kind = KIND

    def __init__(
        self,
        cross_encoder,
        *,
        max_length: int = 128,
        batch_size: int = 128,
        device: str | None = None,
        half: bool | None = None,
    ):
        self.cross_encoder = cross_encoder
        self.model = cross_encoder.model
        self.tokenizer = cross_encoder.tokenizer
        self.max_length, self.batch_size = int(max_length), int(batch_size)
        self.device = training.pick_device(device)
        self.model.to(self.device)
        if half if half is not None else self.device.startswith("cuda"):
            self.model.half()
        self.model.eval()

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Scores of ``(sentence, candidate)`` pairs: batches sorted by length, dynamic padding."""
        if not pairs:
            return []
        enc = self.tokenizer(
            [p[0] for p in pairs], [p[1] for p in pairs], truncation="only_first", max_length=self.max_length
        )
        ids = enc["input_ids"]
        out = [0.0] * len(pairs)
        was_training = self.model.training
        self.model.eval()
        with torch.inference_mode():
            for batch in length_sorted_batches([len(x) for x in ids], self.batch_size):
                features = self.tokenizer.pad({k: [enc[k][i] for i in batch] for k in enc}, return_tensors="pt")
                features = {k: v.to(self.device) for k, v in features.items()}
                logits = self.model(**features).logits[:, 0].float().cpu().tolist()
                for i, s in zip(batch, logits):
                    out[i] = s
        if was_training:
            self.model.train()
        return out

    def score(self, sentence_text: str, topic: str, candidates: Sequence) -> list[float]:
        return self.score_pairs([(sentence_text, c.text) for c in candidates])

    def score_groups(self, groups: Sequence[SentenceRows]) -> list[list[float]]:
        pairs = [(g.sentence, t) for g in groups for t in g.texts]
        flat = self.score_pairs(pairs)
        out, pos = [], 0
        for g in groups:
            out.append(flat[pos : pos + len(g.texts)])
            pos += len(g.texts)
        return out


def new_cross_encoder(base_model: str, max_length: int, device: str):
    from sentence_transformers import CrossEncoder

    return CrossEncoder(base_model, num_labels=1, max_length=max_length, activation_fn=_identity(), device=device)


class CrossEncoderRun(StepRun):
    def __init__(self, *, base_model: str, units: Sequence[dict], **kw):
        rows_train = units
        super().__init__(n_units=len(rows_train), **kw)
        training.set_seed(self.seed)
        self.cross_encoder = new_cross_encoder(base_model, int(self.hp["max_length"]), self.device)
        self.module = self.cross_encoder.model.to(self.device)
        tok = self.cross_encoder.tokenizer
        self.enc = tok(
            [r["sentence"] for r in rows_train],
            [r["candidate"] for r in rows_train],
            truncation="only_first",
            max_length=int(self.hp["max_length"]),
        )
        self.targets = [float(r["score"]) for r in rows_train]
        self.tokenizer = tok
        self.setup_optimiser(
            [{"params": [p for p in self.module.parameters() if p.requires_grad], "lr": float(self.hp["lr"])}]
        )

    def loss(self, batch: list[int]):
        features = self.tokenizer.pad({k: [self.enc[k][i] for i in batch] for k in self.enc}, return_tensors="pt")
        features = {k: v.to(self.device) for k, v in features.items()}
        target = torch.tensor([self.targets[i] for i in batch], device=self.device)
        pred = self.module(**features).logits[:, 0].float()
        return torch.nn.functional.mse_loss(pred, target)

    def scorer(self) -> CrossEncoderRanker:
        return CrossEncoderRanker(
            self.cross_encoder,
            max_length=int(self.hp["max_length"]),
            batch_size=int(self.hp["eval_batch_size"]),
            device=self.device,
            half=False,
        )


def train(request) -> registry.TrainResult:
    run, hp, metrics, test_metrics, info = train_runs(request, KIND, DEFAULTS, CrossEncoderRun, list, "train_rows")
    out = Path(request.output_dir)
    run.cross_encoder.save_pretrained(str(out / "model"))
    (out / "ranker.json").write_text(
        json.dumps(
            {"kind": KIND, "max_length": int(hp["max_length"]), "eval_batch_size": int(hp["eval_batch_size"])}, indent=2
        )
    )
    return registry.TrainResult(metrics=metrics, test_metrics=test_metrics, info=info)


def load(path: Path, *, device: str | None = None) -> CrossEncoderRanker:
    from sentence_transformers import CrossEncoder

    path = Path(path)
    conf = json.loads((path / "ranker.json").read_text())
    device = training.pick_device(device)
    ce = CrossEncoder(
        str(path / "model"), num_labels=1, max_length=int(conf["max_length"]), activation_fn=_identity(), device=device
    )
    return CrossEncoderRanker(
        ce, max_length=int(conf["max_length"]), batch_size=int(conf.get("eval_batch_size", 128)), device=device
    )


def evaluate(model, rows) -> dict:
    """``TrainerSpec.evaluate`` (``manage.py models evaluate``, the retrain loop, the test split): recall@k of a
    loaded ranker on ranker rows, beside the lexical baseline ranker
    (:class:`annotation.task_types.aspect.rankers.BaselineRanker`, document frequencies from the evaluated sentences
    themselves: no labels, and nothing of a training set is needed) and the candidates' oracle recall
    (:func:`ranking_eval`)."""
    return ranking_eval(model, rows, baseline_scorer(rows))


def rows_from_file(path) -> tuple[list[dict], list[dict]]:
    """``TrainerSpec.rows_from_file`` of both ranker kinds: (train rows, dev rows + test rows tagged ``split:
    "test"``) of an App. F JSONL file or a JSONL of ranker label rows (:func:`ml.data.read_ranker_rows`), or of a
    folder with ``train.jsonl`` + ``dev.jsonl`` (+ ``test.jsonl``; what ``manage.py aspects export --split ...
    --out-dir`` writes). A file whose rows carry ``split`` (App. F rows or label rows) keeps it (``val`` /
    ``validation`` count as dev; without dev rows its train sentences are split by a seeded sentence split);
    otherwise the sentences are split at random (seeded, :func:`ml.data.split_by_sentence`), with no test rows."""
    path = Path(path)
    if path.is_dir():
        if not (path / "train.jsonl").exists() or not (path / "dev.jsonl").exists():
            raise errors.TrainerError(f"{path}:0: a data folder must hold train.jsonl and dev.jsonl")
        test = (
            [dict(r, split="test") for r in read_ranker_rows(path / "test.jsonl")]
            if (path / "test.jsonl").exists()
            else []
        )
        return read_ranker_rows(path / "train.jsonl"), [
            dict(r, split="dev") for r in read_ranker_rows(path / "dev.jsonl")
        ] + test
    if not path.exists():
        raise errors.TrainerError(f"{path}:0: no such file")
    rows = read_ranker_rows(path)
    splits = _appf_splits(path) if rows and "split" not in rows[0] else {}
    if splits:
        rows = [
            dict(r, split=splits[(r.get("topic") or "", r["sentence"])])
            for r in rows
            if (r.get("topic") or "", r["sentence"]) in splits
        ]
    if any("split" in r for r in rows):
        alias = {"val": "dev", "validation": "dev"}
        rows = [dict(r, split=alias.get(r.get("split") or "train", r.get("split") or "train")) for r in rows]
        train_rows = [r for r in rows if r["split"] == "train"]
        dev_rows = [r for r in rows if r["split"] == "dev"]
        test_rows = [r for r in rows if r["split"] == "test"]
        if train_rows and not dev_rows:
            train_rows, dev_rows = split_by_sentence(train_rows)
        if train_rows and dev_rows:
            return train_rows, dev_rows + test_rows
    return split_by_sentence(rows)


def _appf_splits(path: Path) -> dict[tuple[str, str], str]:
    """``{(topic, sentence): split}`` of an App. F file whose rows carry ``split`` (else empty): the App. F reader
    keeps no extra key on the ranker rows it makes."""
    out = {}
    for _, obj in read_jsonl_objects(path):
        if "aspect_pos" not in obj or "split" not in obj:
            return {}
        out[(str(obj.get("topic") or ""), obj.get("sentence"))] = str(obj["split"])
    return out


def default_base_model() -> str:
    return default_encoder_path()


registry.register_trainer(
    registry.TrainerSpec(
        kind=KIND,
        train=train,
        load=load,
        primary_metric=PRIMARY,
        higher_is_better=True,
        description="aspect ranker: cross-encoder (sentence [SEP] n-gram) regressing the Arg-CTRL §3.1 Step 2a score "
        "(MSE); recall@k on dev",
        rows_from_file=rows_from_file,
        rows_from_project=ranker_rows_from_project,
        evaluate=evaluate,
        default_base_model=default_base_model,
        data_formats="Arg-CTRL App. F aspect JSONL, or JSONL ranker label rows (sentence, candidate, score, begin, length)",
    )
)
