"""Span detection and span grounding metrics (ArgU §3.1.1, Figure 7).

* **Span detection**: F1 between the tokens inside predicted spans and the tokens inside reference (human) spans,
  per example; the paper reports the average over examples (91.1% over 300).
* **Span grounding**: label accuracy -- for every reference span, the predicted span that overlaps it most (in
  tokens) must carry the same variable (``None`` = Others); a reference span no prediction overlaps is wrong.

Figure 7 worked example ("Criminologists [1] familiar with the effects of the DP on crime [2] assert that the DP does
not deter crime [3]"): TP = 10 tokens, FP = 1 ("the"), FN = 2 ("effects", "of"), F1 = 20/23 = 0.87, and label
accuracy 2/3 ("Criminologists" grounded to [2] instead of [1]).

* **Span-level F1** at three levels of overlap (ArgU §3.2.2, Table 1; :func:`span_f1`, also used by the ArgSpan
  trainers' dev metrics): ``partial`` -- a predicted span is a true positive if at least 50% of its tokens lie in a
  reference span; ``full`` -- all of its tokens do; ``exact`` -- same boundaries. A reference span is found (recall)
  if some prediction is a true positive against it. Counts are pooled over the examples. Figure 7's example:
  partial 1.0 (3/3 predicted, 3/3 found), full 2/3 ("the DP does not deter crime" reaches one token outside "DP
  does not deter crime"), exact 1/3.

Spans are dicts ``{"begin", "end" (exclusive), "variable"}`` (the span_grounding response shape) or tuples
``(begin, end[, variable])``. Tokens come from :func:`corpus.tokens.tokenize` (the HIT page's tokens).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from corpus.tokens import tokenize

OUTSIDE = None
SPAN_MODES = ("partial", "full", "exact")


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
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "tp_tokens": [text[tokens[i][0] : tokens[i][1]] for i in sorted(ref & pred)],
        "fp_tokens": [text[tokens[i][0] : tokens[i][1]] for i in sorted(pred - ref)],
        "fn_tokens": [text[tokens[i][0] : tokens[i][1]] for i in sorted(ref - pred)],
    }


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


def _f(p, r):
    return 2 * p * r / (p + r) if p + r else 0.0


def span_f1(gold: Sequence[Sequence[tuple[int, int]]], pred: Sequence[Sequence[tuple[int, int]]], mode: str) -> dict:
    """Span-level P/R/F1 (Table 1) over token-index spans ``(first, last + 1)``, pooled over rows.

    ``mode``: ``partial`` (>= 50 % of the predicted span's tokens inside the gold span), ``full`` (all of them),
    ``exact`` (same boundaries). Nothing predicted and nothing gold anywhere: P = R = F1 = 1.
    """

    def ok(p, g):
        if mode == "exact":
            return p == g
        overlap = max(0, min(p[1], g[1]) - max(p[0], g[0]))
        size = p[1] - p[0]
        return overlap * 2 >= size if mode == "partial" else overlap == size

    n_pred = n_gold = tp = found = 0
    for g_row, p_row in zip(gold, pred):
        n_pred += len(p_row)
        n_gold += len(g_row)
        tp += sum(1 for p in p_row if any(ok(p, g) for g in g_row))
        found += sum(1 for g in g_row if any(ok(p, g) for p in p_row))
    if n_pred == n_gold == 0:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    precision = tp / n_pred if n_pred else 0.0
    recall = found / n_gold if n_gold else 0.0
    return {"precision": precision, "recall": recall, "f1": _f(precision, recall)}


def token_spans(tokens: Sequence[tuple[int, int]], spans: Iterable) -> list[tuple[int, int]]:
    """Character spans -> token-index spans ``(first, last + 1)`` of the tokens they touch (spans touching no token
    are dropped)."""
    out = []
    for span in spans:
        b, e, _ = _as_span(span)
        inside = [i for i, (tb, te) in enumerate(tokens) if tb < e and b < te]
        if inside:
            out.append((inside[0], inside[-1] + 1))
    return sorted(out)


def evaluate_example(text: str, reference: Iterable, predicted: Iterable, *, tokens=None) -> dict:
    reference, predicted = list(reference), list(predicted)
    det = span_detection(text, reference, predicted, tokens=tokens)
    lab = label_accuracy(text, reference, predicted, tokens=tokens)
    return {**det, "label_correct": lab["correct"], "label_total": lab["total"], "label_accuracy": lab["accuracy"]}


def evaluate(examples: Iterable[dict]) -> dict:
    """Corpus figures over ``[{"text", "reference": [...], "predicted": [...]} ...]``.

    ``f1``: the average per-example F1 (the paper's "average score across all examples"); ``micro_f1`` pools the
    token counts; ``label_accuracy``: correct / total over all reference spans; ``n``: examples;
    ``span_<partial|full|exact>_<f1|precision|recall>``: span-level figures (:func:`span_f1`, pooled).
    """
    examples = list(examples)
    rows, gold, pred = [], [], []
    for ex in examples:
        tokens = token_offsets(ex["text"]) if ex.get("tokens") is None else [tuple(t) for t in ex["tokens"]]
        reference, predicted = list(ex.get("reference") or []), list(ex.get("predicted") or [])
        rows.append(evaluate_example(ex["text"], reference, predicted, tokens=tokens))
        gold.append(token_spans(tokens, reference))
        pred.append(token_spans(tokens, predicted))
    n = len(rows)
    tp, fp, fn = (sum(r[k] for r in rows) for k in ("tp", "fp", "fn"))
    correct, total = sum(r["label_correct"] for r in rows), sum(r["label_total"] for r in rows)
    out = {
        "n": n,
        "f1": sum(r["f1"] for r in rows) / n if n else None,
        "micro_f1": (2 * tp / (2 * tp + fp + fn)) if tp + fp + fn else (1.0 if n else None),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "label_correct": correct,
        "label_total": total,
        "label_accuracy": correct / total if total else None,
    }
    for mode in SPAN_MODES:
        r = span_f1(gold, pred, mode) if n else {"f1": None, "precision": None, "recall": None}
        out.update(
            {f"span_{mode}_f1": r["f1"], f"span_{mode}_precision": r["precision"], f"span_{mode}_recall": r["recall"]}
        )
    out["examples"] = rows
    return out
