"""KB normalisation (ArgU §3.2.4, Figure 9): map factual spans to the fact KB, or propose new variables.

1. **Direct mapping**: a span whose sentence-embedding cosine to its most similar KB variable of the topic is
   ``>= threshold`` (0.85, the paper's) is mapped to that variable.
2. **Indirect mapping**: the spans are clustered with sentence-transformers' community detection
   (``cluster_threshold``, default 0.75); a span left unmapped by step 1 takes the variable of its nearest
   directly-mapped neighbour in its community.
3. Communities with no mapped member are new knowledge: one **proposed** ``FactVariable`` (status ``pending``,
   origin ``proposed``) per community, its text the community's central span, for an expert to accept, merge into an
   existing variable or reject (:mod:`annotation.task_types.span_grounding.review`).

:func:`normalise_spans` is the pure step (texts + KB in, mapping out; the encoder is a parameter, so tests can
use any). :func:`normalise_project` runs it over the spans a ``span_grounding`` project grounded to Others,
per topic, creates the proposals, stores one :class:`annotation.task_types.span_grounding.models.SpanNormalisation` row per span
(replacing the project's earlier rows: the variable, ``direct`` / ``indirect``, the proposal of an unmapped span)
and writes the same to ``ARTIFACT_ROOT/spans/<slug>/normalisation.json``. Accepting or merging a proposal re-points
its spans (``new`` / ``merged``); the export (:mod:`annotation.task_types.span_grounding.export`) emits the mapped variable ids.
:func:`normalise_pending` maps already pending proposals onto the active KB and stores the suggestion in
``FactVariable.metadata["normalisation"]`` (what the review page preselects). Both are idempotent.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import transaction

from annotation import providers
from annotation.models import Item
from annotation.selectors import item_responses
from annotation.task_types.span_grounding.models import SpanNormalisation
from argora.progress import null_progress
from corpus.hashing import fact_hash
from corpus.models import FactVariable, Topic

DIRECT_THRESHOLD = 0.85
CLUSTER_THRESHOLD = 0.75


def _encode(texts, encoder):
    if encoder is None:
        encoder = providers.encode
    emb = np.asarray(encoder(list(texts)), dtype=np.float32)
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    return emb / np.where(norms == 0, 1, norms)


def communities(emb: np.ndarray, threshold: float) -> list[list[int]]:
    """Community detection over the rows of ``emb``; every row ends in exactly one community."""
    if len(emb) == 0:
        return []
    from sentence_transformers.util import community_detection

    found = community_detection(emb, threshold=threshold, min_community_size=1)
    seen = {i for c in found for i in c}
    found = [list(map(int, c)) for c in found] + [[i] for i in range(len(emb)) if i not in seen]
    return found


def normalise_spans(
    spans: Sequence[str],
    kb: Sequence[tuple[int, str]],
    *,
    threshold: float = DIRECT_THRESHOLD,
    cluster_threshold: float = CLUSTER_THRESHOLD,
    encoder: Callable | None = None,
) -> dict:
    """Map span texts onto KB variables ``[(id, text), ...]``.

    Returns ``{"spans": [{"text", "variable": id | None, "method": "direct" | "indirect" | None, "score",
    "community"}], "communities": [[span index, ...]], "new": [{"community", "text" (central span), "members"}]}``.
    ``score``: the cosine to the variable's text (direct) or to the neighbour it was mapped through (indirect).
    """
    spans = list(spans)
    if not spans:
        return {"spans": [], "communities": [], "new": []}
    kb = list(kb)
    emb = _encode(spans + [t for _, t in kb], encoder)
    s_emb, k_emb = emb[: len(spans)], emb[len(spans) :]
    out = [{"text": t, "variable": None, "method": None, "score": None, "community": None} for t in spans]
    if len(kb):
        sims = s_emb @ k_emb.T
        best = sims.argmax(axis=1)
        for i, j in enumerate(best):
            if sims[i, j] >= threshold - 1e-6:
                out[i].update(variable=kb[int(j)][0], method="direct", score=round(float(sims[i, j]), 6))
    comms = communities(s_emb, cluster_threshold)
    new = []
    for c_index, members in enumerate(comms):
        for i in members:
            out[i]["community"] = c_index
        mapped = [i for i in members if out[i]["method"] == "direct"]
        for i in members:
            if out[i]["method"] is not None or not mapped:
                continue
            nearest = max(mapped, key=lambda m: (float(s_emb[i] @ s_emb[m]), -m))
            out[i].update(
                variable=out[nearest]["variable"], method="indirect", score=round(float(s_emb[i] @ s_emb[nearest]), 6)
            )
        if not mapped:
            new.append({"community": c_index, "text": spans[members[0]], "members": members})
    return {"spans": out, "communities": comms, "new": new}


def others_spans(project) -> list[dict]:
    """The spans of a span_grounding project grounded to Others: from each item's aggregate when it has
    responses, else from its suggestions. ``[{"item", "topic", "begin", "end", "text"}]``."""
    tt = project.get_task_type()
    responses = item_responses(project)
    out = []
    for item in Item.objects.filter(project=project, is_gold=False).order_by("position", "id"):
        payload = item.payload or {}
        got = responses.get(item.pk)
        spans = tt.aggregate(project, item, got)["spans"] if got else (payload.get("suggestions") or [])
        text = payload.get("text", "")
        for s in spans:
            if s.get("variable") is None:
                out.append(
                    {
                        "item": item.pk,
                        "topic": payload.get("topic", ""),
                        "begin": s["begin"],
                        "end": s["end"],
                        "text": text[s["begin"] : s["end"]],
                    }
                )
    return out


def artifact_path(project) -> Path:
    return Path(settings.ARTIFACT_ROOT) / "spans" / project.slug / "normalisation.json"


def normalise_project(
    project,
    *,
    threshold: float = DIRECT_THRESHOLD,
    cluster_threshold: float = CLUSTER_THRESHOLD,
    encoder: Callable | None = None,
    propose: bool = True,
    progress=null_progress,
) -> dict:
    """Normalise the Others spans of ``project`` per topic; propose new variables; write the JSON artifact.

    Returns ``{"spans": n, "direct": n, "indirect": n, "unmapped": n, "proposed": n created, "path"}``.
    """
    spans = others_spans(project)
    by_topic: dict[str, list[dict]] = defaultdict(list)
    for s in spans:
        by_topic[s["topic"]].append(s)
    result_spans: list[dict] = []
    proposals: list[tuple[str, dict, list[dict]]] = []
    topics = sorted(by_topic)
    for n, topic in enumerate(topics):
        progress(n, len(topics), f"normalising {topic}")
        t = Topic.objects.filter(name__iexact=topic).first()
        kb = (
            list(
                FactVariable.objects.filter(topic=t, status=FactVariable.Status.ACTIVE)
                .order_by("id")
                .values_list("id", "text")
            )
            if t
            else []
        )
        res = normalise_spans(
            [s["text"] for s in by_topic[topic]],
            kb,
            threshold=threshold,
            cluster_threshold=cluster_threshold,
            encoder=encoder,
        )
        for s, r in zip(by_topic[topic], res["spans"]):
            result_spans.append(
                {
                    **s,
                    "variable": r["variable"],
                    "method": r["method"],
                    "score": r["score"],
                    "community": f"{topic}:{r['community']}",
                }
            )
        for c in res["new"]:
            proposals.append((topic, c, [by_topic[topic][i] for i in c["members"]]))
    progress(len(topics), len(topics), "normalised")
    created = 0
    proposal_of: dict[str, object] = {}  # community key -> its proposed FactVariable
    with transaction.atomic():
        if propose:
            for topic, c, members in proposals:
                t = Topic.objects.filter(name__iexact=topic).first()
                if t is None:
                    continue
                digest = fact_hash(t.name, c["text"])
                meta = {
                    "source": f"normalisation:{project.slug}",
                    "community_size": len(members),
                    "spans": [
                        {"item": m["item"], "begin": m["begin"], "end": m["end"], "text": m["text"]}
                        for m in members[:50]
                    ],
                }
                variable, made = FactVariable.objects.get_or_create(
                    content_hash=digest,
                    defaults={
                        "topic": t,
                        "text": c["text"],
                        "metadata": meta,
                        "origin": FactVariable.Origin.PROPOSED,
                        "status": FactVariable.Status.PENDING,
                    },
                )
                created += made
                proposal_of[f"{topic}:{c['community']}"] = variable
        for m in result_spans:
            proposal = proposal_of.get(m["community"]) if m["method"] is None else None
            m["proposal"] = proposal.pk if proposal is not None else None
        store_mapping(project, result_spans, proposal_of)
    summary = {
        "project": project.slug,
        "threshold": threshold,
        "cluster_threshold": cluster_threshold,
        "spans": len(result_spans),
        "direct": sum(r["method"] == "direct" for r in result_spans),
        "indirect": sum(r["method"] == "indirect" for r in result_spans),
        "unmapped": sum(r["method"] is None for r in result_spans),
        "proposed": created,
    }
    path = artifact_path(project)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps({**summary, "mapping": result_spans}, indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
    return {**summary, "path": str(path)}


def proposal_mapping(proposal) -> tuple[int | None, str]:
    """``(variable id, method)`` a span of ``proposal``'s community maps to, given the proposal's review state:
    accepted -> itself (``new``), merged -> its target (``merged``), pending / rejected -> unmapped."""
    if proposal is None:
        return None, ""
    if proposal.status == FactVariable.Status.ACTIVE:
        return proposal.pk, "new"
    if proposal.status == FactVariable.Status.MERGED and proposal.merged_into_id:
        return proposal.merged_into_id, "merged"
    return None, ""


def store_mapping(project, mapping: list[dict], proposal_of: dict) -> int:
    """Replace the :class:`~annotation.task_types.span_grounding.models.SpanNormalisation` rows of ``project`` with ``mapping``
    (:func:`normalise_project`'s per-span results; ``proposal_of``: community key -> proposed FactVariable).
    Call inside a transaction. Returns the number of rows."""
    SpanNormalisation.objects.filter(item__project=project).delete()
    rows, seen = [], set()
    for m in mapping:
        key = (m["item"], m["begin"], m["end"])
        if key in seen:
            continue
        seen.add(key)
        proposal = proposal_of.get(m["community"]) if m["method"] is None else None
        variable, method = (m["variable"], m["method"]) if m["method"] else proposal_mapping(proposal)
        rows.append(
            SpanNormalisation(
                item_id=m["item"],
                begin=m["begin"],
                end=m["end"],
                text=m["text"],
                variable_id=variable,
                method=method,
                proposal=proposal,
                score=m["score"] if m["method"] else None,
                community=m["community"][:300],
            )
        )
    SpanNormalisation.objects.bulk_create(rows, batch_size=500)
    return len(rows)


def normalise_pending(
    topic=None,
    *,
    threshold: float = DIRECT_THRESHOLD,
    cluster_threshold: float = CLUSTER_THRESHOLD,
    encoder: Callable | None = None,
    progress=null_progress,
) -> dict:
    """Map the pending proposed variables (of ``topic`` or all topics) onto the active KB of their topic and store
    ``metadata["normalisation"] = {"action": "merge" | "accept", "into": id | None, "method", "score",
    "community"}`` -- a suggestion for the expert, nothing is merged here. Returns counts."""
    qs = FactVariable.objects.filter(status=FactVariable.Status.PENDING).select_related("topic")
    if topic is not None:
        qs = qs.filter(topic=topic)
    pending: dict[int, list] = defaultdict(list)
    for v in qs.order_by("id"):
        pending[v.topic_id].append(v)
    counts = {"pending": 0, "merge": 0, "accept": 0}
    for n, (topic_id, rows) in enumerate(sorted(pending.items())):
        progress(n, len(pending), "normalising proposals")
        kb = list(
            FactVariable.objects.filter(topic_id=topic_id, status=FactVariable.Status.ACTIVE)
            .order_by("id")
            .values_list("id", "text")
        )
        res = normalise_spans(
            [v.text for v in rows], kb, threshold=threshold, cluster_threshold=cluster_threshold, encoder=encoder
        )
        with transaction.atomic():
            for v, r in zip(rows, res["spans"]):
                action = "merge" if r["variable"] is not None else "accept"
                v.metadata = {
                    **(v.metadata or {}),
                    "normalisation": {
                        "action": action,
                        "into": r["variable"],
                        "method": r["method"],
                        "score": r["score"],
                        "community": r["community"],
                    },
                }
                v.save(update_fields=["metadata"])
                counts["pending"] += 1
                counts[action] += 1
    progress(len(pending), len(pending), "done")
    return counts
