"""Kinds ``argspan`` and ``argspanscheme``: factual spans grounded to KB variables, and spans + argument schemes
(ArgU §3.1.2, §3.2.1, Table 1, App. A.1-A.2).

Rows: the span-grounding export (``annotation/task_types/span_grounding/export.py``; ``manage.py train argspan --data spans.jsonl``)::

    {"text", "variables": [{"id", "text"}], "spans": [[begin, end, variable id | null], ...],
     "schemes": [...] (or "scheme": "...")}

(a span may also be an object ``{"begin", "end", "variable"}``; ``[begin, end]`` means Others).

Architecture (one encoder, :class:`SpanModel`; ``base_model`` default: the packaged all-MiniLM-L6-v2)

- **span head** (both kinds): a linear layer over every encoded argument token -> B / I / O (the first sub-word of
  each annotation token carries its word's tag).
- **grounding head** (``argspan``), a simpler interaction layer than the paper's token x variable biaffine: each
  item variable is encoded by the same encoder (mean pooled), each span by mean pooling its tokens' encodings in the
  argument; both go through one shared fully connected reduction (``proj_dim``, the paper reduces to 600 before its
  biaffine) and are scored by a biaffine form ``s^T W v + b`` (``W`` starts as the identity, so an untrained model
  already prefers lexically similar variables); a learned score ``o^T s + c`` stands for "Others". Softmax over the
  item's variables + Others; trained on the gold spans (teacher forcing), applied to predicted spans.
- **scheme head** (``argspanscheme``, the *parallel* architecture): a multi-label linear layer (sigmoid per
  scheme, "Others" included) on the pooled argument encoding -- mean pooled as in §3.2.1 by default,
  ``hyperparameters["scheme_pooling"] = "cls"`` uses ``[CLS]``. The pipelined variant (masked attention) is not built.

Loss: cross entropy (tags) + cross entropy (grounding) + binary cross entropy (schemes); AdamW, gradient clipping to
unit norm, mixed precision on CUDA (App. A.1/A.2); the best dev epoch is kept. Seed optimisation (AugSBERT §3.1) as
for the tagger: ``hyperparameters["seeds"] = [...]`` probes each seed to ``probe_fraction`` of the steps (dev
``combined_f1``) and trains only the best one on (:func:`ml.training.seeded_run`).

Metrics (:func:`evaluate`, Table 1), spans on annotation-token (word) indices, counts pooled over the dev rows:

- ``span_partial_f1``: a predicted span is a true positive if >= 50 % of its tokens lie in one gold span (a gold
  span is found if some prediction is a true positive against it); ``span_full_f1``: all of its tokens lie in the
  gold span; ``span_exact_f1``: same boundaries; ``span_overall_f1``: token-level macro F1 over B/I/O (as the
  tagger's Table 3 figure, :func:`ml.trainers.tagger.bio_metrics`).
- ``detection_f1`` / ``label_accuracy``: :func:`annotation.task_types.span_grounding.metrics.evaluate` (ArgU §3.1.3, Figure 7:
  token F1 averaged over examples; grounding accuracy over the gold spans); ``majority_label_accuracy``: always the
  most frequent grounding target class ("Others" or a variable's position).
- schemes: ``scheme_f1_<name>`` (binary F1 per scheme), ``scheme_f1_micro`` (pooled, Table 1 "Overall"),
  ``scheme_f1_macro``, ``majority_scheme_f1_micro`` (always the most frequent scheme).
- ``combined_f1`` (the primary metric): mean of ``span_partial_f1`` and ``label_accuracy`` (argspan) or
  ``scheme_f1_micro`` (argspanscheme).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from annotation.task_types.span_grounding.metrics import evaluate as span_eval

# span-level P/R/F1 at partial / full / exact overlap (ArgU §3.2.2): one definition, shared with the annotation metrics
from annotation.task_types.span_grounding.metrics import span_f1
from annotation.task_types.span_grounding.schemes import DEFAULT_SCHEMES
from ml import training
from ml.data import human_span_rows, read_jsonl_objects
from ml.errors import TrainerError
from ml.inference import (
    BIO,
    IGNORE,
    bio_from_spans,
    encode_words,
    length_sorted_batches,
    pad_batch,
    prepare_for_inference,
    spans_from_bio,
    words_of,
)
from ml.registry import SilverSpec, TrainerSpec, TrainRequest, TrainResult, register_trainer
from ml.splits import stable_split

from . import tagger as T

META = "argora-argspan.json"
HEADS = "heads.pt"
DEFAULTS = {
    "epochs": 4,
    "lr": 5e-5,
    "head_lr": 1e-3,
    "batch_size": 32,
    "max_length": 128,
    "weight_decay": 0.01,
    "warmup_ratio": 0.1,
    "max_steps": None,
    "proj_dim": 256,
    "scheme_pooling": "mean",
    "scheme_threshold": 0.5,
    "max_variable_length": 48,
    "seeds": [],
    "probe_fraction": 0.2,
}


# --- the model -------------------------------------------------------------------------------------


def _torch():
    import torch
    from torch import nn

    return torch, nn


def build_span_model(encoder, *, grounding: bool, schemes: Sequence[str], proj_dim: int, pooling: str):
    torch, nn = _torch()

    class SpanModel(nn.Module):
        base_model_prefix = "encoder"

        def __init__(self):
            super().__init__()
            self.encoder = encoder
            hidden = encoder.config.hidden_size
            self.dropout = nn.Dropout(0.1)
            self.tagger = nn.Linear(hidden, len(BIO))
            self.grounding = grounding
            self.schemes = list(schemes)
            self.pooling = pooling
            if grounding:
                self.reduce = nn.Sequential(nn.Linear(hidden, proj_dim), nn.Tanh())
                self.biaffine = nn.Bilinear(proj_dim, proj_dim, 1)
                with torch.no_grad():
                    self.biaffine.weight.copy_(torch.eye(proj_dim).unsqueeze(0) * 4.0)
                    self.biaffine.bias.zero_()
                self.others = nn.Linear(proj_dim, 1)
            if self.schemes:
                self.scheme_head = nn.Linear(hidden, len(self.schemes))

        def hidden(self, ids, mask):
            return self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state

        @staticmethod
        def mean_pool(hidden, mask):
            m = mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)

        def tag_logits(self, hidden):
            return self.tagger(self.dropout(hidden))

        def scheme_logits(self, hidden, mask):
            pooled = hidden[:, 0] if self.pooling == "cls" else self.mean_pool(hidden, mask)
            return self.scheme_head(self.dropout(pooled))

        def ground(self, span_vecs, var_vecs):
            """``[S, H]`` span encodings x ``[V, H]`` variable encodings -> ``[S, V + 1]`` scores (last: Others)."""
            s = self.reduce(span_vecs)
            v = self.reduce(var_vecs)
            n_s, n_v = s.shape[0], v.shape[0]
            if n_v:
                pair = self.biaffine(
                    s.unsqueeze(1).expand(n_s, n_v, -1).reshape(n_s * n_v, -1),
                    v.unsqueeze(0).expand(n_s, n_v, -1).reshape(n_s * n_v, -1),
                ).view(n_s, n_v)
            else:
                pair = s.new_zeros((n_s, 0))
            return torch.cat([pair, self.others(s)], dim=1)

    return SpanModel()


def _encoder(path: str, params: dict):
    from transformers import AutoModel, BertModel

    if params.get("from_config"):
        return BertModel(T.tiny_config(path, params["from_config"]))
    return AutoModel.from_pretrained(path)


# --- rows ------------------------------------------------------------------------------------------


def _schemes_of(row: dict) -> list[str] | None:
    if isinstance(row.get("schemes"), list):
        return [str(s) for s in row["schemes"]]
    if row.get("scheme"):
        return [str(row["scheme"])]
    return None


def _span_of(s) -> tuple[int, int, object]:
    """``[begin, end, variable]`` (the export's form; ``[begin, end]`` = Others) or ``{"begin", "end", "variable"}``."""
    if isinstance(s, dict):
        if "begin" not in s or "end" not in s:
            raise TrainerError(f"span {s!r}: give begin and end")
        b, e, var = s["begin"], s["end"], s.get("variable")
    elif isinstance(s, (list, tuple)) and len(s) in (2, 3):
        b, e, var = s[0], s[1], (s[2] if len(s) == 3 else None)
    else:
        raise TrainerError(f'span {s!r}: expected [begin, end, variable] or {{"begin", "end", "variable"}}')
    if isinstance(b, bool) or isinstance(e, bool) or not isinstance(b, int) or not isinstance(e, int):
        raise TrainerError(f"span {s!r}: begin and end must be whole numbers")
    return b, e, var


def parse_row(row: dict) -> dict:
    text = row.get("text", row.get("sentence"))
    if not isinstance(text, str):
        raise TrainerError("a span row needs 'text'")
    words = words_of(text)
    spans = []
    for s in row.get("spans") or []:
        b, e, var = _span_of(s)
        if not 0 <= b < e <= len(text):
            raise TrainerError(f"span ({b},{e}) lies outside the text ({len(text)} characters)")
        spans.append((b, e, var))
    spans.sort(key=lambda t: (t[0], t[1]))
    tags = bio_from_spans(words, [(b, e) for b, e, _ in spans])
    word_spans = spans_from_bio(tags)
    variables = [{"id": v["id"], "text": str(v["text"])} for v in row.get("variables") or []]
    ids = [v["id"] for v in variables]
    # ground each word span with the variable of the character span it came from
    targets = []
    for a, b in word_spans:
        wb, we = words[a][1], words[b - 1][2]
        var = next((v for sb, se, v in spans if sb < we and wb < se), None)
        targets.append(ids.index(var) if var in ids else len(ids))
    return {
        "text": text,
        "words": words,
        "tags": tags,
        "word_spans": word_spans,
        "variables": variables,
        "targets": targets,
        "schemes": _schemes_of(row),
        "spans": [{"begin": b, "end": e, "variable": v} for b, e, v in spans],
    }


def read_rows(path) -> list[dict]:
    path = Path(path)
    lines = read_jsonl_objects(path)
    for number, row in lines:
        try:
            parse_row(row)
        except (TrainerError, KeyError, TypeError, ValueError) as exc:
            raise TrainerError(f"{path}:{number}: {exc}") from None
    return [row for _, row in lines]


def rows_from_file(path) -> tuple[list[dict], list[dict]]:
    """(train, dev) from a span-grounding JSONL export (``split`` field or a stable hash split on the text), or a
    folder with ``train.jsonl`` + ``dev.jsonl``."""
    return T.rows_from_path(path, read_rows, "text")


def rows_from_project(project):
    """The human labels of a ``span_grounding`` project (:func:`ml.data.human_span_rows`: crowd responses, never
    a model annotator's), split by text hash."""
    rows = list(human_span_rows(project))
    train_rows, dev_rows = stable_split(rows, key="text")
    return train_rows, dev_rows, len(rows)


# --- the predictor ---------------------------------------------------------------------------------


class SpanPredictor:
    """Loaded ``argspan`` / ``argspanscheme`` model: ``predict(texts, variables=None)`` -> one dict per text::

        {"tags", "spans": [{"begin", "end", "text", "confidence", "variable", "variable_confidence"}],
         "schemes": {name: probability}, "confidence"}

    ``variables[i]``: the ``[{"id", "text"}]`` text ``i`` may be grounded to (else every span is "Others",
    ``variable: None``). Same batching as :class:`ml.inference.TokenTagger` (length-sorted, dynamic padding,
    inference mode, int8 encoder on CPU / fp16 on CUDA).
    """

    def __init__(
        self,
        model,
        tokenizer,
        *,
        kind: str,
        max_length: int = 128,
        max_variable_length: int = 48,
        scheme_threshold: float = 0.5,
        device: str | None = None,
        quantize: bool | None = None,
        info: dict | None = None,
    ):
        self.kind = kind
        self.device = training.pick_device(device)
        self.model, self.precision = prepare_for_inference(
            model, device=self.device, quantize=quantize, encoder_attr="encoder"
        )
        self.tokenizer = tokenizer
        self.max_length, self.max_variable_length = int(max_length), int(max_variable_length)
        self.scheme_threshold = float(scheme_threshold)
        self.schemes = list(getattr(model, "schemes", []))
        self.grounding = bool(getattr(model, "grounding", False))
        self.info = dict(info or {})
        self.pad_id = tokenizer.pad_token_id or 0

    def _tensor(self, array):
        import torch

        return torch.from_numpy(array).to(self.device)

    def encode_variables(self, texts: Sequence[str]):
        """Mean-pooled encodings ``[V, H]`` of variable texts (one forward pass)."""
        if not texts:
            return None
        enc = self.tokenizer(
            list(texts),
            truncation=True,
            max_length=self.max_variable_length,
            return_attention_mask=False,
            return_token_type_ids=False,
        )
        ids, mask = pad_batch(enc["input_ids"], self.pad_id)
        ids, mask = self._tensor(ids), self._tensor(mask)
        return self.model.mean_pool(self.model.hidden(ids, mask), mask)

    def predict(
        self, texts: Sequence[str], variables: Sequence[Sequence[dict]] | None = None, *, batch_size: int = 64
    ) -> list[dict]:
        import torch

        texts = list(texts)
        enc = encode_words(self.tokenizer, texts, max_length=self.max_length)
        out: list = [None] * len(texts)
        with torch.inference_mode():
            for batch in length_sorted_batches([len(x) for x in enc.input_ids], batch_size):
                ids, mask = pad_batch([enc.input_ids[i] for i in batch], self.pad_id)
                t_mask = self._tensor(mask)
                hidden = self.model.hidden(self._tensor(ids), t_mask)
                probs = torch.softmax(self.model.tag_logits(hidden).float(), dim=-1)
                conf, best = probs.max(dim=-1)
                conf, best = conf.cpu().numpy(), best.cpu().numpy()
                scheme_probs = (
                    torch.sigmoid(self.model.scheme_logits(hidden, t_mask).float()).cpu().numpy()
                    if self.schemes
                    else None
                )
                var_lists = [list(variables[i] or []) if variables is not None else [] for i in batch]
                var_texts = list(dict.fromkeys(v["text"] for vs in var_lists for v in vs)) if self.grounding else []
                var_enc = self.encode_variables(var_texts) if var_texts else None
                var_row = {t: k for k, t in enumerate(var_texts)}
                for r, i in enumerate(batch):
                    out[i] = self._decode(
                        texts[i],
                        enc,
                        i,
                        best[r],
                        conf[r],
                        hidden[r],
                        var_lists[r],
                        var_enc,
                        var_row,
                        None if scheme_probs is None else scheme_probs[r],
                    )
        return out

    def _decode(self, text, enc, i, best, conf, hidden, variables, var_enc, var_row, scheme_probs) -> dict:
        import torch

        words = enc.words[i]
        first = enc.first_subword(i)
        tags, probs = [], []
        for w in range(len(words)):
            pos = first.get(w)
            tags.append("O" if pos is None else BIO[int(best[pos])])
            probs.append(1.0 if pos is None else float(conf[pos]))
        positions = enc.word_positions(i)
        spans = []
        word_spans = spans_from_bio(tags)
        ground = None
        if self.grounding and word_spans and variables and var_enc is not None:
            vecs = []
            for a, b in word_spans:
                pos = [p for w in range(a, b) for p in positions.get(w, [])] or [0]
                vecs.append(hidden[pos].mean(0))
            vv = var_enc[[var_row[v["text"]] for v in variables]]
            ground = torch.softmax(self.model.ground(torch.stack(vecs), vv).float(), dim=-1).cpu().numpy()
        for k, (a, b) in enumerate(word_spans):
            begin, end = words[a][1], words[b - 1][2]
            span = {
                "begin": begin,
                "end": end,
                "text": text[begin:end],
                "confidence": round(float(np.mean(probs[a:b])), 4),
                "variable": None,
            }
            if ground is not None:
                j = int(ground[k].argmax())
                span["variable"] = variables[j]["id"] if j < len(variables) else None
                span["variable_confidence"] = round(float(ground[k][j]), 4)
            spans.append(span)
        result = {"tags": tags, "spans": spans, "confidence": round(float(np.mean(probs)), 4) if probs else 1.0}
        if scheme_probs is not None:
            result["schemes"] = {s: round(float(p), 4) for s, p in zip(self.schemes, scheme_probs)}
        return result

    def scheme_labels(self, probs: dict) -> list[str]:
        """Schemes at or above the threshold; at least the most probable one (every argument has a scheme,
        "Others" included)."""
        kept = [s for s, p in probs.items() if p >= self.scheme_threshold]
        return kept or ([max(probs, key=probs.get)] if probs else [])


# --- metrics ---------------------------------------------------------------------------------------


def scheme_metrics(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], schemes: Sequence[str]) -> dict:
    out = {}
    tp_all = fp_all = fn_all = 0
    f1s = []
    for s in schemes:
        tp = sum(1 for g, p in zip(gold, pred) if s in g and s in p)
        fp = sum(1 for g, p in zip(gold, pred) if s not in g and s in p)
        fn = sum(1 for g, p in zip(gold, pred) if s in g and s not in p)
        _p, _r, f_ = T._prf(tp, fp, fn)
        out[f"scheme_f1_{s}"] = f_
        f1s.append(f_)
        tp_all, fp_all, fn_all = tp_all + tp, fp_all + fp, fn_all + fn
    out["scheme_f1_micro"] = T._prf(tp_all, fp_all, fn_all)[2]
    out["scheme_f1_macro"] = sum(f1s) / len(f1s) if f1s else 0.0
    return out


def evaluate(predictor: SpanPredictor, rows: list[dict], *, batch_size: int = 64) -> dict:
    parsed = [parse_row(r) for r in rows]
    preds = predictor.predict([p["text"] for p in parsed], [p["variables"] for p in parsed], batch_size=batch_size)
    out = T.bio_metrics([p["tags"] for p in parsed], [q["tags"] for q in preds])
    metrics = {
        "span_overall_f1": out["f1_macro"],
        "majority_span_overall_f1": out["majority_f1_macro"],
        "f1_B": out["f1_B"],
        "f1_I": out["f1_I"],
        "f1_O": out["f1_O"],
        "n": len(parsed),
    }
    gold_spans = [p["word_spans"] for p in parsed]
    pred_spans = [spans_from_bio(q["tags"]) for q in preds]
    for mode in ("partial", "full", "exact"):
        res = span_f1(gold_spans, pred_spans, mode)
        metrics[f"span_{mode}_f1"] = res["f1"]
        metrics[f"span_{mode}_precision"] = res["precision"]
        metrics[f"span_{mode}_recall"] = res["recall"]
        metrics[f"majority_span_{mode}_f1"] = span_f1(gold_spans, [[] for _ in parsed], mode)["f1"]
    ev = span_eval(
        [
            {
                "text": p["text"],
                "reference": p["spans"],
                "predicted": [
                    {"begin": s["begin"], "end": s["end"], "variable": s.get("variable")} for s in q["spans"]
                ],
            }
            for p, q in zip(parsed, preds)
        ]
    )
    metrics["detection_f1"] = ev["f1"]
    metrics["detection_micro_f1"] = ev["micro_f1"]
    if predictor.grounding:
        metrics["label_accuracy"] = ev["label_accuracy"] if ev["label_accuracy"] is not None else 0.0
        targets = Counter(("others" if t == len(p["variables"]) else t) for p in parsed for t in p["targets"])
        metrics["majority_label_accuracy"] = (max(targets.values()) / sum(targets.values())) if targets else 0.0
        metrics["combined_f1"] = (metrics["span_partial_f1"] + metrics["label_accuracy"]) / 2
    if predictor.schemes:
        scored = [(p["schemes"], q.get("schemes") or {}) for p, q in zip(parsed, preds) if p["schemes"] is not None]
        gold_s = [g for g, _ in scored]
        pred_s = [predictor.scheme_labels(q) for _, q in scored]
        metrics.update(scheme_metrics(gold_s, pred_s, predictor.schemes))
        common = Counter(s for g in gold_s for s in g).most_common(1)
        majority = [common[0][0]] if common else []
        metrics["majority_scheme_f1_micro"] = scheme_metrics(gold_s, [majority] * len(gold_s), predictor.schemes)[
            "scheme_f1_micro"
        ]
        metrics["combined_f1"] = (metrics["span_partial_f1"] + metrics["scheme_f1_micro"]) / 2
    return metrics


# --- training --------------------------------------------------------------------------------------


def _scheme_list(rows: list[dict], params: dict) -> list[str]:
    if params.get("schemes"):
        return [str(s) for s in params["schemes"]]
    seen = {s for r in rows for s in (_schemes_of(r) or [])}
    if not seen:
        raise TrainerError("data: argspanscheme needs rows with 'schemes' (or 'scheme')")
    return [s for s in DEFAULT_SCHEMES if s in seen] + sorted(seen - set(DEFAULT_SCHEMES))


def make_train(kind: str):
    grounding = kind == "argspan"

    def train(request: TrainRequest) -> TrainResult:
        torch, _ = _torch()
        params = training.with_defaults(DEFAULTS, request.hyperparameters)
        schemes = _scheme_list(request.rows_train, params) if kind == "argspanscheme" else []
        total, _ = T.plan_steps(len(request.rows_train), params)

        def make_run(seed: int) -> training.LoopRun:
            loop, model, tokenizer, dev_metrics = training_run(request, params, seed, schemes)
            run = training.LoopRun(loop.steps(), lambda: float(dev_metrics().get("combined_f1") or 0.0))
            run.model, run.tokenizer = model, tokenizer
            return run

        run, seed, probes = training.seeded_run(
            make_run, params, seed=request.seed, total=total, progress=request.progress
        )
        loop = run.finish()
        model, tokenizer = run.model, run.tokenizer
        history = [
            {"epoch": e["epoch"], "step": e["step"], "combined_f1": e["metrics"].get("combined_f1")} for e in loop.evals
        ]
        max_length = int(params["max_length"])
        model.to("cpu").float()
        out = Path(request.output_dir)
        model.encoder.save_pretrained(str(out / "encoder"))
        tokenizer.save_pretrained(str(out / "encoder"))
        torch.save({k: v for k, v in model.state_dict().items() if not k.startswith("encoder.")}, out / HEADS)
        (out / META).write_text(
            json.dumps(
                {
                    "kind": kind,
                    "labels": list(BIO),
                    "schemes": schemes,
                    "grounding": grounding,
                    "proj_dim": int(params["proj_dim"]),
                    "scheme_pooling": str(params["scheme_pooling"]),
                    "max_length": max_length,
                    "max_variable_length": int(params["max_variable_length"]),
                    "scheme_threshold": float(params["scheme_threshold"]),
                    "history": history,
                    "seed": seed,
                },
                indent=2,
            )
        )
        return TrainResult(
            metrics=loop.best or {"combined_f1": 0.0},
            info={"steps": loop.step, "history": history, "seed": seed, "seed_probes": probes},
        )

    def training_run(request: TrainRequest, params: dict, seed: int, schemes: list):
        """One seed's model and :class:`ml.training.TrainLoop` (the multi-task loss: tags + grounding + schemes;
        dev ``combined_f1`` after every epoch, the best epoch's weights kept): ``(loop, model, tokenizer,
        dev_metrics)``."""
        torch, nn = _torch()
        training.set_seed(seed)
        path = T.base_path(request)
        tokenizer = T.load_tokenizer(path)
        model = build_span_model(
            _encoder(path, params),
            grounding=grounding,
            schemes=schemes,
            proj_dim=int(params["proj_dim"]),
            pooling=str(params["scheme_pooling"]),
        )
        device = training.pick_device(params.get("device"))
        model.to(device)
        parsed = [parse_row(r) for r in request.rows_train]
        max_length = int(params["max_length"])
        enc = encode_words(
            tokenizer, [p["text"] for p in parsed], max_length=max_length, words=[p["words"] for p in parsed]
        )
        label_ids = {l: i for i, l in enumerate(BIO)}
        targets = [T.subword_labels(enc, i, parsed[i]["tags"], label_ids) for i in range(len(parsed))]
        total, epochs = T.plan_steps(len(parsed), params)
        opt, sched = T.optimiser(
            model, params, total, head_names=("tagger", "reduce", "biaffine", "others", "scheme_head")
        )
        pad_id = tokenizer.pad_token_id or 0
        rng = random.Random(seed)
        bs = int(params["batch_size"])
        ce = nn.CrossEntropyLoss(ignore_index=IGNORE)
        bce = nn.BCEWithLogitsLoss()

        def dev_metrics():
            if not request.rows_dev:
                return {}
            predictor = SpanPredictor(
                T.for_eval(model, device),
                tokenizer,
                kind=kind,
                max_length=max_length,
                device=device,
                quantize=False,
                scheme_threshold=float(params["scheme_threshold"]),
                max_variable_length=int(params["max_variable_length"]),
            )
            return evaluate(predictor, request.rows_dev)

        def loss_of(batch):
            ids, t_mask, lab = T.padded_batch(enc, targets, batch, pad_id, device)
            hidden = model.hidden(ids, t_mask)
            logits = model.tag_logits(hidden)
            loss = ce(logits.reshape(-1, logits.shape[-1]).float(), lab.reshape(-1))
            if grounding:
                g_loss = grounding_loss(batch, hidden)
                if g_loss is not None:
                    loss = loss + g_loss
            if schemes:
                keep = [r for r, i in enumerate(batch) if parsed[i]["schemes"] is not None]
                if keep:
                    target = torch.zeros((len(keep), len(schemes)), device=device)
                    for n, r in enumerate(keep):
                        for s in parsed[batch[r]]["schemes"]:
                            if s in schemes:
                                target[n, schemes.index(s)] = 1.0
                    sl = model.scheme_logits(hidden, t_mask)[keep].float()
                    loss = loss + bce(sl, target)
            return loss

        def grounding_loss(batch, hidden):
            """Cross entropy of each gold span over its row's variables + Others, per span (None: no spans)."""
            var_texts = list(dict.fromkeys(v["text"] for i in batch for v in parsed[i]["variables"]))
            if var_texts:
                venc = tokenizer(
                    var_texts,
                    truncation=True,
                    max_length=int(params["max_variable_length"]),
                    return_attention_mask=False,
                    return_token_type_ids=False,
                )
                vids, vmask = pad_batch(venc["input_ids"], pad_id)
                vm = torch.from_numpy(vmask).to(device)
                vvecs = model.mean_pool(model.hidden(torch.from_numpy(vids).to(device), vm), vm)
            row_of = {t: n for n, t in enumerate(var_texts)}
            g_losses = []
            for r, i in enumerate(batch):
                p = parsed[i]
                if not p["word_spans"]:
                    continue
                positions = enc.word_positions(i)
                vecs = []
                for a, b in p["word_spans"]:
                    pos = [q for w in range(a, b) for q in positions.get(w, [])] or [0]
                    vecs.append(hidden[r, pos].mean(0))
                vv = (
                    vvecs[[row_of[v["text"]] for v in p["variables"]]]
                    if p["variables"]
                    else hidden.new_zeros((0, hidden.shape[-1]))
                )
                scores = model.ground(torch.stack(vecs), vv).float()
                g_losses.append(
                    nn.functional.cross_entropy(scores, torch.tensor(p["targets"], device=device), reduction="sum")
                )
            if not g_losses:
                return None
            n_spans = sum(len(parsed[i]["word_spans"]) for i in batch)
            return torch.stack(g_losses).sum() / max(1, n_spans)

        loop = training.TrainLoop(
            model,
            opt,
            sched,
            loss_of,
            lambda epoch: training.shuffled_batches(rng, len(parsed), bs),
            device=device,
            total=total,
            epochs=epochs,
            progress=request.progress,
            evaluate=dev_metrics,
            better=training.higher("combined_f1"),
        )
        return loop, model, tokenizer, dev_metrics

    return train


def load(path: Path, *, quantize: bool | None = None, device: str | None = None) -> SpanPredictor:
    torch, _ = _torch()
    from transformers import AutoModel

    path = Path(path)
    meta = json.loads((path / META).read_text())
    encoder = AutoModel.from_pretrained(str(path / "encoder"))
    model = build_span_model(
        encoder,
        grounding=meta["grounding"],
        schemes=meta["schemes"],
        proj_dim=meta["proj_dim"],
        pooling=meta["scheme_pooling"],
    )
    missing = model.load_state_dict(torch.load(path / HEADS, map_location="cpu"), strict=False)
    if missing.unexpected_keys or any(not k.startswith("encoder.") for k in missing.missing_keys):
        raise TrainerError(f"{path}: heads do not match the model ({missing})")
    return SpanPredictor(
        model,
        T.load_tokenizer(str(path / "encoder")),
        kind=meta["kind"],
        max_length=meta["max_length"],
        max_variable_length=meta["max_variable_length"],
        scheme_threshold=meta["scheme_threshold"],
        device=device,
        quantize=quantize,
        info=meta,
    )


def silver_predict_grounded(model, batch) -> list[dict]:
    """A silver batch (:class:`ml.silver.Batch`) for ArgSpan: spans grounded to the active fact variables of each
    sentence's topic."""
    return model.predict(batch.texts, batch.variables(), batch_size=batch.batch_size)


def silver_predict(model, batch) -> list[dict]:
    """A silver batch for ArgSpanScheme: spans and scheme probabilities of each sentence (ArgU §3.2)."""
    return model.predict(batch.texts, batch_size=batch.batch_size)


for _kind, _desc, _silver in (
    (
        "argspan",
        "ArgSpan (ArgU §3.1.2): BIO factual spans grounded to the item's KB variables or Others; span "
        "partial/full/overall F1 + grounding accuracy (Table 1, §3.1.3)",
        silver_predict_grounded,
    ),
    (
        "argspanscheme",
        "ArgSpanScheme, parallel (ArgU §3.2.1): BIO spans + multi-label scheme head; span "
        "partial/full/overall F1 + scheme F1 (Table 1)",
        silver_predict,
    ),
):
    register_trainer(
        TrainerSpec(
            kind=_kind,
            train=make_train(_kind),
            load=load,
            primary_metric="combined_f1",
            higher_is_better=True,
            description=_desc,
            rows_from_file=rows_from_file,
            rows_from_project=rows_from_project,
            evaluate=evaluate,
            data_formats="span-grounding JSONL export (text, variables, spans[, schemes]) or a folder with "
            "train.jsonl + dev.jsonl",
            silver=SilverSpec(predict=_silver),
        )
    )
