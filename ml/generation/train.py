"""Training the argument generators (issue 12, item 4): a control-code causal LM and a seq2seq model.

Both are registered as trainer kinds in :mod:`ml.trainers.generator` (``generator`` and ``seq2seq``), so they
train through :func:`ml.versions.train_version` (``manage.py train generator --data FILE``, the ``ml.tasks.train``
Celery task on the ``gpu`` queue) and land in the registry with their dev metrics.

Causal LM, Arg-CTRL (kind ``generator``; Arg-CTRL §5.1, App. C)
    Rows: aspect-control documents (``{"control_code", "arguments", "topic", "stance", "aspect", ...}``, the
    ``gencorpus aspect-docs`` rows of :meth:`ml.generation.corpora.AspectDocument.as_row`) or aspect rows
    (``{"topic", "stance", "sentence", "aspects"}`` / App. F), which are turned into documents by
    :func:`ml.generation.corpora.build_aspect_documents` (``min_args`` / ``max_args`` / ``max_per_topic_stance``
    hyperparameters; defaults 15 / 1,500 / 100,000 as in the paper). Training sequences are
    :func:`ml.generation.corpora.chunk_document`: the control code (plus ``code_suffix``, default ``" ."``: the
    punctuation the paper puts after the code at inference, used in training too so both match) prepended to
    every block of ``block_size`` (256) document tokens. The loss is on the document tokens only (the code is
    given). Dev: every (control code, argument) pair of the dev rows, scored by
    :func:`ml.generation.metrics.perplexity` with the code as unscored context; ``loss`` = log perplexity.
    Model: ``base_model`` as a causal LM. An encoder-only BERT checkpoint (the default: the packaged
    all-MiniLM-L6-v2) is warm-started as a BERT decoder (``is_decoder=True``, causal attention, fresh LM head);
    any local causal LM (gpt2, ctrl, ...) is loaded as it is. ``hyperparameters["from_config"]`` builds a small
    BERT decoder from a config (tokenizer from ``base_model``) for tests and demos.

Seq2seq (kind ``seq2seq``; ArgU §4.1, App. A.3; debate trees §2.3)
    Rows (:func:`seq2seq_pair`): ArgU inputs (``encoder_input`` + ``mono_target`` / ``dual_target``;
    ``hyperparameters["argu"] = "mono" | "dual"``), span-grounding export rows (made into ArgU inputs by
    :func:`ml.generation.corpora.argu_input`), debate-path rows (``prompt`` -> ``response``) or plain
    ``{"source", "target"}``. The ArgU special tokens (:func:`ml.generation.corpora.special_tokens`) and the debate
    turn separator ``<turn>`` are added to the tokenizer and the embeddings resized. Model: an encoder-decoder
    from ``base_model``: a BERT checkpoint (the default MiniLM) becomes a BERT2BERT ``EncoderDecoderModel``
    warm-started on both sides (cross-attention fresh); any local seq2seq model (bart-base, t5, ...) is loaded with
    ``AutoModelForSeq2SeqLM``. Targets are ``tokens(target) + [eos]``; the model shifts them right after its
    ``decoder_start_token_id``. Dev: teacher-forced token cross-entropy (``loss``) and ``perplexity``.

Both (the step loop of :mod:`ml.training`): AdamW, linear warm-up/decay, gradients clipped to unit norm (ArgU
App. A.3), fp16 autocast on CUDA, the weights of the best dev epoch kept (``keep_best``; dev evaluated at most
``max_evals`` times), early stop after ``patience`` evaluations without improvement. Every optimisation step's
training loss is logged (``info["history"]``: ``[{"step", "epoch", "loss"}]``, also written into the
artifact's ``argora-generator.json``). Artifacts: ``save_pretrained`` model + tokenizer, ``argora-generator.json``
(architecture, hyperparameters, special tokens, control codes seen in training, history) and, for the causal LM,
``train_arguments.jsonl`` (the training arguments with their topic/stance/aspect: the novelty and retrieval
baselines of :mod:`ml.generation.evaluate` read them) and ``dev_arguments.jsonl`` (the held-out dev arguments: the
default reference arguments of a generation run, :func:`ml.generation.generate.run_generation`).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import math
import random
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from argora.jsonl import write_jsonl
from ml import training
from ml.data import human_span_rows
from ml.encoders import resolve
from ml.errors import TrainerError
from ml.registry import TrainRequest, TrainResult
from ml.splits import stable_split

from . import corpora
from . import metrics as gen_metrics

META = "argora-generator.json"
TRAIN_ARGUMENTS = "train_arguments.jsonl"
DEV_ARGUMENTS = "dev_arguments.jsonl"
TURN_TOKEN = corpora.TURN_SEP.strip()  # "<turn>"
MAX_STORED_ARGUMENTS = 200_000

COMMON_DEFAULTS = {
    "epochs": 1,
    "lr": 5e-5,
    "batch_size": 4,
    "weight_decay": 0.01,
    "warmup_ratio": 0.1,
    "max_steps": None,
    "patience": 5,
    "from_config": None,
    "eval_batch_size": 8,
    "device": None,
    "seed_shuffle": True,
    "max_evals": 20,
    "keep_best": True,
}
CAUSAL_DEFAULTS = dict(
    COMMON_DEFAULTS,
    block_size=256,
    code_suffix=" .",
    min_args=corpora.DEFAULT_MIN_ARGS,
    max_args=corpora.DEFAULT_MAX_ARGS,
    max_per_topic_stance=corpora.DEFAULT_MAX_PER_TOPIC_STANCE,
    sep="\n",
)
SEQ2SEQ_DEFAULTS = dict(
    COMMON_DEFAULTS, lr=1e-5, batch_size=24, max_source_length=256, max_target_length=128, argu="mono", epochs=3
)


# --- shared helpers --------------------------------------------------------------------------------


def base_path(base_model: str | None) -> str:
    return resolve(base_model)


def is_encoder_only(path: str) -> bool:
    """Whether the checkpoint at ``path`` is a BERT-style encoder (warm-started as a decoder / BERT2BERT)."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(path)
    if getattr(config, "is_encoder_decoder", False):
        return False
    archs = " ".join(getattr(config, "architectures", None) or [])
    return config.model_type in ("bert", "roberta", "xlm-roberta", "electra", "distilbert") and (
        "CausalLM" not in archs and "LMHead" not in archs
    )


def tiny_bert_config(vocab_size: int, overrides: dict | None, **extra):
    from transformers import BertConfig

    values = {
        "vocab_size": vocab_size,
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 128,
        "max_position_embeddings": 512,
    }
    values.update(overrides if isinstance(overrides, dict) else {})
    values.update(extra)
    return BertConfig(**values)


def _from_config(params: dict) -> bool:
    """``from_config`` set (a dict of BERT config overrides, possibly empty, or true)."""
    return params.get("from_config") not in (None, False, "", "false", "0")


def eos_id(tokenizer) -> int:
    for name in ("eos_token_id", "sep_token_id"):
        value = getattr(tokenizer, name, None)
        if value is not None:
            return int(value)
    raise TrainerError("the tokenizer has neither an EOS nor a SEP token")


def pad_id(tokenizer) -> int:
    value = tokenizer.pad_token_id
    return int(value) if value is not None else eos_id(tokenizer)


def plan_steps(n_examples: int, params: dict) -> tuple[int, int]:
    """(total optimisation steps, epochs) from epochs / batch size / max_steps (which replaces the total)."""
    return training.plan_steps(
        n_examples, int(params["batch_size"]), max(1, int(params["epochs"])), int(params.get("max_steps") or 0)
    )


def training_loop(
    model, batches_of_epoch, evaluate_dev, params: dict, total: int, epochs: int, device: str, progress
) -> training.TrainLoop:
    """The loop of both kinds (:class:`ml.training.TrainLoop`): ``batches_of_epoch()`` yields model kwargs (tensors
    on ``device``, the loss is the model's ``loss``); ``evaluate_dev()`` returns dev metrics with ``loss`` (lower is
    better), evaluated at most ``max_evals`` times; the best epoch's weights are kept (``keep_best``), ``patience``
    evaluations without improvement stop it. Runs with denormals flushed on CPU."""
    groups = training.decay_groups(model, lr=float(params["lr"]), weight_decay=float(params["weight_decay"]))
    opt, sched = training.adamw(groups, total_steps=total, warmup_ratio=float(params["warmup_ratio"]))
    every = max(1, math.ceil(epochs / max(1, int(params.get("max_evals") or epochs))))
    loop = training.TrainLoop(
        model,
        opt,
        sched,
        lambda kwargs: model(**kwargs).loss,
        lambda epoch: batches_of_epoch(),
        device=device,
        total=total,
        epochs=epochs,
        progress=progress,
        evaluate=evaluate_dev,
        eval_epochs=every,
        better=training.lower("loss"),
        keep_best=bool(params.get("keep_best", True)),
        patience=params.get("patience"),
    )
    with training.without_denormals(device):
        return loop.run()


def loop_history(loop: training.TrainLoop) -> tuple[list[dict], list[dict]]:
    """``(every step's {"step", "epoch", "loss"}, every dev evaluation's {"epoch", "step", "loss", "perplexity"})``."""
    steps = [{"step": h["step"], "epoch": h["epoch"], "loss": round(h["loss"], 6)} for h in loop.history]
    evals = [
        {"epoch": e["epoch"], "step": e["step"], **{k: e["metrics"].get(k) for k in ("loss", "perplexity")}}
        for e in loop.evals
    ]
    return steps, evals


def write_meta(output_dir, meta: dict) -> None:
    (Path(output_dir) / META).write_text(json.dumps(meta, indent=2, ensure_ascii=False, default=str))


def read_meta(path) -> dict:
    path = Path(path) / META
    return json.loads(path.read_text()) if path.exists() else {}


# ==================================================================================================
# Causal LM (Arg-CTRL)
# ==================================================================================================


@dataclass
class _Doc:
    """The two things :func:`corpora.chunk_document` reads of a document."""

    control_code: str
    arguments: list[str]
    topic: str = ""
    stance: str = ""
    aspect: str = ""

    def text(self, sep: str = "\n") -> str:
        return sep.join(self.arguments)


def is_document_row(row: dict) -> bool:
    return isinstance(row, dict) and "arguments" in row and ("control_code" in row or "aspect" in row)


def _doc_from_row(row: dict) -> _Doc:
    raw = row.get("arguments")
    if not isinstance(raw, list) or not all(isinstance(a, str) for a in raw):
        raise corpora.RowError('"arguments" must be a list of strings')
    arguments = [a for a in raw if a.strip()]
    code = row.get("control_code")
    if code is not None and (not isinstance(code, str) or not code.strip()):
        raise corpora.RowError('"control_code" must be a non-empty string')
    if not code:
        for key in ("topic", "stance", "aspect"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise corpora.RowError(f'a document row without "control_code" needs "{key}"')
        code = corpora.control_code(row["topic"], row["stance"], row["aspect"])
    return _Doc(
        control_code=" ".join(str(code).split()),
        arguments=arguments,
        topic=row.get("topic", ""),
        stance=corpora.normalise_stance(row.get("stance")) or "",
        aspect=row.get("aspect", ""),
    )


def documents_from_rows(rows: Sequence[dict], params: dict) -> list[_Doc]:
    """Training documents: document rows as they are; aspect rows through ``build_aspect_documents``."""
    docs = [_doc_from_row(r) for r in rows if is_document_row(r)]
    aspect_rows = [r for r in rows if not is_document_row(r)]
    if aspect_rows:
        built = corpora.build_aspect_documents(
            aspect_rows,
            min_args=int(params["min_args"]),
            max_args=int(params["max_args"]),
            max_per_topic_stance=int(params["max_per_topic_stance"]),
            seed=int(params.get("seed", 13)),
        )
        docs.extend(
            _Doc(
                control_code=d.control_code,
                arguments=list(d.arguments),
                topic=d.topic,
                stance=d.stance,
                aspect=d.aspect,
            )
            for d in built.documents
        )
    return [d for d in docs if d.arguments]


def code_argument_pairs(rows: Sequence[dict]) -> list[dict]:
    """``[{"control_code", "topic", "stance", "aspect", "text"}]``: every argument of document rows, and every
    (aspect, sentence) of aspect rows with a pro/con stance (no size bounds: dev and reference data)."""
    out = []
    for row in rows:
        if is_document_row(row):
            doc = _doc_from_row(row)
            out.extend(
                {
                    "control_code": doc.control_code,
                    "topic": doc.topic,
                    "stance": doc.stance,
                    "aspect": doc.aspect,
                    "text": a,
                }
                for a in doc.arguments
            )
            continue
        norm = corpora.normalise_aspect_row(row)
        if norm["stance"] is None:
            continue
        for aspect in norm["aspects"]:
            out.append(
                {
                    "control_code": corpora.control_code(norm["topic"], norm["stance"], aspect.lower()),
                    "topic": norm["topic"],
                    "stance": norm["stance"],
                    "aspect": aspect.lower(),
                    "text": norm["sentence"],
                }
            )
    return out


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token or tok.sep_token
    return tok


def build_causal_lm(base: str, params: dict):
    """(model, tokenizer): a tiny BERT decoder (``from_config``), a BERT checkpoint warm-started as a decoder, or
    any causal LM at ``base``."""
    from transformers import AutoModelForCausalLM, BertLMHeadModel

    tokenizer = load_tokenizer(base)
    if _from_config(params):
        config = tiny_bert_config(len(tokenizer), params["from_config"], is_decoder=True)
        return BertLMHeadModel(config), tokenizer, "bert-decoder (from config)"
    if is_encoder_only(base):
        model = AutoModelForCausalLM.from_pretrained(base, is_decoder=True)
        return model, tokenizer, "bert-decoder (warm-started)"
    return AutoModelForCausalLM.from_pretrained(base), tokenizer, "causal-lm"


def train_causal(request: TrainRequest) -> TrainResult:
    import torch

    params = training.with_defaults(CAUSAL_DEFAULTS, request.hyperparameters)
    params.setdefault("seed", request.seed)
    training.set_seed(request.seed)
    base = base_path(request.base_model)
    docs = documents_from_rows(request.rows_train, dict(params, seed=request.seed))
    if not docs:
        raise TrainerError(
            f"data: no training document has at least min_args={params['min_args']} arguments "
            f"(lower --hp min_args=N for small data)"
        )
    model, tokenizer, architecture = build_causal_lm(base, params)
    device = training.pick_device(params.get("device"))
    model.to(device)
    suffix = str(params.get("code_suffix") or "")
    block = int(params["block_size"])
    limit = getattr(model.config, "n_positions", None) or getattr(model.config, "max_position_embeddings", None)
    sequences: list[tuple[list[int], int]] = []  # (ids, number of control-code tokens)
    for doc in docs:
        n_code = len(tokenizer.encode(doc.control_code + suffix, add_special_tokens=False))
        for ids in corpora.chunk_document(doc, tokenizer, block_size=block, sep=str(params["sep"]), code_suffix=suffix):
            if limit:
                ids = ids[: int(limit)]
            if len(ids) > n_code:
                sequences.append((ids, n_code))
    dev_pairs = code_argument_pairs(request.rows_dev)
    total, epochs = plan_steps(len(sequences), params)
    bs = int(params["batch_size"])
    pid = pad_id(tokenizer)
    rng = random.Random(request.seed)

    def batches():
        for batch in training.shuffled_batches(rng, len(sequences), bs, shuffle=params.get("seed_shuffle", True)):
            chunk = [sequences[i] for i in batch]
            width = max(len(ids) for ids, _ in chunk)
            ids_t = torch.full((len(chunk), width), pid, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            labels = torch.full((len(chunk), width), -100, dtype=torch.long)
            for r, (ids, n_code) in enumerate(chunk):
                ids_t[r, : len(ids)] = torch.tensor(ids)
                mask[r, : len(ids)] = 1
                labels[r, n_code : len(ids)] = torch.tensor(ids[n_code:])
            yield {"input_ids": ids_t.to(device), "attention_mask": mask.to(device), "labels": labels.to(device)}

    def evaluate_dev():
        if not dev_pairs:
            return {}
        ppl = gen_metrics.perplexity(
            model,
            tokenizer,
            [p["text"] for p in dev_pairs],
            contexts=[p["control_code"] + suffix for p in dev_pairs],
            batch_size=int(params["eval_batch_size"]),
            device=device,
        )
        return {"perplexity": float(ppl), "loss": float(math.log(ppl)), "n_dev": len(dev_pairs)}

    loop = training_loop(model, batches, evaluate_dev, params, total, epochs, device, request.progress)
    best = loop.best
    if not dev_pairs:  # no dev rows: report the training perplexity so the registry has its metric
        train_pairs = [{"control_code": d.control_code, "text": a} for d in docs for a in d.arguments][:500]
        ppl = gen_metrics.perplexity(
            model,
            tokenizer,
            [p["text"] for p in train_pairs],
            contexts=[p["control_code"] + suffix for p in train_pairs],
            device=device,
        )
        best = {"perplexity": float(ppl), "loss": float(math.log(ppl)), "n_dev": 0, "on": "train"}
    history, epochs_seen = loop_history(loop)
    out = Path(request.output_dir)
    model.to("cpu").float()
    model.config.use_cache = True
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    codes: dict[str, int] = {}
    for d in docs:
        codes[d.control_code] = codes.get(d.control_code, 0) + len(d.arguments)
    stored = (
        {"topic": d.topic, "stance": d.stance, "aspect": d.aspect, "control_code": d.control_code, "text": a}
        for d in docs
        for a in d.arguments
    )
    write_jsonl(itertools.islice(stored, MAX_STORED_ARGUMENTS), out / TRAIN_ARGUMENTS)
    write_jsonl(
        (
            {k: p[k] for k in ("topic", "stance", "aspect", "control_code", "text")}  # held-out references
            for p in dev_pairs[:MAX_STORED_ARGUMENTS]
        ),
        out / DEV_ARGUMENTS,
    )
    info = {
        "steps": loop.step,
        "history": history,
        "epochs": epochs_seen,
        "documents": len(docs),
        "sequences": len(sequences),
        "architecture": architecture,
        "first_loss": history[0]["loss"] if history else None,
        "last_loss": history[-1]["loss"] if history else None,
    }
    write_meta(
        out,
        {
            "kind": "generator",
            "architecture": "causal",
            "model": architecture,
            "code_suffix": suffix,
            "block_size": block,
            "eos_token_id": eos_id(tokenizer),
            "pad_token_id": pid,
            "control_codes": codes,
            "hyperparameters": params,
            "history": history,
            "epochs": epochs_seen,
        },
    )
    metrics = dict(best or {})
    return TrainResult(metrics=metrics, info=info)


# ==================================================================================================
# Seq2seq (ArgU Mono / Dual, debate responses)
# ==================================================================================================


def seq2seq_pair(row: dict, *, argu: str = "mono", seed: int = 13) -> dict:
    """``{"source", "target", "task"}`` of one training row (see the module docstring); ``corpora.RowError``."""
    if not isinstance(row, dict):
        raise corpora.RowError(f"expected a JSON object, got {type(row).__name__}")
    if argu not in ("mono", "dual"):
        raise TrainerError(f"hyperparameter argu: {argu!r} is not mono or dual")
    if "encoder_input" in row:
        target = row.get(f"{argu}_target")
        if not isinstance(target, str) or not target.strip():
            raise corpora.RowError(f'an ArgU row needs "{argu}_target"')
        return {"source": row["encoder_input"], "target": target, "task": f"argu-{argu}"}
    if "spans" in row and ("variables" in row) and ("text" in row or "argument" in row):
        return seq2seq_pair(corpora.argu_input(row, seed=seed), argu=argu, seed=seed)
    if "prompt" in row and "response" in row:
        for key in ("prompt", "response"):
            if not isinstance(row[key], str) or not row[key].strip():
                raise corpora.RowError(f'"{key}" must be a non-empty string')
        return {"source": row["prompt"], "target": row["response"], "task": "debate"}
    if "source" in row and "target" in row:
        for key in ("source", "target"):
            if not isinstance(row[key], str) or not row[key].strip():
                raise corpora.RowError(f'"{key}" must be a non-empty string')
        return {"source": row["source"], "target": row["target"], "task": row.get("task") or "seq2seq"}
    raise corpora.RowError(
        'a seq2seq row needs ArgU "encoder_input" + "mono_target"/"dual_target", a span export '
        'row, debate "prompt" + "response", or "source" + "target"'
    )


def seq2seq_special_tokens() -> list[str]:
    return corpora.special_tokens() + [TURN_TOKEN]


def build_seq2seq(base: str, params: dict, extra_tokens: Sequence[str]):
    """(model, tokenizer, description) with ``extra_tokens`` added and the embeddings resized."""
    from transformers import (
        AutoModelForSeq2SeqLM,
        EncoderDecoderConfig,
        EncoderDecoderModel,
    )

    tokenizer = load_tokenizer(base)
    have = set(tokenizer.all_special_tokens)
    tokenizer.add_special_tokens({"additional_special_tokens": [t for t in extra_tokens if t not in have]})
    if _from_config(params) or is_encoder_only(base):
        if _from_config(params):
            enc = tiny_bert_config(len(tokenizer), params["from_config"])
            dec = tiny_bert_config(len(tokenizer), params["from_config"], is_decoder=True, add_cross_attention=True)
            model = EncoderDecoderModel(config=EncoderDecoderConfig.from_encoder_decoder_configs(enc, dec))
            description = "bert2bert (from config)"
        else:
            model = EncoderDecoderModel.from_encoder_decoder_pretrained(base, base)
            description = "bert2bert (warm-started)"
        model.encoder.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        model.decoder.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        start = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
        model.config.decoder_start_token_id = start
        model.config.pad_token_id = pad_id(tokenizer)
        model.config.eos_token_id = eos_id(tokenizer)
        model.config.vocab_size = len(tokenizer)
        model.config.decoder.vocab_size = len(tokenizer)
        model.config.encoder.vocab_size = len(tokenizer)
    else:
        model = AutoModelForSeq2SeqLM.from_pretrained(base)
        model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        description = "seq2seq"
        if model.config.pad_token_id is None:
            model.config.pad_token_id = pad_id(tokenizer)
    gen = model.generation_config
    gen.decoder_start_token_id = model.config.decoder_start_token_id
    gen.pad_token_id = model.config.pad_token_id
    gen.eos_token_id = eos_id(tokenizer)
    gen.forced_bos_token_id = None  # targets are trained without a BOS; decoder prefixes carry the control codes
    return model, tokenizer, description


def encode_pairs(tokenizer, pairs: Sequence[dict], params: dict) -> list[tuple[list[int], list[int]]]:
    eos = eos_id(tokenizer)
    out = []
    for p in pairs:
        src = tokenizer(p["source"], truncation=True, max_length=int(params["max_source_length"]))["input_ids"]
        tgt = tokenizer.encode(p["target"], add_special_tokens=False)[: int(params["max_target_length"]) - 1] + [eos]
        out.append((list(src), tgt))
    return out


def seq2seq_batch(tokenizer, items: Sequence[tuple[list[int], list[int]]], device: str) -> dict:
    import torch

    pid = pad_id(tokenizer)
    ws = max(len(s) for s, _ in items)
    wt = max(len(t) for _, t in items)
    src = torch.full((len(items), ws), pid, dtype=torch.long)
    mask = torch.zeros((len(items), ws), dtype=torch.long)
    labels = torch.full((len(items), wt), -100, dtype=torch.long)
    for r, (s, t) in enumerate(items):
        src[r, : len(s)] = torch.tensor(s)
        mask[r, : len(s)] = 1
        labels[r, : len(t)] = torch.tensor(t)
    return {"input_ids": src.to(device), "attention_mask": mask.to(device), "labels": labels.to(device)}


@contextlib.contextmanager
def quiet_encoder_decoder():
    """EncoderDecoderModel warns on every forward with labels that it builds decoder_input_ids from them (which is
    what we want); silence that one message."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Version v4.12.0 introduces", category=FutureWarning)
        yield


def seq2seq_loss(
    model, tokenizer, encoded: Sequence[tuple[list[int], list[int]]], *, batch_size: int = 8, device: str | None = None
) -> dict:
    """Teacher-forced token cross-entropy over ``encoded`` pairs: ``{"loss", "perplexity", "tokens"}``."""
    import torch

    if not encoded:
        raise ValueError("nothing to score")
    device = device or str(next(model.parameters()).device)
    was_training = model.training
    model.eval()
    total, tokens = 0.0, 0
    try:
        with torch.no_grad(), quiet_encoder_decoder():
            for k in range(0, len(encoded), batch_size):
                batch = seq2seq_batch(tokenizer, encoded[k : k + batch_size], device)
                logits = model(**batch).logits.float()
                labels = batch["labels"]
                lp = torch.log_softmax(logits, dim=-1)
                keep = labels != -100
                picked = lp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
                total -= float(picked[keep].sum())
                tokens += int(keep.sum())
    finally:
        if was_training:
            model.train()
    loss = total / max(tokens, 1)
    return {"loss": loss, "perplexity": math.exp(min(loss, 50.0)), "tokens": tokens}


def train_seq2seq(request: TrainRequest) -> TrainResult:
    params = training.with_defaults(SEQ2SEQ_DEFAULTS, request.hyperparameters)
    training.set_seed(request.seed)
    base = base_path(request.base_model)
    argu = str(params.get("argu") or "mono")

    def pairs_of(rows, what):
        out = []
        for i, row in enumerate(rows, 1):
            try:
                out.append(seq2seq_pair(row, argu=argu, seed=request.seed))
            except corpora.RowError as exc:
                raise TrainerError(f"{what} row {i}: {exc}") from None
        return out

    train_pairs = pairs_of(request.rows_train, "training")
    dev_pairs = pairs_of(request.rows_dev, "dev")
    tasks = sorted({p["task"] for p in train_pairs})
    model, tokenizer, architecture = build_seq2seq(base, params, seq2seq_special_tokens())
    device = training.pick_device(params.get("device"))
    model.to(device)
    train_enc = encode_pairs(tokenizer, train_pairs, params)
    dev_enc = encode_pairs(tokenizer, dev_pairs, params)
    total, epochs = plan_steps(len(train_enc), params)
    bs = int(params["batch_size"])

    rng = random.Random(request.seed)

    def batches():
        for batch in training.shuffled_batches(rng, len(train_enc), bs, shuffle=params.get("seed_shuffle", True)):
            yield seq2seq_batch(tokenizer, [train_enc[i] for i in batch], device)

    def evaluate_dev():
        if not dev_enc:
            return {}
        m = seq2seq_loss(model, tokenizer, dev_enc, batch_size=int(params["eval_batch_size"]), device=device)
        return {"loss": m["loss"], "perplexity": m["perplexity"], "n_dev": len(dev_enc)}

    with quiet_encoder_decoder():
        loop = training_loop(model, batches, evaluate_dev, params, total, epochs, device, request.progress)
    best = loop.best
    if not dev_enc:
        m = seq2seq_loss(model, tokenizer, train_enc[:500], device=device)
        best = {"loss": m["loss"], "perplexity": m["perplexity"], "n_dev": 0, "on": "train"}
    history, epochs_seen = loop_history(loop)
    out = Path(request.output_dir)
    model.to("cpu").float()
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    info = {
        "steps": loop.step,
        "history": history,
        "epochs": epochs_seen,
        "architecture": architecture,
        "tasks": tasks,
        "first_loss": history[0]["loss"] if history else None,
        "last_loss": history[-1]["loss"] if history else None,
    }
    write_meta(
        out,
        {
            "kind": "seq2seq",
            "architecture": "seq2seq",
            "model": architecture,
            "tasks": tasks,
            "argu": argu,
            "special_tokens": seq2seq_special_tokens(),
            "turn_token": TURN_TOKEN,
            "max_source_length": int(params["max_source_length"]),
            "hyperparameters": params,
            "history": history,
            "epochs": epochs_seen,
            "examples": [dict(p) for p in train_pairs[:20]],
        },
    )
    metrics = dict(best or {})
    return TrainResult(metrics=metrics, info=info)


# --- rows from files / projects --------------------------------------------------------------------


def read_rows(path) -> list[dict]:
    """Rows of a JSONL file (``TrainerError("FILE:LINE: reason")`` on bad JSON or a non-object line)."""
    rows = []
    try:
        for number, obj in corpora.read_jsonl(path):
            if not isinstance(obj, dict):
                raise TrainerError(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}")
            obj = dict(obj)
            obj["_line"] = number
            rows.append(obj)
    except corpora.RowError as exc:
        raise TrainerError(str(exc)) from None
    return rows


def _split_by_field(rows: list[dict]) -> tuple[list[dict], list[dict]] | None:
    if any("split" in r for r in rows):
        train = [r for r in rows if r.get("split", "train") == "train"]
        dev = [r for r in rows if r.get("split") in ("dev", "val", "validation")]
        if train and dev:
            return train, dev
    return None


def split_document_rows(rows: list[dict], dev_fraction: float = 0.1) -> tuple[list[dict], list[dict]]:
    """Hold out a stable share of each document's arguments (documents with >= 2 arguments) as dev rows."""
    train, dev = [], []
    for row in rows:
        args = list(row.get("arguments") or [])
        keep, held = [], []
        for a in args:
            h = int.from_bytes(hashlib.sha256(f"argora-dev:{a}".encode()).digest()[:8], "big") / 2**64
            (held if h < dev_fraction and len(args) >= 2 else keep).append(a)
        if not keep and held:
            keep.append(held.pop())
        train.append(dict(row, arguments=keep, n_arguments=len(keep)))
        if held:
            dev.append(dict(row, arguments=held, n_arguments=len(held)))
    return train, dev


def _rows_from_file(path, checked, split) -> tuple[list[dict], list[dict]]:
    """(train, dev) of a folder with train/dev.jsonl (each read by ``checked``), or of one JSONL: by the rows'
    ``split`` field, else by ``split(rows)``."""
    path = Path(path)
    if path.is_dir():
        if not (path / "train.jsonl").exists() or not (path / "dev.jsonl").exists():
            raise TrainerError(f"{path}:0: a data folder must hold train.jsonl and dev.jsonl")
        return checked(path / "train.jsonl"), checked(path / "dev.jsonl")
    if not path.exists():
        raise TrainerError(f"{path}:0: no such file")
    rows = checked(path)
    by_field = _split_by_field(rows)
    if by_field:
        return by_field
    return _need_dev(path, *split(rows))


def causal_rows_from_file(path) -> tuple[list[dict], list[dict]]:
    """(train, dev) rows of ``generator``: a folder with train/dev.jsonl, or one JSONL of document rows
    (``gencorpus aspect-docs``) or aspect rows (``split`` field, else a stable hash split)."""

    def split(rows):
        if all(is_document_row(r) for r in rows):
            return split_document_rows(rows)
        return stable_split(rows, key=lambda r: r.get("sentence") or r.get("text"), dev_fraction=0.1)

    return _rows_from_file(path, causal_rows_checked, split)


def _need_dev(path, train: list[dict], dev: list[dict]) -> tuple[list[dict], list[dict]]:
    if not dev:
        raise TrainerError(
            f'{path}:0: no dev rows after the split ({len(train)} rows); add more rows or mark some "split": "dev"'
        )
    return train, dev


def causal_rows_checked(path) -> list[dict]:
    rows = read_rows(path)
    for row in rows:
        line = row.pop("_line")
        try:
            if is_document_row(row):
                _doc_from_row(row)
            else:
                corpora.normalise_aspect_row(row)
        except (corpora.RowError, KeyError) as exc:
            raise TrainerError(f"{path}:{line}: {exc}") from None
    if not rows:
        raise TrainerError(f"{path}:0: no rows")
    return rows


def seq2seq_rows_checked(path) -> list[dict]:
    rows = read_rows(path)
    for row in rows:
        line = row.pop("_line")
        try:
            seq2seq_pair(row)
        except corpora.RowError as exc:
            try:  # an ArgU row with only a Dual target (--hp argu=dual)
                seq2seq_pair(row, argu="dual")
            except corpora.RowError:
                raise TrainerError(f"{path}:{line}: {exc}") from None
    if not rows:
        raise TrainerError(f"{path}:0: no rows")
    return rows


def seq2seq_rows_from_file(path) -> tuple[list[dict], list[dict]]:
    """(train, dev) rows of ``seq2seq``: a folder with train/dev.jsonl, or one JSONL (``split`` field -- the
    ``gencorpus`` debate-path and ArgU rows carry one -- else a stable hash split on the source)."""
    return _rows_from_file(
        path,
        seq2seq_rows_checked,
        lambda rows: stable_split(rows, key=lambda r: seq2seq_pair(r)["source"], dev_fraction=0.1),
    )


def causal_rows_from_project(project) -> tuple[list[dict], list[dict], int]:
    """Gold aspect rows of an ``aspect`` project, split by sentence hash."""
    rows = list(corpora.gold_aspect_rows([project]))
    train, dev = stable_split(rows, key="sentence", dev_fraction=0.1)
    return train, dev, len(rows)


def seq2seq_rows_from_project(project) -> tuple[list[dict], list[dict], int]:
    """ArgU inputs of a ``span_grounding`` project's human labels (:func:`ml.data.human_span_rows`, ArgU §3.2.4
    filters), split by argument hash."""
    rows = list(corpora.argu_inputs(human_span_rows(project, filters=True)))
    train, dev = stable_split(rows, key="argument", dev_fraction=0.1)
    return train, dev, len(rows)


__all__ = [
    "CAUSAL_DEFAULTS",
    "META",
    "SEQ2SEQ_DEFAULTS",
    "TRAIN_ARGUMENTS",
    "build_causal_lm",
    "build_seq2seq",
    "code_argument_pairs",
    "documents_from_rows",
    "read_meta",
    "seq2seq_loss",
    "seq2seq_pair",
    "train_causal",
    "train_seq2seq",
]
