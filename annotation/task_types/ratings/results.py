"""Results of rating projects (the staff page ``/projects/<slug>/results/``, ``manage.py ratings results`` and the
CSV downloads). Computed on request from the submitted / approved responses of non-gold items.

* pairwise_preference (Arg-CTRL §7.1): per system the share of wins / ties / losses and the fluency rate (each
  judgement mapped back from positions to systems), the left / right choice counts (a position-bias check), and
  agreement between annotators -- Cohen's kappa (mean over annotator pairs when there are more than two) and
  percentage agreement -- for persuasiveness (unit = pair, value = winning system or tie) and fluency (unit =
  (pair, system)), overall and per system;
* likert_debate (debate trees Table 6): mean ± SD per criterion for human vs. generated debates (and per model when
  there are several), Krippendorff's alpha (ordinal) per criterion.

Every figure carries its n and a ``mark`` (:func:`annotation.agreement.minimums.mark`): a system's shares and
fluency rate below ``MIN_COMPARISONS`` comparisons, an agreement figure below ``MIN_UNITS`` units, a Likert cell
below ``MIN_LIKERT_RATINGS`` ratings are shown marked "too few ratings".
"""

from __future__ import annotations

from typing import Any

from annotation.agreement.minimums import MIN_COMPARISONS, MIN_LIKERT_RATINGS, MIN_UNITS, mark
from annotation.agreement.records import build_matrix, load_responses
from annotation.agreement.table import figures
from annotation.models import Item
from annotation.task_types.likert_debate import likert
from annotation.task_types.pairwise_preference import pairwise
from argora.spreadsheet import write_rows

from . import LIKERT, PAIRWISE, TASK_TYPES, RatingsError, svg


def _records(project) -> tuple[list[dict], dict[int, dict]]:
    records = load_responses(project)
    payloads = dict(Item.objects.filter(project=project, is_gold=False).values_list("pk", "payload"))
    return records, payloads


def _figures(cells: dict, units: dict) -> dict:
    out = figures(build_matrix(cells, units, "nominal"), bootstrap=0)
    out["mark"] = mark(out["n_units"], MIN_UNITS, "units judged by 2+ annotators")
    return out


def _counts(project, records: list[dict], payloads: dict) -> dict:
    done = {r["item_id"] for r in records}
    return {
        "n_items": len(payloads),
        "n_rated": len(done),
        "n_responses": len(records),
        "n_workers": len({r["coder"] for r in records}),
        "r": project.assignments_per_item,
    }


# --- pairwise -------------------------------------------------------------------------------------
def pairwise_results(project) -> dict:
    records, payloads = _records(project)
    pairs = [(payloads[r["item_id"]], r["data"]) for r in records if r["item_id"] in payloads]
    systems = pairwise.system_table(pairs)
    for row in systems:
        row["mark"] = mark(row["n"], MIN_COMPARISONS, "comparisons")
    persuasion, p_units, fluency, f_units = pairwise.agreement_cells(records, payloads)
    per_system = []
    for row in systems:
        cells = {k: v for k, v in fluency.items() if k[1][1] == row["system"]}
        units = {u: i for u, i in f_units.items() if u[1] == row["system"]}
        per_system.append({"system": row["system"], "fluency": _figures(cells, units)})
    return {
        "kind": PAIRWISE,
        **_counts(project, records, payloads),
        "systems": systems,
        "positions": pairwise.position_table(pairs),
        "agreement": {
            "persuasiveness": _figures(persuasion, p_units),
            "fluency": _figures(fluency, f_units),
            "fluency_by_system": per_system,
        },
    }


# --- likert ---------------------------------------------------------------------------------------
def likert_results(project) -> dict:
    records, payloads = _records(project)
    pairs = [(payloads[r["item_id"]], r["data"]) for r in records if r["item_id"] in payloads]
    systems = {str((p or {}).get("system", "")) for p in payloads.values()}
    table = likert.criteria_table(pairs)
    if not pairs:  # still show the columns the project will have
        table = likert.criteria_table([])
        table["columns"] = [{"key": k, "title": t, "debates": 0, "ratings": 0} for k, t in likert.groups_of(systems)]
        table["rows"] = [{**row, "cells": [likert.mean_sd([]) for _ in table["columns"]]} for row in table["rows"]]
    debates = {
        "human": sum(1 for p in payloads.values() if likert.is_human((p or {}).get("system", ""))),
        "generated": sum(1 for p in payloads.values() if not likert.is_human((p or {}).get("system", ""))),
    }
    alpha = likert.alpha_ordinal(records)
    for entry in alpha.values():
        entry["mark"] = mark(entry["n_units"], MIN_UNITS, "debates rated by 2+ reviewers")
    warning = likert.reviewer_warning(project)
    return {
        "kind": LIKERT,
        **_counts(project, records, payloads),
        "table": table,
        "alpha": alpha,
        "debates": debates,
        "warnings": [warning] if warning else [],
    }


def project_results(project) -> dict:
    if project.task_type == PAIRWISE:
        return pairwise_results(project)
    if project.task_type == LIKERT:
        return likert_results(project)
    raise RatingsError(f"project {project.slug!r} is a {project.task_type} project, not one of {', '.join(TASK_TYPES)}")


def cell_mark(cell: dict) -> dict:
    """The "too few ratings" mark of a Likert mean (its n = individual ratings)."""
    return mark(cell.get("n"), MIN_LIKERT_RATINGS, "ratings")


def chart(res: dict) -> str:
    if res["kind"] == PAIRWISE:
        return svg.shares(
            "ratings-chart",
            [
                {
                    "label": r["system"],
                    "win": r["win_share"],
                    "tie": r["tie_share"],
                    "loss": r["loss_share"],
                    "n": r["n"],
                    "weak": r["mark"]["too_few"],
                }
                for r in res["systems"]
            ],
            title="Persuasiveness: share of comparisons won, tied, lost (n per system)",
        )
    cols = res["table"]["columns"]
    return svg.means(
        "ratings-chart",
        [
            {"label": row["title"], "values": [{**cell, "weak": cell_mark(cell)["too_few"]} for cell in row["cells"]]}
            for row in res["table"]["rows"]
        ],
        [c["title"] for c in cols],
        title="Mean rating (1-4) ± SD per criterion",
    )


# --- text and CSV -----------------------------------------------------------------------------------
def _num(v: Any, digits: int = 3) -> str:
    return "" if v is None else f"{v:.{digits}f}"


def summary_rows(res: dict) -> list[list[str]]:
    """The results tables as CSV rows (header first)."""
    if res["kind"] == PAIRWISE:
        rows = [
            [
                "system",
                "comparisons",
                "wins",
                "ties",
                "losses",
                "win_share",
                "tie_share",
                "loss_share",
                "fluent",
                "fluency_rate",
                "fluency_kappa",
                "fluency_percent_agreement",
            ]
        ]
        fl = {f["system"]: f["fluency"] for f in res["agreement"]["fluency_by_system"]}
        for r in res["systems"]:
            rows.append(
                [
                    r["system"],
                    r["n"],
                    r["wins"],
                    r["ties"],
                    r["losses"],
                    _num(r["win_share"]),
                    _num(r["tie_share"]),
                    _num(r["loss_share"]),
                    r["fluent"],
                    _num(r["fluency_rate"]),
                    _num(fl.get(r["system"], {}).get("kappa")),
                    _num(fl.get(r["system"], {}).get("percent_agreement")),
                ]
            )
        for name in ("persuasiveness", "fluency"):
            a = res["agreement"][name]
            rows.append(
                [
                    f"agreement:{name}",
                    a["n_units"],
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    _num(a["kappa"]),
                    _num(a["percent_agreement"]),
                ]
            )
        return [[str(c) for c in row] for row in rows]
    cols = res["table"]["columns"]
    rows = [
        ["criterion"]
        + [f"{c['title']} {part}" for c in cols for part in ("mean", "sd", "n")]
        + ["alpha_ordinal", "alpha_units"]
    ]
    for row in res["table"]["rows"]:
        a = res["alpha"][row["criterion"]]
        rows.append(
            [row["title"]]
            + [x for cell in row["cells"] for x in (_num(cell["mean"]), _num(cell["sd"]), str(cell["n"]))]
            + [_num(a["alpha"]), str(a["n_units"])]
        )
    return rows


def response_rows(project) -> list[list[str]]:
    """One row per submitted response, in system terms (de-biased) -- the raw data behind the tables."""
    records, payloads = _records(project)
    if project.task_type == PAIRWISE:
        rows = [
            [
                "item_id",
                "key",
                "topic",
                "stance",
                "system_a",
                "system_b",
                "worker",
                "left_system",
                "right_system",
                "choice",
                "winner",
                "fluent_a",
                "fluent_b",
            ]
        ]
        for r in records:
            p = payloads.get(r["item_id"])
            if p is None:
                continue
            j = pairwise.judgement(p, r["data"])
            a, b = pairwise.system_of(p, "a"), pairwise.system_of(p, "b")
            rows.append(
                [
                    r["item_id"],
                    p.get("key", ""),
                    p.get("topic", ""),
                    p.get("stance", ""),
                    a,
                    b,
                    r["coder"],
                    j["left_system"],
                    j["right_system"],
                    r["data"].get("choice", ""),
                    j["winner"],
                    int(j["fluent"].get(a, False)),
                    int(j["fluent"].get(b, False)),
                ]
            )
    elif project.task_type == LIKERT:
        rows = [["item_id", "debate_id", "system", "group", "topic", "worker", *likert.CRITERIA]]
        for r in records:
            p = payloads.get(r["item_id"])
            if p is None:
                continue
            system = str(p.get("system", ""))
            rows.append(
                [
                    r["item_id"],
                    p.get("debate_id", ""),
                    system,
                    likert.HUMAN if likert.is_human(system) else likert.GENERATED,
                    p.get("topic", ""),
                    r["coder"],
                    *[r["data"].get(c, "") for c in likert.CRITERIA],
                ]
            )
    else:
        raise RatingsError(f"project {project.slug!r} is not a ratings project")
    return [[str(c) for c in row] for row in rows]


def write_csv(fh, rows: list[list[str]]) -> None:
    write_rows(fh, rows)


def text_report(res: dict) -> str:
    """The tables as plain text (``manage.py ratings results``)."""
    lines = [
        f"{res['n_items']} items, {res['n_rated']} rated, {res['n_responses']} responses from "
        f"{res['n_workers']} workers (R = {res['r']})"
    ]
    if res["kind"] == PAIRWISE:
        lines.append(f"{'system':<24} {'n':>5} {'wins':>7} {'ties':>7} {'losses':>7} {'fluent':>7}")
        for r in res["systems"]:
            lines.append(
                f"{r['system'][:24]:<24} {r['n']:>5} {r['win_share']:>7.1%} {r['tie_share']:>7.1%} "
                f"{r['loss_share']:>7.1%} {r['fluency_rate']:>7.1%}"
                + ("  (too few ratings)" if r["mark"]["too_few"] else "")
            )
        for name in ("persuasiveness", "fluency"):
            a = res["agreement"][name]
            kappa = "undefined" if a["kappa"] is None else f"{a['kappa']:.3f}"
            pa = "undefined" if a["percent_agreement"] is None else f"{a['percent_agreement']:.2f}"
            lines.append(
                f"{name}: Cohen's kappa {kappa} (percentage agreement {pa}; {a['n_units']} units)"
                + (" (too few ratings)" if a["n_units"] and a["mark"]["too_few"] else "")
            )
        return "\n".join(lines)
    cols = res["table"]["columns"]
    lines.extend(f"warning: {w}" for w in res.get("warnings") or ())
    lines.append(f"{'criterion':<10} " + " ".join(f"{c['title'][:17]:>17}" for c in cols) + "  alpha(ordinal)")
    for row in res["table"]["rows"]:
        cells = " ".join(
            f"{'—':>17}" if cell["mean"] is None else f"{cell['mean']:.3f} ± {_num(cell['sd']) or '—':>5}".rjust(17)
            for cell in row["cells"]
        )
        a = res["alpha"][row["criterion"]]["alpha"]
        lines.append(f"{row['title']:<10} {cells}  {'—' if a is None else f'{a:.3f}'}")
    return "\n".join(lines)


__all__ = [
    "chart",
    "likert_results",
    "pairwise_results",
    "project_results",
    "response_rows",
    "summary_rows",
    "text_report",
    "write_csv",
]
