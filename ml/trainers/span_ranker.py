"""Trainer kind ``span_ranker``: scores every aspect candidate of a sentence from ONE encoder pass.

Model
    The sentence alone is encoded once (a Hugging Face encoder, default the packaged all-MiniLM-L6-v2). A candidate
    span (character ``begin``/``length``) is mapped to its first and last sub-word token through the fast
    tokenizer's ``offset_mapping`` (every token overlapping the characters); its representation is::

        [ mean(H[s..e]) ; max(H[s..e]) ; H[s] ; H[e] ; width embedding(e - s + 1) ]

    and a small MLP (Linear -> GELU -> Dropout -> Linear) maps it to a score, trained with the MSE against the
    same Arg-CTRL §3.1 Step 2a targets as the ``ranker`` kind. Ranking a sentence's ~100 candidates therefore costs
    one forward pass instead of ~100 cross-encoder passes. A candidate that falls outside the encoded tokens
    (a sentence longer than ``max_length``) gets the score :data:`OUTSIDE_SCORE`.

Hyperparameters (merged as for ``ranker``: :data:`DEFAULTS` < ``$ARGORA_TRAINER_HYPERPARAMETERS["span_ranker"]``
< request): epochs, max_steps, batch_size (sentences per step), lr (encoder), head_lr, weight_decay,
warmup_ratio, max_length (sentence tokens), hidden (MLP width), dropout, max_width (width embeddings; wider spans
share the last), eval_batch_size (sentences), seeds / probe_fraction (seed optimisation), eval (``"in-topic"`` or
``"cross-topic"``: also leave-one-topic-out recall@k, as for ``ranker``).

Inference: sentences sorted by length, dynamic padding, ``torch.inference_mode()``, half precision on CUDA.
Artifact: ``encoder/`` (model + tokenizer, ``save_pretrained``), ``head.pt`` (width embedding + MLP),
``span_ranker.json`` (architecture numbers).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from ml import registry, training
from ml.data import SentenceRows, group_sentences, ranker_rows_from_project
from ml.inference import length_sorted_batches
from ml.metrics import PRIMARY

from .ranker import StepRun, default_base_model, evaluate, rows_from_file, train_runs

KIND = "span_ranker"
DEFAULTS = {
    "epochs": 5,
    "max_steps": 0,
    "batch_size": 8,
    "lr": 5e-5,
    "head_lr": 1e-3,
    "weight_decay": 0.01,
    "warmup_ratio": 0.1,
    "max_length": 256,
    "hidden": 256,
    "dropout": 0.1,
    "max_width": 16,
    "eval_batch_size": 64,
    "seeds": [],
    "probe_fraction": 0.2,
    "eval": "in-topic",
}
OUTSIDE_SCORE = -1.0
WIDTH_DIM = 32


class SpanHead(nn.Module):
    """Span pooling (mean, max, start, end, width) + MLP -> one score per span."""

    def __init__(self, hidden_size: int, hidden: int = 256, dropout: float = 0.1, max_width: int = 16):
        super().__init__()
        self.max_width = max_width
        self.width = nn.Embedding(max_width + 1, WIDTH_DIM)
        self.mlp = nn.Sequential(
            nn.Linear(4 * hidden_size + WIDTH_DIM, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, 1)
        )

    def forward(self, states: torch.Tensor, batch: torch.Tensor, start: torch.Tensor, end: torch.Tensor):
        """``states`` (B, T, d); ``batch``/``start``/``end`` (S,) sentence index and first/last token (inclusive)."""
        width = end - start + 1
        zero = torch.zeros_like(states[:, :1])
        csum = torch.cat([zero, states.cumsum(dim=1)], dim=1)  # (B, T+1, d)
        mean = (csum[batch, end + 1] - csum[batch, start]) / width.unsqueeze(-1).to(states.dtype)
        w_max = int(width.max()) if width.numel() else 1
        offsets = torch.arange(w_max, device=states.device)
        idx = start.unsqueeze(1) + offsets.unsqueeze(0)  # (S, W)
        valid = idx <= end.unsqueeze(1)
        idx = torch.minimum(idx, end.unsqueeze(1))
        gathered = states[batch.unsqueeze(1), idx]  # (S, W, d)
        gathered = gathered.masked_fill(~valid.unsqueeze(-1), torch.finfo(states.dtype).min)
        span_max = gathered.max(dim=1).values
        feats = torch.cat(
            [
                mean,
                span_max,
                states[batch, start],
                states[batch, end],
                self.width(width.clamp(max=self.max_width)).to(states.dtype),
            ],
            dim=-1,
        )
        return self.mlp(feats).squeeze(-1)


class Encoded:
    """One sentence tokenised once: input ids and a char-span -> token-span lookup through the fast tokenizer's
    ``offset_mapping`` (special tokens, with empty offsets, are skipped)."""

    __slots__ = ("ends", "ids", "positions", "starts")

    def __init__(self, ids: list[int], offsets: list[tuple[int, int]]):
        self.ids = ids
        self.positions = [k for k, (a, b) in enumerate(offsets) if b > a]
        self.starts = [offsets[k][0] for k in self.positions]
        self.ends = [offsets[k][1] for k in self.positions]

    def span(self, begin: int, length: int) -> tuple[int, int] | None:
        """First and last token position overlapping the characters ``[begin, begin + length)``; None if none."""
        i = bisect.bisect_right(self.ends, begin)
        j = bisect.bisect_left(self.starts, begin + length) - 1
        if i >= len(self.ends) or j < 0 or i > j:
            return None
        return self.positions[i], self.positions[j]


def encode_sentences(tokenizer, sentences: Sequence[str], max_length: int) -> list[Encoded]:
    enc = tokenizer(list(sentences), truncation=True, max_length=max_length, return_offsets_mapping=True)
    return [Encoded(ids, [tuple(o) for o in offs]) for ids, offs in zip(enc["input_ids"], enc["offset_mapping"])]


class SpanScorerModule(nn.Module):
    def __init__(self, encoder, head: SpanHead):
        super().__init__()
        self.encoder, self.head = encoder, head

    def forward(self, input_ids, attention_mask, batch, start, end):
        states = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.head(states, batch, start, end)


def collate(encoded: Sequence[Encoded], spans: Sequence[Sequence[tuple[int, int]]], pad_id: int, device: str):
    """Padded ids + flat span indices; returns (inputs, keep) where keep[s][c] is the flat index or -1."""
    width = max(len(e.ids) for e in encoded)
    ids = torch.full((len(encoded), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(encoded), width), dtype=torch.long)
    b_idx, s_idx, e_idx, keep = [], [], [], []
    for row, (e, sent_spans) in enumerate(zip(encoded, spans)):
        ids[row, : len(e.ids)] = torch.tensor(e.ids)
        mask[row, : len(e.ids)] = 1
        flat = []
        for begin, length in sent_spans:
            tok = e.span(begin, length)
            if tok is None:
                flat.append(-1)
                continue
            flat.append(len(b_idx))
            b_idx.append(row)
            s_idx.append(tok[0])
            e_idx.append(tok[1])
        keep.append(flat)
    as_t = lambda xs: torch.tensor(xs, dtype=torch.long, device=device)  # noqa: E731
    return (ids.to(device), mask.to(device), as_t(b_idx), as_t(s_idx), as_t(e_idx)), keep


class SpanRanker:
    """A loaded (or just trained) span ranker: ``score`` / ``score_groups`` with one encoder pass per sentence."""

    kind = KIND

    def __init__(
        self,
        module: SpanScorerModule,
        tokenizer,
        *,
        max_length: int = 256,
        batch_size: int = 64,
        device: str | None = None,
        half: bool | None = None,
    ):
        self.module, self.tokenizer = module, tokenizer
        self.max_length, self.batch_size = int(max_length), int(batch_size)
        self.device = training.pick_device(device)
        self.module.to(self.device)
        if half if half is not None else self.device.startswith("cuda"):
            self.module.half()
        self.module.eval()

    def score_spans(self, sentences: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]) -> list[list[float]]:
        if not sentences:
            return []
        encoded = encode_sentences(self.tokenizer, sentences, self.max_length)
        out: list[list[float]] = [[] for _ in sentences]
        pad_id = self.tokenizer.pad_token_id or 0
        was_training = self.module.training
        self.module.eval()
        with torch.inference_mode():
            for batch in length_sorted_batches([len(e.ids) for e in encoded], self.batch_size):
                inputs, keep = collate([encoded[i] for i in batch], [spans[i] for i in batch], pad_id, self.device)
                scores = self.module(*inputs).float().cpu().tolist() if inputs[2].numel() else []
                for i, flat in zip(batch, keep):
                    out[i] = [scores[f] if f >= 0 else OUTSIDE_SCORE for f in flat]
        if was_training:
            self.module.train()
        return out

    def score(self, sentence_text: str, topic: str, candidates: Sequence) -> list[float]:
        return self.score_spans([sentence_text], [[(c.begin, c.length) for c in candidates]])[0]

    def score_groups(self, groups: Sequence[SentenceRows]) -> list[list[float]]:
        return self.score_spans([g.sentence for g in groups], [g.spans for g in groups])


class SpanRun(StepRun):
    def __init__(self, *, base_model: str, units: Sequence[SentenceRows], **kw):
        groups = units
        super().__init__(n_units=len(groups), **kw)
        from transformers import AutoModel, AutoTokenizer

        training.set_seed(self.seed)
        hp = self.hp
        self.tokenizer = AutoTokenizer.from_pretrained(base_model)
        encoder = AutoModel.from_pretrained(base_model)
        head = SpanHead(encoder.config.hidden_size, int(hp["hidden"]), float(hp["dropout"]), int(hp["max_width"]))
        self.module = SpanScorerModule(encoder, head).to(self.device)
        self.groups = list(groups)
        self.encoded = encode_sentences(self.tokenizer, [g.sentence for g in self.groups], int(hp["max_length"]))
        self.setup_optimiser(
            [
                {"params": list(encoder.parameters()), "lr": float(hp["lr"])},
                {"params": list(head.parameters()), "lr": float(hp["head_lr"])},
            ]
        )

    def loss(self, batch: list[int]):
        groups = [self.groups[i] for i in batch]
        inputs, keep = collate(
            [self.encoded[i] for i in batch], [g.spans for g in groups], self.tokenizer.pad_token_id or 0, self.device
        )
        targets = [0.0] * inputs[2].numel()
        for g, flat in zip(groups, keep):
            for f, t in zip(flat, g.scores):
                if f >= 0:
                    targets[f] = t
        if not targets:
            return self.module.head.mlp[0].weight.sum() * 0.0
        pred = self.module(*inputs).float()
        return torch.nn.functional.mse_loss(pred, torch.tensor(targets, device=self.device))

    def scorer(self) -> SpanRanker:
        return SpanRanker(
            self.module,
            self.tokenizer,
            max_length=int(self.hp["max_length"]),
            batch_size=int(self.hp["eval_batch_size"]),
            device=self.device,
            half=False,
        )


def train(request) -> registry.TrainResult:
    run, hp, metrics, test_metrics, info = train_runs(
        request, KIND, DEFAULTS, SpanRun, group_sentences, "train_sentences"
    )
    out = Path(request.output_dir)
    run.module.encoder.save_pretrained(str(out / "encoder"))
    run.tokenizer.save_pretrained(str(out / "encoder"))
    torch.save(run.module.head.state_dict(), out / "head.pt")
    (out / "span_ranker.json").write_text(
        json.dumps(
            {
                "kind": KIND,
                "max_length": int(hp["max_length"]),
                "hidden": int(hp["hidden"]),
                "dropout": float(hp["dropout"]),
                "max_width": int(hp["max_width"]),
                "eval_batch_size": int(hp["eval_batch_size"]),
                "pooling": "mean,max,start,end,width",
            },
            indent=2,
        )
    )
    return registry.TrainResult(metrics=metrics, test_metrics=test_metrics, info=info)


def load(path: Path, *, device: str | None = None) -> SpanRanker:
    from transformers import AutoModel, AutoTokenizer

    path = Path(path)
    conf = json.loads((path / "span_ranker.json").read_text())
    encoder = AutoModel.from_pretrained(str(path / "encoder"))
    tokenizer = AutoTokenizer.from_pretrained(str(path / "encoder"))
    head = SpanHead(encoder.config.hidden_size, int(conf["hidden"]), float(conf["dropout"]), int(conf["max_width"]))
    head.load_state_dict(torch.load(path / "head.pt", map_location="cpu", weights_only=True))
    return SpanRanker(
        SpanScorerModule(encoder, head),
        tokenizer,
        max_length=int(conf["max_length"]),
        batch_size=int(conf.get("eval_batch_size", 64)),
        device=device,
    )


registry.register_trainer(
    registry.TrainerSpec(
        kind=KIND,
        train=train,
        load=load,
        primary_metric=PRIMARY,
        higher_is_better=True,
        description="aspect span ranker: one encoder pass per sentence, span pooling (mean/max/start/end/width) + MLP "
        "regressing the Arg-CTRL §3.1 Step 2a score (MSE); recall@k on dev",
        rows_from_file=rows_from_file,
        rows_from_project=ranker_rows_from_project,
        evaluate=evaluate,
        default_base_model=default_base_model,
        data_formats="Arg-CTRL App. F aspect JSONL, or JSONL ranker label rows (sentence, candidate, score, begin, length)",
    )
)
