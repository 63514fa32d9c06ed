"""Benchmark: HIT reservations + submissions per second and latency at 1, 10 and 50 concurrent workers.

    .venv/bin/python bench/allocation.py [--seconds 5] [--http] [--clients 1,10,50] [--repeat 3]

DATABASE_URL defaults to postgres://postgres@127.0.0.1:5432/argora_bench (created and migrated when
missing). Each worker is a thread with its own DB connection (service layer) or its own keep-alive HTTP
connection to a gunicorn server started here (``--http``). One cycle = reserve a HIT of one item + submit
its response. Only the ``--http`` figures are compared with doccano's annotation submissions/s (the named
baseline, DESIGN.md: 90.5 / 134.5 / 104.7 at 1 / 10 / 50 clients, measured over HTTP against doccano's server,
SQLite, same 2-core machine): the default in-process ("service") run calls the service functions directly, with
no HTTP, authentication or serialisation, so it gets no ratio. No assertions on speed; the counts are checked
(every acknowledged submission stored once, no item above R).

HTTP mode runs gunicorn (gthread, 3 processes x 8 threads by default: the best of 4x4, 2x8, 3x8, 4x8 on the
2-core machine; keep-alive 75 s, as behind a proxy) the way a deployment should: several worker processes and
persistent database connections (``DATABASE_CONN_MAX_AGE``, ``--conn-max-age``; 0 opens a PostgreSQL connection per
request, which costs more than the request itself). With ``--repeat N`` every level runs N times on a
fresh project and the median is printed (with the spread). The load average is printed, since other
work on the same machine moves these figures a lot.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argora.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/argora_bench")

DOCCANO = {1: 90.5, 10: 134.5, 50: 104.7}


def ensure_database(url: str) -> None:
    if not url.startswith("postgres"):
        return
    import psycopg
    from urllib.parse import urlparse

    name = urlparse(url).path.lstrip("/")
    admin_url = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def setup_django() -> None:
    ensure_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def make_project(n_workers: int, n_items: int, tag: str):
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotation import services

    project = services.create_project(name=f"bench {tag}", task_type="sentence_label", status="active",
                                      config={"labels": ["pro", "con", "none"]}, assignments_per_item=3,
                                      items_per_hit=1)
    services.add_items(project, [{"text": f"bench sentence {i}", "topic": "bench"} for i in range(n_items)])
    services.build_hits(project)
    User = get_user_model()
    workers, tokens = [], []
    for i in range(n_workers):
        user = User.objects.create_user(f"bench-{tag}-{i}")
        workers.append(services.worker_for_user(user))
        tokens.append(Token.objects.create(user=user).key)
    from django.db import connection

    if connection.vendor == "postgresql":  # fresh rows: give the planner statistics, as autovacuum would
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    return project, workers, tokens


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def run_clients(n: int, seconds: float, loop) -> dict:
    """Start ``n`` threads running ``loop(i, stop_at, latencies, counts)``; bounded by ``seconds`` + slack."""
    from django.db import connections

    latencies: list[float] = []
    counts = {"cycles": 0, "errors": 0, "acked": []}
    lock = threading.Lock()
    barrier = threading.Barrier(n + 1)

    def body(i):
        lat, acked, errors = [], [], 0
        try:
            barrier.wait(timeout=60)
            stop_at = time.monotonic() + seconds
            errors = loop(i, stop_at, lat, acked)
        except Exception as exc:  # noqa: BLE001 - counted and reported
            errors += 1
            print(f"  client {i}: {exc!r}", file=sys.stderr)
        finally:
            connections.close_all()
            with lock:
                latencies.extend(lat)
                counts["acked"].extend(acked)
                counts["errors"] += errors

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    barrier.wait(timeout=60)
    t0 = time.monotonic()
    for t in threads:
        t.join(timeout=seconds + 120)
    elapsed = time.monotonic() - t0
    counts["cycles"] = len(counts["acked"])
    return {"elapsed": elapsed, "latencies": latencies, **counts}


def service_loop(project, workers):
    from annotation import services

    def loop(i, stop_at, lat, acked):
        worker = workers[i]
        while time.monotonic() < stop_at:
            t = time.perf_counter()
            a = services.reserve_next_assignment(project, worker)
            lat.append(time.perf_counter() - t)
            if a is None:
                break
            items = services.assignment_items(a)
            t = time.perf_counter()
            services.submit_assignment(a, worker, {it.pk: {"label": "pro"} for it in items})
            lat.append(time.perf_counter() - t)
            acked.append(a.pk)
        return 0

    return loop


def http_loop(port: int, slug: str, tokens: list[str]):
    def loop(i, stop_at, lat, acked):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Authorization": f"Token {tokens[i]}", "Content-Type": "application/json",
                   "Accept": "application/json"}
        errors = 0

        def call(method, path, body=None):
            t = time.perf_counter()
            conn.request(method, path, body=json.dumps(body) if body is not None else b"", headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            lat.append(time.perf_counter() - t)
            return resp.status, data

        while time.monotonic() < stop_at:
            status, data = call("POST", f"/api/projects/{slug}/next/")
            if status == 204:
                break
            if status != 200:
                errors += 1
                print(f"  client {i}: next -> {status} {data[:300]!r}", file=sys.stderr)
                break
            hit = json.loads(data)
            status, data = call("POST", f"/api/assignments/{hit['assignment']}/submit/",
                                {"responses": {str(it["id"]): {"label": "pro"} for it in hit["items"]}})
            if status != 200:
                errors += 1
                print(f"  client {i}: submit -> {status} {data[:300]!r}", file=sys.stderr)
                continue
            acked.append(hit["assignment"])
        conn.close()
        return errors

    return loop


def free_port(lo=int(os.environ.get("BENCH_PORT_LO", "18500")), hi=int(os.environ.get("BENCH_PORT_HI", "18599"))) -> int:
    for port in range(lo, hi + 1):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError(f"no free port in {lo}-{hi}")


def start_gunicorn(workers: int, threads: int, conn_max_age: int):
    port = free_port()
    env = dict(os.environ, DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost", DATABASE_CONN_MAX_AGE=str(conn_max_age))
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "argora.wsgi:application", "-b", f"127.0.0.1:{port}",
         "-w", str(workers), "-k", "gthread", "--threads", str(threads), "--keep-alive", "75",
         "--log-level", "warning"],
        cwd=ROOT, env=env, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/healthz")
            if c.getresponse().status == 200:
                return proc, port
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise RuntimeError("gunicorn did not start")


def check_counts(project, result) -> str:
    from django.db.models import Count

    from annotation.models import Assignment, Response

    acked = set(result["acked"])
    stored = set(Assignment.objects.filter(project=project, status="submitted").values_list("pk", flat=True))
    over = (Response.objects.filter(assignment__project=project).values("item").annotate(n=Count("pk"))
            .filter(n__gt=project.assignments_per_item).count())
    dup = len(result["acked"]) - len(acked)
    return "exact" if acked == stored and not over and not dup else f"MISMATCH acked={len(acked)} stored={len(stored)} over={over} dup={dup}"


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="measuring time per level")
    parser.add_argument("--clients", default="1,10,50")
    parser.add_argument("--http", action="store_true", help="also measure through HTTP against gunicorn")
    parser.add_argument("--modes", default=None, help="comma list of service,http (overrides --http)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per level; the median is reported")
    parser.add_argument("--gunicorn-workers", type=int, default=3)
    parser.add_argument("--gunicorn-threads", type=int, default=8)
    parser.add_argument("--conn-max-age", type=int, default=int(os.environ.get("DATABASE_CONN_MAX_AGE", "600")),
                        help="DATABASE_CONN_MAX_AGE for gunicorn (seconds; 0 = a new connection per request)")
    args = parser.parse_args()
    setup_django()
    from django.db import connection

    levels = [int(x) for x in args.clients.split(",")]
    run_id = str(int(time.time()))
    modes = args.modes.split(",") if args.modes else ["service"] + (["http"] if args.http else [])
    print(f"database: {connection.vendor}; {os.cpu_count()} CPU(s); {args.seconds:.0f} s per level, "
          f"{args.repeat} run(s) each (median); one cycle = reserve + submit of a 1-item HIT (R = 3); "
          f"load average at start: {load()}")
    if "http" in modes:
        print(f"gunicorn: {args.gunicorn_workers} workers x {args.gunicorn_threads} threads (gthread), "
              f"DATABASE_CONN_MAX_AGE={args.conn_max_age}")
    rows = []
    gunicorn = None
    try:
        for mode in modes:
            if mode == "http":
                gunicorn = start_gunicorn(args.gunicorn_workers, args.gunicorn_threads, args.conn_max_age)
            for n in levels:
                runs = []
                for rep in range(args.repeat):
                    n_items = max(300, int(700 * args.seconds))  # more than the fastest level can drain
                    project, workers, tokens = make_project(n, n_items, f"{run_id}-{mode}-{n}-{rep}")
                    loop = (service_loop(project, workers) if mode == "service"
                            else http_loop(gunicorn[1], project.slug, tokens))
                    before = load()
                    result = run_clients(n, args.seconds, loop)
                    per_s = result["cycles"] / result["elapsed"]
                    lat = result["latencies"]
                    runs.append((per_s, result["cycles"], percentile(lat, 0.5) * 1000, percentile(lat, 0.99) * 1000,
                                 result["errors"], check_counts(project, result), before))
                    print(f"  {mode} {n:>3} clients run {rep + 1}: {per_s:7.1f} subm/s, p50 {runs[-1][2]:.1f} ms, "
                          f"p99 {runs[-1][3]:.1f} ms, {runs[-1][5]}, load {before}", flush=True)
                ordered = sorted(runs, key=lambda r: r[0])
                per_s, cycles, p50, p99, _, _, _ = ordered[len(ordered) // 2]
                errors = sum(r[4] for r in runs)
                bad = [r[5] for r in runs if r[5] != "exact"]
                counts = "exact" if not bad else bad[0]
                spread = f"{ordered[0][0]:.0f}-{ordered[-1][0]:.0f}"
                # doccano was measured over HTTP: only the HTTP run is comparable with it
                baseline = DOCCANO.get(n) if mode == "http" else None
                rows.append((mode, n, cycles, per_s, baseline, p50, p99, errors, counts, spread))
    finally:
        if gunicorn is not None:
            os.killpg(gunicorn[0].pid, signal.SIGTERM)
            gunicorn[0].wait(timeout=30)
    print()
    print(f"{'mode':8} {'clients':>7} {'cycles':>7} {'subm/s':>8} {'runs':>9} {'doccano':>8} {'ratio':>6} "
          f"{'p50 ms':>7} {'p99 ms':>7} {'errors':>6}  counts")
    for mode, n, cycles, per_s, baseline, p50, p99, errors, counts, spread in rows:
        doccano = f"{baseline:>8.1f} {per_s / baseline:>5.2f}x" if baseline else f"{'-':>8} {'-':>6}"
        print(f"{mode:8} {n:>7} {cycles:>7} {per_s:>8.1f} {spread:>9} {doccano} "
              f"{p50:>7.1f} {p99:>7.1f} {errors:>6}  {counts}")
    print(f"\nbaseline: doccano 1.8.4 annotation submissions/s over HTTP (DESIGN.md), so only 'http' rows get a "
          f"ratio; 'service' rows call the service functions in-process (no HTTP) and are not comparable with it. "
          f"subm/s and latencies are the median run ('runs' = min-max subm/s); latency is per request (reserve or "
          f"submit); 'exact' = every acknowledged submission stored once, nothing unacknowledged stored, no item "
          f"above R. Load average at end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
