"""Kind ``argument``: topic-dependent sentence classification (Stab et al. 2018; Arg-CTRL §4's argument / stance
classifier).

Rows
    ``{"topic", "sentence", "label"[, "split"]}``. From a file (:func:`rows_from_file`, ``manage.py train argument
    --data FILE``): a UKP Sentential Argument Mining TSV (``annotation`` Argument_for / Argument_against / NoArgument
    -> ``pro`` / ``con`` / ``none``; its ``set`` column train / val / test) or an arguments JSONL (``topic``,
    ``sentence``, ``stance`` pro / con / none or the UKP names; optional ``split`` or ``set``), read by the corpus
    importers' parsers (:func:`corpus.importers.parsers.parse_ukp_tsv` / :func:`~corpus.importers.parsers.parse_jsonl`,
    the same checks and ``file:line: reason`` errors as ``import_corpus``), or a folder holding ``train`` + ``dev``
    (+ ``test``) files of one of them. Rows with a split keep it: every ``train`` row (and every row without one) is
    trained on, ``dev`` rows choose the epoch and give the dev metrics, ``test`` rows travel in the dev list tagged
    ``split: "test"`` (:func:`ml.similarity.data.split_eval`) and give the test metrics only. A file without dev rows
    gets them from a stable sentence hash of its train rows (:func:`ml.splits.stable_split`). From a project
    (:func:`rows_from_project`, the retrain loop): a ``sentence_label`` project's final labels -- the latest
    adjudication, else a gold item's expected label, else the majority of the counted (human) responses; a tie is
    left out --, split by sentence hash; the classes are the labels the rows use.

Model
    The pair ``topic [SEP] sentence`` through an encoder (``base_model``, default the packaged all-MiniLM-L6-v2;
    ``hyperparameters["from_config"]`` builds a small BERT from a config for tests), mean-pooled, then either
    ``scheme = "three-way"`` (default): one softmax head over the classes, or ``scheme = "two-step"`` (needs the
    classes pro / con / none): an argument / no-argument head and a pro / con head trained on the arguments only;
    P(pro) = P(arg) P(pro | arg), P(con) = P(arg) P(con | arg), P(none) = 1 - P(arg). Training: :mod:`ml.training`
    (AdamW, linear warm-up / decay, clipping, fp16 on CUDA); the weights of the best dev epoch (``f1_macro``) are kept.

Hyperparameters (``DEFAULTS < $ARGORA_TRAINER_HYPERPARAMETERS["argument"] < request``)
    epochs, max_steps, batch_size, lr, head_lr, weight_decay, warmup_ratio, max_length, dropout, eval_batch_size,
    scheme (three-way / two-step), eval (in-topic / cross-topic), from_config, seeds, probe_fraction.

Metrics (:func:`classification_metrics`)
    ``f1_macro`` (primary; the unweighted mean of the per-class F1 over the classes present in the gold or the
    predictions, like scikit-learn), ``f1_<label>`` per class, ``accuracy``, ``n``; with stance classes also the two
    steps of Stab et al.: ``step1_f1_macro`` (argument vs. no-argument, all rows) and ``step2_f1_macro`` (pro vs. con
    on the gold arguments, the more probable of the two). ``majority_f1_macro`` (and per step): the baseline that
    always predicts the most frequent training class. Test rows: the same figures under the version's ``test``
    metrics. ``eval = "cross-topic"`` adds leave-one-topic-out over the train + dev rows (a fresh model per held-out
    topic, trained on the other topics for the same epochs, no early stopping): ``cross_topic_f1_macro``,
    ``cross_topic_majority_f1_macro`` (+ the step means) in the dev metrics, per topic in ``info["cross_topic"]``.

Artifact: ``encoder/`` (save_pretrained, with its tokenizer), ``heads.pt``, ``argument.json`` (labels, stances,
scheme, max_length). :func:`load` returns an :class:`ArgumentClassifier`: ``predict([(topic, sentence), ...]) ->
[{"label", "probs": {label: p}}]``.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from annotation.models import Adjudication, Item
from annotation.selectors import counted_responses
from argora.progress import null_progress
from corpus.importers.base import ImportFailed
from corpus.importers.fields import jsonl_objects, text_lines
from corpus.importers.parsers import STANCES, parse_jsonl, parse_ukp_tsv
from corpus.importers.readers import read_text
from ml import training
from ml.data import leave_one_topic_out
from ml.encoders import default_encoder_path, resolve
from ml.errors import TrainerError, TrainerFileError
from ml.inference import length_sorted_batches
from ml.registry import SilverSpec, TrainerSpec, TrainRequest, TrainResult, register_trainer
from ml.similarity.data import SPLIT_ALIASES, split_eval
from ml.splits import stable_split
from ml.trainers.tagger import load_tokenizer, tiny_config

KIND = "argument"
CONFIG_FILE = "argument.json"
HEADS_FILE = "heads.pt"
SCHEMES = ("three-way", "two-step")
EVAL_SETTINGS = ("in-topic", "cross-topic")
STANCE_ORDER = ("pro", "con", "none")
DEFAULTS = {
    "epochs": 3,
    "max_steps": 0,
    "batch_size": 16,
    "lr": 3e-5,
    "head_lr": None,
    "weight_decay": 0.01,
    "warmup_ratio": 0.1,
    "max_length": 128,
    "dropout": 0.1,
    "eval_batch_size": 64,
    "scheme": "three-way",
    "eval": "in-topic",
    "from_config": None,
    "seeds": [],
    "probe_fraction": 0.2,
}
CHOICES = {"scheme": SCHEMES, "eval": EVAL_SETTINGS}
FILE_SUFFIXES = {".tsv": parse_ukp_tsv, ".jsonl": parse_jsonl, ".json": parse_jsonl}


# --- labels ----------------------------------------------------------------------------------------


def stance_of(label) -> str | None:
    """``pro`` / ``con`` / ``none`` for a stance label (``pro``, ``Argument_for``, ``NoArgument``...), else None."""
    return STANCES.get(str(label).strip().lower()) if label is not None else None


def stance_map(labels: Sequence[str]) -> dict[str, str] | None:
    """``{label: stance}`` when the labels are exactly one pro, one con and one none label, else None."""
    stances = {label: stance_of(label) for label in labels}
    if sorted(v for v in stances.values() if v) != sorted(STANCE_ORDER) or len(stances) != 3:
        return None
    return stances


def class_order(labels) -> list[str]:
    """The classes in a stable order: stance labels as pro, con, none; the others sorted after them."""
    uniq = sorted({str(label) for label in labels})
    rank = {s: i for i, s in enumerate(STANCE_ORDER)}
    return sorted(uniq, key=lambda lab: (rank.get(stance_of(lab), len(rank)), lab))


# --- metrics ---------------------------------------------------------------------------------------


def _macro_f1(gold: Sequence[str], pred: Sequence[str]) -> tuple[float, dict[str, float]]:
    classes = sorted(set(gold) | set(pred))
    per = {}
    for c in classes:
        tp = sum(1 for g, p in zip(gold, pred) if g == c and p == c)
        fp = sum(1 for g, p in zip(gold, pred) if g != c and p == c)
        fn = sum(1 for g, p in zip(gold, pred) if g == c and p != c)
        per[c] = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    return (sum(per.values()) / len(per) if per else 0.0), per


def classification_metrics(
    gold: Sequence[str],
    pred: Sequence[str],
    *,
    stances: dict[str, str] | None = None,
    probs: Sequence[dict] | None = None,
) -> dict:
    """Macro / per-class F1 and accuracy; with ``stances`` ({label: pro|con|none}) the two steps of Stab et al.:
    step 1 argument vs. no-argument over all rows, step 2 pro vs. con over the gold arguments (from ``probs`` when
    given: the more probable of the two, else the predicted label, a no-argument prediction counting as wrong)."""
    gold, pred = [str(g) for g in gold], [str(p) for p in pred]
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold labels, {len(pred)} predictions")
    f1, per = _macro_f1(gold, pred)
    out = {
        "f1_macro": f1,
        "accuracy": (sum(g == p for g, p in zip(gold, pred)) / len(gold)) if gold else 0.0,
        "n": len(gold),
        **{f"f1_{label}": value for label, value in per.items()},
    }
    if stances:
        arg = {label: ("argument" if s in ("pro", "con") else "no-argument") for label, s in stances.items()}
        out["step1_f1_macro"] = _macro_f1([arg.get(g, g) for g in gold], [arg.get(p, p) for p in pred])[0]
        by_stance = {s: label for label, s in stances.items()}
        g2, p2 = [], []
        for i, g in enumerate(gold):
            if stances.get(g) not in ("pro", "con"):
                continue
            if probs is not None:
                p_pro, p_con = probs[i].get(by_stance["pro"], 0.0), probs[i].get(by_stance["con"], 0.0)
                p2.append("pro" if p_pro >= p_con else "con")
            else:
                p2.append(stances.get(pred[i]) or "none")
            g2.append(stances[g])
        out["step2_f1_macro"] = _macro_f1(g2, p2)[0] if g2 else 0.0
        out["n_arguments"] = len(g2)
    return out


def majority_label(rows_train: Sequence[dict]) -> str:
    counts = Counter(str(r["label"]) for r in rows_train)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def majority_metrics(rows_train: Sequence[dict], rows: Sequence[dict], stances) -> dict:
    """The majority baseline's ``majority_f1_macro`` (and ``majority_step1/2_f1_macro``) on ``rows``."""
    label = majority_label(rows_train)
    m = classification_metrics([r["label"] for r in rows], [label] * len(rows), stances=stances)
    return {f"majority_{k}": m[k] for k in ("f1_macro", "step1_f1_macro", "step2_f1_macro") if k in m}


# --- the model -------------------------------------------------------------------------------------


class ArgumentModel(nn.Module):
    """Encoder + mean pooling + the scheme's head(s); ``probs(**features) -> [batch, n classes]``."""

    def __init__(
        self,
        encoder,
        tokenizer,
        *,
        labels: Sequence[str],
        scheme: str = "three-way",
        max_length: int = 128,
        dropout: float = 0.1,
    ):
        super().__init__()
        if scheme not in SCHEMES:
            raise TrainerError(f"hyperparameters: scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")
        self.encoder, self.tokenizer = encoder, tokenizer
        self.labels, self.scheme = list(labels), scheme
        self.max_length, self.dropout_p = int(max_length), float(dropout)
        self.stances = stance_map(self.labels)
        if scheme == "two-step" and self.stances is None:
            raise TrainerError(
                f"hyperparameters: scheme two-step needs the classes pro / con / none, got {', '.join(self.labels)}"
            )
        hidden = int(encoder.config.hidden_size)
        self.dropout = nn.Dropout(dropout)
        if scheme == "two-step":
            self.argument_head, self.stance_head = nn.Linear(hidden, 2), nn.Linear(hidden, 2)
            index = {s: self.labels.index(label) for label, s in self.stances.items()}
            self.pro, self.con, self.none = index["pro"], index["con"], index["none"]
        else:
            self.head = nn.Linear(hidden, len(self.labels))

    def pooled(self, **features) -> torch.Tensor:
        hidden = self.encoder(**features).last_hidden_state
        mask = features["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return self.dropout((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9))

    def loss(self, targets: torch.Tensor, **features) -> torch.Tensor:
        x = self.pooled(**features)
        if self.scheme == "three-way":
            return nn.functional.cross_entropy(self.head(x).float(), targets)
        is_arg = (targets != self.none).long()
        loss = nn.functional.cross_entropy(self.argument_head(x).float(), is_arg)
        args = is_arg.bool()
        if args.any():
            is_con = (targets[args] == self.con).long()
            loss = loss + nn.functional.cross_entropy(self.stance_head(x[args]).float(), is_con)
        return loss

    def probs(self, **features) -> torch.Tensor:
        x = self.pooled(**features)
        if self.scheme == "three-way":
            return torch.softmax(self.head(x).float(), dim=-1)
        p_arg = torch.softmax(self.argument_head(x).float(), dim=-1)[:, 1]
        p_con = torch.softmax(self.stance_head(x).float(), dim=-1)[:, 1]
        out = torch.zeros(x.shape[0], len(self.labels), device=x.device)
        out[:, self.pro], out[:, self.con], out[:, self.none] = p_arg * (1 - p_con), p_arg * p_con, 1 - p_arg
        return out

    def encode(self, pairs: Sequence[tuple[str, str]]) -> dict:
        return self.tokenizer(
            [str(t or "") for t, _ in pairs],
            [str(s or "") for _, s in pairs],
            truncation="longest_first",
            max_length=self.max_length,
        )

    def collate(self, enc: dict, indices: Sequence[int], device) -> dict:
        keys = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc]
        features = self.tokenizer.pad({k: [enc[k][i] for i in indices] for k in keys}, return_tensors="pt")
        return {k: v.to(device) for k, v in features.items()}

    def heads_state(self) -> dict:
        return {k: v for k, v in self.state_dict().items() if not k.startswith("encoder.")}

    def save(self, path) -> None:
        path = Path(path)
        self.encoder.save_pretrained(str(path / "encoder"))
        self.tokenizer.save_pretrained(str(path / "encoder"))
        torch.save({k: v.detach().cpu() for k, v in self.heads_state().items()}, path / HEADS_FILE)
        (path / CONFIG_FILE).write_text(
            json.dumps(
                {
                    "kind": KIND,
                    "labels": self.labels,
                    "stances": self.stances,
                    "scheme": self.scheme,
                    "max_length": self.max_length,
                    "dropout": self.dropout_p,
                    "input": "topic [SEP] sentence",
                },
                indent=2,
            )
        )


class ArgumentClassifier:
    """A loaded (or just trained) model: ``predict([(topic, sentence)]) -> [{"label", "probs": {label: p}}]``."""

    kind = KIND

    def __init__(self, model: ArgumentModel, *, batch_size: int = 64, device: str | None = None):
        self.model, self.batch_size = model, int(batch_size)
        self.device = training.pick_device(device)
        self.model.to(self.device)
        self.labels, self.stances = model.labels, model.stances

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[dict]:
        pairs = list(pairs)
        if not pairs:
            return []
        enc = self.model.encode(pairs)
        out: list[dict] = [{}] * len(pairs)
        was_training = self.model.training
        self.model.eval()
        with torch.inference_mode():
            for batch in length_sorted_batches([len(x) for x in enc["input_ids"]], self.batch_size):
                probs = self.model.probs(**self.model.collate(enc, batch, self.device)).cpu().tolist()
                for i, row in zip(batch, probs):
                    best = max(range(len(row)), key=lambda k: row[k])
                    out[i] = {"label": self.labels[best], "probs": dict(zip(self.labels, map(float, row)))}
        if was_training:
            self.model.train()
        return out

    def predict_rows(self, rows: Sequence[dict]) -> list[dict]:
        return self.predict([(r.get("topic") or "", r["sentence"]) for r in rows])


def evaluate(model: ArgumentClassifier, rows_dev: Sequence[dict]) -> dict:
    """:func:`classification_metrics` on the dev rows (test rows, tagged ``split: "test"``, left out)."""
    rows, _ = split_eval(rows_dev)
    return _metrics(model, rows)


def _metrics(model: ArgumentClassifier, rows: Sequence[dict]) -> dict:
    preds = model.predict_rows(rows)
    return classification_metrics(
        [r["label"] for r in rows],
        [p["label"] for p in preds],
        stances=model.stances,
        probs=[p["probs"] for p in preds],
    )


# --- training --------------------------------------------------------------------------------------


def resolve_hyperparameters(given: dict | None) -> dict:
    hp = training.resolve_hyperparameters(KIND, DEFAULTS, given, choices=CHOICES)
    if int(hp["batch_size"]) < 1:
        raise TrainerError("hyperparameters: batch_size must be >= 1")
    return hp


def build_model(base_model: str | None, hp: dict, labels: Sequence[str]) -> ArgumentModel:
    from transformers import AutoModel, BertModel

    path = resolve(base_model)
    tokenizer = load_tokenizer(path)
    if hp.get("from_config"):
        encoder = BertModel(tiny_config(path, hp["from_config"]), add_pooling_layer=False)
    else:
        encoder = AutoModel.from_pretrained(path)
    return ArgumentModel(
        encoder,
        tokenizer,
        labels=labels,
        scheme=hp["scheme"],
        max_length=int(hp["max_length"]),
        dropout=float(hp["dropout"]),
    )


def _check_rows(rows: Sequence[dict], what: str) -> None:
    for i, r in enumerate(rows):
        if not isinstance(r.get("sentence"), str) or r.get("label") in (None, ""):
            raise TrainerError(f"data: {what} row {i + 1} needs a 'sentence' and a 'label'")


def training_run(
    request: TrainRequest,
    hp: dict,
    seed: int,
    labels: list[str],
    rows_train: list[dict],
    rows_dev: list[dict],
    progress=None,
):
    """One seed's model and :class:`ml.training.TrainLoop` (dev ``f1_macro`` after every epoch when there are
    dev rows, the best epoch kept): ``(loop, classifier)``."""
    training.set_seed(seed)
    device = training.pick_device()
    model = build_model(request.base_model, hp, labels).to(device)
    classifier = ArgumentClassifier(model, batch_size=int(hp["eval_batch_size"]), device=device)
    index = {label: i for i, label in enumerate(labels)}
    enc = model.encode([(r.get("topic") or "", r["sentence"]) for r in rows_train])
    targets = torch.tensor([index[str(r["label"])] for r in rows_train], dtype=torch.long)
    total, epochs = training.plan_steps(
        len(rows_train), int(hp["batch_size"]), int(hp["epochs"]), int(hp.get("max_steps") or 0), cap=True
    )
    lr = float(hp["lr"])
    groups = training.decay_groups(
        model,
        lr=lr,
        weight_decay=float(hp["weight_decay"]),
        head_lr=float(hp["head_lr"]) if hp.get("head_lr") else lr,
        head_names=("head", "argument_head", "stance_head"),
    )
    opt, sched = training.adamw(groups, total_steps=total, warmup_ratio=float(hp["warmup_ratio"]))
    rng = random.Random(seed)
    bs = int(hp["batch_size"])

    def loss_of(batch):
        return model.loss(targets[batch].to(device), **model.collate(enc, batch, device))

    loop = training.TrainLoop(
        model,
        opt,
        sched,
        loss_of,
        lambda epoch: training.shuffled_batches(rng, len(rows_train), bs),
        device=device,
        total=total,
        epochs=epochs,
        progress=progress or request.progress,
        evaluate=(lambda: _metrics(classifier, rows_dev)) if rows_dev else None,
        better=training.higher("f1_macro"),
    )
    return loop, classifier


def cross_topic(request: TrainRequest, hp: dict, labels: list[str], rows: list[dict]) -> tuple[dict, dict]:
    """Leave-one-topic-out over ``rows``: ``(flat means {"cross_topic_f1_macro", ...}, {"per_topic": ...})``."""
    topics = sorted({str(r.get("topic") or "") for r in rows})
    if len(topics) < 2:
        raise TrainerError(
            f"eval: cross-topic needs rows of at least 2 topics, got {len(topics)} "
            f"({', '.join(repr(t) for t in topics) or 'none'})"
        )
    per_topic = {}
    for n, (topic, rows_train, rows_test) in enumerate(leave_one_topic_out(rows, topics), start=1):
        request.progress(n, len(topics), f"cross-topic: held-out topic {topic!r}")
        loop, classifier = training_run(request, hp, int(request.seed), labels, rows_train, [], progress=null_progress)
        loop.run()
        m = _metrics(classifier, rows_test)
        m.update(majority_metrics(rows_train, rows_test, classifier.stances))
        per_topic[topic] = {k: v for k, v in m.items() if not k.startswith("f1_") or k == "f1_macro"}
        del loop, classifier
    keys = [
        k
        for k in (
            "f1_macro",
            "step1_f1_macro",
            "step2_f1_macro",
            "majority_f1_macro",
            "majority_step1_f1_macro",
            "majority_step2_f1_macro",
        )
        if all(k in m for m in per_topic.values())
    ]
    flat = {f"cross_topic_{k}": sum(m[k] for m in per_topic.values()) / len(per_topic) for k in keys}
    return flat, {"setting": "cross-topic (leave-one-topic-out)", "topics": len(per_topic), "per_topic": per_topic}


def train(request: TrainRequest) -> TrainResult:
    hp = resolve_hyperparameters(request.hyperparameters)
    rows_train = list(request.rows_train)
    rows_dev, rows_test = split_eval(request.rows_dev)
    rows_test = list(request.rows_test) + rows_test  # the registry passes test rows apart
    _check_rows(rows_train, "train")
    _check_rows(rows_dev + rows_test, "dev")
    labels = class_order(r["label"] for r in rows_train)
    if len(labels) < 2:
        raise TrainerError(f"data: the training rows need at least 2 classes, got {', '.join(labels) or 'none'}")
    started = time.monotonic()
    total = training.total_steps(hp, len(rows_train), cap=True)

    def make_run(seed: int) -> training.LoopRun:
        loop, classifier = training_run(request, hp, seed, labels, rows_train, rows_dev)
        run = training.LoopRun(loop.steps(), lambda: _metrics(classifier, rows_dev)["f1_macro"] if rows_dev else 0.0)
        run.classifier = classifier
        return run

    run, seed, probes = training.seeded_run(make_run, hp, seed=request.seed, total=total, progress=request.progress)
    loop = run.finish()
    classifier = run.classifier
    stances = classifier.stances
    metrics = dict(loop.best) if loop.best else _metrics(classifier, rows_dev)
    metrics.update(majority_metrics(rows_train, rows_dev, stances))
    test_metrics = None
    if rows_test:
        test_metrics = _metrics(classifier, rows_test)
        test_metrics.update(majority_metrics(rows_train, rows_test, stances))
    classifier.model.to("cpu")
    classifier.model.save(Path(request.output_dir))
    info = {
        "seed": seed,
        "seed_probes": probes,
        "steps": loop.step,
        "hyperparameters": hp,
        "labels": labels,
        "stances": stances,
        "scheme": hp["scheme"],
        "train_rows": len(rows_train),
        "dev_rows": len(rows_dev),
        "test_rows": len(rows_test),
        "majority_label": majority_label(rows_train),
        "train_classes": dict(Counter(str(r["label"]) for r in rows_train)),
        "history": [
            {"epoch": e["epoch"], "step": e["step"], "f1_macro": e["metrics"].get("f1_macro")} for e in loop.evals
        ],
        "train_topics": sorted({str(r.get("topic") or "") for r in rows_train} - {""}),
    }
    del run, loop
    if hp["eval"] == "cross-topic":
        flat, info["cross_topic"] = cross_topic(request, hp, labels, rows_train + rows_dev)
        metrics.update(flat)
    info["train_seconds"] = round(time.monotonic() - started, 3)
    return TrainResult(metrics=metrics, test_metrics=test_metrics, info=info)


def load(path: Path, *, device: str | None = None, batch_size: int = 64) -> ArgumentClassifier:
    from transformers import AutoModel, AutoTokenizer

    path = Path(path)
    conf = json.loads((path / CONFIG_FILE).read_text())
    encoder = AutoModel.from_pretrained(str(path / "encoder"))
    tokenizer = AutoTokenizer.from_pretrained(str(path / "encoder"))
    model = ArgumentModel(
        encoder,
        tokenizer,
        labels=conf["labels"],
        scheme=conf.get("scheme", "three-way"),
        max_length=int(conf.get("max_length", 128)),
        dropout=float(conf.get("dropout", 0.1)),
    )
    model.load_state_dict(torch.load(path / HEADS_FILE, map_location="cpu", weights_only=True), strict=False)
    return ArgumentClassifier(model, batch_size=batch_size, device=device)


# --- rows ------------------------------------------------------------------------------------------


def read_rows(path, *, split: str | None = None) -> list[dict]:
    """Rows of one UKP TSV or arguments JSONL file (``TrainerFileError("file:line: reason")``); each keeps its
    ``split`` (``set`` / ``split`` column, aliases val / validation -> dev; empty: none), or ``split`` if given."""
    path = Path(path)
    parse = FILE_SUFFIXES.get(path.suffix.lower())
    if parse is None:
        raise TrainerFileError(
            path, 0, f"unknown format {path.suffix or '(no suffix)'!r}: give a UKP .tsv or a .jsonl file"
        )
    try:
        text = read_text(path)
        parsed = parse(path, text)
        raw = dict(jsonl_objects(path, text_lines(text))) if parse is parse_jsonl else {}
    except ImportFailed as exc:
        raise TrainerFileError(exc.file, exc.line, exc.reason) from None
    if not parsed.sentences:
        raise TrainerFileError(path, 0, "no rows")
    rows = []
    for rec in parsed.sentences:
        row = {"topic": rec.topic, "sentence": rec.text, "label": rec.stance}
        obj = raw.get(rec.line, {})
        value = split if split is not None else (rec.metadata or {}).get("set") or obj.get("split") or obj.get("set")
        if value not in (None, ""):
            name = SPLIT_ALIASES.get(str(value).strip().lower())
            if name is None:
                raise TrainerFileError(path, rec.line, f"unknown split {value!r} (expected train, dev, val or test)")
            row["split"] = name
        rows.append(row)
    return rows


def split_rows(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(train, dev + test tagged ``split: "test"``): rows without a split count as train and every train row is
    kept for training; when there are no dev rows, a stable sentence hash of the train rows gives them."""
    train = [r for r in rows if r.get("split", "train") == "train"]
    dev = [r for r in rows if r.get("split") == "dev"]
    test = [r for r in rows if r.get("split") == "test"]
    if not train:
        raise TrainerError("data: no training rows (every row is dev or test)")
    if not dev:
        train, dev = stable_split(train, key="sentence")
        dev = [dict(r, split="dev") for r in dev]
    return train, dev + test


def rows_from_file(path) -> tuple[list[dict], list[dict]]:
    """``TrainerSpec.rows_from_file``: a UKP TSV / arguments JSONL file, or a folder with ``train`` + ``dev``
    (+ ``test``) files of one of them (see the module docstring)."""
    path = Path(path)
    if path.is_dir():
        files = {}
        for part in ("train", "dev", "test"):
            found = [p for p in sorted(path.iterdir()) if p.stem == part and p.suffix.lower() in FILE_SUFFIXES]
            if found:
                files[part] = found[0]
        if "train" not in files or "dev" not in files:
            raise TrainerFileError(path, 0, "a data folder must hold train and dev files (.tsv or .jsonl)")
        rows = [r for part, f in files.items() for r in read_rows(f, split=part)]
        return split_rows(rows)
    if not path.exists():
        raise TrainerFileError(path, 0, "no such file")
    return split_rows(read_rows(path))


def rows_from_project(project) -> tuple[list[dict], list[dict], int]:
    """``TrainerSpec.rows_from_project``: a ``sentence_label`` project's final labels, split by sentence hash;
    ``n_labels`` = labelled sentences."""
    if project.task_type != "sentence_label":
        raise TrainerError(f"project: {project.slug!r} is a {project.task_type!r} project, not 'sentence_label'")
    task_type = project.get_task_type()
    offered = set(task_type.labels(project))
    responses: dict[int, list[dict]] = {}
    for item_id, data in (
        counted_responses(project, include_models=False).order_by("item_id", "id").values_list("item_id", "data")
    ):
        responses.setdefault(item_id, []).append(data)
    adjudicated = {}
    for item_id, answer in (
        Adjudication.objects.filter(item__project=project)
        .order_by("item_id", "created_at", "id")
        .values_list("item_id", "answer")
    ):
        adjudicated[item_id] = answer  # the latest wins
    rows = []
    items = Item.objects.filter(project=project, is_training=False).select_related("gold").order_by("position", "id")
    for item in items:
        label = (adjudicated.get(item.pk) or {}).get("label")
        if label is None and item.is_gold and hasattr(item, "gold"):
            label = (item.gold.expected or {}).get("label")
        if label is None and responses.get(item.pk):
            agg = task_type.aggregate(project, item, responses[item.pk])
            label = None if agg.get("tied") else agg.get("label")
        payload = item.payload or {}
        if label in offered and isinstance(payload.get("text"), str):
            rows.append(
                {"topic": str(payload.get("topic") or ""), "sentence": payload["text"], "label": label, "item": item.pk}
            )
    train, dev = stable_split(rows, key="sentence")
    return train, dev, len(rows)


# --- silver annotation (ml.silver) -------------------------------------------------------------------


def stance_prediction(model, pred: dict) -> dict:
    """An argument model's ``{"label", "probs"}`` as ``{"stance", "stance_probability", "stance_probs"}`` (labels
    mapped to pro / con / none by the model's own ``stances`` map when it has one)."""
    mapping = getattr(model, "stances", None) or {}
    label = pred.get("label")
    probs = {str(k): float(v) for k, v in (pred.get("probs") or {}).items()}
    stance = mapping.get(label, label if label in STANCE_ORDER else "")
    by_stance: dict = {}
    for k, p in probs.items():
        key = mapping.get(k, k)
        by_stance[key] = by_stance.get(key, 0.0) + p
    return {"stance": stance or "", "stance_probability": probs.get(label), "stance_probs": by_stance}


def silver_predict(model, batch) -> list[dict]:
    """A silver batch (:class:`ml.silver.Batch`): the model gets ``(topic name, sentence)`` pairs; each prediction is
    the stance with its probability (no spans)."""
    out = []
    for pred in model.predict(list(zip(batch.topic_names(), batch.texts))):
        stance = stance_prediction(model, pred)
        out.append({"spans": [], "schemes": {}, "confidence": stance["stance_probability"] or 0.0, **stance})
    return out


def silver_release_row(row: dict, label, sentence) -> dict:
    """A silver release row of an argument run: the predicted stance, the corpus (gold / import) one beside it."""
    return dict(
        row,
        corpus_stance=sentence.stance,
        stance=label.stance,
        stance_probability=label.stance_probability,
        stance_probs=label.stance_probs or {},
    )


register_trainer(
    TrainerSpec(
        kind=KIND,
        train=train,
        load=load,
        primary_metric="f1_macro",
        higher_is_better=True,
        description="argument / stance classification (Stab et al. 2018): (topic, sentence) pair encoder, three-way or "
        "two-step; macro F1 (and per step) on dev, in-topic or leave-one-topic-out",
        rows_from_file=rows_from_file,
        rows_from_project=rows_from_project,
        evaluate=evaluate,
        default_base_model=default_encoder_path,
        data_formats="UKP Sentential Argument Mining TSV (annotation, set) or arguments JSONL (topic, sentence, stance"
        "[, split]), or a folder with train + dev (+ test) files of them",
        silver=SilverSpec(predict=silver_predict, stances=True, release_row=silver_release_row),
    )
)
