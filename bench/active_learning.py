"""Active learning: labels needed to reach a target F1 with the ``random``, ``uncertainty`` and ``disagreement``
item orders (issue 24), measured in one run on the same data and seeds.

    .venv/bin/python bench/active_learning.py [--data FILE] [--seeds 13,14] [--target 0.9] [--noise 0.25]

Which model: the aspect **tagger** (kind ``tagger``, an ``aspect`` project). Of the two kinds that give the
``uncertainty`` order its confidences (:mod:`ml.item_confidence`: ``tagger`` for aspect projects, ``valnov`` for
validity/novelty), it is the one with data the project generates itself (:func:`ml.data.synthetic_appf`, App. F
rows with a planted signal: aspect phrases among recurring filler words) and a tiny from-scratch configuration that
the tests already use (``from_config``: a 1-layer BERT, 32 wide, the packaged MiniLM tokenizer; no weights to
download). It trains in 3-15 s on 2 CPU cores and goes from the majority baseline (macro F1 0.31) to 0.85 with 40
clean sentences and 0.96 with 60, so the labels needed fall within a study-sized pool. ``valnov`` has no shipped or
generated data and needs a pretrained encoder (3 runs by default) to learn anything.

Data: ``--pool`` sentences of :func:`ml.data.synthetic_appf` (seed ``--data-seed``) to annotate and ``--test``
held-out sentences (another seed; sentences also in the pool left out), or ``--data FILE``: a local labelled file
the tagger reads (Arg-CTRL App. F JSONL, ``{"text", "spans"}`` JSONL, CoNLL aspect spans; non-arguments dropped),
split by sentence hash into pool and held-out set (``--test-fraction``). Nothing is downloaded.

One simulated study per order and seed, each in a project of its own (:func:`simulate`); the seeds are the repeats,
each seed running the three orders back to back (interleaved):

- an ``aspect`` project (``free_spans``: any whole-word span is a valid answer; R = ``--r`` responses per item,
  ``--items-per-hit`` items per HIT, no gold), the pool imported in a seeded shuffle (the ``random`` order is the
  import order), its item order set with :func:`annotation.services.set_item_order` -- ``disagreement`` is adaptive:
  ``{"r_min": R - 1, "r_max": R, "min_agreement": 0.7}``, every HIT gets R - 1 responses and only those whose
  answers disagree get the R-th;
- rounds: each of ``--workers`` simulated workers reserves the next HIT through the real allocation
  (:func:`annotation.services.reserve_next_assignment`) and submits (:func:`annotation.services.submit_assignment`)
  the gold answer, or with probability ``--noise`` a wrong one (a random other word of the sentence); after each
  round :func:`annotation.services.reorder_hits` (what the debounced ``annotation.reorder_hits`` task does after
  submissions), and the retrain loop whenever ``--retrain-every`` more sentences are labelled (in a deployment a
  debounced task asks it after submissions; here it is asked once per step of labels, so a version that lost the
  comparison is not retrained after every round);
- retrain loop: the project retrains ``tagger`` every ``--retrain-every`` labelled sentences (``engine
  ["retrain_every"]``; a sentence is labelled once its crowd vote is resolved). The first version is trained by
  :func:`ml.loop.train_and_activate` with the tiny hyperparameters (the loop's first version would use the tagger's
  defaults); every later one by :func:`ml.loop.maybe_retrain` itself (it inherits its parent's hyperparameters and
  seed, and activates a version only when it beats the active one on the new dev split);
- whenever a new version is active it is scored on the held-out set (macro F1 over B / I / O, the tagger's primary
  metric); the responses submitted when it first reaches ``--target`` are the labels needed.

Printed: per order the labels needed per seed and their mean, the labelled sentences and trainings at that point,
and the ratios uncertainty / random and disagreement / random (below 1: fewer labels than random): of the means, and
min / median / max of the per-seed ratios (each seed's study against the random study of the same seed); the
machine load before and after (it counts labels; the seconds column is the only time it prints). An order that
does not reach the target within the pool (or ``--max-labels``) is printed as ``>N`` and its ratio as a bound.

Defaults (about 10 minutes on 2 CPU cores): 240 pool / 300 held-out sentences, R = 3, one item per HIT, 5 workers,
noise 0.25, retrain every 5 labelled sentences, target 0.90, seeds 13 to 17; tagger hyperparameters
:data:`TINY` (AdamW lr 3e-3, batch 8, at most 10 epochs and 80 steps, max length 48). The database is a fresh
SQLite file in a temporary folder (``--keep`` keeps it), the broker in memory (the debounced tasks the submissions
enqueue are what the rounds do in-process).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argora.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bench.timing import load_line, spread  # noqa: E402

ORDERS = ("random", "uncertainty", "disagreement")
KIND = "tagger"
TINY = {
    "from_config": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64},
    "lr": 3e-3,
    "head_lr": 3e-3,
    "batch_size": 8,
    "max_length": 48,
    "epochs": 10,
    "max_steps": 80,
}
MIN_AGREEMENT = 0.7
APPF_STANCES = {"Argument_for": "pro", "Argument_against": "con", "pro": "pro", "con": "con"}


# --- data ------------------------------------------------------------------------------------------


def _snap(tokens: list[tuple[int, int]], spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``(begin, length)`` spans covering whole tokens (``begin``, ``end`` offsets), overlaps merged."""
    out: list[list[int]] = []
    for b, e in sorted(spans):
        cover = [(tb, te) for tb, te in tokens if tb < e and b < te]
        if not cover:
            continue
        b, e = cover[0][0], cover[-1][1]
        if out and b < out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([b, e])
    return [(b, e - b) for b, e in out]


def sentence_rows(rows: list[dict]) -> list[dict]:
    """``{"text", "topic", "stance", "spans": [{"begin", "end"}]}`` of tagger rows (App. F or ``{text, spans}``),
    arguments only, spans snapped to whole tokens (what an annotator can mark)."""
    from corpus.tokens import token_offsets
    from ml.trainers.tagger import row_text_spans

    out, seen = [], set()
    for row in rows:
        stance = APPF_STANCES.get(str(row.get("stance") or "pro"))
        text, spans = row_text_spans(row)
        if stance is None or not text.strip() or text in seen:
            continue
        seen.add(text)
        snapped = _snap([tuple(t) for t in token_offsets(text)], spans)
        out.append(
            {
                "text": text,
                "topic": str(row.get("topic") or ""),
                "stance": stance,
                "spans": [{"begin": b, "end": b + n} for b, n in snapped],
            }
        )
    return out


def synthetic_data(n_pool: int, n_test: int, seed: int) -> tuple[list[dict], list[dict]]:
    """Pool and held-out sentences of :func:`ml.data.synthetic_appf` (held-out: another seed, pool texts left out)."""
    from ml.data import synthetic_appf

    pool = sentence_rows(synthetic_appf(n_pool, seed=seed))
    texts = {r["text"] for r in pool}
    test = [r for r in sentence_rows(synthetic_appf(n_test + n_test // 2, seed=seed + 1000)) if r["text"] not in texts]
    return pool, test[:n_test]


def file_data(path, test_fraction: float) -> tuple[list[dict], list[dict]]:
    """Pool and held-out sentences of a local labelled file (split by sentence hash)."""
    from ml.registry import get_trainer
    from ml.splits import stable_split

    train, dev = get_trainer(KIND).rows_from_file(Path(path))
    rows = sentence_rows(list(train) + list(dev))
    pool, test = stable_split(rows, key="text", dev_fraction=test_fraction, salt="argora-bench-active-learning")
    return pool, test


# --- one simulated study ---------------------------------------------------------------------------


def _answer(payload: dict, spans: list[tuple[int, int]], rng: random.Random, noise: float) -> dict:
    """A simulated worker's response: the gold answer, or with probability ``noise`` a random other word."""
    text = payload.get("text", "")
    if rng.random() < noise:
        words = [(b, e - b) for b, e in payload.get("tokens") or [] if text[b:e].isalnum() and (b, e - b) not in spans]
        if words:
            b, n = rng.choice(words)
            return {"aspects": [f"{b}:{n}"]}
    if spans:
        return {"aspects": [f"{b}:{n}" for b, n in spans]}
    check = payload.get("check") or {}
    return {"aspects": [], "no_aspect": True, "check": str(int(check.get("a", 0)) + int(check.get("b", 0)))}


def _item_order(order: str, r: int):
    if order == "disagreement" and r > 1:
        return {"mode": "disagreement", "r_min": r - 1, "r_max": r, "min_agreement": MIN_AGREEMENT}
    return order


def _retrain(project, *, seed: int, hyperparameters: dict) -> dict | None:
    """One step of the retrain loop: the first version with ``hyperparameters`` once the project has
    ``retrain_every`` labelled sentences (and a dev split), later ones by :func:`ml.loop.maybe_retrain`."""
    from ml import loop, registry

    if registry.active_version(KIND, project, exact=True) is None:
        train, dev, n_labels = loop.rows_from_project(KIND, project)
        if n_labels < loop.retrain_every(project) or not train or not dev:
            return None
        return loop.train_and_activate(KIND, project=project, seed=seed, hyperparameters=hyperparameters)
    return next((o for o in loop.maybe_retrain(project) if o.get("kind") == KIND), None)


def simulate(
    order: str,
    pool: list[dict],
    test: list[dict],
    *,
    seed: int,
    target: float,
    r: int = 3,
    items_per_hit: int = 1,
    workers: int = 5,
    noise: float = 0.25,
    retrain_every: int = 10,
    max_labels: int | None = None,
    hyperparameters: dict | None = None,
    say=print,
) -> dict:
    """One study of ``pool`` in item order ``order`` (module docstring). Returns ``{"order", "seed",
    "labels_to_target" (responses; None: not reached), "labelled_at_target", "responses", "trainings",
    "activated", "curve": [{"responses", "labelled", "version", "f1"}], "notes": {reorder notes}, "seconds"}``."""
    from annotation import services
    from annotation.models import Item, Response, Worker
    from ml import loop, registry

    started = time.perf_counter()
    hyperparameters = dict(TINY if hyperparameters is None else hyperparameters)
    rng = random.Random(seed)
    rows = list(pool)
    rng.shuffle(rows)  # the import order, the same for every order of this seed
    project = services.create_project(
        name=f"Active learning bench {order} seed {seed}",
        task_type="aspect",
        assignments_per_item=r,
        items_per_hit=items_per_hit,
        gold_rate=0.0,
        config={"free_spans": True},
        engine={"retrain_kinds": [KIND], "retrain_every": retrain_every},
    )
    services.add_items_from_rows(
        project, [SimpleNamespace(text=row["text"], topic=row["topic"], stance=row["stance"], pk=None) for row in rows]
    )
    items = list(Item.objects.filter(project=project).order_by("position").values_list("pk", "payload"))
    truth = {pk: [(s["begin"], s["end"] - s["begin"]) for s in row["spans"]] for (pk, _), row in zip(items, rows)}
    services.build_hits(project)
    services.set_item_order(project, _item_order(order, r))
    services.set_project_status(project, "active")
    people = [
        services.worker_for_external_id(f"al-bench-{order}-{seed}-{i}", source=Worker.Source.INVITE)
        for i in range(workers)
    ]
    answer_rng = random.Random(seed * 7919 + 1)  # the same noise stream for every order of this seed
    budget = max_labels or len(rows) * r
    responses, trainings, activated, active_pk, checked = 0, 0, 0, None, 0
    curve: list[dict] = []
    notes: dict[str, int] = {}
    reached = None
    while responses < budget and reached is None:
        given = 0
        for worker in people:
            assignment = services.reserve_next_assignment(project, worker)
            if assignment is None:
                continue
            answers = {
                str(it.pk): _answer(it.payload or {}, truth[it.pk], answer_rng, noise)
                for it in services.assignment_items(assignment)
            }
            services.submit_assignment(assignment, worker, answers, client_seconds=30.0)
            given += len(answers)
        if not given:
            break  # every HIT has its responses
        responses += given
        labelled = loop.rows_from_project(KIND, project)[2]
        if labelled // retrain_every > checked:  # the loop is asked once per retrain_every new labelled sentences
            checked = labelled // retrain_every
            outcome = _retrain(project, seed=seed, hyperparameters=hyperparameters)
            if outcome is not None and outcome.get("version"):
                trainings += 1
        note = services.reorder_hits(project)["note"]  # after submissions and after a new model is active
        key = note.split(" (")[0].split(";")[0]
        notes[key] = notes.get(key, 0) + 1
        version = registry.active_version(KIND, project, exact=True)
        if version is not None and version.pk != active_pk:
            active_pk, activated = version.pk, activated + 1
            f1 = float(registry.get_trainer(KIND).evaluate(registry.load_model(version), test)["f1_macro"])
            curve.append(
                {"responses": responses, "labelled": version.snapshot_labels, "version": version.pk, "f1": round(f1, 4)}
            )
            say(
                f"  {order:<12} seed {seed}: {responses:>4} responses, {version.snapshot_labels:>3} labelled "
                f"sentences -> version {version.pk}, held-out F1 {f1:.4f}"
            )
            if f1 >= target:
                reached = curve[-1]
    n_responses = Response.objects.filter(item__project=project).count()
    return {
        "order": order,
        "seed": seed,
        "project": project.slug,
        "labels_to_target": reached["responses"] if reached else None,
        "labelled_at_target": reached["labelled"] if reached else None,
        "responses": n_responses,
        "trainings": trainings,
        "activated": activated,
        "curve": curve,
        "notes": notes,
        "budget": budget,
        "seconds": round(time.perf_counter() - started, 1),
    }


# --- all orders, table and ratios ------------------------------------------------------------------


def run(
    pool: list[dict], test: list[dict], *, orders=ORDERS, seeds=(13,), target: float = 0.9, say=print, **options
) -> dict:
    """Every order on the same data and seeds; ``{"runs": [simulate(...)], "orders": {order: summary},
    "ratios": {"uncertainty / random": x, "disagreement / random": y}}`` (a ratio is ``None`` when neither run
    set bounds it; ``bound`` says when an order did not reach the target and its budget stands in)."""
    runs = []
    for seed in seeds:
        for order in orders:
            runs.append(simulate(order, pool, test, seed=seed, target=target, say=say, **options))
    summary = {}
    for order in orders:
        mine = [x for x in runs if x["order"] == order]
        labels = [x["labels_to_target"] if x["labels_to_target"] is not None else x["responses"] for x in mine]
        summary[order] = {
            "labels": [x["labels_to_target"] for x in mine],
            "mean": statistics.mean(labels),
            "all_reached": all(x["labels_to_target"] is not None for x in mine),
            "labelled": [x["labelled_at_target"] for x in mine],
            "trainings": sum(x["trainings"] for x in mine),
            "seconds": round(sum(x["seconds"] for x in mine), 1),
        }
    ratios = {}
    if "random" in summary:
        base = summary["random"]
        for order in orders:
            if order == "random":
                continue
            mine = summary[order]
            value = mine["mean"] / base["mean"] if base["mean"] else None
            if mine["all_reached"] and base["all_reached"]:
                bound = ""
            elif mine["all_reached"]:
                bound = "<="  # random needed more than its budget
            elif base["all_reached"]:
                bound = ">="
            else:
                value, bound = None, "neither reached"
            # the same seed's two studies side by side (same shuffle, noise and training seed): their ratio
            per_seed = []
            for seed in seeds:
                mine_run = next(x for x in runs if x["order"] == order and x["seed"] == seed)
                base_run = next(x for x in runs if x["order"] == "random" and x["seed"] == seed)
                if mine_run["labels_to_target"] is not None and base_run["labels_to_target"]:
                    per_seed.append(round(mine_run["labels_to_target"] / base_run["labels_to_target"], 3))
                else:
                    per_seed.append(None)
            ratios[f"{order} / random"] = {
                "value": None if value is None else round(value, 3),
                "bound": bound,
                "per_seed": per_seed,
            }
    return {"target": target, "seeds": list(seeds), "runs": runs, "orders": summary, "ratios": ratios}


def format_result(result: dict) -> str:
    seeds = result["seeds"]
    head = " / ".join(str(s) for s in seeds)
    lines = [
        (
            f"| order | labels to F1 >= {result['target']:.2f} (seeds {head}) | mean | labelled sentences "
            f"| trainings | seconds |"
        ),
        "| --- " * 6 + "|",
    ]
    for order, s in result["orders"].items():
        runs = [x for x in result["runs"] if x["order"] == order]
        cells = " / ".join(
            str(x["labels_to_target"]) if x["labels_to_target"] is not None else f">{x['responses']}" for x in runs
        )
        mean = f"{s['mean']:.1f}" if s["all_reached"] else f">={s['mean']:.1f}"
        labelled = " / ".join("-" if n is None else str(n) for n in s["labelled"])
        lines.append(f"| {order} | {cells} | {mean} | {labelled} | {s['trainings']} | {s['seconds']} |")
    lines.append("")
    for name, ratio in result["ratios"].items():
        value = "n/a" if ratio["value"] is None else f"{ratio['bound']}{ratio['value']:.2f}x"
        line = f"labels needed, {name}: {value}" + (f" ({ratio['bound']})" if ratio["value"] is None else "")
        reached = [x for x in ratio.get("per_seed", []) if x is not None]
        if reached:
            line += (
                f"; per seed (both reached the target: {len(reached)} of {len(ratio['per_seed'])}) "
                f"min / median / max {spread(reached, '.2f')}x"
            )
        lines.append(line)
    return "\n".join(lines)


# --- command line ----------------------------------------------------------------------------------


def setup_django(folder: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{folder / 'bench.sqlite3'}"
    os.environ["ARGORA_ARTIFACT_ROOT"] = str(folder / "artifacts")
    os.environ["CACHE_URL"] = str(folder / "cache")
    os.environ["CELERY_BROKER_URL"] = "memory://localhost/"
    os.environ.setdefault("ARGORA_LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--data",
        help="a local labelled file the tagger reads (App. F JSONL, {text, spans} JSONL, CoNLL); "
        "default: generated App. F-like sentences",
    )
    p.add_argument("--pool", type=int, default=240, help="generated sentences to annotate")
    p.add_argument("--test", type=int, default=300, help="generated held-out sentences")
    p.add_argument("--test-fraction", type=float, default=0.3, help="held-out share of --data")
    p.add_argument("--data-seed", type=int, default=13)
    p.add_argument(
        "--seeds", default="13,14,15,16,17", help="comma-separated simulation seeds (order, noise, training)"
    )
    p.add_argument("--orders", default=",".join(ORDERS))
    p.add_argument("--target", type=float, default=0.9, help="held-out macro F1 to reach")
    p.add_argument("--r", type=int, default=3, help="responses per item (R)")
    p.add_argument("--items-per-hit", type=int, default=1)
    p.add_argument("--workers", type=int, default=5)
    p.add_argument("--noise", type=float, default=0.25, help="share of wrong answers")
    p.add_argument("--retrain-every", type=int, default=5, help="labelled sentences between retrains")
    p.add_argument("--max-labels", type=int, help="responses per study at most (default: the whole pool x R)")
    p.add_argument("--hp", default="", help="JSON over the tiny tagger hyperparameters")
    p.add_argument("--json", help="also write the figures to this file")
    p.add_argument("--keep", action="store_true", help="keep the temporary database and artifacts")
    args = p.parse_args(argv)

    problems = []
    if not 0 < args.target <= 1:
        problems.append(f"--target: must be above 0 and at most 1, got {args.target}")
    if not 0 <= args.noise < 1:
        problems.append(f"--noise: must be at least 0 and below 1, got {args.noise}")
    if args.r < 1 or args.workers < args.r:
        problems.append(f"--workers: need at least R = {args.r} workers (and R >= 1), got {args.workers}")
    if args.retrain_every < 1:
        problems.append("--retrain-every: must be at least 1")
    orders = [o.strip() for o in args.orders.split(",") if o.strip()]
    if not orders or any(o not in ORDERS for o in orders):
        problems.append(f"--orders: each one of {', '.join(ORDERS)}")
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        seeds = []
    if not seeds:
        problems.append("--seeds: comma-separated whole numbers")
    try:
        hyperparameters = dict(TINY, **json.loads(args.hp)) if args.hp else dict(TINY)
    except (json.JSONDecodeError, TypeError):
        problems.append("--hp: a JSON object")
    if args.data and not Path(args.data).exists():
        problems.append(f"--data: {args.data}: no such file")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2

    folder = Path(tempfile.mkdtemp(prefix="bench-active-learning-"))
    setup_django(folder)
    from ml.errors import TrainerError

    try:
        pool, test = (
            file_data(args.data, args.test_fraction)
            if args.data
            else synthetic_data(args.pool, args.test, args.data_seed)
        )
    except TrainerError as exc:
        print(f"--data: {exc}", file=sys.stderr)
        return 2
    if len(pool) < 2 * args.retrain_every or not test:
        print(f"--data: {len(pool)} pool and {len(test)} held-out sentences are too few", file=sys.stderr)
        return 2
    import torch

    print(
        f"tagger {json.dumps(hyperparameters)}, {torch.get_num_threads()} CPU threads; "
        f"{'--data ' + args.data if args.data else 'generated App. F-like data'}: {len(pool)} pool / {len(test)} "
        f"held-out sentences; R = {args.r}, {args.items_per_hit} item(s) per HIT, {args.workers} workers, "
        f"noise {args.noise}, retrain every {args.retrain_every} labelled sentences, seeds {seeds}",
        flush=True,
    )
    print(f"before: {load_line()}", flush=True)
    started = time.perf_counter()
    result = run(
        pool,
        test,
        orders=orders,
        seeds=seeds,
        target=args.target,
        r=args.r,
        items_per_hit=args.items_per_hit,
        workers=args.workers,
        noise=args.noise,
        retrain_every=args.retrain_every,
        max_labels=args.max_labels,
        hyperparameters=hyperparameters,
        say=lambda line: print(line, flush=True),
    )
    print()
    print(format_result(result))
    print(f"\n{time.perf_counter() - started:.0f} s in all; after: {load_line()}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    if args.keep:
        print(f"database and artifacts kept in {folder}")
    else:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
