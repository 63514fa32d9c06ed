"""Kind ``tagger``: the aspect tagger of Arg-CTRL §3.2 (BIO token classification, Table 3).

Rows
    Arg-CTRL App. F rows (``{"sentence", "aspect_pos": ["(begin,length)", ...], ...}``; what ``manage.py train
    tagger --data appf.jsonl`` reads, :func:`rows_from_file`) or ``{"text", "spans": [{"begin",
    "end"}]}``. ``--data`` may also be the argument-aspect span corpus in CoNLL (a ``.conll`` / ``.txt`` file as
    published, or a folder of them, one per topic; train + dev (+ test) files in a folder are taken as the split):
    its sentences, rebuilt from their tokens, become App. F rows
    (:func:`annotation.task_types.aspect.conll.tagger_rows`). Words are the annotation tokens
    (:func:`ml.inference.words_of`); a word inside an aspect is ``B`` (first word) or ``I``; every other word ``O``.
    Sub-words after the first of a word are ignored in the loss.

Model
    ``AutoModelForTokenClassification`` from ``base_model`` (default: the packaged all-MiniLM-L6-v2, its encoder with a
    fresh 3-way head). ``hyperparameters["from_config"] = {...}`` builds a small BERT from a config instead (the
    tokenizer still comes from ``base_model``): tests use it where the point is the plumbing.
    Training (:mod:`ml.training`): AdamW, linear warm-up/decay, gradient clipping to unit norm (ArgU App. A.1),
    mixed precision on CUDA; the weights of the best dev epoch (``f1_macro``) are kept.
    Seed optimisation (AugSBERT §3.1): ``hyperparameters["seeds"] = [1, 2, 3]`` trains one model per seed to
    ``probe_fraction`` (default 0.2) of the steps, scores each on dev (``f1_macro`` at that step) and trains only
    the best one to the end (:func:`ml.training.seeded_run`; the step loop is a generator that yields after every
    step, :class:`ml.training.LoopRun`, so a probed run continues where it stopped). ``info["seed"]`` is the seed
    kept, ``info["seed_probes"]`` the probe scores.

Metrics (:func:`bio_metrics`, Table 3)
    All dev words are flattened; per class (B, I, O) precision / recall / F1 (0 when undefined, like scikit-learn's
    ``zero_division=0``); ``f1_macro`` / ``precision_macro`` / ``recall_macro`` are the unweighted means over the
    three classes. ``majority_*``: the same figures for the baseline that predicts ``O`` everywhere (Table 3's
    "Majority (baseline)": P = share(O) / 3, R = 1/3).

Artifact: ``save_pretrained`` model + tokenizer and ``argora-tagger.json``; ``load`` returns a
:class:`ml.inference.TokenTagger` (int8 on CPU, fp16 on CUDA).
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import json
import math
import random
from collections.abc import Sequence
from pathlib import Path

from annotation.task_types.aspect import conll
from annotation.task_types.aspect.appf import APPF_STANCE, format_pos, parse_pos
from annotation.task_types.span_grounding.metrics import span_f1
from argora.progress import null_progress
from corpus.importers.base import ImportFailed
from ml import training
from ml.data import human_aspect_rows, leave_one_topic_out, read_jsonl_objects
from ml.encoders import resolve
from ml.errors import TrainerError, TrainerFileError
from ml.inference import (
    BIO,
    IGNORE,
    TokenTagger,
    bio_from_spans,
    encode_words,
    pad_batch,
    spans_from_bio,
    words_of,
)
from ml.registry import SilverSpec, TrainerSpec, TrainRequest, TrainResult, register_trainer
from ml.similarity.data import split_eval
from ml.splits import stable_split

KIND = "tagger"
META = "argora-tagger.json"
# The default recipe (issue 23): 5 epochs (Arg-CTRL §3.2), the encoder at 5e-5, the fresh classification head at
# 1e-3, and the loss weighted by inverse label frequency ("balanced"). Without the weighting and the head's own rate
# the model learns O and I and never predicts B on real data, whose aspects are long (B is ~9 % of the words, I
# ~27 %): the old defaults (3 epochs, one rate of 5e-5, no weighting) gave F1(B) = 0.00 on the argument-aspect span
# corpus and on tests/ml/test_tagger_recipe.py's data.
DEFAULTS = {
    "epochs": 5,
    "lr": 5e-5,
    "batch_size": 32,
    "max_length": 128,
    "weight_decay": 0.01,
    "warmup_ratio": 0.1,
    "max_steps": None,
    "head_lr": 1e-3,
    "seeds": [],
    "probe_fraction": 0.2,
    "min_steps": 0,
    "class_weights": "balanced",
    "eval": "in-topic",
}
EVAL_SETTINGS = ("in-topic", "cross-topic")


# --- rows ------------------------------------------------------------------------------------------


def row_text_spans(row: dict) -> tuple[str, list[tuple[int, int]]]:
    """``(text, [(begin, end)])`` of an App. F row or a ``{"text", "spans"}`` row."""
    if "sentence" in row and "aspect_pos" in row:
        text = row["sentence"]
        spans = []
        for p in row.get("aspect_pos") or []:
            if isinstance(p, (list, tuple)):
                b, n = int(p[0]), int(p[1])
            else:
                pos = parse_pos(str(p))
                if pos is None:
                    raise TrainerError(f"aspect_pos: {p!r} is not (begin,length)")
                b, n = pos
            spans.append((b, b + n))
        return text, spans
    text = row.get("text")
    if not isinstance(text, str):
        raise TrainerError("a tagger row needs 'sentence' + 'aspect_pos' (App. F) or 'text' + 'spans'")
    return text, [(int(s["begin"]), int(s["end"])) for s in row.get("spans") or []]


def word_tags(row: dict) -> tuple[str, list, list[str]]:
    text, spans = row_text_spans(row)
    words = words_of(text)
    return text, words, bio_from_spans(words, spans)


# --- metrics (Table 3) -----------------------------------------------------------------------------


def _prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def bio_metrics(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], labels: Sequence[str] = BIO) -> dict:
    """Flattened per-class and macro P/R/F1 over ``labels`` plus the majority (all-``O``) baseline."""
    flat_g = [t for seq in gold for t in seq]
    flat_p = [t for seq in pred for t in seq]
    if len(flat_g) != len(flat_p):
        raise ValueError(f"gold has {len(flat_g)} tags, predictions {len(flat_p)}")
    out: dict = {"n_tokens": len(flat_g)}

    def table(pairs_pred):
        ps, rs, fs = [], [], []
        per = {}
        for lab in labels:
            tp = sum(1 for g, p in zip(flat_g, pairs_pred) if g == lab and p == lab)
            fp = sum(1 for g, p in zip(flat_g, pairs_pred) if g != lab and p == lab)
            fn = sum(1 for g, p in zip(flat_g, pairs_pred) if g == lab and p != lab)
            p, r, f = _prf(tp, fp, fn)
            per[lab] = (p, r, f)
            ps.append(p), rs.append(r), fs.append(f)
        n = len(labels)
        return per, sum(fs) / n, sum(ps) / n, sum(rs) / n

    per, f1, p, r = table(flat_p)
    out.update(f1_macro=f1, precision_macro=p, recall_macro=r)
    for lab, (pp, rr, ff) in per.items():
        out[f"f1_{lab}"], out[f"precision_{lab}"], out[f"recall_{lab}"] = ff, pp, rr
    majority = "O" if "O" in labels else labels[0]
    mper, mf1, mp, mr = table([majority] * len(flat_g))
    out.update(majority_f1_macro=mf1, majority_precision_macro=mp, majority_recall_macro=mr)
    for lab, (pp, rr, ff) in mper.items():
        out[f"majority_f1_{lab}"], out[f"majority_precision_{lab}"], out[f"majority_recall_{lab}"] = ff, pp, rr
    if "B" in labels:  # span level: exact word-span match (a span = B + its I's; a stray I opens one)
        gold_spans = [spans_from_bio(seq) for seq in gold]
        exact = span_f1(gold_spans, [spans_from_bio(seq) for seq in pred], "exact")
        out.update(
            span_precision=exact["precision"],
            span_recall=exact["recall"],
            span_f1=exact["f1"],
            n_spans=sum(len(g) for g in gold_spans),
        )
        none = span_f1(gold_spans, [[] for _ in gold], "exact")  # the majority tagger predicts no span
        out.update(
            majority_span_precision=none["precision"], majority_span_recall=none["recall"], majority_span_f1=none["f1"]
        )
    return out


def evaluate(tagger: TokenTagger, rows: list[dict], *, batch_size: int = 64) -> dict:
    """``TrainerSpec.evaluate`` (``manage.py models evaluate``, the retrain loop, the dev and test splits):
    :func:`bio_metrics` of a tagger on tagger rows (every row given), ``n`` = sentences."""
    gold, texts = [], []
    for row in rows:
        text, _, tags = word_tags(row)
        texts.append(text)
        gold.append(tags)
    preds = tagger.predict(texts, batch_size=batch_size)
    return dict(bio_metrics(gold, [p["tags"] for p in preds]), n=len(rows))


# --- training helpers (shared with argspan) --------------------------------------------------------


def base_path(request: TrainRequest) -> str:
    return resolve(request.base_model)


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def tiny_config(path: str, overrides: dict):
    """A BERT config for a small model built from scratch (vocabulary of the tokenizer at ``path``)."""
    from transformers import BertConfig

    tok = load_tokenizer(path)
    values = {
        "vocab_size": len(tok),
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 128,
        "max_position_embeddings": 512,
    }
    values.update(overrides or {})
    return BertConfig(**values)


def plan_steps(n_rows: int, params: dict) -> tuple[int, int]:
    """(total steps, epochs): ``epochs`` over ``n_rows`` -- more epochs when that gives fewer than ``min_steps``
    steps (a small data set) --, at most ``max_steps``."""
    epochs = int(params["epochs"])
    min_steps = int(params.get("min_steps") or 0)
    if min_steps > 0 and epochs > 0:
        per_epoch = max(1, math.ceil(max(1, n_rows) / int(params["batch_size"])))
        epochs = max(epochs, math.ceil(min_steps / per_epoch))
    return training.plan_steps(n_rows, int(params["batch_size"]), epochs, int(params.get("max_steps") or 0), cap=True)


def class_weights(tags: Sequence[Sequence[str]], labels: Sequence[str], how) -> list[float] | None:
    """Loss weights of ``labels`` from the training words' tags: ``"balanced"`` (``n / (k * n_c)``, scikit-learn's
    ``class_weight="balanced"``), ``"sqrt"`` (its square root), a ``{label: weight}`` dict, or ``None`` /
    ``"none"`` (no weighting). A label no training word has gets weight 1."""
    if how in (None, "none", False):
        return None
    if isinstance(how, dict):
        return [float(how.get(lab, 1.0)) for lab in labels]
    counts = dict.fromkeys(labels, 0)
    for seq in tags:
        for t in seq:
            counts[t] = counts.get(t, 0) + 1
    total = sum(counts.values())
    out = []
    for lab in labels:
        w = total / (len(labels) * counts[lab]) if counts[lab] else 1.0
        out.append(math.sqrt(w) if how == "sqrt" else w)
    return out


def optimiser(model, params: dict, total: int, head_names: Sequence[str]):
    """AdamW (encoder at ``lr`` with weight decay except biases / norms, heads at ``head_lr``) + linear
    warm-up/decay over ``total`` steps."""
    lr = float(params["lr"])
    groups = training.decay_groups(
        model,
        lr=lr,
        weight_decay=float(params["weight_decay"]),
        head_names=head_names,
        head_lr=float(params["head_lr"]) if params.get("head_lr") else lr,
    )
    return training.adamw(groups, total_steps=total, warmup_ratio=float(params["warmup_ratio"]))


def padded_batch(enc, targets: Sequence[Sequence[int]], batch: Sequence[int], pad_id: int, device: str):
    """``(input ids, attention mask, sub-word labels)`` tensors of the rows ``batch`` on ``device``."""
    import numpy as np
    import torch

    ids, mask = pad_batch([enc.input_ids[i] for i in batch], pad_id)
    lab = np.full(ids.shape, IGNORE, dtype=np.int64)
    for r, i in enumerate(batch):
        lab[r, : len(targets[i])] = targets[i]
    return (torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device), torch.from_numpy(lab).to(device))


def subword_labels(enc, i: int, tags: Sequence[str], label_ids: dict) -> list[int]:
    first = enc.first_subword(i)
    out = [IGNORE] * len(enc.input_ids[i])
    for w, pos in first.items():
        out[pos] = label_ids[tags[w]]
    return out


# --- train / load ----------------------------------------------------------------------------------


def build_model(request: TrainRequest, params: dict, n_labels: int, labels: Sequence[str]):
    from transformers import AutoModelForTokenClassification, BertForTokenClassification

    path = base_path(request)
    id2label = dict(enumerate(labels))
    label2id = {l: i for i, l in enumerate(labels)}
    if params.get("from_config"):
        config = tiny_config(path, params["from_config"])
        config.num_labels, config.id2label, config.label2id = n_labels, id2label, label2id
        return BertForTokenClassification(config), load_tokenizer(path)
    model = AutoModelForTokenClassification.from_pretrained(
        path, num_labels=n_labels, id2label=id2label, label2id=label2id
    )
    return model, load_tokenizer(path)


def for_eval(model, device: str):
    """The model to hand to a predictor during training: on CUDA a copy, since the predictors convert their model to
    fp16 in place (:func:`ml.inference.prepare_for_inference`) and training would go on in fp16 (GradScaler refuses
    fp16 gradients); on CPU (fp32 unless int8 is asked for, never here) the model itself."""
    return copy.deepcopy(model) if str(device).startswith("cuda") else model


def train(request: TrainRequest) -> TrainResult:
    params = training.with_defaults(DEFAULTS, request.hyperparameters)
    if params.get("eval") not in EVAL_SETTINGS:
        raise TrainerError(
            f"hyperparameters: eval must be one of {', '.join(EVAL_SETTINGS)}, got {params.get('eval')!r}"
        )
    if params["eval"] == "cross-topic":
        cross_topic_rows(list(request.rows_train) + list(request.rows_dev))  # refuse before training anything
    labels = list(BIO)
    # test rows (the registry's rows_test, or rows tagged split "test" among the dev rows): the test metrics only,
    # never a choice (early stopping, seeds)
    rows_dev, rows_test = split_eval(request.rows_dev)
    rows_test = list(getattr(request, "rows_test", None) or []) + rows_test
    request = dataclasses.replace(request, rows_dev=rows_dev)
    total, _ = plan_steps(len(request.rows_train), params)

    def make_run(seed: int) -> training.LoopRun:
        loop, model, tokenizer, device = training_run(request, params, seed, labels)

        def probe() -> float:
            if not request.rows_dev:
                return 0.0
            tagger = TokenTagger(
                for_eval(model, device),
                tokenizer,
                labels=labels,
                max_length=int(params["max_length"]),
                device=device,
                quantize=False,
            )
            return float(evaluate(tagger, request.rows_dev).get("f1_macro") or 0.0)

        run = training.LoopRun(loop.steps(), probe)
        run.model, run.tokenizer = model, tokenizer
        return run

    run, seed, probes = training.seeded_run(make_run, params, seed=request.seed, total=total, progress=request.progress)
    loop = run.finish()
    model, tokenizer = run.model, run.tokenizer
    history = [{"epoch": e["epoch"], "step": e["step"], "f1_macro": e["metrics"].get("f1_macro")} for e in loop.evals]
    model.to("cpu").float()
    model.save_pretrained(str(request.output_dir))
    tokenizer.save_pretrained(str(request.output_dir))
    (Path(request.output_dir) / META).write_text(
        json.dumps(
            {
                "kind": KIND,
                "labels": labels,
                "max_length": int(params["max_length"]),
                "words": "annotation tokens",
                "history": history,
                "seed": seed,
            },
            indent=2,
        )
    )
    info = {
        "steps": loop.step,
        "epochs": loop.epochs,
        "history": history,
        "seed": seed,
        "seed_probes": probes,
        "n_train": len(request.rows_train),
        "n_dev": len(rows_dev),
        "n_test": len(rows_test),
        "train_topics": sorted({str(r.get("topic") or "") for r in request.rows_train} - {""}),
    }
    metrics = dict(loop.best or {})
    if params["eval"] == "cross-topic":
        flat, info["cross_topic"] = cross_topic(request, params, labels, list(request.rows_train) + rows_dev)
        metrics.update(flat)
    # the test rows are scored by the saved artifact as `models evaluate` loads it (int8 on CPU by default)
    test_metrics = evaluate(load(Path(request.output_dir)), rows_test) if rows_test else None
    return TrainResult(metrics=metrics, test_metrics=test_metrics, info=info)


def cross_topic_rows(rows: Sequence[dict]) -> list[str]:
    """The topics of ``rows`` (sorted); ``TrainerError`` when fewer than 2 (no topic to hold out)."""
    topics = sorted({str(r.get("topic") or "") for r in rows if r.get("split") != "test"})
    if len(topics) < 2:
        raise TrainerError(
            f"eval: cross-topic needs rows of at least 2 topics, got {len(topics)} "
            f"({', '.join(repr(t) for t in topics) or 'none'})"
        )
    return topics


CROSS_TOPIC_KEYS = (
    "f1_macro",
    "majority_f1_macro",
    "f1_B",
    "f1_I",
    "f1_O",
    "span_f1",
    "majority_span_f1",
    "precision_macro",
    "recall_macro",
)


def cross_topic(request: TrainRequest, params: dict, labels: list, rows: list[dict]) -> tuple[dict, dict]:
    """Leave-one-topic-out over ``rows`` (the train + dev rows; Arg-CTRL's cross-topic setting, as the
    ``argument`` kind does it): per topic a fresh model (the request's seed, no seed optimisation) trained on the
    other topics for the same epochs, without early stopping, tags the held-out topic's sentences. Returns ``(flat
    means {"cross_topic_f1_macro", "cross_topic_majority_f1_macro", "cross_topic_f1_B", "cross_topic_span_f1",
    ...}, {"setting", "topics", "per_topic": {topic: {"f1_macro", "majority_f1_macro", ..., "n"}}})``."""
    topics = cross_topic_rows(rows)
    per_topic = {}
    for n, (topic, fold_train, fold_test) in enumerate(leave_one_topic_out(rows, topics), start=1):
        request.progress(n, len(topics), f"cross-topic: held-out topic {topic!r}")
        fold = dataclasses.replace(request, rows_train=fold_train, rows_dev=[], progress=null_progress)
        loop, model, tokenizer, device = training_run(fold, params, int(request.seed), labels)
        training.LoopRun(loop.steps()).finish()
        m = evaluate(
            TokenTagger(
                for_eval(model, device),
                tokenizer,
                labels=labels,
                max_length=int(params["max_length"]),
                device=device,
                quantize=False,
            ),
            fold_test,
        )
        per_topic[topic] = dict({k: m[k] for k in CROSS_TOPIC_KEYS}, n=len(fold_test))
        del loop, model
        gc.collect()
    flat = {f"cross_topic_{k}": sum(m[k] for m in per_topic.values()) / len(per_topic) for k in CROSS_TOPIC_KEYS}
    return flat, {"setting": "cross-topic (leave-one-topic-out)", "topics": len(per_topic), "per_topic": per_topic}


def training_run(request: TrainRequest, params: dict, seed: int, labels: list):
    """One seed's model and :class:`ml.training.TrainLoop` (dev ``f1_macro`` after every epoch, the best epoch's
    weights kept): ``(loop, model, tokenizer, device)``."""
    training.set_seed(seed)
    label_ids = {l: i for i, l in enumerate(labels)}
    model, tokenizer = build_model(request, params, len(labels), labels)
    device = training.pick_device(params.get("device"))
    model.to(device)

    texts, tags = [], []
    for row in request.rows_train:
        text, _, t = word_tags(row)
        texts.append(text)
        tags.append(t)
    enc = encode_words(tokenizer, texts, max_length=int(params["max_length"]))
    targets = [subword_labels(enc, i, tags[i], label_ids) for i in range(len(texts))]
    total, epochs = plan_steps(len(texts), params)
    opt, sched = optimiser(model, params, total, head_names=("classifier",))
    pad_id = tokenizer.pad_token_id or 0
    rng = random.Random(seed)
    bs = int(params["batch_size"])

    how = params.get("class_weights")
    if how not in (None, "none", "balanced", "sqrt") and not isinstance(how, dict):
        raise TrainerError(
            f"hyperparameters: class_weights must be balanced, sqrt, none or {{label: weight}}, got {how!r}"
        )
    weights = class_weights(tags, labels, how)
    weight_t = None
    if weights is not None:
        import torch

        weight_t = torch.tensor(weights, dtype=torch.float32, device=device)

    def loss_of(batch):
        ids, mask, lab = padded_batch(enc, targets, batch, pad_id, device)
        if weight_t is None:
            return model(input_ids=ids, attention_mask=mask, labels=lab).loss
        import torch

        logits = model(input_ids=ids, attention_mask=mask).logits
        return torch.nn.functional.cross_entropy(
            logits.float().reshape(-1, logits.shape[-1]), lab.reshape(-1), weight=weight_t, ignore_index=IGNORE
        )

    def dev_metrics() -> dict:
        if not request.rows_dev:
            return {}
        return evaluate(
            TokenTagger(
                for_eval(model, device),
                tokenizer,
                labels=labels,
                max_length=int(params["max_length"]),
                device=device,
                quantize=False,
            ),
            request.rows_dev,
        )

    loop = training.TrainLoop(
        model,
        opt,
        sched,
        loss_of,
        lambda epoch: training.shuffled_batches(rng, len(texts), bs),
        device=device,
        total=total,
        epochs=epochs,
        progress=request.progress,
        evaluate=dev_metrics,
        better=training.higher("f1_macro"),
    )
    return loop, model, tokenizer, device


def load(path: Path, *, quantize: bool | None = None, device: str | None = None) -> TokenTagger:
    path = Path(path)
    meta = json.loads((path / META).read_text()) if (path / META).exists() else {}
    return TokenTagger.from_pretrained(
        path, max_length=meta.get("max_length", 128), quantize=quantize, device=device, info=meta
    )


def conll_rows(path) -> list[dict]:
    """Tagger rows of a CoNLL file or folder (``TrainerFileError("file:line: reason")``)."""
    try:
        return conll.tagger_rows(path)
    except ImportFailed as exc:
        raise TrainerFileError(exc.file, exc.line, exc.reason) from None


def read_rows(path) -> list[dict]:
    """Tagger rows of one JSONL (or CoNLL: ``.conll`` / ``.txt``) file, each checked
    (``TrainerError("file:line: reason")``)."""
    path = Path(path)
    if path.suffix.lower() in conll.EXTENSIONS:
        return conll_rows(path)
    lines = read_jsonl_objects(path)
    for number, row in lines:
        try:
            text, spans = row_text_spans(row)
        except (TrainerError, KeyError, TypeError, ValueError) as exc:
            raise TrainerError(f"{path}:{number}: {exc}") from None
        if any(not 0 <= b < e <= len(text) for b, e in spans):
            raise TrainerError(f"{path}:{number}: a span lies outside the text ({len(text)} characters)")
    return [row for _, row in lines]


SPLIT_ALIASES = {"val": "dev", "validation": "dev"}


def tag_split(rows: list[dict], split: str) -> list[dict]:
    return [dict(r, split=split) for r in rows]


def split_rows(rows: list[dict], key: str, *, keep_test: bool = False) -> tuple[list[dict], list[dict]]:
    """By the rows' ``split`` field when they have one (``val`` / ``validation`` = ``dev``; no dev rows: the train
    rows are split by a stable hash on ``key``), else a stable hash split on ``key``. ``test`` rows are left out,
    or with ``keep_test`` appended to the dev rows tagged ``split: "test"`` (the trainer evaluates them apart)."""

    def keyfn(r):
        return r.get(key) or r.get("text") or r.get("sentence")

    if any("split" in r for r in rows):

        def part(r):
            value = str(r.get("split") or "train").lower()
            return SPLIT_ALIASES.get(value, value)

        train_rows = [r for r in rows if part(r) == "train"]
        dev_rows = [r for r in rows if part(r) == "dev"]
        test_rows = tag_split([r for r in rows if part(r) == "test"], "test") if keep_test else []
        if train_rows and not dev_rows:
            train_rows, dev_rows = stable_split(train_rows, key=keyfn)
        if train_rows and dev_rows:
            return train_rows, dev_rows + test_rows
    return stable_split(rows, key=keyfn)


def rows_from_path(path, read, key: str, *, keep_test: bool = False) -> tuple[list[dict], list[dict]]:
    """(train, dev): ``read`` of a folder's ``train.jsonl`` + ``dev.jsonl`` (with ``keep_test`` also its
    ``test.jsonl``, tagged ``split: "test"``), or of one file split by :func:`split_rows` on ``key`` (shared with
    argspan)."""
    path = Path(path)
    if path.is_dir():
        if not (path / "train.jsonl").exists() or not (path / "dev.jsonl").exists():
            raise TrainerError(f"{path}:0: a data folder must hold train.jsonl and dev.jsonl")
        test = tag_split(read(path / "test.jsonl"), "test") if keep_test and (path / "test.jsonl").exists() else []
        return read(path / "train.jsonl"), read(path / "dev.jsonl") + test
    if not path.exists():
        raise TrainerError(f"{path}:0: no such file")
    return split_rows(read(path), key, keep_test=keep_test)


def _split_file(folder: Path, split: str) -> Path | None:
    """``folder/<split>.conll`` or ``folder/<split>.txt``, whichever is there."""
    return next((folder / f"{split}{ext}" for ext in conll.EXTENSIONS if (folder / f"{split}{ext}").is_file()), None)


def rows_from_file(path) -> tuple[list[dict], list[dict]]:
    """(train, dev + test) from an App. F file / ``{text, spans}`` JSONL / CoNLL (``.conll`` / ``.txt``) file, or a
    folder with ``train.jsonl`` + ``dev.jsonl`` (+ ``test.jsonl``; or CoNLL ``train`` + ``dev`` (+ ``test``) files,
    as the aspect corpus's experiment folders hold them; any other CoNLL files of a folder are read together and
    split by sentence hash). Test rows travel in the dev list tagged ``split: "test"``: :func:`train` evaluates them
    into the version's test metrics only."""
    path = Path(path)
    if path.is_dir() and not (path / "train.jsonl").exists() and any(map(conll.is_corpus_file, path.iterdir())):
        train_file, dev_file, test_file = (_split_file(path, split) for split in conll.SPLIT_NAMES)
        if train_file and dev_file:
            test = tag_split(conll_rows(test_file), "test") if test_file else []
            return conll_rows(train_file), conll_rows(dev_file) + test
        return split_rows(conll_rows(path), "sentence")
    return rows_from_path(path, read_rows, "sentence", keep_test=True)


def rows_from_project(project):
    """The human labels of an ``aspect`` project (App. F rows, :func:`ml.data.human_aspect_rows`: no imported
    reference), split by sentence hash."""
    rows = human_aspect_rows(project)
    train_rows, dev_rows = stable_split(rows, key="sentence")
    return train_rows, dev_rows, len(rows)


def silver_predict(model, batch) -> list[dict]:
    """A silver batch (:class:`ml.silver.Batch`): the aspect spans of each sentence."""
    return model.predict(batch.texts, batch_size=batch.batch_size)


def silver_release_row(row: dict, label, sentence) -> dict:
    """A silver release row of a tagger run in the App. F shape, so a silver file trains the next tagger / ranker
    directly."""
    spans = row["spans"]
    return dict(
        row,
        aspect_pos=[format_pos(x["begin"], x["end"] - x["begin"]) for x in spans],
        aspect_pos_string=[sentence.text[x["begin"] : x["end"]] for x in spans],
        stance=APPF_STANCE.get(sentence.stance, sentence.stance),
    )


register_trainer(
    TrainerSpec(
        kind=KIND,
        train=train,
        load=load,
        primary_metric="f1_macro",
        higher_is_better=True,
        description="Aspect tagger (Arg-CTRL §3.2): BIO token classification; macro F1/P/R over B, I, O (Table 3)",
        rows_from_file=rows_from_file,
        rows_from_project=rows_from_project,
        evaluate=evaluate,
        data_formats="Arg-CTRL App. F aspect JSONL (split field or folder with train/dev.jsonl), {text, spans} JSONL, or "
        "CoNLL aspect spans (a .conll / .txt file or a folder of them; the Ruckdeschel & Wiedemann "
        "corpus files as published)",
        silver=SilverSpec(predict=silver_predict, release_row=silver_release_row),
    )
)
