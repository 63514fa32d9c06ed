"""The model's confidence per item, for the ``uncertainty`` item order (the ``item_confidence`` provider slot of
:mod:`annotation.providers`, filled in :meth:`ml.apps.MlConfig.ready`).

Which model: the active registry version (the project's, else the global one) of the kind that answers the
project's task type -- ``tagger`` for aspect projects (the mean probability of its word tags), ``valnov`` for
validity/novelty projects (the mean of ``max(p, 1 - p)`` over validity and novelty: how far from undecided),
``argument`` for sentence_label projects (the probability of its most probable class). Items a
model annotator of the project already answered with a confidence (``ModelAnswer.confidence``) use that stored
figure instead of running a model again. ``None`` when no model can answer the task type: the order falls back to
random and says so.
"""

from __future__ import annotations

from annotation.models import Item, ModelAnswer

from . import registry

KIND_FOR_TASK_TYPE = {"aspect": "tagger", "validity_novelty": "valnov", "sentence_label": "argument"}
BATCH = 64


def _model_confidence(version, items: list) -> dict[int, float]:
    model = registry.load_model(version)
    out: dict[int, float] = {}
    for start in range(0, len(items), BATCH):
        chunk = items[start : start + BATCH]
        if version.kind == "tagger":
            preds = model.predict([(it.payload or {}).get("text", "") for it in chunk])
            for it, pred in zip(chunk, preds):
                conf = pred.get("confidence")
                if conf is not None:
                    out[it.pk] = float(conf)
        elif version.kind == "argument":
            preds = model.predict(
                [((it.payload or {}).get("topic", ""), (it.payload or {}).get("text", "")) for it in chunk]
            )
            for it, pred in zip(chunk, preds):
                if pred.get("probs"):
                    out[it.pk] = max(pred["probs"].values())
        else:  # valnov
            probs = model.predict(
                [((it.payload or {}).get("premise", ""), (it.payload or {}).get("conclusion", "")) for it in chunk]
            )
            for it, (v, n) in zip(chunk, probs):
                out[it.pk] = (max(v, 1 - v) + max(n, 1 - n)) / 2
    return out


def item_confidence(project, item_ids) -> dict[int, float] | None:
    ids = list(item_ids)
    stored: dict[int, list[float]] = {}
    for item_id, conf in ModelAnswer.objects.filter(
        annotator__project=project, item_id__in=ids, confidence__isnull=False
    ).values_list("item_id", "confidence"):
        stored.setdefault(item_id, []).append(conf)
    out = {i: min(c) for i, c in stored.items()}
    kind = KIND_FOR_TASK_TYPE.get(project.task_type)
    version = registry.active_version(kind, project) if kind else None
    missing = [i for i in ids if i not in out]
    if version is not None and missing:
        items = list(Item.objects.filter(pk__in=missing).only("pk", "payload"))
        out.update(_model_confidence(version, items))
    return out or None
