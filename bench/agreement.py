"""Benchmark: Argora's agreement engine vs. the `krippendorff` package (0.9.0) vs. a naive pure-Python reference.

    .venv/bin/python bench/agreement.py [--seed 0] [--repeat 5] [--json out.json] [--no-db] [--only-project-table]
                                        [--quick]

Cases (issue 5): alpha nominal on 8 coders x 5,032 units and 8 x 1,000,000 units; alpha interval on 4 x 3,400
real-valued scores (every value distinct, like BWS scores) and on a 1-5 scale; alpha_u on 8 coders x 5,032 sentences
of spans; and the whole project table (every figure the dashboard shows: overall, 8 topics, crowd vs expert with
500-resample bootstrap CIs each, pairwise kappa, Fleiss, per-worker leave-one-out / gold / Dawid-Skene, per-item
agreement, 10 over-time points) at 8 coders x 5,032 units, timed from synthetic response records through
``reliability_data`` + ``compute_table`` (the functions ``project_table`` calls) against the 1 s target, and -- unless
``--no-db`` -- as ``project_table`` / ``store_snapshots`` on a scratch SQLite database filled with bulk inserts. The naive reference (``annotation.agreement.reference``) is run on a smaller size where the full size would
take minutes, and then ours is timed on that same smaller size too, so every ratio compares equal inputs; the line says
which size.

Ours and the package are timed the same way, side by side (issue 25): **warm** -- one fresh child process (4 GiB
address-space limit, so a case the package cannot do shows its error instead of taking the machine down) runs one
untimed call of each, then ``--repeat`` interleaved rounds (ours, package); **cold** -- per round a fresh child for
ours, then one for the package, each timing its first call. Each line prints ours, the package and package / ours as
min / median / max over the rounds, with the load average. The CLI case runs ``manage.py agreement alpha --file`` on
the 8 x 1,000,000 matrix written as CSV against the script a user would write with the package (csv module, ``float``
per cell, ``krippendorff.alpha``), each a fresh process, interleaved, and prints the package's alpha call alone as the
floor. Peak memory of ours is traced with ``tracemalloc`` (numpy reports its buffers to it). Wall clock, this machine,
whatever else it is doing; no assertions on speed -- the values are checked against each other. ``--quick``: tiny
sizes, to check that the script runs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from annotation.agreement import krippendorff_alpha, unitized_alpha  # noqa: E402
from annotation.agreement.reference import naive_alpha, naive_unitized_alpha  # noqa: E402
from bench.timing import load_line  # noqa: E402

PACKAGE_MEMORY_LIMIT = 4 * 1024**3
PACKAGE_TIMEOUT = 120


def best_time(fn, repeat: int):
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def best_wall_and_cpu(fn, repeat: int):
    """(best wall seconds, best CPU seconds of this process, result): on a busy machine the CPU time is what the
    same run takes on an idle one."""
    wall, cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return wall, cpu, result


def verdict(wall: float, cpu: float, target: float) -> str:
    if wall < target:
        return f"met ({wall:.2f} s)"
    if cpu < target:
        return (
            f"MISSED on wall clock ({wall:.2f} s), met in CPU time ({cpu:.2f} s): this machine is busy "
            f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
        )
    return f"MISSED ({wall:.2f} s, CPU {cpu:.2f} s)"


def peak_memory(fn) -> tuple[float, object]:
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 1024**2, result


def _timed_child(conn, sides, X, level, repeat):
    """In this (fresh, forked) child, under the memory limit: ``repeat`` interleaved rounds, each timing every side
    of ``sides`` once (the first round is the cold call of a fresh process), sending per side the list of seconds
    and the value, or the error text."""
    try:
        resource.setrlimit(resource.RLIMIT_AS, (PACKAGE_MEMORY_LIMIT, PACKAGE_MEMORY_LIMIT))
        import krippendorff

        fns = {
            "ours": lambda: krippendorff_alpha(X, level),
            "package": lambda: float(krippendorff.alpha(X, level_of_measurement=level)),
        }
        times, values, errors = {s: [] for s in sides}, {}, {}
        for _ in range(repeat):
            for side in sides:
                if side in errors:
                    continue
                try:
                    t0 = time.perf_counter()
                    values[side] = float(fns[side]())
                    times[side].append(time.perf_counter() - t0)
                except BaseException as exc:  # noqa: BLE001 - MemoryError above all: the run reports it
                    errors[side] = f"{type(exc).__name__}: {str(exc)[:160]}"
        conn.send(("ok", times, values, errors))
    except BaseException as exc:  # noqa: BLE001 - the child reports whatever stopped it to the parent
        conn.send(("error", {}, {}, {s: f"{type(exc).__name__}: {str(exc)[:160]}" for s in sides}))


def in_child(sides, X, level, repeat):
    """({side: [seconds...]}, {side: value}, {side: error}) from one fresh child (see :func:`_timed_child`)."""
    parent, child = mp.Pipe(duplex=False)
    proc = mp.get_context("fork").Process(target=_timed_child, args=(child, sides, X, level, repeat))
    proc.start()
    if not parent.poll(PACKAGE_TIMEOUT):
        proc.kill()
        proc.join()
        return {s: [] for s in sides}, {}, dict.fromkeys(sides, f"no answer within {PACKAGE_TIMEOUT} s")
    _status, times, values, errors = parent.recv()
    proc.join()
    return times, values, errors


def compare(X, level, repeat):
    """Both sides timed the same way. warm: one child, ``repeat`` interleaved rounds after one untimed warm-up call
    of each side (so both are imported and their first-call costs paid); cold: per round a fresh child for ours,
    then one for the package, each timing its first call. Returns {"warm"|"cold": {"ours": [...], "package": [...],
    "ratio": [...]}}, the values and the package's error (None when it ran)."""
    out, values, error = {}, {}, None
    times, values, errors = in_child(("ours", "package"), X, level, repeat + 1)
    warm = {side: t[1:] for side, t in times.items()}
    error = errors.get("package")
    cold = {"ours": [], "package": []}
    for _ in range(repeat):
        for side in ("ours", "package"):
            if side == "package" and error:
                continue
            t, v, e = in_child((side,), X, level, 1)
            if e.get(side):
                error = error or e[side]
                continue
            cold[side].extend(t[side])
            values.setdefault(side, v[side])
    for name, d in (("warm", warm), ("cold", cold)):
        d["ratio"] = [p / o for o, p in zip(d["ours"], d.get("package", []))]
        out[name] = d
    return out, values, error


def spread(xs, unit="s"):
    """min / median / max of ``xs`` (seconds or a ratio)."""
    if not xs:
        return "-"
    if unit == "x":
        return f"{min(xs):.2f}x / {statistics.median(xs):.2f}x / {max(xs):.2f}x"
    return " / ".join(fmt_s(v) for v in (min(xs), statistics.median(xs), max(xs)))


def nominal_matrix(rng, coders: int, units: int, categories: int = 3, agree: float = 0.8, missing: float = 0.1):
    truth = rng.integers(0, categories, units)
    X = np.where(rng.random((coders, units)) < agree, truth, rng.integers(0, categories, (coders, units)))
    X = X.astype(np.float64)
    X[rng.random(X.shape) < missing] = np.nan
    return X


def real_scores(rng, coders: int, units: int):
    truth = rng.normal(size=units)
    return truth + rng.normal(scale=0.5, size=(coders, units))


def likert(rng, coders: int, units: int):
    truth = rng.integers(1, 6, units)
    X = np.clip(truth + rng.integers(-1, 2, (coders, units)) * (rng.random((coders, units)) < 0.4), 1, 5)
    X = X.astype(np.float64)
    X[rng.random(X.shape) < 0.1] = np.nan
    return X


def sentence_spans(rng, coders: int, sentences: int):
    """Aspect-like spans: per sentence 0-2 true aspects of 1-4 tokens; each coder finds each with p=.8, with jitter."""
    lengths = rng.integers(10, 41, sentences)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    spans = []
    for s in range(sentences):
        L = int(lengths[s])
        aspects = []
        for _ in range(int(rng.integers(0, 3))):
            ln = int(rng.integers(1, 5))
            b = int(rng.integers(0, L - ln + 1))
            if all(b + ln <= ab or ab + al <= b for ab, al in aspects):
                aspects.append((b, ln))
        for c in range(coders):
            taken = []
            for b, ln in aspects:
                if rng.random() > 0.8:
                    continue
                b2 = min(max(0, b + int(rng.integers(-1, 2))), L - 1)
                ln2 = max(1, min(L - b2, ln + int(rng.integers(-1, 2))))
                if all(b2 + ln2 <= tb or tb + tl <= b2 for tb, tl in taken):
                    taken.append((b2, ln2))
                    spans.append((c, int(offsets[s]) + b2, ln2, "aspect"))
    return spans, int(lengths.sum()), lengths


def fmt_s(x):
    return "-" if x is None else (f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s")


def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else f"{a / b:.1f}x"


# --- the CLI on a CSV file vs a user's script with the package -------------------------------------------------
BASELINE_SCRIPT = """
import csv, json, sys, time
t0 = time.perf_counter()
import numpy as np, krippendorff
with open(sys.argv[1], newline="") as fh:
    rows = list(csv.reader(fh))[1:]
X = np.array([[float(c) if c.strip() else np.nan for c in row[1:]] for row in rows])
t1 = time.perf_counter()
value = krippendorff.alpha(X, level_of_measurement=sys.argv[2])
t2 = time.perf_counter()
print(json.dumps({"alpha": float(value), "read_s": t1 - t0, "alpha_s": t2 - t1}))
"""


def cli_case(X, args, rows, level="nominal"):
    """``manage.py agreement alpha --file M.csv`` (a fresh process: Django start, CSV reading, alpha) against the
    script a user would write with the package (a fresh process: csv module, ``float`` per cell, krippendorff.alpha),
    interleaved, ``--repeat`` rounds; the package's call alone (inside that script) is printed as the floor."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "M.csv"
        with open(path, "w") as fh:
            fh.write("coder," + ",".join(f"u{i}" for i in range(X.shape[1])) + "\n")
            for c, row in enumerate(X):
                fh.write(f"c{c}," + ",".join("" if v != v else str(int(v)) for v in row) + "\n")
        env = dict(os.environ, DJANGO_SETTINGS_MODULE="argora.settings")
        ours, script, call, ratios, values = [], [], [], [], set()
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            out = subprocess.run(
                [
                    sys.executable,
                    str(ROOT / "manage.py"),
                    "agreement",
                    "alpha",
                    "--file",
                    str(path),
                    "--level",
                    level,
                    "--json",
                ],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            ours.append(time.perf_counter() - t0)
            values.add(round(json.loads(out)["alpha"], 9))
            t0 = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-c", BASELINE_SCRIPT, str(path), level],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            script.append(time.perf_counter() - t0)
            base = json.loads(out)
            call.append(base["alpha_s"])
            values.add(round(base["alpha"], 9))
            ratios.append(script[-1] / ours[-1])
    assert len(values) == 1, values
    print(
        f"\nCLI: manage.py agreement alpha --file ({X.shape[0]} x {X.shape[1]:,} {level} CSV, "
        f"{path.stat().st_size / 1024**2 if path.exists() else 0:.0f} MiB)  alpha = {values.pop():.4f}  ({load_line()})"
    )
    print(f"  ours (whole process)              {spread(ours):>34}")
    print(f"  user script with the package      {spread(script):>34}   script / ours {spread(ratios, 'x')}")
    print(
        f"  the package's alpha call alone    {spread(call):>34}   "
        f"ours / call {spread([o / c for o, c in zip(ours, call)], 'x')}"
    )
    rows.append(
        {
            "case": f"CLI alpha {level}, {X.shape[0]} x {X.shape[1]}",
            "ours_process_s": ours,
            "script_process_s": script,
            "package_call_s": call,
            "load": os.getloadavg(),
        }
    )


# --- the whole project table (what the dashboard and `manage.py agreement project` compute) ----------------------
PROJECT_TABLE_TARGET_S = 1.0


def synthetic_records(rng, coders: int = 8, units: int = 5032, hit: int = 50, topics: int = 8):
    """Response records as ``load_responses`` gives them: a sentence_label project of ``units`` items in HITs of
    ``hit``, every coder answering every HIT (80 % the item's true label), one coder an expert, ``topics`` topics."""
    labels = np.array(["pro", "con", "none"])
    truth = rng.integers(0, 3, units)
    X = np.where(rng.random((coders, units)) < 0.8, truth, rng.integers(0, 3, (coders, units)))
    records, aid = [], 0
    for start in range(0, units, hit):
        for c in range(coders):
            aid += 1
            for u in range(start, min(units, start + hit)):
                records.append(
                    {
                        "item_id": u + 1,
                        "worker_id": c + 1,
                        "coder": f"worker:{c + 1}",
                        "assignment_id": aid,
                        "submitted_at": None,
                        "data": {"label": str(labels[X[c, u]])},
                        "topic": f"topic {u % topics}",
                        "is_expert": c == 0,
                    }
                )
    gold = [(c + 1, bool(rng.random() < 0.85)) for c in range(coders) for _ in range(25)]
    return records, gold


def setup_django(db_dir: str | None):
    """Django on a scratch SQLite database in ``db_dir`` (None: settings only, no database)."""
    if db_dir is not None:
        os.environ["ARGORA_VAR_DIR"] = db_dir
        os.environ["DATABASE_URL"] = f"sqlite:///{db_dir}/bench-agreement.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argora.settings")
    import django

    django.setup()


def fill_database(rng, coders: int = 8, units: int = 5032, hit: int = 50, topics: int = 8):
    """A sentence_label project with ``coders`` workers who each submitted every HIT, written with bulk inserts
    (the submission path is benchmarked in bench/allocation.py; here only the table is timed)."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.utils import timezone

    from annotation import services
    from annotation.models import HIT, Assignment, GoldItem, GoldRecord, HITItem, Item, Response, Worker

    call_command("migrate", verbosity=0)
    project = services.create_project(
        name="bench",
        slug="bench-agreement",
        task_type="sentence_label",
        config={"labels": ["pro", "con", "none"]},
        assignments_per_item=coders,
        items_per_hit=hit,
        status="active",
    )
    services.add_items(
        project,
        [{"sentence_id": None, "text": f"Sentence {u}.", "topic": f"topic {u % topics}"} for u in range(units)],
        gold=[
            {"payload": {"sentence_id": None, "text": f"Gold {g}.", "topic": "gold"}, "expected": {"label": "pro"}}
            for g in range(5)
        ],
    )
    services.build_hits(project)
    expert = get_user_model().objects.create_user("bench-expert", is_staff=True)
    workers = [services.worker_for_user(expert)] + [
        services.worker_for_external_id(f"bench-{c}", source="invite") for c in range(1, coders)
    ]
    labels = ["pro", "con", "none"]
    truth = {
        pk: labels[int(rng.integers(0, 3))]
        for pk in Item.objects.filter(project=project, is_gold=False).values_list("pk", flat=True)
    }
    golds = list(GoldItem.objects.filter(item__project=project).values_list("item_id", flat=True))
    now = timezone.now()
    hits = list(HIT.objects.filter(project=project).order_by("position"))
    hit_items = {}
    for h, item in HITItem.objects.filter(hit__project=project).values_list("hit_id", "item_id"):
        hit_items.setdefault(h, []).append(item)
    assignments = [
        Assignment(
            project=project,
            hit=h,
            worker=w,
            status=Assignment.Status.SUBMITTED,
            reserved_at=now,
            expires_at=now,
            submitted_at=now + timezone.timedelta(seconds=k),
        )
        for k, (h, w) in enumerate((h, w) for h in hits for w in workers)
    ]
    Assignment.objects.bulk_create(assignments)
    assignments = list(Assignment.objects.filter(project=project).order_by("id"))
    responses, gold_records = [], []
    for a in assignments:
        for item in hit_items[a.hit_id]:
            label = truth[item] if rng.random() < 0.8 else labels[int(rng.integers(0, 3))]
            responses.append(Response(assignment=a, item_id=item, data={"label": label}))
    for w in workers:
        a = next(x for x in assignments if x.worker_id == w.pk)
        for g in golds:
            gold_records.append(
                GoldRecord(worker=w, item_id=g, assignment=a, correct=bool(rng.random() < 0.85), score=1.0)
            )
    Response.objects.bulk_create(responses, batch_size=5000)
    GoldRecord.objects.bulk_create(gold_records)
    HIT.objects.filter(project=project).update(taken=coders)
    assert Worker.objects.count() == coders
    return project, len(responses)


def project_table_case(rng, args, rows):
    """The whole project table at 8 coders x 5,032 units: from synthetic records through the same functions the
    dashboard uses (``reliability_data`` + ``compute_table``), and (unless --no-db) ``project_table`` /
    ``store_snapshots`` on a scratch SQLite database."""
    import tempfile

    db_dir = None if args.no_db else tempfile.mkdtemp(prefix="argora-bench-agreement-")
    setup_django(db_dir)
    from annotation.agreement import snapshots
    from annotation.agreement import table as agreement_table
    from annotation.task_types import get_task_type

    records, gold = synthetic_records(rng)
    reliability = get_task_type("sentence_label").reliability_data
    t, cpu, table = best_wall_and_cpu(
        lambda: agreement_table.compute_table(reliability(None, records), records, gold_records=gold), args.repeat
    )
    n_scopes = 1 + len(table["topics"]) + (3 if table["crowd_vs_expert"] else 0)
    print(
        f"\nproject table, 8 coders x 5,032 units (synthetic records: {len(records):,} responses; "
        f"{n_scopes} scopes x {agreement_table.BOOTSTRAP} bootstrap resamples, kappa over 28 pairs, Dawid-Skene, "
        f"leave-one-out, {len(table['over_time'])} over-time points)  alpha = {table['alpha']:.4f}"
    )
    print(f"  ours      {fmt_s(t):>10}   CPU {fmt_s(cpu)} (reliability_data + compute_table)")
    print("  package   none: the `krippendorff` package computes alpha only (see the alpha cases above)")
    print(
        f"  target: whole project table in under {PROJECT_TABLE_TARGET_S:.0f} s -> "
        f"{verdict(t, cpu, PROJECT_TABLE_TARGET_S)}"
    )
    row = {
        "case": "project table, 8 x 5,032 (synthetic)",
        "ours_s": t,
        "ours_cpu_s": cpu,
        "alpha": table["alpha"],
        "target_s": PROJECT_TABLE_TARGET_S,
        "met": t < PROJECT_TABLE_TARGET_S,
    }
    rows.append(row)
    if db_dir is None:
        return
    try:
        t0 = time.perf_counter()
        project, n = fill_database(rng)
        t_fill = time.perf_counter() - t0
        t_db, cpu_db, table = best_wall_and_cpu(lambda: agreement_table.project_table(project), args.repeat)
        t_store, cpu_store, _ = best_wall_and_cpu(lambda: snapshots.store_snapshots(project), 1)
        print(
            f"  database  {fmt_s(t_db):>10}   CPU {fmt_s(cpu_db)}: project_table on SQLite ({n:,} responses; "
            f"loading, worker names, item texts and majority answers included; set-up {t_fill:.0f} s)"
        )
        print(
            f"            store_snapshots (the recompute task: the table + writing it) {fmt_s(t_store)}, "
            f"CPU {fmt_s(cpu_store)}"
        )
        print(
            f"  target: under {PROJECT_TABLE_TARGET_S:.0f} s from the database -> "
            f"{verdict(t_db, cpu_db, PROJECT_TABLE_TARGET_S)}"
        )
        rows.append(
            {
                "case": "project table, 8 x 5,032 (SQLite)",
                "ours_s": t_db,
                "ours_cpu_s": cpu_db,
                "store_s": t_store,
                "alpha": table["alpha"],
                "target_s": PROJECT_TABLE_TARGET_S,
                "met": t_db < PROJECT_TABLE_TARGET_S,
            }
        )
    finally:
        import shutil

        from django.db import connections

        connections.close_all()
        shutil.rmtree(db_dir, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="interleaved rounds for ours and the package, warm and cold (naive: 1 run)",
    )
    ap.add_argument("--json", default=None, help="also write the results to this JSON file")
    ap.add_argument("--no-db", action="store_true", help="project table: skip the database-backed run")
    ap.add_argument("--only-project-table", action="store_true", help="run the project-table case only")
    ap.add_argument(
        "--quick", action="store_true", help="tiny sizes (checks that the script runs; figures mean nothing)"
    )
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    rows = []
    if args.only_project_table:
        project_table_case(rng, args, rows)
        return rows

    def case(name, X, level, naive_units=None):
        """ours vs package on X, timed the same way (:func:`compare`); naive on the first ``naive_units`` columns
        (all when None) vs ours on those."""
        timing, values, pkg_error = compare(X, level, args.repeat)
        a_ours = values["ours"]
        a_pkg = values.get("package")
        mem, _ = peak_memory(lambda: krippendorff_alpha(X, level))
        Xn = X if naive_units is None else X[:, :naive_units]
        t_naive, a_naive = best_time(lambda: naive_alpha(Xn.tolist(), level), 1)
        t_ours_n, a_ours_n = best_time(lambda: krippendorff_alpha(Xn, level), args.repeat)
        assert abs(a_naive - a_ours_n) < 1e-9, (name, a_naive, a_ours_n)
        if a_pkg is not None:
            assert abs(a_pkg - a_ours) < 1e-9, (name, a_pkg, a_ours)
        row = {
            "case": name,
            "level": level,
            "shape": list(X.shape),
            "alpha": a_ours,
            "timing": timing,
            "ours_s": min(timing["warm"]["ours"]),
            "ours_peak_mib": mem,
            "package_s": min(timing["warm"]["package"]) if timing["warm"].get("package") else None,
            "package": a_pkg,
            "package_error": pkg_error,
            "load": os.getloadavg(),
            "naive_units": Xn.shape[1],
            "naive_s": t_naive,
            "ours_on_naive_size_s": t_ours_n,
        }
        rows.append(row)
        print(f"\n{name}  [{level}, {X.shape[0]} coders x {X.shape[1]:,} units]  alpha = {a_ours:.4f}  ({load_line()})")
        print(f"  ours peak {mem:.1f} MiB (tracemalloc)")
        print(f"  {'':5} {'ours min / median / max':>34}  {'package min / median / max':>34}  {'package / ours':>26}")
        for mode, d in timing.items():
            print(
                f"  {mode:5} {spread(d['ours']):>34}  {spread(d.get('package', [])):>34}  {spread(d['ratio'], 'x'):>26}"
            )
        if pkg_error:
            print(f"  package fails: {pkg_error}")
        size = "same size" if naive_units is None else f"on the first {Xn.shape[1]:,} units only"
        print(
            f"  naive     {fmt_s(t_naive):>10}   ({size}; ours there {fmt_s(t_ours_n)}) "
            f"naive / ours = {ratio(t_naive, t_ours_n)}"
        )

    q = args.quick
    small = 500 if q else 5032
    case(f"alpha nominal, 8 x {small:,}", nominal_matrix(rng, 8, small), "nominal")
    big_units = 2000 if q else 1_000_000
    big = nominal_matrix(rng, 8, big_units)
    case(f"alpha nominal, 8 x {big_units:,}", big, "nominal", naive_units=min(big_units, 20_000))
    cli_case(big, args, rows)
    del big
    real = real_scores(rng, 4, 300 if q else 3400)
    case(f"alpha interval, 4 x {real.shape[1]:,} real-valued scores", real, "interval", naive_units=400)
    print(
        f"  distinct values: {np.unique(real).size:,} (the package needs units x values x values float64 = "
        f"{real.shape[1] * np.unique(real).size ** 2 * 8 / 1024**4:.1f} TiB)"
    )
    case(f"alpha ratio, 4 x {real.shape[1]:,} positive real-valued scores", np.exp(real), "ratio", naive_units=400)
    case(f"alpha interval, 1-5 scale, 8 x {small:,}", likert(rng, 8, small), "interval")

    spans, L, lengths = sentence_spans(rng, 8, 300 if q else 5032)
    t_u, res = best_time(lambda: unitized_alpha(spans, L, coders=range(8)), args.repeat)
    mem_u, _ = peak_memory(lambda: unitized_alpha(spans, L, coders=range(8)))
    n_small = 100
    L_small = int(lengths[:n_small].sum())
    small = [s for s in spans if s[1] + s[2] <= L_small]
    t_un, ref = best_time(lambda: naive_unitized_alpha(small, L_small, 0, list(range(8))), 1)
    t_us, res_small = best_time(lambda: unitized_alpha(small, L_small, coders=range(8)), args.repeat)
    assert abs(ref["alpha_u"] - res_small.alpha_u) < 1e-9
    print(
        f"\nalpha_u, 8 coders x 5,032 sentences ({len(spans):,} spans, continuum {L:,} tokens)  "
        f"alpha_u = {res.alpha_u:.4f}"
    )
    print(f"  ours      {fmt_s(t_u):>10}   peak {mem_u:8.1f} MiB (tracemalloc)")
    print("  package   none: the `krippendorff` package has no alpha_u (DKPro Agreement is Java)")
    print(
        f"  naive     {fmt_s(t_un):>10}   (first {n_small} sentences only, {len(small):,} spans; ours there "
        f"{fmt_s(t_us)}) naive / ours = {ratio(t_un, t_us)}"
    )
    rows.append(
        {
            "case": "alpha_u, 8 x 5,032 sentences",
            "alpha_u": res.alpha_u,
            "spans": len(spans),
            "ours_s": t_u,
            "ours_peak_mib": mem_u,
            "package_s": None,
            "naive_units": n_small,
            "naive_s": t_un,
            "ours_on_naive_size_s": t_us,
        }
    )
    project_table_case(rng, args, rows)
    print(
        f"\nprocess peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB; "
        f"{os.cpu_count()} CPUs; numpy {np.__version__}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return rows


if __name__ == "__main__":
    main()
