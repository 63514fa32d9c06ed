"""Per-project agreement figures: what ``manage.py agreement project <slug>``, the dashboards and the
``annotation.recompute_agreement`` task show. Plain functions over plain data, with no task type named:

1. :func:`annotation.agreement.records.load_responses` reads the submitted / approved responses of a project's
   non-gold items, in submission order;
2. :func:`reliability_data` asks the project's task type for its reliability data
   (:meth:`annotation.task_types.base.TaskType.reliability_data`) -- a coders x units matrix (``"matrix"``, with
   ``"level"``, ``"coders"``, ``"units"``, ``"unit_item"``) and, for span tasks, unitized data (``"unitized"``:
   ``spans``, ``items``, ``coders``) for Krippendorff's alpha_u. A task type without one (its reliability is reported
   on its own results page, e.g. split-half for BWS) gets a table of ``None``s with the reason;
3. :func:`figures` turns one reliability data set into the coefficients (alpha with a bootstrap CI, percent
   agreement, Cohen's kappa averaged over coder pairs, Fleiss' kappa, n_units, n_coders; for span tasks ``alpha`` and
   ``alpha_u`` are alpha_u); a coefficient that is undefined on the data is ``None`` with a ``reasons`` entry;
4. :func:`compute_table` assembles every figure of the table from the reliability data and the response records
   (no database): overall, by topic, crowd vs expert, per worker, per item, over time. :func:`project_table` loads
   the data, calls it and adds what needs the database (worker names, item texts, majority answers,
   adjudications). Storing it is :mod:`annotation.agreement.snapshots`' job.

Speed (:mod:`.coefficients`): the matrix is integer-coded once (:func:`_coded`; subsets for topics, crowd and experts
slice that array) and every coefficient runs on arrays -- alpha and its bootstrap (all resamples as one matrix product,
the same 500 draws for every scope), Cohen's kappa from per-pair code counts, Fleiss' kappa, per-unit agreement, the
leave-one-out majority and Dawid-Skene (a numpy EM identical to crowd-kit's, tested against it). The whole table of
8 coders x 5,032 units takes well under a second (``bench/agreement.py`` prints it).

Crowd vs expert: experts are staff / members of the experts group who submitted HITs themselves. When none did, the
project's reference answers stand in as one expert coder named ``"reference"``: the expected answers of its gold items
and the latest adjudicated answer of each item (an adjudication wins over a gold answer of the same item); the crowd
is compared with them on exactly those items (their responses to gold items included), and
``crowd_vs_expert["expert_source"]`` says which of ``"staff"`` / ``"reference"`` was used.
"""

from __future__ import annotations

import contextlib
import gc
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from annotation.models import Adjudication, Assignment, GoldRecord, Item, Project, Worker

from . import AgreementError, alpha_report, gold_accuracy
from .coefficients import (  # noqa: F401  (figures, reliability_data and BOOTSTRAP are re-exported for callers)
    _ARRAY_MAX,
    BOOTSTRAP,
    BOOTSTRAP_SEED,
    _coded,
    _finite,
    _subset,
    _with_codes,
    figures,
    reliability_data,
)
from .kappa import percent_agreement_codes, unit_agreement_codes
from .quality import dawid_skene_codes, loo_majority_codes
from .records import REFERENCE_CODER, coder_key, coder_name, load_responses, reference_records

OVER_TIME_POINTS = 10  # points of the "agreement over submission order" series


# --- the table --------------------------------------------------------------------------------
def get_project(project_or_slug):
    if isinstance(project_or_slug, Project):
        return project_or_slug
    project = Project.objects.filter(slug=project_or_slug).first()
    if project is None:
        raise LookupError("no such project")
    return project


def project_table(project_slug, *, bootstrap: int = BOOTSTRAP, item_rows: bool = True) -> dict:
    """Every agreement figure of a project as one JSON-ready dict (``LookupError`` for an unknown slug).

    Top level: ``project``, ``task_type``, ``level``, ``alpha`` (and ``alpha_u``, the same number, for span tasks),
    ``alpha_ci``, ``percent_agreement``, ``kappa``, ``fleiss_kappa``, ``n_units``, ``n_coders``, ``n_responses``,
    ``based_on`` (submitted assignments), ``reasons``; then ``topics`` (per topic figures), ``crowd_vs_expert`` (or
    None), ``workers``, ``items``, ``item_agreement_histogram``, ``over_time``.

    ``item_rows=False`` leaves ``items`` bare (``item_id, n, agreement, responses``) for :func:`iter_item_rows` to
    complete a chunk at a time (:func:`annotation.agreement.snapshots.store_snapshots` writes them in batches).
    """
    with _no_gc():
        return _project_table(get_project(project_slug), bootstrap, item_rows)


@contextlib.contextmanager
def _no_gc():
    """Pause the cyclic garbage collector: building a table allocates ~10 objects per response and creates no
    cycles, and the collector's passes over that growing heap cost ~30 % of the time at 40,000 responses."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _project_table(project, bootstrap: int, item_rows: bool = True) -> dict:
    records = load_responses(project)
    rel = reliability_data(project, records)
    reference = None
    if records and not any(r["is_expert"] for r in records):
        reference = _reference_data(project, records)
    gold = list(GoldRecord.objects.filter(item__project=project).values_list("worker_id", "correct"))
    table: dict[str, Any] = {"project": project.slug, "task_type": project.task_type}
    table.update(compute_table(rel, records, gold_records=gold, reference=reference, bootstrap=bootstrap))
    if isinstance(reference, str):
        table["reasons"]["crowd_vs_expert"] = reference
    table["based_on"] = Assignment.objects.filter(project=project, status__in=Assignment.DONE).count()

    ids = [w["worker_id"] for w in table["workers"] if w["worker_id"] is not None]
    names = {coder_name(w.pk): str(w) for w in Worker.objects.filter(pk__in=ids).select_related("user")}
    for w in table["workers"]:
        w["name"] = names.get(w["coder"], w["coder"])
    if item_rows:
        table["items"] = list(iter_item_rows(project, table["items"]))
    return table


def _reference_data(project, records: list[dict]):
    """Reliability data of the crowd and the reference coder on the reference items, or None when there are no
    reference answers, or a string saying why they could not be read."""
    ref = reference_records(project)
    if not ref:
        return None
    keep = {r["item_id"] for r in ref}
    crowd = [r for r in records + load_responses(project, gold=True) if r["item_id"] in keep]
    if not crowd:
        return None
    try:
        rel = reliability_data(project, crowd + ref)
    except Exception as exc:  # noqa: BLE001 - an expected answer the task type cannot read must not break the table
        return f"the reference answers (gold / adjudications) could not be read: {exc}"
    rel["crowd"] = {r["coder"] for r in crowd}
    return rel


def compute_table(
    rel: dict, records: list[dict], *, gold_records=(), reference: dict | str | None = None, bootstrap: int = BOOTSTRAP
) -> dict:
    """Every figure of the project table from plain data (no database; what ``bench/agreement.py`` times).

    ``rel``: reliability data of ``records`` (response records as :func:`load_responses` gives them, in submission
    order); ``gold_records``: ``(worker id, correct)`` pairs; ``reference``: reliability data of the crowd and the
    :data:`REFERENCE_CODER` on the reference items with a ``"crowd"`` set of coders (used for crowd vs expert when
    no record is an expert's). Worker names are their coder names and items carry only ids, counts and agreement;
    :func:`project_table` fills in the rest.
    """
    with _no_gc():
        return _compute_table(rel, records, gold_records, reference, bootstrap)


def _compute_table(rel, records, gold_records, reference, bootstrap) -> dict:
    table: dict[str, Any] = dict(figures(rel, bootstrap=bootstrap))
    table["n_responses"] = len(records)

    # by topic
    topic_items: dict[str, set[int]] = defaultdict(set)
    for r in records:
        topic_items[r["topic"]].add(r["item_id"])
    table["topics"] = [
        {"topic": topic or "(no topic)", **figures(_subset(rel, items=topic_items[topic]), bootstrap=bootstrap)}
        for topic in sorted(topic_items)
    ]

    # crowd vs expert
    expert_coders = {r["coder"] for r in records if r["is_expert"]}
    crowd_coders = {r["coder"] for r in records if not r["is_expert"]}
    cve = None
    if expert_coders and crowd_coders:
        cve = {"expert_source": "staff", **_crowd_vs_expert(rel, crowd_coders, expert_coders, bootstrap)}
    elif isinstance(reference, dict) and reference.get("crowd"):
        items = {
            it
            for c, row in zip(reference["coders"], _coded(reference)["codes"])
            if c == REFERENCE_CODER
            for it, v in zip(reference["unit_item"], row)
            if v >= 0
        }
        items |= {
            pk
            for pk, _ in (reference.get("unitized") or {}).get("items", [])
            if REFERENCE_CODER in (reference["unitized"].get("item_coders") or {}).get(pk, [])
        }
        sub = _subset(reference, items=items) if items else reference
        cve = {
            "expert_source": "reference",
            "n_reference_items": len(items),
            **_crowd_vs_expert(sub, set(reference["crowd"]), {REFERENCE_CODER}, bootstrap),
        }
    table["crowd_vs_expert"] = cve

    table["workers"] = _workers(rel, records, gold_records)
    table["items"] = _item_agreement(rel, records)
    hist = [0] * 10
    for it in table["items"]:
        if it["agreement"] is not None:
            hist[min(9, int(it["agreement"] * 10))] += 1
    table["item_agreement_histogram"] = {"bins": [round(k / 10, 1) for k in range(11)], "counts": hist}
    table["over_time"] = _over_time(rel, records)
    return table


def _majority_codes(codes: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Per unit, the most frequent code among the rows (ties: the label first in string order), -1 where none."""
    U = codes.shape[1]
    V = rank.size
    out = np.full(U, -1, dtype=np.int64)
    mask = codes >= 0
    if not mask.any():
        return out
    if U * V > _ARRAY_MAX:
        for j in range(U):
            col = codes[:, j][codes[:, j] >= 0]
            if col.size:
                c = Counter(col.tolist())
                top = max(c.values())
                out[j] = min((k for k, n in c.items() if n == top), key=lambda k: rank[k])
        return out
    cols = np.broadcast_to(np.arange(U, dtype=np.int64)[None, :], codes.shape)
    cnt = np.bincount(cols[mask] * V + codes[mask], minlength=U * V).reshape(U, V)
    top = cnt.max(axis=1)
    score = np.where(cnt == top[:, None], rank[None, :], V)
    pick = np.argmin(score, axis=1)
    out[top > 0] = pick[top > 0]
    return out


def _crowd_vs_expert(rel, crowd: set[str], experts: set[str], bootstrap: int) -> dict:
    """Figures among the crowd, among the experts, and between the crowd's and the experts' majority answers."""
    cd = _coded(rel)
    out = {
        "n_crowd": len(crowd),
        "n_experts": len(experts),
        "crowd": figures(_subset(rel, coders=crowd), bootstrap=bootstrap),
        "expert": figures(_subset(rel, coders=experts), bootstrap=bootstrap),
    }
    rows_c = [i for i, c in enumerate(rel["coders"]) if c in crowd]
    rows_e = [i for i, c in enumerate(rel["coders"]) if c in experts]
    pair_codes = np.stack(
        [_majority_codes(cd["codes"][rows_c], cd["rank"]), _majority_codes(cd["codes"][rows_e], cd["rank"])]
    )
    pair = _with_codes(rel, pair_codes, ["crowd", "expert"], list(rel["units"]), list(rel["unit_item"]))
    if "unitized" in rel:
        u = rel["unitized"]
        item_coders = u.get("item_coders") or {}
        shared = {pk: cs for pk, cs in item_coders.items() if set(cs) & crowd and set(cs) & experts}
        pair["unitized"] = {
            "items": [(pk, n) for pk, n in u["items"] if pk in shared],
            "coders": ["crowd", "expert"],
            "spans": _group_spans([s for s in u["spans"] if s[1] in shared], shared, crowd, experts),
            "item_coders": {pk: ["crowd", "expert"] for pk in shared},
        }
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


def _worker_id(coder: str) -> int | None:
    head, _, tail = str(coder).partition(":")
    return int(tail) if head == "worker" and tail.isdigit() else None


def _workers(rel: dict, records: list[dict], gold_records) -> list[dict]:
    """Per worker: responses, agreement with the leave-one-out majority (``loo_n`` units shared with others), gold
    accuracy (``gold_n`` gold items), Dawid-Skene competence (``overlap_n`` units shared with other workers; None
    with ``competence_reason`` when the worker shares none)."""
    codes = _coded(rel)["codes"]
    loo_ag, loo_n = loo_majority_codes(codes) if codes.size else (np.array([]), np.array([], dtype=np.int64))
    loo = {c: (loo_ag[i], int(loo_n[i])) for i, c in enumerate(rel["coders"])}
    gold = gold_accuracy((coder_name(w), ok) for w, ok in gold_records)
    competence: dict[str, float] = {}
    if int((codes >= 0).any(axis=1).sum()) >= 2:
        try:
            comp = dawid_skene_codes(codes)["competence"]
            competence = {c: comp[i] for i, c in enumerate(rel["coders"])}
        except AgreementError:
            competence = {}
    n_resp = Counter(r["coder"] for r in records)
    experts = {r["coder"]: r["is_expert"] for r in records}
    out = []
    for coder in sorted(set(n_resp) | set(gold), key=coder_key):
        lo, g = loo.get(coder, (None, 0)), gold.get(coder) or {}
        # units this coder shares with at least one other coder (= the LOO n): the only data Dawid-Skene can
        # estimate a confusion matrix from. With none, the coder is their own majority and crowd-kit's EM returns
        # ~1.0 (or the prior mass of the labels they used): no estimate at all, so it is not reported.
        overlap = lo[1]
        comp = _finite(competence.get(coder)) if overlap else None
        out.append(
            {
                "coder": coder,
                "worker_id": _worker_id(coder),
                "name": coder,
                "is_expert": experts.get(coder, False),
                "n_responses": n_resp.get(coder, 0),
                "loo_agreement": _finite(lo[0]),
                "loo_n": lo[1],
                "gold_accuracy": _finite(g.get("accuracy")),
                "gold_n": g.get("n", 0),
                "competence": comp,
                "overlap_n": overlap,
                "competence_reason": (
                    "no overlap with other workers"
                    if not overlap
                    else ""
                    if comp is not None
                    else "undefined on this data"
                ),
            }
        )
    return out


def _item_agreement(rel: dict, records: list[dict]) -> list[dict]:
    """Per answered item (first-answer order): responses and agreement = mean over the item's units of the share of
    agreeing pairs (units with >= 2 values)."""
    share, _ = unit_agreement_codes(_coded(rel)["codes"])
    sums: dict[Any, list[float]] = {}
    for it, s in zip(rel["unit_item"], share.tolist()):
        acc = sums.setdefault(it, [0.0, 0])
        if s == s:  # not NaN
            acc[0] += s
            acc[1] += 1
    responses: dict[int, list[dict]] = defaultdict(list)
    for r in records:
        responses[r["item_id"]].append({"coder": r["coder"], "data": r["data"], "is_expert": r["is_expert"]})
    unitized = rel.get("unitized") is not None
    out = []
    for item_id, resp in responses.items():
        total, n = sums.get(item_id, (0.0, 0))
        agreement = total / n if n else None
        if unitized and item_id not in sums and len(resp) >= 2:
            agreement = 1.0  # everybody answered "no aspect": full agreement
        out.append({"item_id": item_id, "n": len(resp), "agreement": agreement, "responses": resp})
    return out


ITEM_CHUNK = 900  # items read at a time by iter_item_rows (under SQLite's 999 query parameters)


def iter_item_rows(project, rows: list[dict], *, chunk_size: int = ITEM_CHUNK):
    """The per-item rows (bare ones from :func:`compute_table`) completed with what needs the database: position,
    topic, text, majority answer, adjudication -- in position order, reading the items ``chunk_size`` at a time (the
    positions of all of them first: integers only)."""
    by_id = {r["item_id"]: r for r in rows}
    positions = dict(Item.objects.filter(project=project).values_list("pk", "position"))
    order = sorted(by_id, key=lambda pk: (positions.get(pk, 0), pk))
    adjudications = {}
    for a in Adjudication.objects.filter(item__project=project).select_related("expert").order_by("created_at", "id"):
        adjudications[a.item_id] = {
            "answer": a.answer,
            "by": a.expert.get_username() if a.expert else "",
            "at": a.created_at.isoformat(),
            "note": a.note,
        }
    tt = project.get_task_type()
    for start in range(0, len(order), chunk_size):
        ids = order[start : start + chunk_size]
        items = {it.pk: it for it in Item.objects.filter(pk__in=ids)}
        for pk in ids:
            row, item = by_id[pk], items.get(pk)
            try:
                agg = tt.aggregate(project, item, [r["data"] for r in row["responses"]]) if item else {}
            except Exception:  # noqa: BLE001 - an aggregate must never break the dashboard
                agg = {}
            payload = (item.payload or {}) if item else {}
            yield {
                "item_id": pk,
                "position": item.position if item else 0,
                "topic": str(payload.get("topic") or ""),
                "text": str(payload.get("text") or ""),
                "n": row["n"],
                "agreement": row["agreement"],
                "majority": tt.aggregate_text(agg),
                "responses": row["responses"],
                "adjudication": adjudications.get(pk),
            }


def _over_time(rel, records) -> list[dict]:
    """Cumulative figures after each tenth of the submitted assignments (by submission order). A point whose alpha
    is None says why in ``reason``."""
    order: dict[Any, int] = {}
    for r in records:
        if r["assignment_id"] not in order:
            order[r["assignment_id"]] = len(order)
    if not order:
        return []
    n_points = min(OVER_TIME_POINTS, len(order))
    cuts = sorted({max(1, round(len(order) * k / n_points)) for k in range(1, n_points + 1)})
    cd = _coded(rel)
    codes, X = cd["codes"], cd["X"]
    C, U = codes.shape
    # when each cell was answered: the position of the coder's (last) assignment that answered the unit's item
    item_index = {it: k for k, it in enumerate(dict.fromkeys(rel["unit_item"]))}
    ci = {c: i for i, c in enumerate(rel["coders"])}
    never = len(order) + 1
    P = np.full((C, max(1, len(item_index))), never, dtype=np.int64)
    for r in records:
        i, k = ci.get(r["coder"]), item_index.get(r["item_id"])
        if i is not None and k is not None:
            P[i, k] = order[r["assignment_id"]]
    T = P[:, [item_index[it] for it in rel["unit_item"]]] if U else np.zeros((C, 0), dtype=np.int64)
    present = codes >= 0
    out = []
    for cut in cuts:
        seen = present & (T < cut)
        n_units = int((seen.sum(axis=0) >= 2).sum())
        point: dict[str, Any] = {"assignments": cut, "alpha": None, "percent_agreement": None, "n_units": n_units}
        if not n_units:
            point["reason"] = "no unit has values from 2 or more coders yet"
        elif X is None:
            point["reason"] = cd["error"]
        else:
            try:
                point["alpha"] = _finite(alpha_report(np.where(seen, X, np.nan), rel["level"]).alpha)
            except AgreementError as exc:
                point["reason"] = str(exc)
            try:
                point["percent_agreement"] = _finite(percent_agreement_codes(np.where(seen, codes, -1)))
            except AgreementError:
                pass
        if point["alpha"] is None and "reason" not in point:
            point["reason"] = "undefined on this data"
        out.append(point)
    return out
