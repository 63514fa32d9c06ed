"""The gated cross-encoder: a cross-encoder built from a sentence-embedding (bi-encoder) checkpoint (issue 23).

Why not the classic one. AugSBERT's cross-encoder is BERT with a linear head on ``[CLS]`` of ``[CLS] a [SEP] b
[SEP]`` (``architecture="cls"``, :class:`sentence_transformers.CrossEncoder`). BERT-base learned that ``[CLS]``
from next-sentence prediction; a sentence-embedding checkpoint such as the packaged all-MiniLM-L6-v2 never did (it
was trained with mean pooling, its pooler never trained), so a few thousand gold pairs on a CPU do not teach it:
on UKP ASPECT cross-topic it stays below SBERT (README "Evaluation as the papers report it").

This model keeps what the checkpoint knows and adds the cross-encoder's one advantage, attention across the pair:

* the pair is one sequence ``[CLS] a [SEP] [CLS] b [SEP]``, each sentence in exactly the form the bi-encoder reads
  it (its own ``[CLS]``/``[SEP]``, positions from 0, token type 0);
* every layer's self-attention spans both sentences, and the attention logit of a token of one sentence to a token
  of the other is shifted by a learned per-head **gate** (``gate_init`` 0: plain full attention at the start;
  a large negative gate: no cross attention, i.e. the bi-encoder exactly);
* the score is the cosine of the mean-pooled tokens of ``a`` and of ``b``, trained with SBERT's loss (mean squared
  error to the gold score), so the recipe (lr 2e-5, batch 16, one epoch) is SBERT's: the comparison with SBERT
  differs in the cross attention only.

Artifact: the encoder and tokenizer (``save_pretrained``) and ``gated-cross-encoder.json`` (gates, max length).
"""

from __future__ import annotations

import inspect
import json
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer

from ml import training

CONFIG_FILE = "gated-cross-encoder.json"


def is_gated_folder(path) -> bool:
    return (Path(str(path)) / CONFIG_FILE).is_file()


class GatedCrossEncoder(torch.nn.Module):
    def __init__(self, encoder, tokenizer, *, max_length: int = 128, gate: Sequence[float] | float = 0.0):
        super().__init__()
        self.encoder, self.tokenizer, self.max_length = encoder, tokenizer, int(max_length)
        heads = int(encoder.config.num_attention_heads)
        values = [float(gate)] * heads if np.isscalar(gate) else [float(g) for g in gate]
        if len(values) != heads:
            raise ValueError(f"gate: {len(values)} values for {heads} attention heads")
        self.gate = torch.nn.Parameter(torch.tensor(values, dtype=torch.float32))
        # BERT-like encoders take positions and token types; others (DistilBERT, ...) get what they accept
        self._accepts = set(inspect.signature(encoder.forward).parameters)

    # --- building, saving, loading -------------------------------------------------------------------

    @classmethod
    def new(cls, base_model: str, *, max_length: int = 128, gate_init: float = 0.0, device: str = "cpu"):
        """From a bi-encoder (sentence-transformers) folder or a plain Hugging Face encoder folder."""
        encoder = AutoModel.from_pretrained(str(base_model), attn_implementation="eager")
        tokenizer = AutoTokenizer.from_pretrained(str(base_model))
        return cls(encoder, tokenizer, max_length=max_length, gate=float(gate_init)).to(device)

    @classmethod
    def load(cls, path, *, device: str = "cpu"):
        path = Path(str(path))
        conf = json.loads((path / CONFIG_FILE).read_text())
        encoder = AutoModel.from_pretrained(str(path), attn_implementation="eager")
        tokenizer = AutoTokenizer.from_pretrained(str(path))
        return cls(encoder, tokenizer, max_length=conf["max_length"], gate=conf["gate"]).to(device)

    def save_pretrained(self, path) -> None:
        path = Path(str(path))
        path.mkdir(parents=True, exist_ok=True)
        self.encoder.save_pretrained(str(path))
        self.tokenizer.save_pretrained(str(path))
        (path / CONFIG_FILE).write_text(
            json.dumps(
                {
                    "architecture": "gated",
                    "max_length": self.max_length,
                    "gate": [round(float(g), 6) for g in self.gate.detach().cpu()],
                },
                indent=2,
            )
        )

    # --- scoring -------------------------------------------------------------------------------------

    @property
    def device(self):
        return self.gate.device

    def _inputs(self, pairs: Sequence[tuple[str, str]]):
        """Token ids, padding mask, per-token sentence masks (a, b) and positions (each sentence from 0)."""
        first = self.tokenizer([str(a) for a, _ in pairs], truncation=True, max_length=self.max_length)["input_ids"]
        second = self.tokenizer([str(b) for _, b in pairs], truncation=True, max_length=self.max_length)["input_ids"]
        width = max(len(x) + len(y) for x, y in zip(first, second))
        ids = torch.full((len(pairs), width), int(self.tokenizer.pad_token_id or 0), dtype=torch.long)
        in_a = torch.zeros((len(pairs), width), dtype=torch.bool)
        in_b = torch.zeros((len(pairs), width), dtype=torch.bool)
        positions = torch.zeros((len(pairs), width), dtype=torch.long)
        for row, (x, y) in enumerate(zip(first, second)):
            ids[row, : len(x) + len(y)] = torch.tensor(x + y)
            in_a[row, : len(x)] = True
            in_b[row, len(x) : len(x) + len(y)] = True
            positions[row, : len(x)] = torch.arange(len(x))
            positions[row, len(x) : len(x) + len(y)] = torch.arange(len(y))
        device = self.device
        return ids.to(device), in_a.to(device), in_b.to(device), positions.to(device)

    def forward(self, pairs: Sequence[tuple[str, str]]):
        """The cosine of the two sentences' pooled tokens, one per pair (differentiable)."""
        ids, in_a, in_b, positions = self._inputs(pairs)
        real = in_a | in_b
        cross = (in_a[:, :, None] & in_b[:, None, :]) | (in_b[:, :, None] & in_a[:, None, :])
        bias = cross[:, None].to(self.gate.dtype) * self.gate[None, :, None, None]
        bias = bias.masked_fill(~real[:, None, None, :], torch.finfo(bias.dtype).min)
        extra = {}
        if "position_ids" in self._accepts:
            extra["position_ids"] = positions
        if "token_type_ids" in self._accepts:
            extra["token_type_ids"] = torch.zeros_like(ids)
        hidden = self.encoder(input_ids=ids, attention_mask=bias, **extra).last_hidden_state
        a = (hidden * in_a[..., None]).sum(1) / in_a.sum(1, keepdim=True)
        b = (hidden * in_b[..., None]).sum(1) / in_b.sum(1, keepdim=True)
        return torch.nn.functional.cosine_similarity(a, b, dim=-1)

    def predict(self, pairs: Sequence[tuple[str, str]], *, batch_size: int = 64, **_ignored) -> np.ndarray:
        """Scores of ``(a, b)`` pairs (the interface of ``CrossEncoder.predict``)."""
        was_training = self.training
        self.eval()
        out = []
        with torch.no_grad():
            for k in range(0, len(pairs), int(batch_size)):
                out.append(self(pairs[k : k + int(batch_size)]).float().cpu().numpy())
        self.train(was_training)
        return np.concatenate(out) if out else np.zeros(0, dtype=np.float32)


class GatedRun:
    """One seed's training run, continuable (the interface of :func:`ml.training.seeded_run`): ``run(steps)``
    trains until ``steps`` optimisation steps are done and returns the dev Spearman x 100."""

    def __init__(self, *, rows_train, rows_dev, base_model, hp, seed, steps_total, score, progress, label):
        training.set_seed(int(seed))
        self.model = GatedCrossEncoder.new(
            base_model,
            max_length=int(hp["max_length"]),
            gate_init=float(hp["gate_init"]),
            device=training.pick_device(),
        )
        if hp.get("freeze_embeddings"):
            self.model.encoder.get_input_embeddings().weight.requires_grad_(False)
        self.model.train()
        groups = training.decay_groups(self.model.encoder, lr=float(hp["lr"]), weight_decay=float(hp["weight_decay"]))
        groups.append({"params": [self.model.gate], "lr": float(hp["gate_lr"]), "weight_decay": 0.0})
        self.optimizer, self.scheduler = training.adamw(
            groups,
            total_steps=steps_total,
            warmup_ratio=float(hp["warmup_ratio"]),
            weight_decay=float(hp["weight_decay"]),
        )
        self.rows = list(rows_train)
        self.rows_dev, self.seed, self.steps_total, self.done = list(rows_dev), int(seed), int(steps_total), 0
        self.score, self.progress, self.label = score, progress, label
        self.batch_size = int(hp["batch_size"])
        self._batches = self._stream(random.Random(int(seed)))

    def _stream(self, rng):
        while True:
            yield from training.shuffled_batches(rng, len(self.rows), self.batch_size)

    def __call__(self, steps: int) -> float:
        steps = min(int(steps), self.steps_total)
        while self.done < steps:
            rows = [self.rows[i] for i in next(self._batches)]
            gold = torch.tensor([float(r["score"]) for r in rows], device=self.model.device)
            pred = self.model([(r["argument1"], r["argument2"]) for r in rows])
            loss = torch.nn.functional.mse_loss(pred, gold)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()
            self.done += 1
            if self.done % 10 == 0 or self.done == self.steps_total:
                self.progress(
                    self.done, self.steps_total, f"{self.label}seed {self.seed}: step {self.done}/{self.steps_total}"
                )
        return self.score(self.model, self.rows_dev)
