"""Fast batched token-classification inference (and the word/sub-word alignment the trainers share).

Words are the tokens of :func:`annotation.task_types.aspect.candidates.tokenize` (the HIT pages' tokens, with character
offsets), so predictions come back as word-level BIO tags and character spans that the annotation side and the
App. F / span-grounding files understand. Sub-words are aligned with ``is_split_into_words=True``; a word's tag is
the tag of its first sub-word.

What makes it fast (vs. ``transformers.pipeline("token-classification")``, see ``bench/silver.py``):

- one tokenizer call for all texts, then **length-sorted batches** (long with long, short with short) and
  **dynamic padding** to the longest sequence of each batch, built straight into numpy arrays;
- ``torch.inference_mode()`` and one softmax/argmax per batch on the device, one copy to the host per batch;
- on CPU, optional **int8 dynamic quantisation** of the encoder's ``nn.Linear`` layers
  (``torch.ao.quantization.quantize_dynamic``; the small classification head stays fp32); on CUDA, **fp16** weights.

``quantize=None`` (the default) means "int8 on CPU unless ``ARGORA_TAGGER_INT8=0``"; the quantised tagger's F1 is
checked against fp32 by ``bench/silver.py`` and ``tests/ml/test_inference.py``.

Engines (``engine=`` or ``$ARGORA_TAGGER_ENGINE``): ``onnx`` (the default on CPU when ``onnxruntime`` is installed, for a
tagger loaded from its artifact folder) exports the model once to ONNX (``torch.onnx.export``) and, for int8, quantises
it with ONNX Runtime's dynamic quantisation (``onnxruntime.quantization.quantize_dynamic``); the files are cached in
``<artifact>/onnx/`` (written to a temporary name and renamed, so two workers loading the same version never read a
half-written file) and run by an ``onnxruntime.InferenceSession`` with as many intra-op threads as torch has
(:func:`ml.training` sets them; ``--threads``). ``torch`` runs the PyTorch model as above (int8 through
``torch.ao.quantization``). A model that exists only in memory (a trainer's dev evaluation) always runs on torch.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from corpus.tokens import tokenize
from ml.training import pick_device

BIO = ("O", "B", "I")
IGNORE = -100


# --- words and spans -------------------------------------------------------------------------------


def words_of(text: str) -> list[tuple[str, int, int]]:
    """``[(word, begin, end)]`` of a text (the annotation tokens)."""
    return [(t.text, t.begin, t.end) for t in tokenize(text)]


def bio_from_spans(words: Sequence[tuple[str, int, int]], spans: Iterable[tuple[int, int]]) -> list[str]:
    """Word BIO tags for character spans ``(begin, end)`` (end exclusive): a word belongs to the span it overlaps."""
    tags = ["O"] * len(words)
    for begin, end in sorted(spans):
        first = True
        for i, (_, wb, we) in enumerate(words):
            if wb < end and begin < we:
                if tags[i] != "O" and not first:
                    continue
                tags[i] = "B" if first else "I"
                first = False
    return tags


def spans_from_bio(tags: Sequence[str]) -> list[tuple[int, int]]:
    """Word-index spans ``(first, last + 1)`` from BIO tags; an ``I`` without a ``B`` before it opens a span."""
    spans, start = [], None
    for i, tag in enumerate(list(tags) + ["O"]):
        if tag == "B" or (tag == "I" and start is None) or tag == "O":
            if start is not None:
                spans.append((start, i))
                start = None
            if tag in ("B", "I"):
                start = i
    return spans


# --- devices and quantisation ----------------------------------------------------------------------


def want_int8(quantize: bool | None, device: str) -> bool:
    if device != "cpu":
        return False
    if quantize is None:
        return os.environ.get("ARGORA_TAGGER_INT8", "1").lower() not in ("0", "false", "no", "off")
    return bool(quantize)


def prepare_for_inference(model, *, device: str, quantize: bool | None = None, encoder_attr: str | None = None):
    """eval(); int8 dynamic quantisation of the encoder's Linear layers on CPU, or fp16 on CUDA; moved to device.

    ``encoder_attr``: the submodule to quantise (default: ``model.base_model`` for a Hugging Face model, else the
    whole model). Returns ``(model, "int8" | "fp16" | "fp32")``.
    """
    import torch
    from torch import nn

    model.eval()
    if want_int8(quantize, device):
        import warnings

        from torch.ao.quantization import quantize_dynamic

        warnings.filterwarnings("ignore", message=r".*quantize_per_tensor.*deprecated.*")
        warnings.filterwarnings("ignore", message=r".*torch.ao.quantization is deprecated.*")
        name = encoder_attr or getattr(model, "base_model_prefix", None)
        target = getattr(model, name, None) if name else None
        if target is None or target is model:
            model = quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
        else:
            setattr(model, name, quantize_dynamic(target, {nn.Linear}, dtype=torch.qint8))
        return model, "int8"
    if device.startswith("cuda"):
        return model.to(device).half(), "fp16"
    return model.to(device), "fp32"


def onnxruntime_available() -> bool:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def pick_engine(engine: str | None, device: str) -> str:
    """``onnx`` or ``torch``: the requested engine, else ``$ARGORA_TAGGER_ENGINE``, else onnx on CPU when available."""
    engine = (engine or os.environ.get("ARGORA_TAGGER_ENGINE", "") or "").strip().lower() or None
    if engine not in (None, "onnx", "torch"):
        raise ValueError(f"engine: {engine!r} is not one of onnx, torch")
    if engine == "torch" or device != "cpu":
        return "torch"
    if engine == "onnx" and not onnxruntime_available():
        raise ValueError("engine: onnx needs the onnxruntime package (pip install onnxruntime)")
    return "onnx" if onnxruntime_available() else "torch"


def _logits_only(model):
    """``forward(input_ids, attention_mask) -> logits`` of a Hugging Face model, for ``torch.onnx.export``."""
    from torch import nn

    class LogitsOnly(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).logits

    return LogitsOnly(model)


def export_onnx(model, folder, *, int8: bool) -> os.PathLike:
    """The ONNX file of ``model`` in ``folder`` (``model.fp32.onnx`` / ``model.int8.onnx``), exported once."""
    import tempfile
    import warnings
    from pathlib import Path

    import torch

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fp32 = folder / "model.fp32.onnx"
    target = folder / ("model.int8.onnx" if int8 else "model.fp32.onnx")
    if target.exists():
        return target
    if not fp32.exists():
        ids = torch.ones((2, 8), dtype=torch.long)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".onnx.tmp")
        os.close(fd)
        with warnings.catch_warnings(), torch.inference_mode(False):
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _logits_only(model.float().eval()),
                (ids, ids.clone()),
                tmp,
                input_names=["input_ids", "attention_mask"],
                output_names=["logits"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "seq"},
                    "attention_mask": {0: "batch", 1: "seq"},
                    "logits": {0: "batch", 1: "seq"},
                },
                opset_version=17,
                dynamo=False,
            )
        _fuse_transformer(tmp, model.config)
        os.replace(tmp, fp32)
    if int8:
        import logging

        from onnxruntime.quantization import QuantType, quantize_dynamic

        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".onnx.tmp")
        os.close(fd)
        logging.getLogger().disabled, was = True, logging.getLogger().disabled  # its "pre-processing" hint
        try:
            # like the torch path: only the encoder's Linear weights in int8 (per channel; embeddings and the small
            # classification head stay fp32)
            import onnx

            head = [n.name for n in onnx.load(str(fp32), load_external_data=False).graph.node if "classifier" in n.name]
            quantize_dynamic(
                str(fp32),
                tmp,
                weight_type=QuantType.QInt8,
                per_channel=True,
                nodes_to_exclude=head,
                op_types_to_quantize=["MatMul", "Gemm"],
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            )
        finally:
            logging.getLogger().disabled = was
        os.replace(tmp, target)
    return target


def _fuse_transformer(path: str, config) -> None:
    """ONNX Runtime's transformer optimiser (fused attention, layer norm, GELU) on a BERT-like export, in place.

    Left as exported for other architectures or when the optimiser does not recognise the graph."""
    if getattr(config, "model_type", "") not in ("bert", "roberta", "distilbert", "xlm-roberta", "electra", "mpnet"):
        return
    from onnxruntime.transformers import optimizer

    optimized = optimizer.optimize_model(
        path,
        model_type="bert",
        num_heads=int(config.num_attention_heads),
        hidden_size=int(config.hidden_size),
        opt_level=1,
        use_gpu=False,
    )
    optimized.save_model_to_file(path)


class OnnxLogits:
    """An ``onnxruntime.InferenceSession`` over an exported token-classification model: ``(ids, mask) -> logits``."""

    def __init__(self, path, *, threads: int | None = None):
        import onnxruntime as ort
        import torch

        options = ort.SessionOptions()
        options.intra_op_num_threads = int(threads or torch.get_num_threads())
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.path = str(path)
        self.session = ort.InferenceSession(self.path, options, providers=["CPUExecutionProvider"])

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self.session.run(["logits"], {"input_ids": ids, "attention_mask": mask})[0]


# --- encoding --------------------------------------------------------------------------------------


@dataclass
class Encoded:
    """Sub-word ids of a list of texts, with the alignment back to words."""

    words: list[list[tuple[str, int, int]]]
    input_ids: list[list[int]]
    word_ids: list[list[int | None]]  # per sub-word: index of its word, None for special tokens

    def first_subword(self, i: int) -> dict[int, int]:
        """``{word index: position of its first sub-word}`` for text ``i`` (truncated words are missing)."""
        out: dict[int, int] = {}
        for pos, w in enumerate(self.word_ids[i]):
            if w is not None and w not in out:
                out[w] = pos
        return out

    def word_positions(self, i: int) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for pos, w in enumerate(self.word_ids[i]):
            if w is not None:
                out.setdefault(w, []).append(pos)
        return out


def encode_words(tokenizer, texts: Sequence[str], *, max_length: int = 128, words=None) -> Encoded:
    """One tokenizer call for all texts (no padding): ids + word alignment."""
    words = [words_of(t) for t in texts] if words is None else words
    if not texts:
        return Encoded([], [], [])
    batch = [[w for w, _, _ in ws] or [""] for ws in words]
    enc = tokenizer(
        batch,
        is_split_into_words=True,
        truncation=True,
        max_length=max_length,
        add_special_tokens=True,
        return_attention_mask=False,
        return_token_type_ids=False,
    )
    word_ids = []
    for i, ws in enumerate(words):
        ids = enc.word_ids(i)
        word_ids.append([w if (w is not None and ws) else None for w in ids])
    return Encoded(words=list(words), input_ids=list(enc["input_ids"]), word_ids=word_ids)


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length (longest first, so memory peaks at once)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[k : k + batch_size] for k in range(0, len(order), batch_size)]


def pad_batch(input_ids: Sequence[Sequence[int]], pad_id: int):
    """``(ids, mask)`` int64 numpy arrays padded to the longest row of the batch."""
    width = max(len(x) for x in input_ids)
    ids = np.full((len(input_ids), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(input_ids), width), dtype=np.int64)
    for r, row in enumerate(input_ids):
        ids[r, : len(row)] = row
        mask[r, : len(row)] = 1
    return ids, mask


# --- the tagger ------------------------------------------------------------------------------------


class TokenTagger:
    """A word-level BIO tagger around a Hugging Face token-classification model (kind ``tagger``).

    ``predict(texts)`` -> one dict per text: ``{"tags": [...], "spans": [{"begin", "end", "text", "confidence"}],
    "confidence": mean word probability}``; a span's confidence is the mean probability of its words' tags.
    """

    def __init__(
        self,
        model,
        tokenizer,
        *,
        labels: Sequence[str] = BIO,
        max_length: int = 128,
        device: str | None = None,
        quantize: bool | None = None,
        info: dict | None = None,
        engine: str | None = None,
        onnx_dir=None,
    ):
        self.device = pick_device(device)
        self.engine = pick_engine(engine, self.device) if onnx_dir is not None else "torch"
        self.onnx = None
        if self.engine == "onnx":
            int8 = want_int8(quantize, self.device)
            self.onnx = OnnxLogits(export_onnx(model, onnx_dir, int8=int8))
            self.model, self.precision = None, "int8" if int8 else "fp32"
        else:
            self.model, self.precision = prepare_for_inference(model, device=self.device, quantize=quantize)
        self.tokenizer = tokenizer
        self.labels = list(labels)
        self.max_length = int(max_length)
        self.info = dict(info or {})
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    @classmethod
    def from_pretrained(cls, path, **kwargs) -> TokenTagger:
        from pathlib import Path

        from transformers import AutoModelForTokenClassification, AutoTokenizer

        model = AutoModelForTokenClassification.from_pretrained(str(path))
        tokenizer = AutoTokenizer.from_pretrained(str(path))
        labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
        kwargs.setdefault("onnx_dir", Path(path) / "onnx")
        return cls(model, tokenizer, labels=labels, **kwargs)

    def _forward_probs(self, ids: np.ndarray, mask: np.ndarray):
        import torch

        if self.onnx is not None:
            logits = self.onnx(ids, mask).astype(np.float32)
            logits -= logits.max(axis=-1, keepdims=True)
            probs = np.exp(logits)
            probs /= probs.sum(axis=-1, keepdims=True)
            return probs.argmax(axis=-1), probs.max(axis=-1)

        with torch.inference_mode():
            t_ids = torch.from_numpy(ids).to(self.device)
            t_mask = torch.from_numpy(mask).to(self.device)
            logits = self.model(input_ids=t_ids, attention_mask=t_mask).logits
            probs = torch.softmax(logits.float(), dim=-1)
            conf, best = probs.max(dim=-1)
            return best.cpu().numpy(), conf.cpu().numpy()

    def predict(self, texts: Sequence[str], *, batch_size: int = 64) -> list[dict]:
        texts = list(texts)
        enc = encode_words(self.tokenizer, texts, max_length=self.max_length)
        out: list[dict | None] = [None] * len(texts)
        for batch in length_sorted_batches([len(x) for x in enc.input_ids], batch_size):
            ids, mask = pad_batch([enc.input_ids[i] for i in batch], self.pad_id)
            best, conf = self._forward_probs(ids, mask)
            for r, i in enumerate(batch):
                out[i] = self._decode(texts[i], enc, i, best[r], conf[r])
        return out  # type: ignore[return-value]

    def _decode(self, text: str, enc: Encoded, i: int, best, conf) -> dict:
        words = enc.words[i]
        first = enc.first_subword(i)
        tags, probs = [], []
        for w in range(len(words)):
            pos = first.get(w)
            if pos is None:
                tags.append("O")
                probs.append(1.0)
            else:
                tags.append(self.labels[int(best[pos])])
                probs.append(float(conf[pos]))
        return decode_spans(text, words, tags, probs)


def decode_spans(text: str, words, tags: Sequence[str], probs: Sequence[float]) -> dict:
    spans = []
    for a, b in spans_from_bio(tags):
        begin, end = words[a][1], words[b - 1][2]
        spans.append(
            {"begin": begin, "end": end, "text": text[begin:end], "confidence": round(float(np.mean(probs[a:b])), 4)}
        )
    return {"tags": list(tags), "spans": spans, "confidence": round(float(np.mean(probs)), 4) if len(probs) else 1.0}
