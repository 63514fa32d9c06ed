"""The model side of model annotators (:mod:`annotation.model_annotators`): the providers ``model_answerer`` and
``model_catalogue`` that :class:`ml.apps.MlConfig` puts in :mod:`annotation.providers`.

:func:`answer` gives one answer dict per item (the shape :mod:`annotation.model_annotators` documents):

- an LLM annotator: one chat completion per item with the annotator's current prompt (:mod:`ml.llm`);
- a registry annotator: its pinned model version (``options["version"]``) over the whole batch --
  ``tagger`` (aspect projects): the predicted spans as the item's aspect ids (``begin:length``), or "no aspect"
  (with the item's attention sum) when it finds none, confidence = the mean probability of its word tags;
  ``valnov`` (validity / novelty projects): each probability against the model's threshold as ``yes`` / ``no``,
  confidence = the mean of ``max(p, 1 - p)`` over the two dimensions;
  ``crossencoder`` / ``biencoder`` / ``augsbert`` (BWS similarity projects): every pair of the 4-tuple scored, the
  highest as ``best`` and the lowest as ``worst``, confidence = the gap between the two scores;
  ``argspan`` / ``argspanscheme`` (span grounding projects): the predicted factual spans grounded to one of the
  item's KB variables or to Others, confidence = their mean tag probability;
  ``argument`` (sentence_label projects): the most probable class of ``(topic, text)`` as the project's label
  (``pro`` -> ``Argument_for`` when the project names its stances so), confidence = its probability.

The answers are not trusted here: the annotation side validates them like a human's.
"""

from __future__ import annotations

import time

from annotation.model_annotators import model_id, render_prompt
from annotation.models import ModelAnnotator
from corpus.importers.parsers import STANCES

from . import llm, registry
from .models import ModelVersion
from .similarity import models as sim_models

# registry kinds that answer each task type (what :func:`answer` turns into the task type's answer)
ANSWERING_KINDS = {
    "aspect": ("tagger",),
    "validity_novelty": ("valnov",),
    "bws_similarity": ("crossencoder", "biencoder", "augsbert"),
    "span_grounding": ("argspan", "argspanscheme"),
    "sentence_label": ("argument",),
}
SIMILARITY_KINDS = ("crossencoder", "biencoder", "augsbert")

# the prompt an LLM annotator starts with per task type ($name placeholders: annotation.model_annotators.prompt_context)
# and the answer format it is told ($format)
ANSWER_FORMATS = {
    "sentence_label": '{"label": "<one of: $labels>"}',
    "aspect": '{"aspects": ["<begin>:<length>", ...]} with candidate ids from the list; when no candidate is an '
    'aspect: {"aspects": [], "no_aspect": true, "check": "<the answer to: $check_question>"}',
    "validity_novelty": '{"validity": "yes" | "no" | "dont_know", "novelty": "yes" | "no" | "dont_know"}',
    "bws_similarity": '{"best": "<id of the most similar pair>", "worst": "<id of the least similar pair>"}',
}
DEFAULT_PROMPTS = {
    "sentence_label": (
        "You annotate arguments. Topic: $topic\nSentence: $text\n\n"
        "Which label fits the sentence best? Labels: $labels\n"
        "Answer with one JSON object and nothing else: $format\n"
    ),
    "aspect": (
        "You mark the aspects of an argument: the phrases naming what the argument is about.\n"
        "Topic: $topic\nSentence: $text\nCandidates (id: phrase):\n$candidates\n\n"
        "Answer with one JSON object and nothing else: $format\n"
    ),
    "validity_novelty": (
        "Topic: $topic\nPremise: $premise\nConclusion: $conclusion\n\n"
        "Is the conclusion valid (justified by the premise)? Is it novel (does it say more than the "
        "premise)? Answer with one JSON object and nothing else: $format\n"
    ),
    "bws_similarity": (
        "Topic: $topic\nEach pair below holds two arguments (JSON: pairs with id, a, b):\n$item_json\n\n"
        "Which pair's two arguments are the most similar (they say the same or cover the same aspect), "
        "and which pair's are the least similar? Answer with one JSON object and nothing else: "
        "$format\n"
    ),
}


def prompt_defaults(project) -> dict:
    """``{"template", "format"}`` for an LLM annotator of ``project`` (empty for a task type without one: the
    annotation side's generic prompt)."""
    out = {}
    if project.task_type in DEFAULT_PROMPTS:
        out["template"] = DEFAULT_PROMPTS[project.task_type]
    if project.task_type in ANSWER_FORMATS:
        out["format"] = ANSWER_FORMATS[project.task_type]
    return out


def catalogue(project) -> list[dict]:
    """Ready versions of the kinds that answer the project's task type, of this project or global, newest first."""
    kinds = ANSWERING_KINDS.get(project.task_type, ())
    if not kinds:
        return []
    rows = ModelVersion.objects.filter(status=ModelVersion.Status.READY, kind__in=kinds).filter(
        project__isnull=True
    ) | ModelVersion.objects.filter(status=ModelVersion.Status.READY, kind__in=kinds, project=project)
    out = []
    for v in rows.order_by("-created_at", "-id"):
        primary = v.primary_metric
        label = (
            f"{v.kind} #{v.pk}"
            + (" (active)" if v.is_active else "")
            + (f", dev {v.metrics.get('primary_metric', 'metric')} {primary:.3f}" if primary is not None else "")
            + (" [global]" if v.project_id is None else "")
        )
        out.append({"kind": v.kind, "version": v.pk, "label": label})
    return out


def answer(annotator: ModelAnnotator, items: list) -> list[dict]:
    if annotator.kind == ModelAnnotator.Kind.LLM:
        return _llm_answers(annotator, items)
    return _registry_answers(annotator, items)


def _llm_answers(annotator, items) -> list[dict]:
    ep = llm.endpoint(annotator.options)
    out = []
    for item in items:
        got = llm.answer_item(ep, render_prompt(annotator, item))
        out.append({"item": item.pk, "prompt_version": annotator.prompt_version, **got})
    return out


def _registry_answers(annotator, items) -> list[dict]:
    opts = annotator.options or {}
    version = ModelVersion.objects.get(pk=int(opts["version"]))
    model = registry.load_model(version)
    began = time.monotonic()
    if version.kind == "tagger":
        answers = [
            _tagger_answer(item, pred)
            for item, pred in zip(items, model.predict([(item.payload or {}).get("text", "") for item in items]))
        ]
    elif version.kind == "valnov":
        probs = model.predict(
            [((item.payload or {}).get("premise", ""), (item.payload or {}).get("conclusion", "")) for item in items]
        )
        threshold = float(getattr(model, "threshold", 0.5))
        answers = [
            {
                "data": {"validity": "yes" if v >= threshold else "no", "novelty": "yes" if n >= threshold else "no"},
                "confidence": (max(v, 1 - v) + max(n, 1 - n)) / 2,
                "raw": f'{{"validity": {v:.4f}, "novelty": {n:.4f}}}',
            }
            for v, n in probs
        ]
    elif version.kind in SIMILARITY_KINDS:
        answers = _bws_answers(model, items)
    elif version.kind in ("argspan", "argspanscheme"):
        preds = model.predict(
            [(item.payload or {}).get("text", "") for item in items],
            [[v for v in (item.payload or {}).get("variables") or [] if isinstance(v, dict)] for item in items],
        )
        answers = [_span_answer(pred) for pred in preds]
    elif version.kind == "argument":
        offered = annotator.project.get_task_type().labels(annotator.project)
        preds = model.predict(
            [((item.payload or {}).get("topic", ""), (item.payload or {}).get("text", "")) for item in items]
        )
        answers = [_argument_answer(pred, offered) for pred in preds]
    else:
        raise ValueError(f"a {version.kind!r} model does not answer items")
    per_item = (time.monotonic() - began) / max(1, len(items))
    ident = model_id(annotator)
    return [
        {
            "item": item.pk,
            "failure": "",
            "error": "",
            "seconds": per_item,
            "model_id": ident,
            "prompt_version": None,
            **a,
        }
        for item, a in zip(items, answers)
    ]


def _tagger_answer(item, pred: dict) -> dict:
    spans = pred.get("spans") or []
    raw = ", ".join(f"{s['begin']}:{s['end'] - s['begin']} {s.get('text', '')!r}" for s in spans) or "(no span)"
    if spans:
        data = {"aspects": [f"{s['begin']}:{s['end'] - s['begin']}" for s in spans]}
    else:
        check = (item.payload or {}).get("check") or {}
        data = {"aspects": [], "no_aspect": True}
        if "a" in check and "b" in check:
            data["check"] = str(int(check["a"]) + int(check["b"]))
    return {"data": data, "confidence": float(pred.get("confidence") or 0.0) or None, "raw": raw}


def project_label(label: str, offered) -> str:
    """The project's label for a predicted ``label``: itself when the project offers it, else the one offered label
    of the same stance (``pro`` -> ``Argument_for``, :data:`corpus.importers.parsers.STANCES`); otherwise ``label``
    unchanged (the task type's validation then refuses it)."""
    if label in offered:
        return label
    stance = STANCES.get(str(label).strip().lower())
    same = [o for o in offered if stance is not None and STANCES.get(str(o).strip().lower()) == stance]
    return same[0] if len(same) == 1 else label


def _argument_answer(pred: dict, offered: list[str]) -> dict:
    """An ``argument`` model's answer: the most probable class as the project names it (:func:`project_label`),
    confidence = its probability."""
    probs = pred.get("probs") or {}
    return {
        "data": {"label": project_label(pred["label"], offered)},
        "confidence": max(probs.values()) if probs else None,
        "raw": ", ".join(f"{label}: {p:.4f}" for label, p in probs.items()),
    }


def _bws_answers(model, items) -> list[dict]:
    """Best-Worst Scaling choices from a similarity model (AugSBERT §4): every pair of a 4-tuple scored (the
    cross-encoder's sigmoid, a bi-encoder's cosine) in one batch; best = the highest score, worst = the lowest.
    Confidence: the gap between them (0 when the model cannot tell the pairs apart)."""
    pairs = [[p for p in (item.payload or {}).get("pairs") or [] if isinstance(p, dict)] for item in items]
    scores = sim_models.predict(model, [(p.get("a", ""), p.get("b", "")) for ps in pairs for p in ps]).tolist()
    out, at = [], 0
    for ps in pairs:
        mine, at = scores[at : at + len(ps)], at + len(ps)
        if len(ps) < 2:
            out.append({"data": {}, "confidence": None, "raw": "(fewer than two pairs)"})
            continue
        order = sorted(range(len(ps)), key=lambda k: mine[k])
        best, worst = ps[order[-1]], ps[order[0]]
        out.append(
            {
                "data": {"best": str(best.get("id")), "worst": str(worst.get("id"))},
                "confidence": max(0.0, min(1.0, float(mine[order[-1]] - mine[order[0]]))),
                "raw": ", ".join(f"{p.get('id')}: {s:.4f}" for p, s in zip(ps, mine)),
            }
        )
    return out


def _span_answer(pred: dict) -> dict:
    spans = pred.get("spans") or []
    confidences = [float(s["confidence"]) for s in spans if s.get("confidence") is not None]
    return {
        "data": {
            "spans": [{"begin": int(s["begin"]), "end": int(s["end"]), "variable": s.get("variable")} for s in spans]
        },
        "confidence": sum(confidences) / len(confidences) if confidences else None,
        "raw": ", ".join(f"{s['begin']}:{s['end']}->{s.get('variable')}" for s in spans) or "(no span)",
    }
