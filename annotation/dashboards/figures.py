"""The dashboards' figures as shown: each number formatted, with its n and the mark "too few ratings" below the
minimums of :mod:`annotation.agreement.minimums`, or the reason it cannot be estimated; the four charts
(server-side SVG, :mod:`annotation.agreement.svg`) and the model annotators' sections.

Plain functions over a snapshot's figures (dicts), so that the pages of :mod:`.views` only read and render.
"""

from __future__ import annotations

from .. import model_annotators
from ..agreement import svg
from ..agreement.minimums import MIN_ITEM_RESPONSES, MIN_UNITS, MIN_WORKER_UNITS, mark
from ..models import Project
from .tables import item_counts, raw, summary_scopes, with_overlap


def num(v, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _item_reason(it: dict, table: dict) -> str:
    """Why an item has no agreement figure."""
    if it["agreement"] is not None:
        return ""
    if table.get("unsupported"):
        return "no per-item agreement for this task type"
    if it["n"] < 2:
        return f"only {it['n']} response" + ("" if it["n"] == 1 else "s")
    return "undefined (no two responses share a unit)"


def charts(table: dict) -> dict:
    """The four charts, each with its n (``*_n``) and a "too few ratings" mark (``*_mark``); points and bars that
    rest on fewer ratings than their minimum are drawn hollow / pale and say so in their tooltip."""
    hist = table.get("item_agreement_histogram") or {"bins": [k / 10 for k in range(11)], "counts": [0] * 10}
    n_items, n_without = item_counts(table)
    n_hist = n_items - n_without
    workers = [with_overlap(w) for w in table.get("workers", [])]
    y_key, y_label = worker_y_axis(table)
    y_n = "gold_n" if y_key == "gold_accuracy" else "overlap_n"
    points = [
        {
            "x": w["loo_agreement"],
            "y": w.get(y_key),
            "label": w["name"],
            "highlight": w["is_expert"],
            "weak": min(w.get("loo_n") or 0, w.get(y_n) or 0) < MIN_WORKER_UNITS,
            "note": f" (LOO n = {w.get('loo_n') or 0}, {y_label} n = {w.get(y_n) or 0})",
        }
        for w in workers
    ]
    plotted = [p for p in points if p["x"] is not None and p["y"] is not None]
    ot = table.get("over_time", [])
    level = table.get("level", "nominal")
    topic_rows = [
        {
            "label": t["topic"],
            "value": t["alpha"],
            "weak": t["n_units"] < MIN_UNITS,
            "note": f" ({t['n_units']} units, {t['n_coders']} coders)",
        }
        for t in table.get("topics", [])
    ]
    alpha_name = "alpha_u" if level == "unitized" else "alpha"
    weak_time = [(p.get("n_units") or 0) < MIN_UNITS for p in ot]
    last_units = ot[-1].get("n_units", 0) if ot else 0
    return {
        "histogram": svg.histogram(
            "chart-histogram",
            hist["counts"],
            hist["bins"],
            title=f"Per-item agreement (share of agreeing pairs), n = {_count(n_hist, 'item')}",
            xlabel="agreement of the item's responses",
        ),
        "histogram_n": n_hist,
        "histogram_left_out": n_without,
        "histogram_mark": mark(n_hist, MIN_UNITS, "items with 2+ responses"),
        "workers": svg.scatter(
            "chart-workers",
            points,
            title=f"Workers: LOO vs {y_label}, n = {_count(len(plotted), 'worker')}",
            xlabel="agreement with the others' majority (LOO)",
            ylabel=y_label,
        ),
        "workers_y": y_label,
        "workers_weak": sum(1 for p in plotted if p["weak"]),
        "time": svg.lines(
            "chart-time",
            [p["assignments"] for p in ot],
            [
                {"name": "alpha (cumulative)", "values": [p["alpha"] for p in ot], "weak": weak_time},
                {"name": "% agreement (cumul.)", "values": [p["percent_agreement"] for p in ot], "weak": weak_time},
            ],
            title=f"Agreement over submission order, n = {_count(last_units, 'unit')} at the end",
            xlabel="assignments submitted",
            ylabel="coefficient",
            notes=[f" ({p.get('n_units') or 0} units)" for p in ot],
        ),
        "time_n": last_units,
        "time_mark": mark(last_units, MIN_UNITS, "pairable units"),
        "time_weak": sum(weak_time),
        "topics": svg.bars(
            "chart-topics",
            topic_rows,
            xlabel=alpha_name,
            title=f"Per-topic {alpha_name}, n = {_count(len(topic_rows), 'topic')}",
        ),
        "topics_weak": sum(1 for r in topic_rows if r["weak"]),
        "n_workers_plotted": len(plotted),
    }


def worker_y_axis(table: dict) -> tuple[str, str]:
    """The worker scatter's y: gold accuracy when the project has gold answers, else Dawid-Skene competence."""
    if any(w.get("gold_n") for w in table.get("workers", [])):
        return "gold_accuracy", "gold accuracy"
    return "competence", "Dawid-Skene competence"


def figure_rows(table: dict) -> list[dict]:
    """The summary table of the agreement page: one row per scope (:func:`.tables.summary_scopes`)."""
    rows = []
    for scope, f in summary_scopes(table):
        ci = f.get("alpha_ci")
        fleiss_n = f.get("fleiss_n_units") or 0
        rows.append(
            {
                "scope": scope,
                "slug": scope.replace(":", "-").replace(" ", "-"),
                "level": f.get("level"),
                "alpha": num(f.get("alpha")),
                "alpha_raw": raw(f.get("alpha")),
                "ci": f"[{num(ci['low'])}, {num(ci['high'])}]" if ci else "—",
                "percent_agreement": num(f.get("percent_agreement")),
                "percent_agreement_raw": raw(f.get("percent_agreement")),
                "kappa": num(f.get("kappa")),
                "kappa_raw": raw(f.get("kappa")),
                "fleiss_kappa": num(f.get("fleiss_kappa")),
                "fleiss_kappa_raw": raw(f.get("fleiss_kappa")),
                "n_units": f.get("n_units"),
                "n_coders": f.get("n_coders"),
                "mark": None if f.get("unsupported") else mark(f.get("n_units"), MIN_UNITS, "pairable units"),
                "fleiss_n_units": fleiss_n,
                "fleiss_mark": mark(fleiss_n, MIN_UNITS, "units with the most common number of ratings"),
                "reasons": f.get("reasons") or {},
            }
        )
    return rows


def model_sections(project: Project, table: dict, epsilon: float) -> list[dict]:
    """One section per model annotator (:func:`annotation.model_annotators.report`), figures as shown."""
    names = {w["coder"]: w["name"] for w in table.get("workers", [])}
    out = []
    for rep in model_annotators.report(project, epsilon=epsilon):
        alt = rep.get("alt_test") or {}
        verdict = (
            {True: "passed: it may replace a human", False: "not passed: keep the humans", None: "no verdict"}[
                alt.get("passed")
            ]
            if alt
            else "no verdict"
        )
        out.append(
            {
                **rep,
                "slug": f"model-{rep['annotator']}",
                "without_text": {k: num(v) for k, v in (rep.get("without") or {}).items() if k in ("alpha", "kappa")},
                "with_text": {k: num(v) for k, v in (rep.get("with") or {}).items() if k in ("alpha", "kappa")},
                "humans": [
                    {
                        **h,
                        "name": names.get(h["coder"], h["coder"]),
                        "accuracy_text": num(h["accuracy"]),
                        "kappa_text": num(h["kappa"]),
                    }
                    for h in rep.get("per_human", [])
                ],
                "majority_text": {
                    "accuracy": num((rep.get("majority") or {}).get("accuracy")),
                    "kappa": num((rep.get("majority") or {}).get("kappa")),
                },
                "alt": alt,
                "verdict": verdict,
                "passed": alt.get("passed") if alt else None,
                "winning_rate": num(alt.get("winning_rate")),
                "advantage_probability": num(alt.get("advantage_probability")),
            }
        )
    return out


def worker_row(w: dict) -> dict:
    """A worker's figures as shown: each value with its n and the "too few ratings" mark."""
    comp = "n/a (no overlap)" if not w["overlap_n"] else num(w["competence"])
    return {
        **w,
        "loo": num(w["loo_agreement"]),
        "gold": num(w["gold_accuracy"]),
        "comp": comp,
        "loo_mark": mark(w.get("loo_n"), MIN_WORKER_UNITS, "units shared with other workers")
        if w["loo_agreement"] is not None
        else None,
        "gold_mark": mark(w.get("gold_n"), MIN_WORKER_UNITS, "gold items") if w["gold_accuracy"] is not None else None,
        "comp_mark": mark(w["overlap_n"], MIN_WORKER_UNITS, "units shared with other workers")
        if w["competence"] is not None
        else None,
    }


def item_row(it: dict, table: dict) -> dict:
    """An item as the lists show it: agreement (or why there is none), n responses, the mark."""
    return {
        **it,
        "agreement_text": num(it["agreement"]),
        "reason": _item_reason(it, table),
        "mark": mark(it["n"], MIN_ITEM_RESPONSES, "responses") if it["agreement"] is not None else None,
    }
