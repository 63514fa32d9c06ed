"""BWS for a ``bws_similarity`` project in the database: sample pairs per topic, build tuples -> items -> HITs,
collect the judgements, score them, compute split-half reliability and export.

Nothing here needs a migration: sampled pairs live in ``project.config["pairs"]`` (with the sampling report in
``project.config["sampling"]``), tuples are items, judgements are responses.

Stored scores (:func:`store_scores`): the counting score of every pair with its counts (best, worst, appearances)
and the split-half table are kept as an :class:`annotation.models.AgreementSnapshot` of scope ``"bws"`` (like the
agreement snapshots; ``figures = {"pairs": [{"pair_id", "topic", "score", "best", "worst", "appearances"}, ...],
"split_half", "table", "judgements", "n_splits", "seed"}``, ``computed_at``, ``based_on`` = submitted assignments).
They are refreshed by the same debounced ``annotation.recompute_agreement`` task that refreshes the agreement
figures after submissions (:func:`refresh_scores`, called from
:func:`annotation.agreement.snapshots.recompute`, through ``TaskType.on_recompute``), stored on the report page's first view when there is none, and
the report page shows them with their time of computation. Exports (:func:`export_rows`) always compute afresh.
"""

from __future__ import annotations

import json
import random
from typing import Any

from django.db import transaction

from annotation import services
from annotation.agreement.snapshots import SNAPSHOT_SCOPES_KEPT
from annotation.models import AgreementSnapshot, Assignment, Item, Project, Response
from annotation.selectors import unverified_q, wrong_task_type
from argora.errors import FieldError
from corpus.models import Sentence, Topic

from . import design, export, reliability, sampling
from .scoring import Judgement, counting_scores, encode

TASK_TYPE = "bws_similarity"


class BWSProjectError(FieldError):
    """A problem a person can fix (``field``: ``reason``)."""


def _check(project) -> None:
    reason = wrong_task_type(project, TASK_TYPE)
    if reason:
        raise BWSProjectError("project", reason)


def create_project(*, name: str, slug: str | None = None, config: dict | None = None, **settings):
    """A ``bws_similarity`` project with the paper's defaults: R = 4 workers per tuple, 5 tuples per HIT and one
    attention check in about every fifth task."""
    settings.setdefault("assignments_per_item", 4)
    settings.setdefault("items_per_hit", 5)
    settings.setdefault("gold_rate", 0.2)
    return services.create_project(name=name, slug=slug, task_type=TASK_TYPE, config=config or {}, **settings)


def topic_arguments(topic: str):
    """The arguments (corpus sentences) of a topic, by name (any case) or slug, in id order."""
    row = Topic.objects.filter(name__iexact=topic).first() or Topic.objects.filter(slug=topic).first()
    if row is None:
        raise BWSProjectError("topic", f"no topic named {topic!r}")
    return row, list(Sentence.objects.filter(topic=row).order_by("pk"))


def _built_topics(project) -> set[str]:
    return {p.get("topic") for p in Item.objects.filter(project=project).values_list("payload", flat=True)}


def sample(project, topic: str, n_pairs: int, *, seed: int | None = None, scorer=None) -> dict:
    """Sample ``n_pairs`` pairs of the topic's arguments (regardless of stance) into ``project.config["pairs"]``,
    replacing the topic's earlier sample (refused once the topic's tuples are built). Returns the report."""
    _check(project)
    row, sentences = topic_arguments(topic)
    if len(sentences) < 2:
        raise BWSProjectError("topic", f"topic {row.name!r} has {len(sentences)} argument(s); 2 are needed")
    config = dict(project.config or {})
    seed = config.get("seed", 0) if seed is None else seed
    scorer = scorer or config.get("scorer", "cosine")
    if not callable(scorer) and scorer not in sampling.scorer_names():
        raise BWSProjectError("scorer", f"unknown scorer {scorer!r} (known: {', '.join(sampling.scorer_names())})")
    if row.name in _built_topics(project):
        raise BWSProjectError("topic", f"topic {row.name!r} already has tasks; sample it in a new project")
    scorer_fn, scorer_label = sampling.resolve_scorer(scorer, project)  # "cosine": the active bi-encoder
    drawn = sampling.sample_pairs([s.text for s in sentences], n_pairs, scorer=scorer_fn, seed=seed)
    pairs = {pid: p for pid, p in (config.get("pairs") or {}).items() if p.get("topic") != row.name}
    for p in drawn:
        a, b = sentences[p.i], sentences[p.j]
        pairs[f"{a.pk}-{b.pk}"] = {
            "topic": row.name,
            "a": a.text,
            "b": b.text,
            "a_id": a.pk,
            "b_id": b.pk,
            "ds": round(p.score, 6),
            "bin": p.bin,
        }
    report = {
        "topic": row.name,
        "arguments": len(sentences),
        "candidates": len(sentences) * (len(sentences) - 1) // 2,
        "pairs": len(drawn),
        "requested": n_pairs,
        "bins": sampling.bin_counts(drawn),
        "seed": seed,
        "scorer": scorer_label,
    }
    config["pairs"] = pairs
    config.setdefault("sampling", {})[row.name] = report
    with transaction.atomic():
        Project.objects.filter(pk=project.pk).update(config=config)
    project.config = config
    return report


def add_pairs(project, topic: str, pairs: list[dict], *, source: str) -> dict:
    """Put a file's argument pairs of one topic into ``project.config["pairs"]`` as they are (no sampling: the
    published pair corpora, :mod:`.pairfiles`), replacing the topic's earlier pairs (refused once the topic's tuples
    are built). ``pairs``: ``{"a_id", "b_id", "file_id", "score"[, "label"]}`` with corpus sentence ids
    (``a_id`` = the file's argument1); a pair given twice (either order) is kept once. ``source``: what the report
    names (the file). Returns the topic's report, stored in ``config["sampling"]`` like a sample's."""
    _check(project)
    row = Topic.objects.filter(name__iexact=topic).first()
    if row is None:
        raise BWSProjectError("topic", f"no topic named {topic!r}")
    if row.name in _built_topics(project):
        raise BWSProjectError("topic", f"topic {row.name!r} already has tasks; add its pairs to a new project")
    texts = dict(
        Sentence.objects.filter(topic=row, pk__in={p["a_id"] for p in pairs} | {p["b_id"] for p in pairs}).values_list(
            "pk", "text"
        )
    )
    config = dict(project.config or {})
    kept = {pid: p for pid, p in (config.get("pairs") or {}).items() if p.get("topic") != row.name}
    seen: set[frozenset] = set()
    n = 0
    for p in pairs:
        key = frozenset((p["a_id"], p["b_id"]))
        if len(key) < 2 or key in seen:
            continue
        if p["a_id"] not in texts or p["b_id"] not in texts:
            raise BWSProjectError(
                "pairs", f"pair {p.get('file_id')!r}: its arguments are not corpus sentences of {row.name!r}"
            )
        seen.add(key)
        pair = {
            "topic": row.name,
            "a": texts[p["a_id"]],
            "b": texts[p["b_id"]],
            "a_id": p["a_id"],
            "b_id": p["b_id"],
            "file_id": str(p.get("file_id", "")),
            "file_score": p.get("score"),
        }
        if p.get("label"):
            pair["file_label"] = p["label"]
        kept[f"{p['a_id']}-{p['b_id']}"] = pair
        n += 1
    if n < design.TUPLE_SIZE:
        raise BWSProjectError(
            "pairs", f"topic {row.name!r} has {n} distinct pair(s); a BWS task needs {design.TUPLE_SIZE}"
        )
    arguments = len({i for key in seen for i in key})
    report = {
        "topic": row.name,
        "arguments": arguments,
        "candidates": n,
        "pairs": n,
        "requested": n,
        "bins": {},
        "seed": "",
        "scorer": f"pairs of {source}",
    }
    config["pairs"] = kept
    config.setdefault("sampling", {})[row.name] = report
    with transaction.atomic():
        Project.objects.filter(pk=project.pk).update(config=config)
    project.config = config
    return report


def _attention_checks(project, topic: str, pair_ids: list[str], n: int, rng: random.Random) -> list[dict]:
    pairs = project.config["pairs"]
    ids = sorted({pairs[pid]["a_id"] for pid in pair_ids} | {pairs[pid]["b_id"] for pid in pair_ids})
    texts = {}
    for pid in pair_ids:
        texts[pairs[pid]["a_id"]] = pairs[pid]["a"]
        texts[pairs[pid]["b_id"]] = pairs[pid]["b"]
    out = []
    for k in range(min(n, len(ids))):
        sid = ids[rng.randrange(len(ids))]
        others = rng.sample(pair_ids, 3)
        shown = [{"id": pid, "a": pairs[pid]["a"], "b": pairs[pid]["b"]} for pid in others]
        same = f"same:{sid}"
        shown.insert(rng.randrange(4), {"id": same, "a": texts[sid], "b": texts[sid]})
        out.append(
            {
                "payload": {"topic": topic, "tuple": f"{topic}:check{k}", "pairs": shown, "check": True},
                "expected": {"best": same},
                "explanation": "Two identical arguments are the most similar pair.",
            }
        )
    return out


def build(project, *, seed: int | None = None) -> dict:
    """Tuples (2N per topic by default) -> items (+ attention checks as gold items) -> HITs, for every sampled topic
    that has no tasks yet. All or nothing. Returns ``{"topics": {topic: {"pairs", "tuples", ...}}, "hits": n}``."""
    _check(project)
    config = project.config or {}
    seed = config.get("seed", 0) if seed is None else seed
    pairs = config.get("pairs") or {}
    if not pairs:
        raise BWSProjectError("pairs", "no pairs sampled yet (manage.py bws sample --project ... --topic ...)")
    by_topic: dict[str, list[str]] = {}
    for pid, p in pairs.items():
        by_topic.setdefault(p["topic"], []).append(pid)
    done = _built_topics(project)
    summary: dict[str, Any] = {"topics": {}, "hits": 0}
    payloads, gold = [], []
    tt = project.get_task_type()
    for topic in sorted(by_topic):
        if topic in done:
            continue
        ids = sorted(by_topic[topic])
        if len(ids) < design.TUPLE_SIZE:
            raise BWSProjectError("pairs", f"topic {topic!r} has {len(ids)} pairs; a BWS task needs 4")
        n_tuples = int(config.get("tuples_per_pair", 2)) * len(ids)
        tuples = design.make_tuples(ids, n_tuples, seed=seed)
        items = tt.build_items(project, tuples)
        for n, item in enumerate(items):
            item["tuple"] = f"{topic}:{n}"
        payloads += items
        checks = _attention_checks(
            project, topic, ids, int(config.get("attention_checks", 2)), random.Random(f"{seed}:{topic}")
        )
        gold += checks
        stats = design.design_stats(tuples)
        summary["topics"][topic] = {
            "pairs": len(ids),
            "tuples": len(tuples),
            "attention_checks": len(checks),
            "min_freq": stats["min_freq"],
            "max_freq": stats["max_freq"],
        }
    if not payloads:
        return summary
    with transaction.atomic():
        services.add_items(project, payloads, gold=gold)
        summary["hits"] = services.build_hits(project)
    return summary


def judgements(project) -> list[Judgement]:
    """Submitted / approved responses of the project's (non-gold) tasks as judgements."""
    rows = (
        Response.objects.filter(
            assignment__project=project, assignment__status__in=Assignment.DONE, item__is_gold=False
        )
        .exclude(unverified_q("assignment__"))
        .order_by("item_id", "assignment__worker_id")
        .values_list("item_id", "item__payload", "assignment__worker_id", "data")
    )
    out = []
    for item_id, payload, worker_id, data in rows:
        ids = tuple(str(p["id"]) for p in payload.get("pairs") or [])
        out.append(Judgement(item_id, worker_id, payload.get("topic", ""), data.get("best"), data.get("worst"), ids))
    return out


def report(project, *, n_splits: int | None = None, seed: int | None = None, js: list | None = None) -> dict:
    """Scores and split-half reliability of a project, computed now (``js``: its judgements, if already read)."""
    _check(project)
    config = project.config or {}
    n_splits = int(config.get("n_splits", 25) if n_splits is None else n_splits)
    seed = int(config.get("seed", 0) if seed is None else seed)
    js = judgements(project) if js is None else js
    pairs = config.get("pairs") or {}
    out: dict[str, Any] = {
        "n_splits": n_splits,
        "seed": seed,
        "judgements": len(js),
        "scores": {},
        "rows": [],
        "split_half": None,
        "table": [],
    }
    if not js:
        return out
    data = encode(js)
    scores = counting_scores(data)
    out["scores"] = scores
    out["rows"] = export.rows(scores, pairs)
    out["split_half"] = reliability.split_half(data, n_splits=n_splits, seed=seed)
    out["table"] = reliability.table(out["split_half"])
    return out


# --- stored scores --------------------------------------------------------------------------------
SCORES_SCOPE = "bws"
SCORE_KEYS = ("pair_id", "topic", "score", "best", "worst", "appearances")


def _jsonable(value):
    """numpy numbers -> Python numbers (what a JSONField can store)."""
    return json.loads(json.dumps(value, default=lambda o: o.item() if hasattr(o, "item") else str(o)))


def submitted_assignments(project) -> int:
    return Assignment.objects.filter(project=project, status__in=Assignment.DONE).count()


def store_scores(project):
    """Compute :func:`report` with the project's ``n_splits`` / ``seed`` and store it (every pair's score and
    counts, the split-half table) as an AgreementSnapshot of scope ``"bws"``; older ones beyond the last few are
    dropped. Returns the snapshot."""
    _check(project)
    based_on = submitted_assignments(project)
    js = judgements(project)
    r = report(project, js=js)
    figures = _jsonable(
        {
            "pairs": [{k: row[k] for k in SCORE_KEYS} for row in r["rows"]],
            "split_half": r["split_half"],
            "table": r["table"],
            "judgements": r["judgements"],
            "n_splits": r["n_splits"],
            "seed": r["seed"],
        }
    )
    workers = len({j.annotator for j in js})
    with transaction.atomic():
        snap = AgreementSnapshot.objects.create(
            project=project,
            scope=SCORES_SCOPE,
            figures=figures,
            n_units=len(figures["pairs"]),
            n_coders=workers,
            based_on=based_on,
        )
        old = list(
            AgreementSnapshot.objects.filter(project=project, scope=SCORES_SCOPE)
            .order_by("-computed_at", "-id")
            .values_list("pk", flat=True)[SNAPSHOT_SCOPES_KEPT:]
        )
        if old:
            AgreementSnapshot.objects.filter(pk__in=old).delete()
    return snap


def latest_scores(project):
    """The newest stored scores of the project (an AgreementSnapshot of scope ``"bws"``), or ``None``."""
    return AgreementSnapshot.objects.filter(project=project, scope=SCORES_SCOPE).order_by("-computed_at", "-id").first()


def refresh_scores(project, *, force: bool = False):
    """Store new scores unless the latest already covers every submitted assignment (``force``: anyway). For the
    debounced recompute task; a project of another task type is left alone. Returns the snapshot stored or
    ``None``."""
    if project.task_type != TASK_TYPE:
        return None
    last = latest_scores(project)
    if not force and last is not None and last.based_on == submitted_assignments(project):
        return None
    return store_scores(project)


def stored_rows(snapshot, project) -> list[dict]:
    """The stored pairs of a snapshot with their argument texts (from the project's sampled pairs)."""
    pairs = (project.config or {}).get("pairs") or {}
    return [
        dict(
            row,
            argument1=(pairs.get(row["pair_id"]) or {}).get("a", ""),
            argument2=(pairs.get(row["pair_id"]) or {}).get("b", ""),
        )
        for row in (snapshot.figures or {}).get("pairs") or []
    ]


def export_rows(project) -> list[dict]:
    """JSONL rows (topic, argument1, argument2, score, counts) of every scored pair."""
    _check(project)
    js = judgements(project)
    return export.rows(counting_scores(encode(js)), (project.config or {}).get("pairs") or {}) if js else []


def export_files(
    project, out=None, *, split: str | None = None, out_dir=None, splits: dict | None = None, seed: int | None = None
) -> dict[str, int]:
    """:func:`export_rows` written by :func:`annotation.task_types.bws_similarity.export.write_files`; the cross-topic topics default to
    the project's ``config["splits"]``, the in-topic seed to its ``config["seed"]``. Raises ``ValueError``."""
    _check(project)
    config = project.config or {}
    seed = int(config.get("seed", 0) if seed is None else seed)
    return export.write_files(
        export_rows(project), out, split=split, out_dir=out_dir, splits=splits or config.get("splits"), seed=seed
    )
