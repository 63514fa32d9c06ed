"""The coefficients of the project table over one reliability data set: the matrix integer-coded once
(:func:`_coded`; subsets for topics, crowd and experts slice that array) and :func:`figures` (alpha with a bootstrap
CI, percent agreement, Cohen's kappa over coder pairs, Fleiss' kappa; alpha_u for span tasks), every one on arrays.
Plain functions over plain data; :mod:`annotation.agreement.table` assembles the table from them (and re-exports
:func:`figures` and :func:`reliability_data`).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from . import AgreementError, alpha_report, bootstrap_alpha, fleiss_kappa, spans_on_continuum, unitized_alpha
from .alpha import _is_missing
from .kappa import _norm, pairwise_kappa_codes, percent_agreement_codes
from .records import build_matrix, coder_key

BOOTSTRAP = 500  # resamples for the CI of alpha (seeded: the same data gives the same CI), every scope
BOOTSTRAP_SEED = 0


_ARRAY_MAX = 20_000_000  # count tables (units x labels) above this many cells fall back to per-unit Python


def reliability_data(project, records: list[dict]) -> dict:
    """The task type's reliability data for ``records`` (see the module docstring)."""
    tt = project.get_task_type()
    try:
        return tt.reliability_data(project, records)
    except NotImplementedError:
        out = build_matrix({}, {}, "nominal")
        out["unsupported"] = tt.reliability_note or (
            f"{tt.name} projects have no coders x units matrix for alpha or kappa; their reliability is reported "
            f"on the task type's own results page"
        )
        return out


# --- integer coding (once per data set; subsets slice it) --------------------------------------------------
def _coded(rel: dict) -> dict:
    """``rel``'s matrix as arrays, computed once and kept under ``rel["_coded"]``: ``codes`` (coders x units, codes
    0..V-1 of the distinct values, -1 = missing; 1, 1.0 and "1" are one value as in :mod:`.kappa`), ``labels`` (a
    value per code), ``X`` (the float matrix alpha reads at ``rel["level"]``: the codes for nominal data, the values
    otherwise; ``None`` with ``error`` when metric data are not numbers) and ``rank`` (codes in the order of their
    string form, for alphabetical tie-breaks)."""
    cd = rel.get("_coded")
    if cd is not None:
        return cd
    M = rel.get("matrix") or []
    C, U = len(M), len(rel.get("units") or [])
    by_value: dict[Any, int] = {}
    by_key: dict[str, int] = {}
    labels: list[Any] = []

    def code(v):
        try:
            return by_value[v]
        except (KeyError, TypeError):
            pass
        if _is_missing(v):
            c = -1
        else:
            k = _norm(v)
            c = by_key.get(k)
            if c is None:
                c = by_key[k] = len(labels)
                labels.append(v)
        try:
            by_value[v] = c
        except TypeError:
            pass
        return c

    codes = np.full((C, U), -1, dtype=np.int64)
    for i, row in enumerate(M):
        if U:
            codes[i] = [code(v) for v in row]
    cd = {"codes": codes, "labels": labels}
    cd.update(_value_arrays(labels, rel["level"]))
    cd["X"] = _x_of(codes, cd)
    rel["_coded"] = cd
    return cd


def _value_arrays(labels: list, level: str) -> dict:
    order = sorted(range(len(labels)), key=lambda k: str(labels[k]))
    rank = np.empty(len(labels), dtype=np.int64)
    rank[order] = np.arange(len(labels))
    out: dict[str, Any] = {"rank": rank, "values": None, "error": None}
    if level != "nominal":
        try:
            out["values"] = np.array([float(v) for v in labels], dtype=np.float64)
        except (TypeError, ValueError):
            bad = next(v for v in labels if not _is_number(v))
            out["error"] = f"{level} data must be numeric; got {bad!r}"
    return out


def _is_number(v) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def _x_of(codes: np.ndarray, cd: dict) -> np.ndarray | None:
    if cd.get("error"):
        return None
    present = codes >= 0
    if cd.get("values") is None:
        return np.where(present, codes, np.nan).astype(np.float64)
    vals = cd["values"]
    return np.where(present, vals[np.maximum(codes, 0)] if vals.size else np.nan, np.nan)


def _with_codes(rel: dict, codes: np.ndarray, coders: list, units: list, unit_item: list) -> dict:
    """A reliability data set sharing ``rel``'s label coding, for ``codes`` (no ``matrix``: figures read codes)."""
    parent = _coded(rel)
    cd = {k: parent[k] for k in ("labels", "rank", "values", "error")}
    cd["codes"] = codes
    cd["X"] = _x_of(codes, cd)
    return {"level": rel["level"], "coders": coders, "units": units, "unit_item": unit_item, "_coded": cd}


def _subset(rel: dict, coders: set[str] | None = None, items: set[int] | None = None) -> dict:
    """The reliability data restricted to some coders and/or items (for topics, crowd, experts, time); coders left
    with no value are dropped."""
    codes = _coded(rel)["codes"]
    ci = [i for i, c in enumerate(rel["coders"]) if coders is None or c in coders]
    uj = [j for j, it in enumerate(rel["unit_item"]) if items is None or it in items]
    sub = codes[np.ix_(ci, uj)] if ci and uj else np.full((len(ci), len(uj)), -1, dtype=np.int64)
    keep = [k for k in range(len(ci)) if (sub[k] >= 0).any()]
    out = _with_codes(
        rel,
        sub[keep],
        [rel["coders"][ci[k]] for k in keep],
        [rel["units"][j] for j in uj],
        [rel["unit_item"][j] for j in uj],
    )
    if rel.get("unsupported"):
        out["unsupported"] = rel["unsupported"]
    if "unitized" in rel:
        u = rel["unitized"]
        ok_items = {pk for pk, _ in u["items"] if items is None or pk in items}
        ok_coders = set(u["coders"]) if coders is None else set(u["coders"]) & coders
        out["unitized"] = {
            "items": [(pk, n) for pk, n in u["items"] if pk in ok_items],
            "spans": [s for s in u["spans"] if s[1] in ok_items and s[0] in ok_coders],
            "coders": [c for c in u["coders"] if c in ok_coders],
            "item_coders": {
                pk: [c for c in cs if c in ok_coders]
                for pk, cs in (u.get("item_coders") or {}).items()
                if pk in ok_items
            },
        }
    return out


# --- coefficients ------------------------------------------------------------------------------
def _finite(v):
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def figures(rel: dict, *, bootstrap: int = BOOTSTRAP, seed: int = BOOTSTRAP_SEED) -> dict:
    """Coefficients of one reliability data set. Undefined ones are ``None``, with the reason in ``reasons``."""
    cd = _coded(rel)
    codes = cd["codes"]
    present = codes >= 0
    per_unit = present.sum(axis=0)
    out: dict[str, Any] = {
        "level": rel["level"],
        "alpha": None,
        "alpha_ci": None,
        "percent_agreement": None,
        "kappa": None,
        "kappa_pairs": 0,
        "fleiss_kappa": None,
        "fleiss_n_units": 0,
        "n_units": int((per_unit >= 2).sum()),
        "n_coders": len(rel["coders"]),
        "n_values": int(per_unit.sum()),
        "reasons": {},
    }
    reasons = out["reasons"]
    if rel.get("unsupported"):
        reasons["alpha"] = rel["unsupported"]
        out["unsupported"] = True  # no coders x units data: no coefficient, and no per-item agreement either
        return out
    unitized = rel.get("unitized")
    if unitized is not None:
        out["level"] = "unitized"
        out["alpha_nominal"] = None
    alpha_key = "alpha_nominal" if unitized is not None else "alpha"
    if int(present.any(axis=1).sum()) >= 2 and out["n_units"]:
        if cd["X"] is None:
            reasons[alpha_key] = cd["error"]
        else:
            try:
                out[alpha_key] = _finite(alpha_report(cd["X"], rel["level"]).alpha)
            except AgreementError as exc:
                reasons[alpha_key] = str(exc)
        if unitized is None and out["alpha"] is not None and bootstrap:
            try:
                ci = bootstrap_alpha(cd["X"], rel["level"], n_boot=bootstrap, seed=seed)
                out["alpha_ci"] = {
                    "low": ci["low"],
                    "high": ci["high"],
                    "confidence": ci["confidence"],
                    "n_boot": ci["n_boot"],
                }
            except AgreementError as exc:
                reasons["alpha_ci"] = str(exc)
        try:
            out["percent_agreement"] = _finite(percent_agreement_codes(codes))
        except AgreementError as exc:
            reasons["percent_agreement"] = str(exc)
        try:
            pw = pairwise_kappa_codes(codes, rel["coders"])
            out["kappa"] = _finite(pw["kappa"])
            out["kappa_pairs"] = pw["n_pairs"]
        except AgreementError as exc:
            reasons["kappa"] = str(exc)
        fk, n_fk, why = _fleiss(codes, per_unit)
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
        out["alpha_u"] = out["alpha"]  # the same number under its own name (the CLI's alpha-u key)
    if out["alpha"] is None and "alpha" not in reasons:
        reasons["alpha"] = "undefined on this data"
    return out


def _alpha_u(unitized: dict) -> tuple[float | None, int]:
    """alpha_u for crowd data: items are grouped by the set of coders who answered them (typically one HIT), alpha_u
    is computed per group over that group's continuum (a coder who never saw an item must not count as having marked
    it as gap), and the groups' values are averaged weighted by continuum length. One group = plain alpha_u."""
    item_coders = unitized.get("item_coders") or {}
    groups: dict[frozenset, list[tuple[Any, int]]] = defaultdict(list)
    for pk, n in unitized["items"]:
        groups[frozenset(item_coders.get(pk, unitized["coders"]))].append((pk, n))
    spans_of: dict[Any, list] = defaultdict(list)
    for s in unitized["spans"]:
        spans_of[s[1]].append(s)
    total_w, acc, used, last_error = 0.0, 0.0, 0, None
    for coders, items in groups.items():
        if len(coders) < 2:
            continue
        spans = [s for pk, _ in items for s in spans_of.get(pk, ()) if s[0] in coders]
        try:
            flat, total = spans_on_continuum(spans, items)
            if total <= 0:
                continue
            res = unitized_alpha(flat, total, coders=sorted(coders, key=coder_key))
        except AgreementError as exc:
            last_error = exc
            continue
        acc += res.alpha_u * total
        total_w += total
        used += 1
    if not used:
        raise last_error or AgreementError("alpha_u needs at least 2 coders on an item")
    return _finite(acc / total_w), used


def _fleiss(codes: np.ndarray, per_unit: np.ndarray) -> tuple[float | None, int, str]:
    """Fleiss' kappa over the units that have the most common number (>= 2) of ratings."""
    counts = Counter(int(m) for m in per_unit if m >= 2)
    if not counts:
        return None, 0, "no unit has 2 or more ratings"
    n = max(counts, key=lambda k: (counts[k], k))
    cols = np.nonzero(per_unit == n)[0]
    sub = codes[:, cols]
    mask = sub >= 0
    V = int(sub.max()) + 1
    keys = np.broadcast_to(np.arange(cols.size, dtype=np.int64)[None, :], sub.shape)[mask] * V + sub[mask]
    table = np.bincount(keys, minlength=cols.size * V).reshape(cols.size, V)
    table = table[:, table.sum(axis=0) > 0]
    try:
        return _finite(fleiss_kappa(table)), int(cols.size), ""
    except AgreementError as exc:
        return None, int(cols.size), str(exc)
