"""Span detection and span grounding metrics (ArgU §3.1.1, Figure 7).

* **Span detection**: F1 between the tokens inside predicted spans and the tokens inside reference (human) spans,
  per example; the paper reports the average over examples (91.1% over 300).
* **Span grounding**: label accuracy -- for every reference span, the predicted span that overlaps it most (in
  tokens) must carry the same variable (``None`` = Others); a reference span no prediction overlaps is wrong.

Figure 7 worked example ("Criminologists [1] familiar with the effects of the DP on crime [2] assert that the DP does
not deter crime [3]"): TP = 10 tokens, FP = 1 ("the"), FN = 2 ("effects", "of"), F1 = 20/23 = 0.87, and label
accuracy 2/3 ("Criminologists" grounded to [2] instead of [1]).

Spans are dicts ``{"begin", "end" (exclusive), "variable"}`` (the span_grounding response shape) or tuples
``(begin, end[, variable])``. Tokens come from :func:`annotation.aspects.candidates.tokenize` (the HIT page's tokens).
"""
from __future__ import annotations

from typing import Iterable, Sequence

from annotation.aspects.candidates import tokenize

OUTSIDE = None


def token_offsets(text: str) -> list[tuple[int, int]]:
    return [(t.begin, t.end) for t in tokenize(text)]


def _as_span(span) -> tuple[int, int, object]:
    if isinstance(span, dict):
        return int(span["begin"]), int(span["end"]), span.get("variable")
    span = tuple(span)
    return int(span[0]), int(span[1]), (span[2] if len(span) > 2 else None)


def covered_tokens(tokens: Sequence[tuple[int, int]], spans: Iterable) -> dict[int, tuple[int, object]]:
    """``{token index: (span index, variable)}`` for every token that lies inside a span (any character overlap)."""
    out: dict[int, tuple[int, object]] = {}
    for k, span in enumerate(spans):
        b, e, v = _as_span(span)
        for i, (tb, te) in enumerate(tokens):
            if tb < e and b < te:
                out.setdefault(i, (k, v))
    return out


def span_detection(text: str, reference: Iterable, predicted: Iterable, *, tokens=None) -> dict:
    """Token-level TP / FP / FN, precision, recall and F1 of one example. Both sides empty: F1 = 1.0 (they agree)."""
    tokens = token_offsets(text) if tokens is None else [tuple(t) for t in tokens]
    ref = set(covered_tokens(tokens, list(reference)))
    pred = set(covered_tokens(tokens, list(predicted)))
    tp, fp, fn = len(ref & pred), len(pred - ref), len(ref - pred)
    precision = tp / (tp + fp) if tp + fp else (1.0 if not fn else 0.0)
    recall = tp / (tp + fn) if tp + fn else (1.0 if not fp else 0.0)
    f1 = 1.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)
    return {"tp": tp, "fp": fp, "fn": fn, "precision": precision, "recall": recall, "f1": f1,
            "tp_tokens": [text[tokens[i][0]:tokens[i][1]] for i in sorted(ref & pred)],
            "fp_tokens": [text[tokens[i][0]:tokens[i][1]] for i in sorted(pred - ref)],
            "fn_tokens": [text[tokens[i][0]:tokens[i][1]] for i in sorted(ref - pred)]}


def _same_variable(a, b) -> bool:
    norm = lambda v: None if v in (None, "", "other", "others", "Others") else str(v)  # noqa: E731
    return norm(a) == norm(b)


def label_accuracy(text: str, reference: Iterable, predicted: Iterable, *, tokens=None) -> dict:
    """Grounding accuracy of one example: ``{"correct", "total", "accuracy" (None without reference spans)}``."""
    tokens = token_offsets(text) if tokens is None else [tuple(t) for t in tokens]
    ref = [_as_span(s) for s in reference]
    pred = [_as_span(s) for s in predicted]
    pred_cov = covered_tokens(tokens, pred)
    correct = 0
    for b, e, v in ref:
        overlap: dict[int, int] = {}
        for i, (tb, te) in enumerate(tokens):
            if tb < e and b < te and i in pred_cov:
                k = pred_cov[i][0]
                overlap[k] = overlap.get(k, 0) + 1
        if not overlap:
            continue
        best = min(overlap, key=lambda k: (-overlap[k], pred[k][0]))  # most shared tokens; ties: the earlier span
        correct += _same_variable(pred[best][2], v)
    total = len(ref)
    return {"correct": correct, "total": total, "accuracy": correct / total if total else None}


def evaluate_example(text: str, reference: Iterable, predicted: Iterable, *, tokens=None) -> dict:
    reference, predicted = list(reference), list(predicted)
    det = span_detection(text, reference, predicted, tokens=tokens)
    lab = label_accuracy(text, reference, predicted, tokens=tokens)
    return {**det, "label_correct": lab["correct"], "label_total": lab["total"], "label_accuracy": lab["accuracy"]}


def evaluate(examples: Iterable[dict]) -> dict:
    """Corpus figures over ``[{"text", "reference": [...], "predicted": [...]} ...]``.

    ``f1``: the average per-example F1 (the paper's "average score across all examples"); ``micro_f1`` pools the
    token counts; ``label_accuracy``: correct / total over all reference spans; ``n``: examples.
    """
    rows = [evaluate_example(ex["text"], ex.get("reference") or [], ex.get("predicted") or [], tokens=ex.get("tokens"))
            for ex in examples]
    n = len(rows)
    tp, fp, fn = (sum(r[k] for r in rows) for k in ("tp", "fp", "fn"))
    correct, total = sum(r["label_correct"] for r in rows), sum(r["label_total"] for r in rows)
    return {"n": n, "f1": sum(r["f1"] for r in rows) / n if n else None,
            "micro_f1": (2 * tp / (2 * tp + fp + fn)) if tp + fp + fn else (1.0 if n else None),
            "tp": tp, "fp": fp, "fn": fn, "label_correct": correct, "label_total": total,
            "label_accuracy": correct / total if total else None, "examples": rows}
