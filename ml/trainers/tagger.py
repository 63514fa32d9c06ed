"""Kind ``tagger``: the aspect tagger of Arg-CTRL §3.2 (BIO token classification, Table 3).

Rows
    Arg-CTRL App. F rows (``{"sentence", "aspect_pos": ["(begin,length)", ...], ...}``; what ``manage.py train
    tagger --data appf.jsonl`` reads, :func:`rows_from_file`) or ``{"text", "spans": [{"begin",
    "end"}]}``. ``--data`` may also be the argument-aspect span corpus in CoNLL (a ``.conll`` file, or a folder of
    them, one per topic; train.conll + dev.conll in a folder are taken as the split): its sentences, rebuilt from
    their tokens, become App. F rows (:func:`annotation.task_types.aspect.conll.tagger_rows`). Words are the
    annotation tokens (:func:`ml.inference.words_of`); a word inside an aspect is ``B``
    (first word) or ``I``; every other word ``O``. Sub-words after the first of a word are ignored in the loss.

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
import json
import random
from pathlib import Path
from typing import Sequence

from annotation.task_types.aspect import conll
from annotation.task_types.aspect.appf import parse_pos, project_rows
from corpus.importers.base import ImportFailed
from ml import training
from ml.data import read_jsonl_objects
from ml.encoders import resolve
from ml.inference import (
    BIO,
    IGNORE,
    TokenTagger,
    bio_from_spans,
    encode_words,
    pad_batch,
    words_of,
)
from ml.registry import (
    TrainerError,
    TrainerFileError,
    TrainerSpec,
    TrainRequest,
    TrainResult,
    register_trainer,
    stable_split,
)

KIND = "tagger"
META = "argora-tagger.json"
DEFAULTS = {"epochs": 3, "lr": 5e-5, "batch_size": 32, "max_length": 128, "weight_decay": 0.01,
            "warmup_ratio": 0.1, "max_steps": None, "head_lr": None, "seeds": [], "probe_fraction": 0.2}


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
    _, mf1, mp, mr = table([majority] * len(flat_g))
    out.update(majority_f1_macro=mf1, majority_precision_macro=mp, majority_recall_macro=mr)
    return out


def evaluate(tagger: TokenTagger, rows: list[dict], *, batch_size: int = 64) -> dict:
    gold, texts = [], []
    for row in rows:
        text, _, tags = word_tags(row)
        texts.append(text)
        gold.append(tags)
    preds = tagger.predict(texts, batch_size=batch_size)
    return bio_metrics(gold, [p["tags"] for p in preds])


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
    values = {"vocab_size": len(tok), "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
              "intermediate_size": 128, "max_position_embeddings": 512}
    values.update(overrides or {})
    return BertConfig(**values)


def plan_steps(n_rows: int, params: dict) -> tuple[int, int]:
    """(total steps, epochs): ``epochs`` over ``n_rows``, at most ``max_steps``."""
    return training.plan_steps(n_rows, int(params["batch_size"]), int(params["epochs"]),
                               int(params.get("max_steps") or 0), cap=True)


def optimiser(model, params: dict, total: int, head_names: Sequence[str]):
    """AdamW (encoder at ``lr`` with weight decay except biases / norms, heads at ``head_lr``) + linear
    warm-up/decay over ``total`` steps."""
    lr = float(params["lr"])
    groups = training.decay_groups(model, lr=lr, weight_decay=float(params["weight_decay"]), head_names=head_names,
                                   head_lr=float(params["head_lr"]) if params.get("head_lr") else lr)
    return training.adamw(groups, total_steps=total, warmup_ratio=float(params["warmup_ratio"]))


def padded_batch(enc, targets: Sequence[Sequence[int]], batch: Sequence[int], pad_id: int, device: str):
    """``(input ids, attention mask, sub-word labels)`` tensors of the rows ``batch`` on ``device``."""
    import numpy as np
    import torch

    ids, mask = pad_batch([enc.input_ids[i] for i in batch], pad_id)
    lab = np.full(ids.shape, IGNORE, dtype=np.int64)
    for r, i in enumerate(batch):
        lab[r, :len(targets[i])] = targets[i]
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
    id2label = {i: l for i, l in enumerate(labels)}
    label2id = {l: i for i, l in enumerate(labels)}
    if params.get("from_config"):
        config = tiny_config(path, params["from_config"])
        config.num_labels, config.id2label, config.label2id = n_labels, id2label, label2id
        return BertForTokenClassification(config), load_tokenizer(path)
    model = AutoModelForTokenClassification.from_pretrained(path, num_labels=n_labels, id2label=id2label,
                                                            label2id=label2id)
    return model, load_tokenizer(path)


def for_eval(model, device: str):
    """The model to hand to a predictor during training: on CUDA a copy, since the predictors convert their model to
    fp16 in place (:func:`ml.inference.prepare_for_inference`) and training would go on in fp16 (GradScaler refuses
    fp16 gradients); on CPU (fp32 unless int8 is asked for, never here) the model itself."""
    return copy.deepcopy(model) if str(device).startswith("cuda") else model


def train(request: TrainRequest) -> TrainResult:
    params = training.with_defaults(DEFAULTS, request.hyperparameters)
    labels = list(BIO)
    total, _ = plan_steps(len(request.rows_train), params)

    def make_run(seed: int) -> training.LoopRun:
        loop, model, tokenizer, device = training_run(request, params, seed, labels)

        def probe() -> float:
            if not request.rows_dev:
                return 0.0
            tagger = TokenTagger(for_eval(model, device), tokenizer, labels=labels,
                                 max_length=int(params["max_length"]), device=device, quantize=False)
            return float(evaluate(tagger, request.rows_dev).get("f1_macro") or 0.0)

        run = training.LoopRun(loop.steps(), probe)
        run.model, run.tokenizer = model, tokenizer
        return run

    run, seed, probes = training.seeded_run(make_run, params, seed=request.seed, total=total,
                                            progress=request.progress)
    loop = run.finish()
    model, tokenizer = run.model, run.tokenizer
    history = [{"epoch": e["epoch"], "step": e["step"], "f1_macro": e["metrics"].get("f1_macro")} for e in loop.evals]
    model.to("cpu").float()
    model.save_pretrained(str(request.output_dir))
    tokenizer.save_pretrained(str(request.output_dir))
    (Path(request.output_dir) / META).write_text(json.dumps(
        {"kind": KIND, "labels": labels, "max_length": int(params["max_length"]), "words": "annotation tokens",
         "history": history, "seed": seed}, indent=2))
    return TrainResult(metrics=loop.best or {}, info={"steps": loop.step, "history": history, "seed": seed,
                                                       "seed_probes": probes})


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

    def loss_of(batch):
        ids, mask, lab = padded_batch(enc, targets, batch, pad_id, device)
        return model(input_ids=ids, attention_mask=mask, labels=lab).loss

    def dev_metrics() -> dict:
        if not request.rows_dev:
            return {}
        return evaluate(TokenTagger(for_eval(model, device), tokenizer, labels=labels,
                                    max_length=int(params["max_length"]), device=device, quantize=False),
                        request.rows_dev)

    loop = training.TrainLoop(model, opt, sched, loss_of, lambda epoch: training.shuffled_batches(rng, len(texts), bs),
                              device=device, total=total, epochs=epochs, progress=request.progress,
                              evaluate=dev_metrics, better=training.higher("f1_macro"))
    return loop, model, tokenizer, device


def load(path: Path, *, quantize: bool | None = None, device: str | None = None) -> TokenTagger:
    path = Path(path)
    meta = json.loads((path / META).read_text()) if (path / META).exists() else {}
    return TokenTagger.from_pretrained(path, max_length=meta.get("max_length", 128), quantize=quantize,
                                       device=device, info=meta)


def conll_rows(path) -> list[dict]:
    """Tagger rows of a CoNLL file or folder (``TrainerFileError("file:line: reason")``)."""
    try:
        return conll.tagger_rows(path)
    except ImportFailed as exc:
        raise TrainerFileError(exc.file, exc.line, exc.reason) from None


def read_rows(path) -> list[dict]:
    """Tagger rows of one JSONL (or ``.conll``) file, each checked (``TrainerError("file:line: reason")``)."""
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


def split_rows(rows: list[dict], key: str) -> tuple[list[dict], list[dict]]:
    """By the rows' ``split`` field when they have one (``test`` left out), else a stable hash split on ``key``."""
    if any("split" in r for r in rows):
        train_rows = [r for r in rows if r.get("split", "train") == "train"]
        dev_rows = [r for r in rows if r.get("split") == "dev"]
        if train_rows and dev_rows:
            return train_rows, dev_rows
    return stable_split(rows, key=lambda r: r.get(key) or r.get("text") or r.get("sentence"))


def rows_from_path(path, read, key: str) -> tuple[list[dict], list[dict]]:
    """(train, dev): ``read`` of a folder's ``train.jsonl`` + ``dev.jsonl``, or of one file split by
    :func:`split_rows` on ``key`` (shared with argspan)."""
    path = Path(path)
    if path.is_dir():
        if not (path / "train.jsonl").exists() or not (path / "dev.jsonl").exists():
            raise TrainerError(f"{path}:0: a data folder must hold train.jsonl and dev.jsonl")
        return read(path / "train.jsonl"), read(path / "dev.jsonl")
    if not path.exists():
        raise TrainerError(f"{path}:0: no such file")
    return split_rows(read(path), key)


def rows_from_file(path) -> tuple[list[dict], list[dict]]:
    """(train, dev) from an App. F file / ``{text, spans}`` JSONL / ``.conll`` file, or a folder with ``train.jsonl``
    + ``dev.jsonl`` (or ``train.conll`` + ``dev.conll``; any other ``.conll`` files of a folder are read together
    and split by sentence hash)."""
    path = Path(path)
    if path.is_dir() and not (path / "train.jsonl").exists() and any(path.glob("*.conll")):
        if (path / "train.conll").exists() and (path / "dev.conll").exists():
            return conll_rows(path / "train.conll"), conll_rows(path / "dev.conll")
        return split_rows(conll_rows(path), "sentence")
    return rows_from_path(path, read_rows, "sentence")


def rows_from_project(project):
    """The final answers of an ``aspect`` project (App. F rows), split by sentence hash."""
    rows = project_rows(project)
    train_rows, dev_rows = stable_split(rows, key="sentence")
    return train_rows, dev_rows, len(rows)


register_trainer(TrainerSpec(
    kind=KIND, train=train, load=load, primary_metric="f1_macro", higher_is_better=True,
    description="Aspect tagger (Arg-CTRL §3.2): BIO token classification; macro F1/P/R over B, I, O (Table 3)",
    rows_from_file=rows_from_file, rows_from_project=rows_from_project, evaluate=evaluate,
    data_formats="Arg-CTRL App. F aspect JSONL (split field or folder with train/dev.jsonl), {text, spans} JSONL, or "
                 "CoNLL aspect spans (a .conll file or a folder of them)",
))
