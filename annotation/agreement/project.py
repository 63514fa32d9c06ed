"""Per-project agreement figures (issue 5, part 2): what ``manage.py agreement project <slug>``, the dashboards and the
``annotation.recompute_agreement`` task show.

The flow is plain functions over plain data:

1. :func:`load_responses` reads the submitted / approved responses of a project's non-gold items, in submission order;
2. :func:`reliability_data` asks the task type for its reliability data -- a coders x units matrix (``"matrix"``,
   with ``"level"``, ``"coders"``, ``"units"``, ``"unit_item"``) and, for span tasks, unitized data
   (``"unitized"``: ``spans``, ``items``, ``coders``) for Krippendorff's alpha_u. Task types either implement
   :meth:`annotation.task_types.base.TaskType.reliability_data` or are registered here with
   :func:`register_reliability` (``sentence_label`` and ``aspect`` are, so their modules stay untouched);
3. :func:`figures` turns one reliability data set into the coefficients (alpha with a bootstrap CI, percent
   agreement, Cohen's kappa averaged over coder pairs, Fleiss' kappa, n_units, n_coders) using
   :mod:`annotation.agreement`; a coefficient that is undefined on the data is ``None`` with a ``reasons`` entry;
4. :func:`project_table` assembles the whole table: overall, by topic, crowd vs expert, per worker, per item, over
   time; :func:`store_snapshots` keeps it as :class:`annotation.models.AgreementSnapshot` rows.

Coders are named ``"worker:<Worker id>"`` everywhere (the convention of :mod:`annotation.aspects.unitized`).
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any, Callable

from . import (AgreementError, alpha_report, bootstrap_alpha, crowd_competence, fleiss_kappa, gold_accuracy,
               loo_majority_agreement, pairwise_cohen_kappa, percent_agreement, unitized_alpha)

BOOTSTRAP = 500          # resamples for the CI of alpha (seeded: the same data gives the same CI)
BOOTSTRAP_SEED = 0
OVER_TIME_POINTS = 10    # points of the "agreement over submission order" series
SNAPSHOT_SCOPES_KEPT = 20

_RELIABILITY: dict[str, Callable[[Any, list[dict]], dict]] = {}


def register_reliability(task_type_name: str):
    """Register ``fn(project, records) -> reliability data`` for a task type (decorator)."""

    def deco(fn):
        _RELIABILITY[task_type_name] = fn
        return fn

    return deco


def coder_name(worker_id: int) -> str:
    return f"worker:{worker_id}"


# --- 1. responses -------------------------------------------------------------------------------
def load_responses(project) -> list[dict]:
    """Submitted/approved responses to non-gold items, oldest submission first.

    Each record: ``item_id, worker_id, coder, assignment_id, submitted_at, data, topic, is_expert``.
    """
    from annotation.models import Assignment, Response

    from ..selectors import user_is_expert

    rows = (Response.objects.filter(assignment__project=project, assignment__status__in=Assignment.DONE,
                                    item__is_gold=False)
            .select_related("assignment__worker__user", "item")
            .order_by("assignment__submitted_at", "assignment_id", "item__position", "item_id"))
    experts: dict[int, bool] = {}
    out = []
    for r in rows:
        worker = r.assignment.worker
        if worker.pk not in experts:
            experts[worker.pk] = bool(worker.user_id) and user_is_expert(worker.user)
        out.append({"item_id": r.item_id, "worker_id": worker.pk, "coder": coder_name(worker.pk),
                    "assignment_id": r.assignment_id, "submitted_at": r.assignment.submitted_at,
                    "data": r.data or {}, "topic": str((r.item.payload or {}).get("topic") or ""),
                    "is_expert": experts[worker.pk]})
    return out


# --- 2. reliability data per task type -------------------------------------------------------------
def reliability_data(project, records: list[dict]) -> dict:
    """The task type's reliability data for ``records`` (see the module docstring)."""
    tt = project.get_task_type()
    fn = _RELIABILITY.get(tt.name)
    if fn is not None:
        return fn(project, records)
    return tt.reliability_data(project, records)


def _matrix(cells: dict[tuple[str, Any], Any], unit_item: dict[Any, int], level: str) -> dict:
    coders = sorted({c for c, _ in cells}, key=_coder_key)
    units = sorted(unit_item, key=lambda u: (unit_item[u], str(u)))
    ci = {c: i for i, c in enumerate(coders)}
    ui = {u: j for j, u in enumerate(units)}
    M: list[list[Any]] = [[None] * len(units) for _ in coders]
    for (c, u), v in cells.items():
        M[ci[c]][ui[u]] = v
    return {"level": level, "coders": coders, "units": units, "unit_item": [unit_item[u] for u in units],
            "matrix": M}


def _coder_key(c: str):
    head, _, tail = str(c).partition(":")
    return (head, int(tail)) if tail.isdigit() else (head, 0, tail)


@register_reliability("sentence_label")
def sentence_label_reliability(project, records: list[dict]) -> dict:
    """Nominal: one unit per item, the coder's label (a coder's later answer to the same item wins)."""
    cells: dict[tuple[str, Any], Any] = {}
    unit_item: dict[Any, int] = {}
    for r in records:
        label = r["data"].get("label")
        if label in (None, ""):
            continue
        cells[(r["coder"], r["item_id"])] = str(label)
        unit_item[r["item_id"]] = r["item_id"]
    return _matrix(cells, unit_item, "nominal")


@register_reliability("aspect")
def aspect_reliability(project, records: list[dict]) -> dict:
    """Spans: alpha_u over the per-annotator spans of :mod:`annotation.aspects.unitized` (when it is there), and a
    binary nominal matrix for the other coefficients: one unit per (item, span chosen by anyone), 1 when the coder
    chose the span, 0 when the coder answered the item without it."""
    answered: dict[int, set[str]] = defaultdict(set)
    chosen: dict[int, set[tuple[int, int]]] = defaultdict(set)
    by_coder: dict[tuple[str, int], set[tuple[int, int]]] = {}
    for r in records:
        spans = {(int(a["begin"]), int(a["length"])) for a in (r["data"].get("aspects") or [])
                 if isinstance(a, dict) and "begin" in a and "length" in a}
        answered[r["item_id"]].add(r["coder"])
        chosen[r["item_id"]] |= spans
        by_coder[(r["coder"], r["item_id"])] = spans
    cells: dict[tuple[str, Any], Any] = {}
    unit_item: dict[Any, int] = {}
    for item_id, spans in chosen.items():
        for span in spans:
            unit = f"{item_id}:{span[0]}:{span[1]}"
            unit_item[unit] = item_id
            for coder in answered[item_id]:
                cells[(coder, unit)] = "1" if span in by_coder[(coder, item_id)] else "0"
    out = _matrix(cells, unit_item, "nominal")
    out["answered"] = {item_id: sorted(c, key=_coder_key) for item_id, c in answered.items()}
    try:
        from annotation.aspects.unitized import unitized_data
    except ImportError:  # the aspects package is optional for this module
        return out
    item_ids = sorted(answered)
    data = unitized_data(project, item_ids=item_ids)
    coders = {c for r in records for c in [r["coder"]]}
    keep = {r["item_id"] for r in records}
    lengths = {pk: n for pk, n in data["items"] if pk in keep}
    out["unitized"] = {"items": [(pk, lengths[pk]) for pk in sorted(lengths)],
                       "spans": [s for s in data["spans"] if s[1] in lengths and s[0] in coders],
                       "coders": sorted(coders, key=_coder_key),
                       "item_coders": {pk: out["answered"].get(pk, []) for pk in lengths}}
    return out


def _subset(rel: dict, coders: set[str] | None = None, items: set[int] | None = None) -> dict:
    """The reliability data restricted to some coders and/or items (for topics, crowd, experts, time)."""
    ci = [i for i, c in enumerate(rel["coders"]) if coders is None or c in coders]
    uj = [j for j, it in enumerate(rel["unit_item"]) if items is None or it in items]
    out = {"level": rel["level"], "coders": [rel["coders"][i] for i in ci], "units": [rel["units"][j] for j in uj],
           "unit_item": [rel["unit_item"][j] for j in uj],
           "matrix": [[rel["matrix"][i][j] for j in uj] for i in ci]}
    # drop coders left with no value
    keep = [k for k, row in enumerate(out["matrix"]) if any(v is not None for v in row)]
    out["coders"] = [out["coders"][k] for k in keep]
    out["matrix"] = [out["matrix"][k] for k in keep]
    if "unitized" in rel:
        u = rel["unitized"]
        ok_items = {pk for pk, _ in u["items"] if items is None or pk in items}
        ok_coders = set(u["coders"]) if coders is None else set(u["coders"]) & coders
        out["unitized"] = {"items": [(pk, n) for pk, n in u["items"] if pk in ok_items],
                           "spans": [s for s in u["spans"] if s[1] in ok_items and s[0] in ok_coders],
                           "coders": [c for c in u["coders"] if c in ok_coders],
                           "item_coders": {pk: [c for c in cs if c in ok_coders]
                                           for pk, cs in (u.get("item_coders") or {}).items() if pk in ok_items}}
    return out


# --- 3. coefficients ------------------------------------------------------------------------------
def _finite(v):
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def figures(rel: dict, *, bootstrap: int = BOOTSTRAP, seed: int = BOOTSTRAP_SEED) -> dict:
    """Coefficients of one reliability data set. Undefined ones are ``None``, with the reason in ``reasons``."""
    M = rel["matrix"]
    present = [[v is not None for v in row] for row in M]
    per_unit = [sum(present[i][j] for i in range(len(M))) for j in range(len(rel["units"]))]
    out: dict[str, Any] = {
        "level": rel["level"], "alpha": None, "alpha_ci": None, "percent_agreement": None, "kappa": None,
        "kappa_pairs": 0, "fleiss_kappa": None, "fleiss_n_units": 0,
        "n_units": sum(1 for m in per_unit if m >= 2), "n_coders": len(rel["coders"]),
        "n_values": sum(per_unit), "reasons": {},
    }
    reasons = out["reasons"]
    unitized = rel.get("unitized")
    if unitized is not None:
        out["level"] = "unitized"
        out["alpha_nominal"] = None
    if len(rel["coders"]) >= 2 and out["n_units"]:
        try:
            res = alpha_report(M, rel["level"])
            if unitized is None:
                out["alpha"] = _finite(res.alpha)
            else:
                out["alpha_nominal"] = _finite(res.alpha)
        except AgreementError as exc:
            reasons["alpha_nominal" if unitized is not None else "alpha"] = str(exc)
        if unitized is None and out["alpha"] is not None and bootstrap:
            try:
                ci = bootstrap_alpha(M, rel["level"], n_boot=bootstrap, seed=seed)
                out["alpha_ci"] = {"low": ci["low"], "high": ci["high"], "confidence": ci["confidence"],
                                   "n_boot": ci["n_boot"]}
            except AgreementError as exc:
                reasons["alpha_ci"] = str(exc)
        try:
            out["percent_agreement"] = _finite(percent_agreement(M))
        except AgreementError as exc:
            reasons["percent_agreement"] = str(exc)
        try:
            pw = pairwise_cohen_kappa(M, rel["coders"])
            out["kappa"] = _finite(pw["kappa"])
            out["kappa_pairs"] = pw["n_pairs"]
        except AgreementError as exc:
            reasons["kappa"] = str(exc)
        fk, n_fk, why = _fleiss(M, per_unit)
        out["fleiss_kappa"], out["fleiss_n_units"] = fk, n_fk
        if why:
            reasons["fleiss_kappa"] = why
    else:
        reasons["alpha"] = "needs at least 2 coders on at least one unit"
    if unitized is not None:
        try:
            out["alpha"], out["alpha_u_groups"] = _alpha_u(unitized)
        except AgreementError as exc:
            reasons["alpha"] = str(exc)
    if out["alpha"] is None and "alpha" not in reasons:
        reasons["alpha"] = "undefined on this data"
    return out


def _alpha_u(unitized: dict) -> tuple[float | None, int]:
    """alpha_u for crowd data: items are grouped by the set of coders who answered them (typically one HIT), alpha_u
    is computed per group over that group's continuum (a coder who never saw an item must not count as having marked
    it as gap), and the groups' values are averaged weighted by continuum length. One group = plain alpha_u."""
    from . import spans_on_continuum

    item_coders = unitized.get("item_coders") or {}
    groups: dict[frozenset, list[tuple[Any, int]]] = defaultdict(list)
    for pk, n in unitized["items"]:
        groups[frozenset(item_coders.get(pk, unitized["coders"]))].append((pk, n))
    total_w, acc, used, last_error = 0.0, 0.0, 0, None
    for coders, items in groups.items():
        if len(coders) < 2:
            continue
        keep = {pk for pk, _ in items}
        spans = [s for s in unitized["spans"] if s[1] in keep and s[0] in coders]
        try:
            flat, total = spans_on_continuum(spans, items)
            if total <= 0:
                continue
            res = unitized_alpha(flat, total, coders=sorted(coders, key=_coder_key))
        except AgreementError as exc:
            last_error = exc
            continue
        acc += res.alpha_u * total
        total_w += total
        used += 1
    if not used:
        raise last_error or AgreementError("alpha_u needs at least 2 coders on an item")
    return _finite(acc / total_w), used


def _fleiss(M, per_unit) -> tuple[float | None, int, str]:
    """Fleiss' kappa over the units that have the most common number (>= 2) of ratings."""
    counts = Counter(m for m in per_unit if m >= 2)
    if not counts:
        return None, 0, "no unit has 2 or more ratings"
    n = max(counts, key=lambda k: (counts[k], k))
    cols = [j for j, m in enumerate(per_unit) if m == n]
    labels = sorted({str(M[i][j]) for j in cols for i in range(len(M)) if M[i][j] is not None})
    li = {lab: k for k, lab in enumerate(labels)}
    table = []
    for j in cols:
        row = [0] * len(labels)
        for i in range(len(M)):
            if M[i][j] is not None:
                row[li[str(M[i][j])]] += 1
        table.append(row)
    try:
        return _finite(fleiss_kappa(table)), len(cols), ""
    except AgreementError as exc:
        return None, len(cols), str(exc)


def unit_agreement(values: list[Any]) -> float | None:
    """Share of agreeing pairs among the values of one unit (None with fewer than 2 values)."""
    vals = [str(v) for v in values if v is not None]
    m = len(vals)
    if m < 2:
        return None
    c = Counter(vals)
    return sum(k * (k - 1) for k in c.values()) / (m * (m - 1))


# --- 4. the table --------------------------------------------------------------------------------
def _get_project(project_or_slug):
    from annotation.models import Project

    if isinstance(project_or_slug, Project):
        return project_or_slug
    project = Project.objects.filter(slug=project_or_slug).first()
    if project is None:
        raise LookupError("no such project")
    return project


def project_table(project_slug, *, bootstrap: int = BOOTSTRAP) -> dict:
    """Every agreement figure of a project as one JSON-ready dict (``LookupError`` for an unknown slug).

    Top level: ``project``, ``task_type``, ``level``, ``alpha``, ``alpha_ci``, ``percent_agreement``, ``kappa``,
    ``fleiss_kappa``, ``n_units``, ``n_coders``, ``n_responses``, ``based_on`` (submitted assignments), ``reasons``;
    then ``topics`` (per topic figures), ``crowd_vs_expert`` (or None), ``workers``, ``items``, ``over_time``.
    """
    from annotation.models import Assignment, GoldRecord, Item

    project = _get_project(project_slug)
    records = load_responses(project)
    rel = reliability_data(project, records)
    table: dict[str, Any] = {"project": project.slug, "task_type": project.task_type}
    overall = figures(rel, bootstrap=bootstrap)
    table.update(overall)
    table["n_responses"] = len(records)
    table["based_on"] = Assignment.objects.filter(project=project, status__in=Assignment.DONE).count()

    # by topic
    topic_items: dict[str, set[int]] = defaultdict(set)
    for r in records:
        topic_items[r["topic"]].add(r["item_id"])
    topics = []
    for topic in sorted(topic_items):
        f = figures(_subset(rel, items=topic_items[topic]), bootstrap=bootstrap)
        topics.append({"topic": topic or "(no topic)", **f})
    table["topics"] = topics

    # crowd vs expert
    expert_coders = {r["coder"] for r in records if r["is_expert"]}
    crowd_coders = {r["coder"] for r in records if not r["is_expert"]}
    table["crowd_vs_expert"] = _crowd_vs_expert(rel, crowd_coders, expert_coders, bootstrap) \
        if expert_coders and crowd_coders else None

    # workers
    table["workers"] = _workers(project, rel, records, GoldRecord)

    # items
    items = Item.objects.filter(pk__in={r["item_id"] for r in records}).in_bulk()
    table["items"] = _items(project, rel, records, items)
    hist = [0] * 10
    for it in table["items"]:
        if it["agreement"] is not None:
            hist[min(9, int(it["agreement"] * 10))] += 1
    table["item_agreement_histogram"] = {"bins": [round(k / 10, 1) for k in range(11)], "counts": hist}

    # over time (cumulative, by submission order)
    table["over_time"] = _over_time(rel, records)
    return table


def _crowd_vs_expert(rel, crowd: set[str], experts: set[str], bootstrap: int) -> dict:
    """Figures among the crowd, among the experts, and between the crowd's and the experts' majority answers."""
    out = {"n_crowd": len(crowd), "n_experts": len(experts),
           "crowd": figures(_subset(rel, coders=crowd), bootstrap=bootstrap),
           "expert": figures(_subset(rel, coders=experts), bootstrap=bootstrap)}
    row_c, row_e = [], []
    for j in range(len(rel["units"])):
        row_c.append(_majority([rel["matrix"][i][j] for i, c in enumerate(rel["coders"]) if c in crowd]))
        row_e.append(_majority([rel["matrix"][i][j] for i, c in enumerate(rel["coders"]) if c in experts]))
    pair = {"level": rel["level"], "coders": ["crowd", "expert"], "units": rel["units"],
            "unit_item": rel["unit_item"], "matrix": [row_c, row_e]}
    if "unitized" in rel:
        u = rel["unitized"]
        item_coders = u.get("item_coders") or {}
        shared = {pk: cs for pk, cs in item_coders.items() if set(cs) & crowd and set(cs) & experts}
        pair["unitized"] = {"items": [(pk, n) for pk, n in u["items"] if pk in shared], "coders": ["crowd", "expert"],
                            "spans": _group_spans([s for s in u["spans"] if s[1] in shared], shared, crowd, experts),
                            "item_coders": {pk: ["crowd", "expert"] for pk in shared}}
    out["between"] = figures(pair, bootstrap=bootstrap)
    return out


def _group_spans(spans, item_coders, crowd, experts):
    """Spans chosen by a strict majority of each group's coders who answered the item, as two coders "crowd" and
    "expert"."""
    groups = {"crowd": crowd, "expert": experts}
    out = []
    for name, members in groups.items():
        votes: Counter = Counter()
        for coder, item, begin, length, cat in spans:
            if coder in members:
                votes[(item, begin, length, cat)] += 1
        for (item, begin, length, cat), n in sorted(votes.items(), key=lambda kv: (str(kv[0][0]), kv[0][1:])):
            answered = len([c for c in item_coders.get(item, []) if c in members]) or len(members)
            if 2 * n > answered:
                out.append((name, item, begin, length, cat))
    # a group's majority spans could overlap; keep the first of overlapping ones
    cleaned, last_end = [], {}
    for s in sorted(out, key=lambda s: (s[0], str(s[1]), s[4], s[2], s[3])):
        key = (s[0], s[1], s[4])
        if key in last_end and s[2] < last_end[key]:
            continue
        last_end[key] = s[2] + s[3]
        cleaned.append(s)
    return cleaned


def _majority(values):
    vals = [str(v) for v in values if v is not None]
    if not vals:
        return None
    c = Counter(vals)
    top = max(c.values())
    return sorted(k for k, v in c.items() if v == top)[0]


def _workers(project, rel, records, GoldRecord) -> list[dict]:
    from annotation.models import Worker

    labels = [(c, rel["units"][j], v) for i, c in enumerate(rel["coders"]) for j, v in enumerate(rel["matrix"][i])
              if v is not None]
    loo = loo_majority_agreement(labels)
    gold = gold_accuracy((coder_name(w), ok) for w, ok in
                         GoldRecord.objects.filter(item__project=project).values_list("worker_id", "correct"))
    competence: dict[str, float] = {}
    if len({c for c, _, _ in labels}) >= 2:
        try:
            competence = crowd_competence(labels, method="dawid_skene")["competence"]
        except AgreementError:
            competence = {}
    n_resp = Counter(r["coder"] for r in records)
    experts = {r["coder"]: r["is_expert"] for r in records}
    ids = {int(c.split(":")[1]) for c in set(n_resp) | set(gold)}
    names = {coder_name(w.pk): str(w) for w in Worker.objects.filter(pk__in=ids).select_related("user")}
    out = []
    for coder in sorted(set(n_resp) | set(gold), key=_coder_key):
        lo, g = loo.get(coder) or {}, gold.get(coder) or {}
        out.append({"coder": coder, "worker_id": int(coder.split(":")[1]), "name": names.get(coder, coder),
                    "is_expert": experts.get(coder, False), "n_responses": n_resp.get(coder, 0),
                    "loo_agreement": _finite(lo.get("agreement")), "loo_n": lo.get("n", 0),
                    "gold_accuracy": _finite(g.get("accuracy")), "gold_n": g.get("n", 0),
                    "competence": _finite(competence.get(coder))})
    return out


def _items(project, rel, records, items) -> list[dict]:
    from annotation.models import Adjudication

    by_item: dict[int, list[int]] = defaultdict(list)
    for j, it in enumerate(rel["unit_item"]):
        by_item[it].append(j)
    responses: dict[int, list[dict]] = defaultdict(list)
    for r in records:
        responses[r["item_id"]].append({"coder": r["coder"], "data": r["data"], "is_expert": r["is_expert"]})
    adjudications = {}
    for a in Adjudication.objects.filter(item__in=list(items)).select_related("expert").order_by("created_at", "id"):
        adjudications[a.item_id] = {"answer": a.answer, "by": a.expert.get_username() if a.expert else "",
                                    "at": a.created_at.isoformat(), "note": a.note}
    tt = project.get_task_type()
    out = []
    for item_id in sorted(responses, key=lambda pk: (items[pk].position, pk) if pk in items else (0, pk)):
        item = items.get(item_id)
        scores = [unit_agreement([row[j] for row in rel["matrix"]]) for j in by_item.get(item_id, [])]
        scores = [s for s in scores if s is not None]
        if rel.get("unitized") is not None and item_id not in by_item and len(responses[item_id]) >= 2:
            scores = [1.0]  # everybody answered "no aspect": full agreement
        try:
            agg = tt.aggregate(project, item, [r["data"] for r in responses[item_id]]) if item else {}
        except Exception:  # noqa: BLE001 - an aggregate must never break the dashboard
            agg = {}
        out.append({"item_id": item_id, "position": item.position if item else 0,
                    "topic": str((item.payload or {}).get("topic") or "") if item else "",
                    "text": str((item.payload or {}).get("text") or "") if item else "",
                    "n": len(responses[item_id]),
                    "agreement": (sum(scores) / len(scores)) if scores else None,
                    "majority": _summary(agg), "responses": responses[item_id],
                    "adjudication": adjudications.get(item_id)})
    return out


def _summary(agg: dict) -> str:
    if not isinstance(agg, dict):
        return ""
    if "label" in agg:
        return "" if agg["label"] is None else str(agg["label"])
    if "aspects" in agg:
        return ", ".join(str(a.get("text", a)) if isinstance(a, dict) else str(a) for a in agg["aspects"] or [])
    return ""


def _over_time(rel, records) -> list[dict]:
    """Cumulative figures after each tenth of the submitted assignments (by submission order)."""
    order: list[int] = []
    seen = set()
    for r in records:
        if r["assignment_id"] not in seen:
            seen.add(r["assignment_id"])
            order.append(r["assignment_id"])
    if not order:
        return []
    n_points = min(OVER_TIME_POINTS, len(order))
    cuts = sorted({max(1, round(len(order) * k / n_points)) for k in range(1, n_points + 1)})
    pos = {a: i for i, a in enumerate(order)}
    by_cell_time: dict[tuple[str, Any], int] = {}
    unit_of_item: dict[int, list[Any]] = defaultdict(list)
    for u, it in zip(rel["units"], rel["unit_item"]):
        unit_of_item[it].append(u)
    for r in records:
        for u in unit_of_item.get(r["item_id"], []):
            by_cell_time[(r["coder"], u)] = pos[r["assignment_id"]]
    out = []
    ci = {c: i for i, c in enumerate(rel["coders"])}
    uj = {u: j for j, u in enumerate(rel["units"])}
    for cut in cuts:
        M = [[None] * len(rel["units"]) for _ in rel["coders"]]
        for (c, u), t in by_cell_time.items():
            if t < cut and c in ci:
                M[ci[c]][uj[u]] = rel["matrix"][ci[c]][uj[u]]
        sub = {**rel, "matrix": M}
        sub.pop("unitized", None)
        point: dict[str, Any] = {"assignments": cut, "alpha": None, "percent_agreement": None, "n_units": 0}
        per_unit = [sum(1 for row in M if row[j] is not None) for j in range(len(rel["units"]))]
        point["n_units"] = sum(1 for m in per_unit if m >= 2)
        if point["n_units"]:
            try:
                point["alpha"] = _finite(alpha_report(M, rel["level"]).alpha)
            except AgreementError:
                pass
            try:
                point["percent_agreement"] = _finite(percent_agreement(M))
            except AgreementError:
                pass
        out.append(point)
    return out


# --- 5. snapshots --------------------------------------------------------------------------------
def store_snapshots(project_or_slug) -> list:
    """Compute :func:`project_table` and store one AgreementSnapshot per scope ("project", "topic:<name>",
    "crowd-vs-expert"); older snapshots beyond the last ``SNAPSHOT_SCOPES_KEPT`` per scope are dropped."""
    from django.db import transaction

    from annotation.models import AgreementSnapshot

    project = _get_project(project_or_slug)
    table = project_table(project)
    rows = [AgreementSnapshot(project=project, scope="project", figures=table, n_units=table["n_units"],
                              n_coders=table["n_coders"], based_on=table["based_on"])]
    for t in table["topics"]:
        rows.append(AgreementSnapshot(project=project, scope=f"topic:{t['topic']}"[:200], figures=t,
                                      n_units=t["n_units"], n_coders=t["n_coders"], based_on=table["based_on"]))
    cve = table["crowd_vs_expert"]
    if cve:
        rows.append(AgreementSnapshot(project=project, scope="crowd-vs-expert", figures=cve,
                                      n_units=cve["between"]["n_units"], n_coders=cve["between"]["n_coders"],
                                      based_on=table["based_on"]))
    with transaction.atomic():
        created = AgreementSnapshot.objects.bulk_create(rows)
        for scope in {r.scope for r in rows}:
            old = list(AgreementSnapshot.objects.filter(project=project, scope=scope)
                       .order_by("-computed_at", "-id").values_list("pk", flat=True)[SNAPSHOT_SCOPES_KEPT:])
            if old:
                AgreementSnapshot.objects.filter(pk__in=old).delete()
    return created


def latest_snapshot(project, scope: str = "project"):
    from annotation.models import AgreementSnapshot

    return AgreementSnapshot.objects.filter(project=project, scope=scope).order_by("-computed_at", "-id").first()


def recompute(project_id: int, *, force: bool = False) -> dict:
    """The body of the ``annotation.recompute_agreement`` task (idempotent): store new snapshots unless the latest
    one already covers every submitted assignment (``force`` recomputes anyway)."""
    from annotation.models import Assignment, Project

    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return {"project": project_id, "stored": 0, "reason": "no such project"}
    done = Assignment.objects.filter(project=project, status__in=Assignment.DONE).count()
    last = latest_snapshot(project)
    if not force and last is not None and last.based_on == done:
        return {"project": project.slug, "stored": 0, "snapshot": last.pk, "based_on": done}
    created = store_snapshots(project)
    return {"project": project.slug, "stored": len(created), "snapshot": created[0].pk, "based_on": done}


# --- debounce ------------------------------------------------------------------------------------
DEBOUNCE_SECONDS = 30
DEBOUNCE_KEY = "argora:agreement-recompute:{}"


def schedule_recompute(project_id: int, *, delay: int | None = None, force: bool = False) -> bool:
    """Enqueue ``annotation.recompute_agreement`` (after commit) at most once per ``delay`` seconds per project.

    The first call in a window takes a cache lock that lives ``delay`` seconds and enqueues the task with
    ``countdown=delay``, so every submission in the window is in the figures the task computes. Returns whether
    a task was enqueued. ``force`` (the "recompute now" button) skips the window and the countdown.
    """
    from django.core.cache import cache
    from django.db import transaction

    from annotation.tasks import recompute_agreement

    delay = DEBOUNCE_SECONDS if delay is None else delay
    if not force and not cache.add(DEBOUNCE_KEY.format(project_id), 1, timeout=max(1, delay)):
        return False
    kwargs = {"force": True} if force else {}
    countdown = 0 if force else delay
    # robust: a broker that is down is logged, and never fails the submission that triggered the recompute
    transaction.on_commit(lambda: recompute_agreement.apply_async(args=[project_id], kwargs=kwargs,
                                                                  countdown=countdown), robust=not force)
    return True


# --- adjudication --------------------------------------------------------------------------------
class AdjudicationRefused(ValueError):
    """An adjudicated answer the task type refuses; ``field`` and ``reason`` say why (HTTP 400)."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


def adjudicate_item(item, answer: dict, *, expert, note: str = ""):
    """Record an expert's final answer for ``item`` (who and when), validated like a worker's response.

    ``sentence_label``: ``{"label": ...}``; ``aspect``: ``{"aspects": ["b:l", ...], "no_aspect": bool}`` -- also
    stored in ``item.payload["adjudicated"]`` through :func:`annotation.aspects.aggregation.adjudicate`, so exports
    use it. Other task types: their response format. Raises :class:`AdjudicationRefused`.
    """
    from django.db import transaction

    from annotation.models import Adjudication
    from annotation.task_types import ResponseInvalid

    project = item.project
    tt = project.get_task_type()
    if not isinstance(answer, dict):
        raise AdjudicationRefused("answer", "expected an object")
    with transaction.atomic():
        if tt.name == "aspect":
            from annotation.aspects.aggregation import AdjudicationInvalid, adjudicate

            try:
                decided = adjudicate(item, answer.get("aspects") or [], no_aspect=bool(answer.get("no_aspect")),
                                     by=expert.get_username() if expert else "")
            except AdjudicationInvalid as exc:
                raise AdjudicationRefused(exc.field, exc.reason) from None
            cleaned = {"aspects": decided["aspects"], "no_aspect": decided["no_aspect"]}
            if not cleaned["aspects"] and not cleaned["no_aspect"]:
                transaction.set_rollback(True)
                raise AdjudicationRefused("aspects", "choose aspects or tick 'no aspect'")
        else:
            try:
                cleaned = tt.validate_response(project, item, answer)
            except ResponseInvalid as exc:
                raise AdjudicationRefused(exc.field, exc.reason) from None
        return Adjudication.objects.create(item=item, answer=cleaned, expert=expert, note=note or "")


def answer_text(answer) -> str:
    """A one-line reading of an answer (label, or the aspects' texts)."""
    if not isinstance(answer, dict):
        return str(answer)
    if "label" in answer:
        return str(answer["label"])
    if "aspects" in answer:
        if answer.get("no_aspect"):
            return "no aspect"
        return ", ".join(str(a.get("text") or f'{a.get("begin")}:{a.get("length")}') if isinstance(a, dict)
                         else str(a) for a in answer["aspects"] or []) or "—"
    return ", ".join(f"{k}={v}" for k, v in answer.items())
