"""Kind ``tagger``: the aspect tagger of Arg-CTRL §3.2 (BIO token classification, Table 3).

Rows
    Arg-CTRL App. F rows (``{"sentence", "aspect_pos": ["(begin,length)", ...], ...}``; what ``manage.py train
    tagger --data appf.jsonl`` reads, :func:`ml.data.tagger_rows_from_file`) or ``{"text", "spans": [{"begin",
    "end"}]}``. Words are the annotation tokens (:func:`ml.inference.words_of`); a word inside an aspect is ``B``
    (first word) or ``I``; every other word ``O``. Sub-words after the first of a word are ignored in the loss.

Model
    ``AutoModelForTokenClassification`` from ``base_model`` (default: the packaged all-MiniLM-L6-v2, its encoder with a
    fresh 3-way head). ``hyperparameters["from_config"] = {...}`` builds a small BERT from a config instead (the
    tokenizer still comes from ``base_model``): tests use it where the point is the plumbing.
    AdamW, linear warm-up/decay, gradient clipping to unit norm (ArgU App. A.1), mixed precision on CUDA; the
    weights of the best dev epoch (``f1_macro``) are kept.
    Seed optimisation (AugSBERT §3.1): ``hyperparameters["seeds"] = [1, 2, 3]`` trains one model per seed to
    ``probe_fraction`` (default 0.2) of the steps, scores each on dev (``f1_macro`` at that step) and trains only
    the best one to the end (:func:`ml.registry.seed_optimise_runs`; the training loop is a generator that yields
    after every step, :class:`LoopRun`, so a probed run continues where it stopped). ``info["seed"]`` is the seed
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
import math
import random
import re
from pathlib import Path
from typing import Sequence

from ml.inference import BIO, IGNORE, TokenTagger, bio_from_spans, encode_words, pad_batch, pick_device, words_of
from ml.registry import TrainerSpec, TrainRequest, TrainResult, TrainerError, register_trainer

KIND = "tagger"
META = "argora-tagger.json"
DEFAULTS = {"epochs": 3, "lr": 5e-5, "batch_size": 32, "max_length": 128, "weight_decay": 0.01,
            "warmup_ratio": 0.1, "max_steps": None, "head_lr": None, "seeds": [], "probe_fraction": 0.2}
_POS = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


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
                m = _POS.match(str(p))
                if not m:
                    raise TrainerError(f"aspect_pos: {p!r} is not (begin,length)")
                b, n = int(m.group(1)), int(m.group(2))
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

def set_seed(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    torch.manual_seed(seed)


def hp(request: TrainRequest, defaults: dict) -> dict:
    out = dict(defaults)
    out.update({k: v for k, v in (request.hyperparameters or {}).items()})
    return out


def base_path(request: TrainRequest) -> str:
    from ml.encoders import resolve

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


def optimizer_and_schedule(model, params: dict, total_steps: int, head_names: Sequence[str] = ()):
    import torch
    from transformers import get_linear_schedule_with_warmup

    lr = float(params["lr"])
    head_lr = float(params["head_lr"]) if params.get("head_lr") else lr
    decay, no_decay, head = [], [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if any(name.startswith(h) for h in head_names):
            head.append(p)
        elif p.ndim < 2 or "LayerNorm" in name or "norm" in name.lower():
            no_decay.append(p)
        else:
            decay.append(p)
    groups = [{"params": decay, "weight_decay": float(params["weight_decay"]), "lr": lr},
              {"params": no_decay, "weight_decay": 0.0, "lr": lr}]
    if head:
        groups.append({"params": head, "weight_decay": 0.0, "lr": head_lr})
    opt = torch.optim.AdamW([g for g in groups if g["params"]])
    warmup = int(total_steps * float(params["warmup_ratio"]))
    sched = get_linear_schedule_with_warmup(opt, warmup, max(1, total_steps))
    return opt, sched


def total_steps_for(n_rows: int, params: dict) -> tuple[int, int]:
    per_epoch = max(1, math.ceil(n_rows / int(params["batch_size"])))
    epochs = int(params["epochs"])
    total = per_epoch * epochs
    if params.get("max_steps"):
        total = min(total, int(params["max_steps"])) if epochs else int(params["max_steps"])
        epochs = max(1, math.ceil(total / per_epoch))
    return total, epochs


def autocast(device: str):
    import contextlib

    import torch

    if device.startswith("cuda"):
        return torch.autocast("cuda", dtype=torch.float16)
    return contextlib.nullcontext()


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


class LoopRun:
    """A training loop written as a generator (it yields the step count after every optimisation step and returns
    its result) as a run that can be continued: ``run(steps)`` trains until ``steps`` steps are done and returns
    ``probe()`` (the dev primary metric at that point) -- the interface of :func:`ml.registry.seed_optimise_runs`;
    :meth:`finish` trains to the end and returns what the loop returned."""

    def __init__(self, loop, probe):
        self._loop, self._probe = loop, probe
        self.done = 0
        self.result = None
        self._finished = False

    def train_to(self, steps: float) -> None:
        while not self._finished and self.done < steps:
            try:
                self.done = next(self._loop)
            except StopIteration as stop:
                self.result, self._finished = stop.value, True

    def __call__(self, steps: int) -> float:
        self.train_to(steps)
        return float(self._probe())

    def finish(self):
        self.train_to(math.inf)
        return self.result


def train_with_seeds(request: TrainRequest, params: dict, make_run, total: int):
    """``(result of the kept run's loop, seed, probe scores)``: seed optimisation when ``params["seeds"]`` lists
    several seeds, else one run with ``request.seed`` (or the single listed seed)."""
    from ml.registry import seed_optimise_runs

    seeds = [int(x) for x in (params.get("seeds") or [])]
    if len(seeds) > 1:
        seed, run, probes = seed_optimise_runs(make_run, seeds, total_steps=total,
                                               probe_fraction=float(params.get("probe_fraction") or 0.2),
                                               progress=request.progress)
    else:
        seed = seeds[0] if seeds else int(request.seed)
        run, probes = make_run(seed), {}
    return run.finish(), seed, probes


def train(request: TrainRequest) -> TrainResult:
    params = hp(request, DEFAULTS)
    labels = list(BIO)
    total, _ = total_steps_for(len(request.rows_train), params)

    def make_run(seed: int) -> LoopRun:
        box: dict = {}

        def probe() -> float:
            if not request.rows_dev or "model" not in box:
                return 0.0
            tagger = TokenTagger(for_eval(box["model"], box["device"]), box["tokenizer"], labels=labels,
                                 max_length=int(params["max_length"]), device=box["device"], quantize=False)
            return float(evaluate(tagger, request.rows_dev).get("f1_macro") or 0.0)

        return LoopRun(_train_loop(request, params, seed, labels, box), probe)

    (model, tokenizer, best, history, step), seed, probes = train_with_seeds(request, params, make_run, total)
    model.to("cpu").float()
    model.save_pretrained(str(request.output_dir))
    tokenizer.save_pretrained(str(request.output_dir))
    (Path(request.output_dir) / META).write_text(json.dumps(
        {"kind": KIND, "labels": labels, "max_length": int(params["max_length"]), "words": "annotation tokens",
         "history": history, "seed": seed}, indent=2))
    return TrainResult(metrics=best or {}, info={"steps": step, "history": history, "seed": seed,
                                                  "seed_probes": probes})


def _train_loop(request: TrainRequest, params: dict, seed: int, labels: list, box: dict):
    """The training loop of one seed, a generator: yields the step count after each step; returns
    ``(model with the best dev epoch's weights, tokenizer, best dev metrics, history, steps)``."""
    import numpy as np
    import torch

    set_seed(seed)
    label_ids = {l: i for i, l in enumerate(labels)}
    model, tokenizer = build_model(request, params, len(labels), labels)
    device = pick_device(params.get("device"))
    model.to(device)
    box.update(model=model, tokenizer=tokenizer, device=device)

    texts, tags = [], []
    for row in request.rows_train:
        text, _, t = word_tags(row)
        texts.append(text)
        tags.append(t)
    enc = encode_words(tokenizer, texts, max_length=int(params["max_length"]))
    targets = [subword_labels(enc, i, tags[i], label_ids) for i in range(len(texts))]
    total, epochs = total_steps_for(len(texts), params)
    opt, sched = optimizer_and_schedule(model, params, total, head_names=("classifier",))
    scaler = torch.amp.GradScaler("cuda") if device.startswith("cuda") else None
    pad_id = tokenizer.pad_token_id or 0
    rng = random.Random(seed)
    bs = int(params["batch_size"])
    best, best_state, history, step = None, None, [], 0
    for epoch in range(epochs):
        model.train()
        order = list(range(len(texts)))
        rng.shuffle(order)
        for k in range(0, len(order), bs):
            if step >= total:
                break
            batch = order[k:k + bs]
            ids, mask = pad_batch([enc.input_ids[i] for i in batch], pad_id)
            lab = np.full(ids.shape, IGNORE, dtype=np.int64)
            for r, i in enumerate(batch):
                lab[r, :len(targets[i])] = targets[i]
            with autocast(device):
                out = model(input_ids=torch.from_numpy(ids).to(device),
                            attention_mask=torch.from_numpy(mask).to(device),
                            labels=torch.from_numpy(lab).to(device))
            opt.zero_grad(set_to_none=True)
            if scaler is not None:
                scaler.scale(out.loss).backward()
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(opt)
                scaler.update()
            else:
                out.loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
            sched.step()
            step += 1
            request.progress(step, total, f"epoch {epoch + 1}/{epochs} loss {out.loss.item():.4f}")
            yield step
            model.train()  # a seed probe may have evaluated in between
        metrics = evaluate(TokenTagger(for_eval(model, device), tokenizer, labels=labels,
                                       max_length=int(params["max_length"]), device=device, quantize=False),
                           request.rows_dev) if request.rows_dev else {}
        history.append({"epoch": epoch + 1, "step": step, "f1_macro": metrics.get("f1_macro")})
        if best is None or (metrics.get("f1_macro") or 0.0) > best.get("f1_macro", 0.0):
            best = metrics
            best_state = copy.deepcopy({k: v.detach().cpu() for k, v in model.state_dict().items()})
        if step >= total:
            break
    if best_state is not None:
        model.load_state_dict(best_state)
    return model, tokenizer, best, history, step


def load(path: Path, *, quantize: bool | None = None, device: str | None = None) -> TokenTagger:
    path = Path(path)
    meta = json.loads((path / META).read_text()) if (path / META).exists() else {}
    return TokenTagger.from_pretrained(path, max_length=meta.get("max_length", 128), quantize=quantize,
                                       device=device, info=meta)


def read_rows(path) -> list[dict]:
    """Tagger rows of one JSONL file, each checked (``TrainerError("file:line: reason")``)."""
    from ml.loop import read_jsonl

    path = Path(path)
    rows = read_jsonl(path)
    for number, row in enumerate(rows, 1):
        try:
            text, spans = row_text_spans(row)
        except (TrainerError, KeyError, TypeError, ValueError) as exc:
            raise TrainerError(f"{path}:{number}: {exc}") from None
        if any(not 0 <= b < e <= len(text) for b, e in spans):
            raise TrainerError(f"{path}:{number}: a span lies outside the text ({len(text)} characters)")
    return rows


def split_rows(rows: list[dict], key: str) -> tuple[list[dict], list[dict]]:
    """By the rows' ``split`` field when they have one (``test`` left out), else a stable hash split on ``key``."""
    from ml.registry import stable_split

    if any("split" in r for r in rows):
        train_rows = [r for r in rows if r.get("split", "train") == "train"]
        dev_rows = [r for r in rows if r.get("split") == "dev"]
        if train_rows and dev_rows:
            return train_rows, dev_rows
    return stable_split(rows, key=lambda r: r.get(key) or r.get("text") or r.get("sentence"))


def rows_from_file(path) -> tuple[list[dict], list[dict]]:
    """(train, dev) from an App. F file / ``{text, spans}`` JSONL, or a folder with ``train.jsonl`` + ``dev.jsonl``."""
    path = Path(path)
    if path.is_dir():
        if not (path / "train.jsonl").exists() or not (path / "dev.jsonl").exists():
            raise TrainerError(f"{path}:0: a data folder must hold train.jsonl and dev.jsonl")
        return read_rows(path / "train.jsonl"), read_rows(path / "dev.jsonl")
    if not path.exists():
        raise TrainerError(f"{path}:0: no such file")
    return split_rows(read_rows(path), "sentence")


def rows_from_project(project):
    """The final answers of an ``aspect`` project (App. F rows), split by sentence hash."""
    from annotation.task_types.aspect.appf import project_rows
    from ml.registry import stable_split

    rows = project_rows(project)
    train_rows, dev_rows = stable_split(rows, key="sentence")
    return train_rows, dev_rows, len(rows)


register_trainer(TrainerSpec(
    kind=KIND, train=train, load=load, primary_metric="f1_macro", higher_is_better=True,
    description="Aspect tagger (Arg-CTRL §3.2): BIO token classification; macro F1/P/R over B, I, O (Table 3)",
    rows_from_file=rows_from_file, rows_from_project=rows_from_project, evaluate=evaluate,
    data_formats="Arg-CTRL App. F aspect JSONL (split field or folder with train/dev.jsonl), or {text, spans} JSONL",
))
