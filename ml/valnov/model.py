"""One encoder, two sigmoid heads (Heinisch et al. 2022, §5.1 and Figure 1).

The pair ``premise [SEP] conclusion`` goes through a Hugging Face encoder (any ``AutoModel``; default the packaged
all-MiniLM-L6-v2, :func:`ml.encoders.default_encoder_path`), is mean-pooled over its tokens (``pooling="cls"``
takes the first token instead), and feeds two feed-forward heads (``Linear -> tanh -> dropout -> Linear``), each
followed by a sigmoid: P(valid) and P(novel) in [0, 1].

Artifact layout (:meth:`ValNovModel.save` / :func:`load_model`)::

    <dir>/encoder/        the encoder and its tokenizer (save_pretrained)
    <dir>/heads.pt        the state dict of the two heads
    <dir>/valnov.json     {"max_length", "pooling", "hidden_size", "dropout", "threshold"}

:class:`ValNovPredictor` predicts in batches sorted by length with dynamic padding under ``torch.inference_mode``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from ml.inference import length_sorted_batches
from ml.training import pick_device

CONFIG_FILE = "valnov.json"
HEADS_FILE = "heads.pt"


class Head(nn.Module):
    def __init__(self, hidden: int, dropout: float = 0.1):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.dropout(torch.tanh(self.dense(self.dropout(x))))).squeeze(-1)


class ValNovModel(nn.Module):
    """``forward(**features) -> (p_validity, p_novelty)``, both ``[batch]`` probabilities."""

    def __init__(self, encoder, tokenizer, *, max_length: int = 128, pooling: str = "mean", dropout: float = 0.1):
        super().__init__()
        if pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be mean or cls, got {pooling!r}")
        self.encoder, self.tokenizer = encoder, tokenizer
        self.max_length, self.pooling, self.dropout_p = int(max_length), pooling, float(dropout)
        hidden = int(encoder.config.hidden_size)
        self.validity_head = Head(hidden, dropout)
        self.novelty_head = Head(hidden, dropout)

    @classmethod
    def from_base(cls, base_model: str, **kw) -> ValNovModel:
        from transformers import AutoModel, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(base_model)
        encoder = AutoModel.from_pretrained(base_model)
        return cls(encoder, tokenizer, **kw)

    def pool(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.pooling == "cls":
            return hidden[:, 0]
        mask = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    def logits(self, **features) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.encoder(**features)
        pooled = self.pool(out.last_hidden_state, features["attention_mask"])
        return self.validity_head(pooled), self.novelty_head(pooled)

    def forward(self, **features) -> tuple[torch.Tensor, torch.Tensor]:
        lv, ln = self.logits(**features)
        return torch.sigmoid(lv.float()), torch.sigmoid(ln.float())

    def shift_thresholds(self, validity: float, novelty: float) -> None:
        """Move each head's decision threshold ``t`` (calibrated on dev) to 0.5: the output bias loses
        ``logit(t)``, so ``P >= t`` before is ``P >= 0.5`` after and every user of the model (annotators, the
        4-class score) keeps the one threshold 0.5."""
        with torch.no_grad():
            for head, t in ((self.validity_head, validity), (self.novelty_head, novelty)):
                t = min(max(float(t), 1e-6), 1 - 1e-6)
                head.out.bias -= math.log(t / (1 - t))

    # --- tokenising -------------------------------------------------------------------------------
    def encode_pairs(self, premises: Sequence[str], conclusions: Sequence[str]) -> dict:
        """Token ids of the pairs (no padding); truncation ``longest_first`` to ``max_length``."""
        return self.tokenizer(list(premises), list(conclusions), truncation="longest_first", max_length=self.max_length)

    def collate(self, enc: dict, indices: Sequence[int], device) -> dict:
        keys = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc]
        features = self.tokenizer.pad({k: [enc[k][i] for i in indices] for k in keys}, return_tensors="pt")
        return {k: v.to(device) for k, v in features.items()}

    # --- artifacts --------------------------------------------------------------------------------
    def save(self, path, *, threshold: float = 0.5, calibrated: dict | None = None) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.encoder.save_pretrained(str(path / "encoder"))
        self.tokenizer.save_pretrained(str(path / "encoder"))
        torch.save(
            {"validity": self.validity_head.state_dict(), "novelty": self.novelty_head.state_dict()}, path / HEADS_FILE
        )
        (path / CONFIG_FILE).write_text(
            json.dumps(
                {
                    "max_length": self.max_length,
                    "pooling": self.pooling,
                    "dropout": self.dropout_p,
                    "hidden_size": int(self.encoder.config.hidden_size),
                    "threshold": float(threshold),
                    "calibrated_thresholds": calibrated or None,
                },
                indent=2,
            )
        )


class ValNovPredictor:
    """A loaded (or just trained) model: ``predict(pairs) -> [(p_valid, p_novel)]``, ``predict_rows(rows)``,
    ``labels(pairs) -> [(valid 0/1, novel 0/1)]``."""

    kind = "valnov"

    def __init__(self, model: ValNovModel, *, threshold: float = 0.5, batch_size: int = 64, device: str | None = None):
        self.model, self.threshold, self.batch_size = model, float(threshold), int(batch_size)
        self.device = pick_device(device)
        self.model.to(self.device)
        self.model.eval()

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, float]]:
        if not pairs:
            return []
        enc = self.model.encode_pairs([p[0] for p in pairs], [p[1] for p in pairs])
        out: list[tuple[float, float]] = [(0.0, 0.0)] * len(pairs)
        was_training = self.model.training
        self.model.eval()
        with torch.inference_mode():
            for batch in length_sorted_batches([len(x) for x in enc["input_ids"]], self.batch_size):
                pv, pn = self.model(**self.model.collate(enc, batch, self.device))
                for i, v, n in zip(batch, pv.cpu().tolist(), pn.cpu().tolist()):
                    out[i] = (float(v), float(n))
        if was_training:
            self.model.train()
        return out

    def predict_rows(self, rows: Sequence[dict]) -> list[tuple[float, float]]:
        return self.predict([(r["premise"], r["conclusion"]) for r in rows])

    def labels(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[int, int]]:
        return [(int(v >= self.threshold), int(n >= self.threshold)) for v, n in self.predict(pairs)]

    def save(self, path, *, calibrated: dict | None = None) -> None:
        """``calibrated``: the dev thresholds already folded into the heads (recorded in ``valnov.json``)."""
        self.model.save(path, threshold=self.threshold, calibrated=calibrated)


def load_model(path, *, device: str | None = None, batch_size: int = 64) -> ValNovPredictor:
    from transformers import AutoModel, AutoTokenizer

    path = Path(path)
    conf = json.loads((path / CONFIG_FILE).read_text())
    tokenizer = AutoTokenizer.from_pretrained(str(path / "encoder"))
    encoder = AutoModel.from_pretrained(str(path / "encoder"))
    model = ValNovModel(
        encoder,
        tokenizer,
        max_length=int(conf["max_length"]),
        pooling=conf.get("pooling", "mean"),
        dropout=float(conf.get("dropout", 0.1)),
    )
    heads = torch.load(path / HEADS_FILE, map_location="cpu", weights_only=True)
    model.validity_head.load_state_dict(heads["validity"])
    model.novelty_head.load_state_dict(heads["novelty"])
    return ValNovPredictor(model, threshold=float(conf.get("threshold", 0.5)), batch_size=batch_size, device=device)
