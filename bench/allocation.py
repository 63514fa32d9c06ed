"""Benchmark: stored annotations per second, Argora beside doccano 1.8.4, at 1, 10 and 50 concurrent clients.

    .venv/bin/python bench/allocation.py [--db sqlite|postgres] [--seconds 5] [--clients 1,10,50] [--repeat 3]
                                         [--hit-sizes 1,5,10] [--flows combined,two] [--no-doccano]
                                         [--no-reuse-port]

Both servers run here, side by side, behind the same gunicorn set-up (gthread, 3 workers x 8 threads, keep-alive
75 s, ``--reuse-port``, persistent database connections) on the same database kind: SQLite files (Argora's own settings: WAL,
IMMEDIATE transactions; doccano's own defaults) or, with ``--db postgres``, two PostgreSQL databases
(``--pg-url``, default postgres://postgres@127.0.0.1:5432; databases ``argora_bench`` and ``doccano_bench``, created
when missing). doccano is the PyPI release 1.8.4, installed at run time into its own venv
(``$ARGORA_VAR_DIR/bench/doccano-venv``, or ``--doccano-venv``), pinning what a fresh install of it needs today
(``marshmallow<4``, ``numpy<2``; ``psycopg2-binary`` for PostgreSQL); no doccano code is part of Argora.
``bench/doccano_setup.py`` (run with doccano's python) migrates its database and creates the project, its labels,
examples and annotator tokens.

Load: every client is a thread with its own keep-alive HTTP connection, as many as the level says, running for
``--seconds``. A doccano client labels its share of the examples, one ``POST /v1/projects/<p>/examples/<e>/categories``
per annotation (doccano does no allocation: each client is handed its own examples here). An Argora client works
through HITs of ``--hit-sizes`` items (R = 3): flow ``combined`` = ``POST /api/projects/<slug>/next/`` once, then
``POST /api/assignments/<id>/submit/?next=1`` per HIT (the answer stored and the next HIT reserved in one request);
flow ``two`` = ``next`` + ``submit`` per HIT (the API before the combined submit). Every level and repeat runs
doccano and each Argora set-up back to back, the order alternating between repeats (interleaved). Before each run the
databases' dirty pages are written out (:func:`settle`), so that no run pays for the set-up writes before it.

Printed: stored annotations/s (responses / labels written and acknowledged, per wall second), the Argora/doccano
ratio per level (min / median / max over the repeats, each repeat's Argora run divided by the doccano run beside
it), p99 request latency, errors, the load average before each run and whether the counts are exact (Argora: every
acknowledged submission stored once, nothing unacknowledged stored, no item above R; doccano: labels stored = labels
acknowledged). No assertions on speed.

``--reuse-port`` (gunicorn's option; README, "Running at scale") gives every worker process a listening socket of its
own, so the kernel spreads new connections over the workers. Without it (``--no-reuse-port``) the workers share one
socket and whichever is on a CPU when the clients connect takes their connections: at 50 clients one worker held 35
to 46 of the 50 kept-alive connections while the others idled, and the clients it held waited about 4x longer.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.timing import spread  # noqa: E402

VAR_DIR = Path(os.environ.get("ARGORA_VAR_DIR", ROOT / "var")).resolve()
DOCCANO_VERSION = "1.8.4"
# What a fresh `pip install doccano==1.8.4` needs today: its loose ranges let pip pick releases it breaks on.
DOCCANO_PINS = ["marshmallow<4", "numpy<2"]
DOCCANO_PG_DRIVER = "psycopg2-binary==2.9.13"
R = 3


# --- set-up -----------------------------------------------------------------------------------------------------
def ensure_pg_database(url: str) -> None:
    from urllib.parse import urlparse

    import psycopg

    name = urlparse(url).path.lstrip("/")
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def database_urls(db: str, pg_url: str) -> tuple[str, str]:
    """(Argora's, doccano's) DATABASE_URL."""
    if db == "postgres":
        base = pg_url.rstrip("/")
        urls = (f"{base}/argora_bench", f"{base}/doccano_bench")
        for url in urls:
            ensure_pg_database(url)
        # doccano's settings require SSL unless the URL names an sslmode (a local server here has no SSL)
        return urls[0], urls[1] + "?sslmode=disable"
    (VAR_DIR / "bench").mkdir(parents=True, exist_ok=True)
    return (
        f"sqlite:///{VAR_DIR / 'bench' / 'argora-bench.sqlite3'}",
        f"sqlite:///{VAR_DIR / 'bench' / 'doccano.sqlite3'}",
    )


def ensure_doccano(venv: Path, db: str) -> Path:
    """doccano 1.8.4 from PyPI in its own venv (created on first use); returns its python."""
    python = venv / "bin" / "python"
    marker = venv / f".argora-bench-{DOCCANO_VERSION}-{db}"
    if marker.exists():
        return python
    if not python.exists():
        print(f"installing doccano {DOCCANO_VERSION} into {venv} (once) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    packages = [f"doccano=={DOCCANO_VERSION}", *DOCCANO_PINS] + ([DOCCANO_PG_DRIVER] if db == "postgres" else [])
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *packages], check=True)
    marker.touch()
    return python


def doccano_env(url: str) -> dict:
    home = VAR_DIR / "bench" / "doccano-home"
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "ARGORA_"))}
    env.update(
        DATABASE_URL=url,
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DEBUG="False",
        MEDIA_ROOT=str(home / "media"),
        DOCCANO_HOME=str(home),
        DATABASE_CONN_MAX_AGE="600",
    )
    return env


def doccano_setup(python: Path, url: str, *, tag: str, examples: int, users: int) -> dict:
    out = subprocess.run(
        [
            str(python),
            str(ROOT / "bench" / "doccano_setup.py"),
            "--tag",
            tag,
            "--examples",
            str(examples),
            "--users",
            str(users),
        ],
        env=doccano_env(url),
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        sys.exit(f"doccano set-up failed (exit {out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])


def setup_argora(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argora.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def make_project(n_workers: int, n_items: int, hit_size: int, tag: str):
    from django.contrib.auth import get_user_model
    from django.db import connection
    from rest_framework.authtoken.models import Token

    from annotation import services

    project = services.create_project(
        name=f"bench {tag}",
        task_type="sentence_label",
        status="active",
        config={"labels": ["pro", "con", "none"]},
        assignments_per_item=R,
        items_per_hit=hit_size,
    )
    services.add_items(project, [{"text": f"bench sentence {i}", "topic": "bench"} for i in range(n_items)])
    services.build_hits(project)
    User = get_user_model()
    tokens = []
    for i in range(n_workers):
        user = User.objects.create_user(f"bench-{tag}-{i}")
        services.worker_for_user(user)
        tokens.append(Token.objects.create(user=user).key)
    if connection.vendor == "postgresql":  # fresh rows: give the planner statistics, as autovacuum would
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    return project, tokens


# --- servers ----------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(
    gunicorn: Path, app: str, env: dict, cwd: Path, workers: int, threads: int, health: str, reuse_port: bool = True
) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen(
        [
            str(gunicorn),
            app,
            "-b",
            f"127.0.0.1:{port}",
            "-w",
            str(workers),
            "-k",
            "gthread",
            "--threads",
            str(threads),
            "--keep-alive",
            "75",
            "--log-level",
            "warning",
            *(["--reuse-port"] if reuse_port else []),
        ],
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{app}: gunicorn exited with {proc.returncode}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", health)
            c.getresponse().read()
            return proc, port
        except OSError:
            time.sleep(0.3)
    stop(proc)
    raise RuntimeError(f"{app}: gunicorn did not start")


def warm_up(port: int, method: str, path: str, token: str, threads: int) -> None:
    """A few rounds of concurrent requests, so that every worker process has imported and set up what a request
    needs (Django builds its URL resolver, DRF its serializers, on the first request) before anything is timed."""

    def hit():
        c = Client(port, token, [])
        for _ in range(3):
            c(method, path, {} if method == "POST" else None)
        c.conn.close()

    workers = [threading.Thread(target=hit, daemon=True) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout=120)


def stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)


# --- load ---------------------------------------------------------------------------------------------------------
def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def run_clients(n: int, seconds: float, loop) -> dict:
    """``n`` threads running ``loop(i, stop_at, call)`` -> annotations acknowledged; ``call`` does one request."""
    result = {"latencies": [], "acked": [], "annotations": 0, "errors": 0, "drained": 0}
    lock = threading.Lock()
    barrier = threading.Barrier(n + 1)

    def body(i):
        lat, acked, errors, annotations, drained = [], [], 0, 0, 0
        try:
            barrier.wait(timeout=120)
            out = loop(i, time.monotonic() + seconds, lat, acked)
            annotations, errors, drained = out
        except Exception as exc:  # noqa: BLE001 - counted and reported
            errors += 1
            print(f"  client {i}: {exc!r}", file=sys.stderr)
        with lock:
            result["latencies"].extend(lat)
            result["acked"].extend(acked)
            result["annotations"] += annotations
            result["errors"] += errors
            result["drained"] += drained

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    barrier.wait(timeout=120)
    t0 = time.monotonic()
    for t in threads:
        t.join(timeout=seconds + 180)
    result["elapsed"] = time.monotonic() - t0
    return result


class Client:
    def __init__(self, port: int, token: str, lat: list[float]):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.headers = {
            "Authorization": f"Token {token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        self.lat = lat

    def __call__(self, method: str, path: str, body=None) -> tuple[int, bytes]:
        t = time.perf_counter()
        self.conn.request(method, path, body=json.dumps(body) if body is not None else b"", headers=self.headers)
        resp = self.conn.getresponse()
        data = resp.read()
        self.lat.append(time.perf_counter() - t)
        return resp.status, data


def argora_loop(port: int, slug: str, tokens: list[str], flow: str):
    def answers(hit):
        return {"responses": {str(it["id"]): {"label": "pro"} for it in hit["items"]}}

    def loop(i, stop_at, lat, acked):
        call, annotations, errors = Client(port, tokens[i], lat), 0, 0
        hit = None
        while time.monotonic() < stop_at:
            if hit is None:
                status, data = call("POST", f"/api/projects/{slug}/next/")
                if status == 204:
                    return annotations, errors, 1
                if status != 200:
                    print(f"  argora client {i}: next -> {status} {data[:300]!r}", file=sys.stderr)
                    return annotations, errors + 1, 0
                hit = json.loads(data)
            query = "?next=1" if flow == "combined" else ""
            status, data = call("POST", f"/api/assignments/{hit['assignment']}/submit/{query}", answers(hit))
            if status != 200:
                print(f"  argora client {i}: submit -> {status} {data[:300]!r}", file=sys.stderr)
                errors += 1
                hit = None
                continue
            acked.append(hit["assignment"])
            annotations += len(hit["items"])
            if flow == "combined":
                body = json.loads(data)
                hit = body.get("next")
                if hit is None:
                    return annotations, errors, 1
            else:
                hit = None
        call.conn.close()
        return annotations, errors, 0

    return loop


def doccano_loop(port: int, project: int, label: int, tokens: list[str], examples: list[int]):
    todo, lock = iter(examples), threading.Lock()  # one queue: a fast client never waits on a share of its own

    def next_example():
        with lock:
            return next(todo, None)

    def loop(i, stop_at, lat, acked):
        call, annotations, errors = Client(port, tokens[i], lat), 0, 0
        for example in iter(next_example, None):
            if time.monotonic() >= stop_at:
                break
            status, data = call("POST", f"/v1/projects/{project}/examples/{example}/categories", {"label": label})
            if status != 201:
                errors += 1
                if errors <= 3:
                    print(f"  doccano client {i}: -> {status} {data[:300]!r}", file=sys.stderr)
                continue
            acked.append(example)
            annotations += 1
        else:
            call.conn.close()
            return annotations, errors, 1
        call.conn.close()
        return annotations, errors, 0

    return loop


# --- counts -------------------------------------------------------------------------------------------------------
def argora_counts(project, result, hit_size: int) -> str:
    from django.db.models import Count

    from annotation.models import Assignment, Response

    acked = set(result["acked"])
    stored = set(Assignment.objects.filter(project=project, status="submitted").values_list("pk", flat=True))
    responses = Response.objects.filter(assignment__project=project)
    over = responses.values("item").annotate(n=Count("pk")).filter(n__gt=project.assignments_per_item).count()
    dup = len(result["acked"]) - len(acked)
    n_responses = responses.count()
    ok = acked == stored and not over and not dup and n_responses == result["annotations"]
    return (
        "exact"
        if ok
        else (
            f"MISMATCH acked={len(acked)} stored={len(stored)} over={over} dup={dup} "
            f"responses={n_responses}/{result['annotations']}"
        )
    )


def doccano_counts(url: str, examples: list[int], result) -> str:
    sql = "SELECT COUNT(*) FROM labels_category WHERE example_id >= %s AND example_id <= %s"
    lo, hi = min(examples), max(examples)
    if url.startswith("sqlite"):
        with sqlite3.connect(url.split("sqlite:///", 1)[1]) as conn:
            stored = conn.execute(sql.replace("%s", "?"), [lo, hi]).fetchone()[0]
    else:
        import psycopg

        with psycopg.connect(url) as conn:
            stored = conn.execute(sql, [lo, hi]).fetchone()[0]
    return (
        "exact"
        if stored == result["annotations"] == len(set(result["acked"]))
        else (f"MISMATCH acked={result['annotations']} stored={stored}")
    )


def settle(doccano_url: str) -> None:
    """Before every timed run, of either server: write out what the set-up left dirty (PostgreSQL: a ``CHECKPOINT``,
    one for the whole cluster; SQLite: each database's WAL checkpointed into its file), then ``sync``, so that no run
    pays for the writes of the set-up before it (an Argora project of up to 20,000 items is created right before
    its run, doccano's examples once at the start)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("CHECKPOINT" if connection.vendor == "postgresql" else "PRAGMA wal_checkpoint(TRUNCATE)")
    if doccano_url.startswith("sqlite:///"):
        with sqlite3.connect(doccano_url.removeprefix("sqlite:///"), timeout=30) as other:
            other.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        other.close()
    os.sync()


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


# --- main ---------------------------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-url", default=os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432"))
    parser.add_argument("--seconds", type=float, default=5.0, help="measuring time per run")
    parser.add_argument("--clients", default="1,10,50")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs per level (min/median/max)")
    parser.add_argument("--hit-sizes", default="1,5,10", help="Argora items per HIT (one run each)")
    parser.add_argument("--flows", default="combined", help="Argora request flows: combined, two (comma list)")
    parser.add_argument("--no-doccano", action="store_true", help="Argora only (no ratio)")
    parser.add_argument("--doccano-venv", type=Path, default=VAR_DIR / "bench" / "doccano-venv")
    parser.add_argument("--gunicorn-workers", type=int, default=3)
    parser.add_argument("--gunicorn-threads", type=int, default=8)
    parser.add_argument(
        "--no-reuse-port",
        dest="reuse_port",
        action="store_false",
        help="both servers' workers share one listening socket (gunicorn's default)",
    )
    args = parser.parse_args()
    levels = [int(x) for x in args.clients.split(",")]
    sizes = [int(x) for x in args.hit_sizes.split(",")]
    flows = args.flows.split(",")
    argora_url, doccano_url = database_urls(args.db, args.pg_url)
    setup_argora(argora_url)
    run_id = str(int(time.time()))
    # more than the fastest client set labels in a run (doccano's clients take them from one queue)
    per_run_examples = int(600 * args.seconds) + 200

    servers = []
    try:
        argora_env = dict(
            os.environ, DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost", DATABASE_CONN_MAX_AGE="600", DATABASE_URL=argora_url
        )
        argora = start_gunicorn(
            Path(sys.executable).parent / "gunicorn",
            "argora.wsgi:application",
            argora_env,
            ROOT,
            args.gunicorn_workers,
            args.gunicorn_threads,
            "/healthz",
            args.reuse_port,
        )
        servers.append(argora[0])
        doccano = None
        if not args.no_doccano:
            python = ensure_doccano(args.doccano_venv, args.db)
            print("setting up doccano's database and project ...", flush=True)
            dset = doccano_setup(
                python,
                doccano_url,
                tag=run_id,
                users=max(levels),
                examples=per_run_examples * len(levels) * args.repeat,
            )
            backend = Path(
                subprocess.run(
                    [str(python), "-c", "import backend, os; print(os.path.dirname(backend.__file__))"],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout.strip()
            )
            doccano = start_gunicorn(
                python.parent / "gunicorn",
                "config.wsgi:application",
                doccano_env(doccano_url),
                backend,
                args.gunicorn_workers,
                args.gunicorn_threads,
                "/v1/projects",
                args.reuse_port,
            )  # 403 without a token: up (/v1/health/ waits on celery)
            servers.append(doccano[0])
        from django.db import connection

        _, warm_tokens = make_project(1, 1, 1, f"{run_id}-warm")
        warm_up(
            argora[1],
            "POST",
            "/api/projects/no-such-project/next/",
            warm_tokens[0],
            args.gunicorn_workers * args.gunicorn_threads,
        )
        if doccano is not None:
            warm_up(
                doccano[1],
                "GET",
                f"/v1/projects/{dset['project']}",
                dset["tokens"][0],
                args.gunicorn_workers * args.gunicorn_threads,
            )
        print(
            f"database: {connection.vendor} (both); {os.cpu_count()} CPU(s); gunicorn gthread "
            f"{args.gunicorn_workers} workers x {args.gunicorn_threads} threads"
            f"{', --reuse-port' if args.reuse_port else ''} for both; {args.seconds:g} s per run, "
            f"{args.repeat} interleaved repeat(s); R = {R}; Argora flows {flows}, HIT sizes {sizes}; "
            f"load average at start: {load()}",
            flush=True,
        )

        rows: dict[tuple, list[dict]] = {}
        next_example = 0
        for n in levels:
            for rep in range(args.repeat):
                jobs = [("argora", flow, k) for flow in flows for k in sizes]
                if doccano is not None:
                    jobs = ([("doccano", "-", 1)] + jobs) if rep % 2 == 0 else (jobs + [("doccano", "-", 1)])
                for system, flow, k in jobs:
                    if system == "doccano":
                        examples = dset["examples"][next_example : next_example + per_run_examples]
                        next_example += per_run_examples
                        settle(doccano_url)
                        before = load()
                        result = run_clients(
                            n,
                            args.seconds,
                            doccano_loop(doccano[1], dset["project"], dset["labels"][0], dset["tokens"][:n], examples),
                        )
                        counts = doccano_counts(doccano_url, examples, result)
                    else:
                        # one Argora worker takes each HIT at most once: a lone client needs a HIT per request
                        n_hits = max(60, int(400 * args.seconds))
                        project, tokens = make_project(n, n_hits * k, k, f"{run_id}-{flow}-{k}-{n}-{rep}")
                        settle(doccano_url)
                        before = load()
                        result = run_clients(n, args.seconds, argora_loop(argora[1], project.slug, tokens, flow))
                        counts = argora_counts(project, result, k)
                    per_s = result["annotations"] / result["elapsed"]
                    row = {
                        "per_s": per_s,
                        "p50": percentile(result["latencies"], 0.5) * 1000,
                        "p99": percentile(result["latencies"], 0.99) * 1000,
                        "errors": result["errors"],
                        "drained": result["drained"],
                        "counts": counts,
                        "load": before,
                        "requests": len(result["latencies"]) / result["elapsed"],
                    }
                    rows.setdefault((system, flow, k, n), []).append(row)
                    label = "doccano" if system == "doccano" else f"argora {flow} HIT={k}"
                    print(
                        f"  {n:>3} clients run {rep + 1} {label:24} {per_s:7.1f} annotations/s "
                        f"({row['requests']:.0f} req/s), p50 {row['p50']:.0f} ms, p99 {row['p99']:.0f} ms, errors {row['errors']}, "
                        f"{counts}{', DRAINED' if row['drained'] else ''}, load {before}",
                        flush=True,
                    )
    finally:
        for proc in servers:
            stop(proc)

    print()
    print(
        f"{'system':26} {'clients':>7} {'annot/s med':>11} {'min-max':>11} {'req/s':>6} {'p50 ms':>6} "
        f"{'p99 ms min / med / max':>22} {'ratio min/med/max':>19} {'errors':>6}  counts"
    )
    for n in levels:
        base = rows.get(("doccano", "-", 1, n))
        keys = [k for k in rows if k[3] == n]
        keys.sort(key=lambda k: (k[0] != "doccano", k[1], k[2]))
        for key in keys:
            runs = rows[key]
            rates = [r["per_s"] for r in runs]
            ratio = "-"
            if base and key[0] != "doccano":
                ratios = sorted(a["per_s"] / b["per_s"] for a, b in zip(runs, base) if b["per_s"] > 0)
                if ratios:
                    ratio = f"{ratios[0]:.2f}/{statistics.median(ratios):.2f}/{ratios[-1]:.2f}"
            bad = [r["counts"] for r in runs if r["counts"] != "exact"]
            name = "doccano 1.8.4" if key[0] == "doccano" else f"argora {key[1]} HIT={key[2]}"
            print(
                f"{name:26} {n:>7} {statistics.median(rates):>11.1f} {min(rates):>5.0f}-{max(rates):<5.0f} "
                f"{statistics.median(r['requests'] for r in runs):>6.0f} "
                f"{statistics.median(r['p50'] for r in runs):>6.0f} "
                f"{spread([r['p99'] for r in runs], '.0f'):>22} {ratio:>19} {sum(r['errors'] for r in runs):>6}  "
                f"{'exact' if not bad else bad[0]}{' (drained)' if any(r['drained'] for r in runs) else ''}"
            )
    print(
        f"\nannotations/s = answers stored and acknowledged per wall second (an Argora HIT of k items stores k); "
        f"ratio = Argora / doccano of the same repeat (interleaved); p99 = each repeat's p99 request latency. "
        f"Load average at end: {load()} on {os.cpu_count()} CPU(s) (other work on the machine moves these figures)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
