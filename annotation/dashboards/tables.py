"""The dashboards' tables as data: the CSV downloads (:func:`table_csv`, one per name of :data:`CSV_TABLES`) and the
row readings every page shares (the scopes of a summary, a worker row with its overlap, items lowest first).

Plain functions over a snapshot's figures (dicts): :mod:`.figures` shapes the same rows for the pages, and
:mod:`.views` answers the requests.
"""

from __future__ import annotations

from django.http import Http404, HttpResponse

from argora.spreadsheet import csv_response

from ..agreement.snapshots import item_rows
from ..models import AgreementSnapshot

CSV_TABLES = ("summary", "topics", "workers", "items", "over_time")
FIGURE_COLUMNS = [
    "level",
    "alpha",
    "alpha_ci_low",
    "alpha_ci_high",
    "percent_agreement",
    "kappa",
    "fleiss_kappa",
    "n_units",
    "n_coders",
]


def raw(v) -> str:
    """A value as a CSV cell or a ``data-`` attribute: empty for None, a float's full ``repr``."""
    return "" if v is None else repr(v) if isinstance(v, float) else str(v)


def csv_table_response(filename: str, header: list[str], rows: list[list]) -> HttpResponse:
    return csv_response(filename, [header] + [[raw(v) for v in row] for row in rows])


def _figure_row(f: dict) -> list:
    ci = f.get("alpha_ci") or {}
    return [
        f.get("level"),
        f.get("alpha"),
        ci.get("low"),
        ci.get("high"),
        f.get("percent_agreement"),
        f.get("kappa"),
        f.get("fleiss_kappa"),
        f.get("n_units"),
        f.get("n_coders"),
    ]


def summary_scopes(table: dict) -> list[tuple[str, dict]]:
    """``(scope, figures)`` of the summary: the project, each topic, and crowd / expert / between when both exist."""
    scopes = [("project", table)] + [(f"topic:{t['topic']}", t) for t in table.get("topics", [])]
    cve = table.get("crowd_vs_expert")
    if cve:
        scopes += [("crowd", cve["crowd"]), ("expert", cve["expert"]), ("crowd-vs-expert", cve["between"])]
    return scopes


def table_csv(table: dict, name: str, snap: AgreementSnapshot | None = None, adjudications=None, answer_text=str):
    """(header, rows) of one CSV table of a project table (``answer_text``: the task type's reading of an answer)."""
    if name == "summary":
        header = ["scope"] + FIGURE_COLUMNS + ["computed_at", "based_on"]
        rows = [
            [scope] + _figure_row(f) + [snap.computed_at.isoformat() if snap else "", table.get("based_on")]
            for scope, f in summary_scopes(table)
        ]
    elif name == "topics":
        header = ["topic"] + FIGURE_COLUMNS
        rows = [[t["topic"]] + _figure_row(t) for t in table.get("topics", [])]
    elif name == "workers":
        header = [
            "coder",
            "worker_id",
            "name",
            "is_expert",
            "n_responses",
            "loo_agreement",
            "loo_n",
            "gold_accuracy",
            "gold_n",
            "competence",
            "overlap_n",
            "competence_reason",
        ]
        rows = [[w.get(h) for h in header] for w in map(with_overlap, table.get("workers", []))]
    elif name == "items":
        adjudications = adjudications or {}
        header = [
            "item_id",
            "position",
            "topic",
            "text",
            "n",
            "agreement",
            "majority",
            "responses",
            "adjudicated",
            "adjudicated_by",
            "adjudicated_at",
        ]
        rows = []
        for it in lowest_first(table.get("items", [])):
            adj = adjudications.get(it["item_id"])
            rows.append(
                [
                    it["item_id"],
                    it["position"],
                    it["topic"],
                    it["text"],
                    it["n"],
                    it["agreement"],
                    it["majority"],
                    "; ".join(f"{r['coder']}={answer_text(r['data'])}" for r in it["responses"]),
                    adj["text"] if adj else "",
                    adj["by"] if adj else "",
                    adj["at"].isoformat() if adj else "",
                ]
            )
    elif name == "over_time":
        header = ["assignments", "alpha", "percent_agreement", "n_units", "reason"]
        rows = [[p.get(h, "") for h in header] for p in table.get("over_time", [])]
    else:
        raise Http404(f"no table {name!r}; tables: {', '.join(CSV_TABLES)}")
    return header, rows


def with_overlap(w: dict) -> dict:
    """A worker row of any snapshot, with ``overlap_n`` and the competence it allows: snapshots stored before the
    overlap was kept get it from ``loo_n`` (the same count), and a competence without overlap is dropped."""
    overlap = w.get("overlap_n", w.get("loo_n", 0)) or 0
    out = {**w, "overlap_n": overlap}
    if not overlap:
        out["competence"] = None
        out["competence_reason"] = "no overlap with other workers"
    return out


def item_counts(table: dict) -> tuple[int, int]:
    """(answered items, items without an agreement figure): counted from ``items`` when the table has them (a
    fresh project table), else the counts stored with the snapshot's figures."""
    if "items" in table:
        items = table["items"]
        return len(items), sum(1 for it in items if it["agreement"] is None)
    return table.get("n_items", 0), table.get("n_items_without", 0)


def with_items(snap: AgreementSnapshot) -> dict:
    """The snapshot's figures with every item row (lowest agreement first): for the CSV downloads only."""
    return {**snap.figures, "items": [r.as_dict() for r in item_rows(snap).iterator(chunk_size=2000)]}


def lowest_first(items: list[dict]) -> list[dict]:
    return sorted(
        items,
        key=lambda it: (
            it["agreement"] is None,
            it["agreement"] if it["agreement"] is not None else 0,
            it["position"],
            it["item_id"],
        ),
    )
