"""Aggregating the span responses of one item: token majority, then grounding majority.

For ``n`` responses, a token is inside the final answer when at least ``threshold`` responses (default a strict
majority, ``n // 2 + 1``) cover it; its variable is the one most of those responses gave it (ties: the order in
which the item offered its variables, Others last). Consecutive kept tokens with the same variable form one span,
unless more responses start a new span at the second token than continue one across the two.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .metrics import covered_tokens

OTHER = "other"


def _key(variable):
    return OTHER if variable in (None, "", OTHER) else variable


def aggregate_spans(
    text: str,
    tokens: Sequence[Sequence[int]],
    answers: list[list[dict]],
    *,
    variable_order: Sequence[int] = (),
    threshold: int | None = None,
) -> dict:
    """``{"spans": [{"begin", "end", "variable", "text", "votes"}], "n": n, "threshold": t}``."""
    tokens = [tuple(t) for t in tokens]
    n = len(answers)
    need = threshold if threshold is not None else n // 2 + 1
    order = {v: i for i, v in enumerate(variable_order)}
    covers = [covered_tokens(tokens, spans) for spans in answers]
    labels: list[object] = []
    votes: list[int] = []
    for i in range(len(tokens)):
        c = Counter(_key(cov[i][1]) for cov in covers if i in cov)
        inside = sum(c.values())
        if n and inside >= need:
            label = min(c, key=lambda v: (-c[v], v == OTHER, order.get(v, len(order)), str(v)))
            labels.append(label)
            votes.append(c[label])
        else:
            labels.append(None)
            votes.append(0)
    spans: list[dict] = []
    current = None
    for i, label in enumerate(labels):
        if label is None:
            current = None
            continue
        if current is not None and current["variable"] == label and labels[i - 1] == label:
            same = sum(1 for cov in covers if i in cov and i - 1 in cov and cov[i][0] == cov[i - 1][0])
            starts = sum(1 for cov in covers if i in cov and (i - 1 not in cov or cov[i][0] != cov[i - 1][0]))
            if same >= starts:
                current["end"] = tokens[i][1]
                current["votes"] = min(current["votes"], votes[i])
                continue
        current = {"begin": tokens[i][0], "end": tokens[i][1], "variable": label, "votes": votes[i]}
        spans.append(current)
    out = []
    for s in spans:
        out.append(
            {
                "begin": s["begin"],
                "end": s["end"],
                "variable": None if s["variable"] == OTHER else s["variable"],
                "text": text[s["begin"] : s["end"]],
                "votes": s["votes"],
            }
        )
    return {"spans": out, "n": n, "threshold": need}
