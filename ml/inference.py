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
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Sequence

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


# --- encoding --------------------------------------------------------------------------------------

@dataclass
class Encoded:
    """Sub-word ids of a list of texts, with the alignment back to words."""

    words: list[list[tuple[str, int, int]]]
    input_ids: list[list[int]]
    word_ids: list[list[int | None]]   # per sub-word: index of its word, None for special tokens

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
    enc = tokenizer(batch, is_split_into_words=True, truncation=True, max_length=max_length,
                    add_special_tokens=True, return_attention_mask=False, return_token_type_ids=False)
    word_ids = []
    for i, ws in enumerate(words):
        ids = enc.word_ids(i)
        word_ids.append([w if (w is not None and ws) else None for w in ids])
    return Encoded(words=list(words), input_ids=list(enc["input_ids"]), word_ids=word_ids)


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length (longest first, so memory peaks at once)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[k:k + batch_size] for k in range(0, len(order), batch_size)]


def pad_batch(input_ids: Sequence[Sequence[int]], pad_id: int):
    """``(ids, mask)`` int64 numpy arrays padded to the longest row of the batch."""
    width = max(len(x) for x in input_ids)
    ids = np.full((len(input_ids), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(input_ids), width), dtype=np.int64)
    for r, row in enumerate(input_ids):
        ids[r, :len(row)] = row
        mask[r, :len(row)] = 1
    return ids, mask


# --- the tagger ------------------------------------------------------------------------------------

class TokenTagger:
    """A word-level BIO tagger around a Hugging Face token-classification model (kind ``tagger``).

    ``predict(texts)`` -> one dict per text: ``{"tags": [...], "spans": [{"begin", "end", "text", "confidence"}],
    "confidence": mean word probability}``; a span's confidence is the mean probability of its words' tags.
    """

    def __init__(self, model, tokenizer, *, labels: Sequence[str] = BIO, max_length: int = 128,
                 device: str | None = None, quantize: bool | None = None, info: dict | None = None):
        self.device = pick_device(device)
        self.model, self.precision = prepare_for_inference(model, device=self.device, quantize=quantize)
        self.tokenizer = tokenizer
        self.labels = list(labels)
        self.max_length = int(max_length)
        self.info = dict(info or {})
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    @classmethod
    def from_pretrained(cls, path, **kwargs) -> "TokenTagger":
        from transformers import AutoModelForTokenClassification, AutoTokenizer

        model = AutoModelForTokenClassification.from_pretrained(str(path))
        tokenizer = AutoTokenizer.from_pretrained(str(path))
        labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
        return cls(model, tokenizer, labels=labels, **kwargs)

    def _forward_probs(self, ids: np.ndarray, mask: np.ndarray):
        import torch

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
        spans.append({"begin": begin, "end": end, "text": text[begin:end],
                      "confidence": round(float(np.mean(probs[a:b])), 4)})
    return {"tags": list(tags), "spans": spans,
            "confidence": round(float(np.mean(probs)), 4) if len(probs) else 1.0}
