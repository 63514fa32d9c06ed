"""Model annotators, the read side: summaries, failures and the agreement report of the dashboard and the CLI
(writes nothing).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from django.conf import settings

from ..agreement.alttest import DEFAULT_EPSILON, MIN_HUMANS, MIN_INSTANCES, AltTestInputError, alt_test
from ..agreement.minimums import MIN_UNITS, mark
from ..agreement.records import build_matrix, load_responses
from ..agreement.table import figures, reliability_data
from ..models import ModelAnnotator, ModelAnswer, ModelAnswerFailure, Project


# --- read side ---------------------------------------------------------------------------------------------------
def summary(annotator: ModelAnnotator) -> dict:
    answers = ModelAnswer.objects.filter(annotator=annotator)
    seconds = list(answers.values_list("seconds", flat=True))
    costs = [c for c in answers.values_list("cost", flat=True) if c is not None]
    return {
        "annotator": annotator.pk,
        "name": annotator.name,
        "kind": annotator.kind,
        "status": annotator.status,
        "answered": answers.count(),
        "failed_items": annotator.failed,
        "failures": ModelAnswerFailure.objects.filter(annotator=annotator).count(),
        "failure_kinds": dict(
            Counter(ModelAnswerFailure.objects.filter(annotator=annotator).values_list("kind", flat=True))
        ),
        "seconds_per_item": (sum(seconds) / len(seconds)) if seconds else None,
        "cost": sum(costs) if costs else None,
        "model_id": model_id(annotator),
    }


def model_id(annotator: ModelAnnotator) -> str:
    """What identifies the model now: ``tagger#12`` or ``llm:<model>@<base url> prompt v3``."""
    opts = annotator.options or {}
    if annotator.kind == ModelAnnotator.Kind.REGISTRY:
        return f"{opts.get('registry_kind')}#{opts.get('version')}"
    return (
        f"llm:{opts.get('model') or settings.ARGORA_LLM_MODEL}@{opts.get('base_url') or settings.ARGORA_LLM_BASE_URL}"
        f" prompt v{annotator.prompt_version}"
    )


def failures(annotator: ModelAnnotator, *, limit: int = 200) -> list[ModelAnswerFailure]:
    return list(
        ModelAnswerFailure.objects.filter(annotator=annotator)
        .select_related("item")
        .order_by("-created_at", "-id")[:limit]
    )


def model_records(annotator: ModelAnnotator) -> list[dict]:
    """The annotator's answers as response records (:func:`annotation.agreement.records.load_responses`' shape)."""
    rows = (
        ModelAnswer.objects.filter(annotator=annotator, item__is_gold=False)
        .order_by("created_at", "id")
        .values_list("item_id", "response__data", "item__payload__topic", "response__assignment_id", "created_at")
    )
    coder = f"worker:{annotator.worker_id}"
    return [
        {
            "item_id": item_id,
            "worker_id": annotator.worker_id,
            "coder": coder,
            "assignment_id": assignment_id,
            "submitted_at": at,
            "data": data or {},
            "topic": "" if topic is None else str(topic),
            "is_expert": False,
        }
        for item_id, data, topic, assignment_id, at in rows
    ]


def _labels_by_coder(rel: dict) -> dict[str, dict[str, Any]]:
    """``{coder: {unit: value}}`` from reliability data (units as text: the alt-test's instances)."""
    out: dict[str, dict[str, Any]] = {}
    for coder, row in zip(rel.get("coders", []), rel.get("matrix") or []):
        out[coder] = {str(u): v for u, v in zip(rel["units"], row) if v is not None}
    return out


def _majority(humans: dict[str, dict[str, Any]]) -> dict[str, Any]:
    votes: dict[str, Counter] = defaultdict(Counter)
    for labels in humans.values():
        for unit, v in labels.items():
            votes[unit][json.dumps(v, sort_keys=True, default=str)] += 1
    out = {}
    for unit, counter in votes.items():
        ranked = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
        if len(ranked) == 1 or ranked[0][1] > ranked[1][1]:  # a strict majority; ties have none
            out[unit] = json.loads(ranked[0][0])
    return out


def _pair_figures(cells: dict, unit_item: dict, level: str) -> dict:
    f = figures(build_matrix(cells, unit_item, level), bootstrap=0)
    return {
        "alpha": f.get("alpha"),
        "kappa": f.get("kappa"),
        "percent_agreement": f.get("percent_agreement"),
        "n_units": f.get("n_units") or 0,
        "mark": mark(f.get("n_units") or 0, MIN_UNITS, "shared units"),
    }


def _scoring(level: str, labels: dict) -> str:
    numeric = all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for row in labels.values() for v in row.values()
    )
    return "neg_rmse" if level in ("interval", "ratio", "ordinal") and numeric else "accuracy"


def annotator_report(
    annotator: ModelAnnotator,
    *,
    humans_records: list[dict] | None = None,
    epsilon: float | None = None,
    min_instances: int | None = None,
) -> dict:
    """The dashboard's (and the CLI's) section of one model annotator: alpha / kappa of the humans with and without
    it, its agreement with each human and with the human majority, and the alt-test (each figure with its n)."""
    project = annotator.project
    humans_records = load_responses(project) if humans_records is None else humans_records
    mine = model_records(annotator)
    out: dict[str, Any] = {
        "annotator": annotator.pk,
        "name": annotator.name,
        "kind": annotator.kind,
        "model_id": model_id(annotator),
        "n_answers": len(mine),
        "n_human_coders": len({r["coder"] for r in humans_records}),
        "problems": [],
    }
    try:
        rel_h = reliability_data(project, humans_records)
        rel_all = reliability_data(project, humans_records + mine)
    except Exception as exc:  # noqa: BLE001 - a task type that cannot read an answer must not break the page
        out["problems"].append(f"the answers could not be read for agreement: {exc}")
        return out
    if rel_h.get("unsupported"):
        out["problems"].append(rel_h["unsupported"])
        return out
    level = rel_all.get("level", "nominal")
    without, with_model = figures(rel_h, bootstrap=0), figures(rel_all, bootstrap=0)
    out["level"] = level
    out["without"] = {k: without.get(k) for k in ("alpha", "kappa", "percent_agreement", "n_units", "n_coders")}
    out["with"] = {k: with_model.get(k) for k in ("alpha", "kappa", "percent_agreement", "n_units", "n_coders")}
    out["without"]["mark"] = mark(without.get("n_units") or 0, MIN_UNITS, "pairable units")
    out["with"]["mark"] = mark(with_model.get("n_units") or 0, MIN_UNITS, "pairable units")

    labels = _labels_by_coder(rel_all)
    model_coder = f"worker:{annotator.worker_id}"
    model = labels.pop(model_coder, {})
    humans = labels
    unit_item = {str(u): i for u, i in zip(rel_all["units"], rel_all["unit_item"])}
    per_human = []
    for coder in sorted(humans):
        cells = {("human", u): v for u, v in humans[coder].items()}
        cells.update({("model", u): v for u, v in model.items()})
        shared = set(humans[coder]) & set(model)
        row = {"coder": coder, "n": len(shared), **_pair_figures(cells, unit_item, level)}
        row["accuracy"] = (sum(1 for u in shared if humans[coder][u] == model[u]) / len(shared)) if shared else None
        per_human.append(row)
    out["per_human"] = per_human
    majority = _majority(humans)
    shared = set(majority) & set(model)
    cells = {("majority", u): v for u, v in majority.items()}
    cells.update({("model", u): v for u, v in model.items()})
    out["majority"] = {
        "n": len(shared),
        **_pair_figures(cells, unit_item, level),
        "accuracy": (sum(1 for u in shared if majority[u] == model[u]) / len(shared)) if shared else None,
    }

    scoring = _scoring(level, humans)
    try:
        result = alt_test(
            humans,
            model,
            scoring=scoring,
            epsilon=DEFAULT_EPSILON if epsilon is None else epsilon,
            min_instances=MIN_INSTANCES if min_instances is None else min_instances,
        )
        out["alt_test"] = result.as_dict()
    except AltTestInputError as exc:
        out["alt_test"] = None
        out["problems"].append(f"alt-test: {exc.field}: {exc.reason}")
    out["minimum"] = (
        f"the alt-test needs at least {MIN_HUMANS} humans, each sharing at least "
        f"{MIN_INSTANCES if min_instances is None else min_instances} instances (annotated by 2+ humans "
        f"and the model) with the model"
    )
    return out


def report(project: Project, *, epsilon: float | None = None, min_instances: int | None = None) -> list[dict]:
    """:func:`annotator_report` of every model annotator of the project that has answers."""
    annotators = list(ModelAnnotator.objects.filter(project=project).order_by("id"))
    if not annotators:
        return []
    humans = load_responses(project)
    return [
        annotator_report(a, humans_records=humans, epsilon=epsilon, min_instances=min_instances) for a in annotators
    ]
