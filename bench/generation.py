"""One generated argument end to end: the HTTP request a user's page sends -> the text in the run; p50 / p99.

    python bench/generation.py [--n 20] [--model packaged|tiny] [--train-steps 20] [--max-new-tokens 40]
        [--gunicorn-threads 4] [--poll 0.02] [--database-url URL --broker-url URL] [--keep]

What is timed, per request (``--n`` of them, one after the other): ``POST /api/generate/`` with one control code
(``{"mode": "arguments", "inputs": ["<topic>|<stance>|<aspect>"]}``, token auth, through a live ``gunicorn`` server
of ``argora.wsgi``) and then ``GET /api/generate/runs/<id>/`` every ``--poll`` seconds (what the run page does)
until its ``outputs`` hold the text: from sending the POST to that answer. A real ``celery worker`` (``-Q default,gpu``, solo pool)
decodes (penalised near-greedy decoding, ``--max-new-tokens`` new tokens at most). Printed: p50 / p99 (nearest
rank) of that time and of the POST alone (the run id comes back before anything is decoded), the min / median / max,
the machine's load, and the debate-trees paper's figure beside ours.

The model: the "packaged" generator is a ``generator`` (Arg-CTRL causal LM) warm-started from the packaged
all-MiniLM-L6-v2 encoder (the default base model of :mod:`ml.generation.train`: a BERT decoder with a fresh LM
head), trained by this script first for ``--train-steps`` steps on generated aspect rows (untimed; the point is the
serving path and the model's size, not its text). ``--model tiny``: a 2-layer BERT from a config (a quick check).
One untimed request first lets the worker load the model (:func:`ml.registry.load_model` caches it per process)
and the server import what a request needs. Use a broker that pushes (``--broker-url redis://...``) for figures
of a real-time set-up: on kombu's filesystem broker (the default) a worker looks for new messages once a second.

By default everything lives in a temporary folder: an SQLite database and kombu's filesystem broker (no server
needed); ``--database-url`` / ``--broker-url`` (e.g. PostgreSQL + Redis) use those instead (the bench adds a user,
a model version and runs, and deletes the user and the version at the end unless ``--keep``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.timing import load_line, spread  # noqa: E402

# debate-trees §3.1 (Implementation): "Given a new subject for debate, average computation time of a new argument
# is around 3 seconds, which is acceptable in real-time debates." (8 vCPUs, 2 NVIDIA Tesla K80 GPUs)
PAPER_SECONDS = 3.0
PAPER_LINE = (
    'debate-trees (Bolton et al. 2019) §3.1 Implementation: "average computation time of a new argument '
    'is around 3 seconds" (8 vCPUs, 2 NVIDIA Tesla K80 GPUs; a mean, no p50 / p99 given)'
)
TOPICS = {
    "nuclear energy": {
        "cost": ("cheap", "expensive"),
        "safety": ("safe", "dangerous"),
        "waste": ("manageable", "a lasting burden"),
    },
    "school uniforms": {"cost": ("affordable", "costly"), "bullying": ("reduce teasing", "invite teasing")},
}
CODES = [f"{t}|{s}|{a}" for t, aspects in TOPICS.items() for a in aspects for s in ("pro", "con")]


def aspect_rows() -> list[dict]:
    """``{"topic", "stance", "sentence", "aspects"}`` training rows, 6 per control code."""
    rows = []
    for topic, aspects in TOPICS.items():
        for aspect, (good, bad) in aspects.items():
            for stance, word in (("pro", good), ("con", bad)):
                for i in range(6):
                    rows.append(
                        {
                            "topic": topic,
                            "stance": stance,
                            "aspects": [aspect],
                            "sentence": f"The {aspect} of {topic} is {word}, as study {i} shows.",
                        }
                    )
    return rows


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20, help="timed requests")
    ap.add_argument("--model", choices=["packaged", "tiny"], default="packaged")
    ap.add_argument("--train-steps", dest="train_steps", type=int, default=20)
    ap.add_argument("--max-new-tokens", dest="max_new_tokens", type=int, default=40)
    ap.add_argument("--gunicorn-threads", dest="threads", type=int, default=4)
    ap.add_argument("--poll", type=float, default=0.02, help="seconds between two GETs of the run")
    ap.add_argument("--database-url", dest="database_url", help="default: SQLite in a temporary folder")
    ap.add_argument("--broker-url", dest="broker_url", help="default: kombu's filesystem broker in that folder")
    ap.add_argument("--timeout", type=float, default=300, help="seconds to wait for one run")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder and the rows")
    args, rest = ap.parse_known_args(argv)
    if args.n < 1:
        ap.error("--n: at least 1")
    return args, rest


def percentile(values: list[float], q: float) -> float:
    """Nearest rank: the smallest value with at least ``q`` % of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


class Client:
    def __init__(self, port: int, token: str):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {
            "Authorization": f"Token {token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }

    def __call__(self, method: str, path: str, body=None) -> tuple[int, dict]:
        self.conn.request(method, path, None if body is None else json.dumps(body), self.headers)
        resp = self.conn.getresponse()
        data = resp.read()
        return resp.status, (json.loads(data) if data else {})


def start_gunicorn(env: dict, threads: int) -> tuple[subprocess.Popen, int]:
    from tests.worker_utils import free_port

    port = free_port()
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("gunicorn")),
            "argora.wsgi:application",
            "-b",
            f"127.0.0.1:{port}",
            "-w",
            "1",
            "-k",
            "gthread",
            "--threads",
            str(threads),
            "--keep-alive",
            "75",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {proc.returncode}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", "/healthz")
            c.getresponse().read()
            return proc, port
        except OSError:
            time.sleep(0.3)
    stop(proc)
    raise RuntimeError("gunicorn did not start")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)


def one_argument(client: Client, code: str, args) -> tuple[float, float, dict]:
    """(seconds to the POST's answer, seconds to the text, the run) of one generated argument."""
    body = {"mode": "arguments", "inputs": [code], "decoding": {"max_new_tokens": args.max_new_tokens}}
    start = time.perf_counter()
    status, answer = client("POST", "/api/generate/", body)
    posted = time.perf_counter() - start
    if status != 202:
        raise RuntimeError(f"POST /api/generate/ answered {status}: {answer}")
    deadline = time.monotonic() + args.timeout
    while True:
        status, run = client("GET", answer["state"])
        if status == 200 and run["outputs"]:  # the text is in the run (the page shows it now)
            return posted, time.perf_counter() - start, run
        if status != 200 or run["status"] == "failed":
            raise RuntimeError(f"run {answer['run']}: {status} {run.get('status')} {run.get('error', '')}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"run {answer['run']} not done within {args.timeout:.0f} s")
        time.sleep(args.poll)


def main(argv: list[str] | None = None) -> int:
    args, rest = parse(list(sys.argv[1:] if argv is None else argv))
    if rest:
        print(f"(ignored here: {' '.join(rest)})")
    tmp = Path(tempfile.mkdtemp(prefix="argora-bench-generation-"))
    os.environ["ARGORA_VAR_DIR"] = str(tmp / "var")
    os.environ["ARGORA_ARTIFACT_ROOT"] = str(tmp / "artifacts")
    os.environ.pop("DATABASE_URL", None) if not args.database_url else os.environ.update(DATABASE_URL=args.database_url)
    os.environ.pop("CELERY_BROKER_URL", None) if not args.broker_url else os.environ.update(
        CELERY_BROKER_URL=args.broker_url
    )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argora.settings")
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "0"

    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from argora.roles import RESEARCHER_GROUP
    from ml import registry, splits, versions
    from ml.models import ModelVersion
    from tests.worker_utils import start_worker, subprocess_env

    call_command("migrate", verbosity=0)
    print(
        f"machine: {load_line()}; database {django.db.connection.vendor}, "
        f"broker {os.environ.get('CELERY_BROKER_URL', 'filesystem://')}",
        flush=True,
    )
    hp = {"max_steps": args.train_steps, "batch_size": 4, "block_size": 64, "min_args": 2, "max_evals": 1}
    if args.model == "tiny":
        hp["from_config"] = {
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "intermediate_size": 64,
        }
    rows = aspect_rows()
    train, dev = splits.stable_split(rows, key="sentence", dev_fraction=0.2)
    t0 = time.monotonic()
    version = versions.train_version("generator", rows_train=train, rows_dev=dev, seed=13, hyperparameters=hp)
    registry.activate(version)
    params = sum(p.numel() for p in registry.load_model(version).model.parameters())
    registry.clear_model_cache()
    base = os.environ.get("ARGORA_DEFAULT_ENCODER") or "the packaged all-MiniLM-L6-v2"
    print(
        f"model: generator #{version.pk} ({args.model}: "
        f"{'warm-started from ' + base if args.model == 'packaged' else 'from a config'}"
        f", {params / 1e6:.1f} M parameters), trained {args.train_steps} steps in {time.monotonic() - t0:.0f} s "
        f"(untimed), dev perplexity {version.metrics.get('dev', {}).get('perplexity', float('nan')):.1f}",
        flush=True,
    )
    User = get_user_model()
    user = User.objects.create_user(f"bench-gen-{os.getpid()}", password=None, is_staff=True)
    user.groups.add(Group.objects.get(name=RESEARCHER_GROUP))
    token = Token.objects.create(user=user).key
    env = subprocess_env(
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost", ARGORA_ARTIFACT_ROOT=os.environ["ARGORA_ARTIFACT_ROOT"]
    )
    server = None
    try:
        server, port = start_gunicorn(env, args.threads)
        with start_worker(queues=("default", "gpu")):
            client = Client(port, token)
            one_argument(client, CODES[0], args)  # warm-up: the worker loads the model, the server its views
            before = load_line()
            posts, totals, words = [], [], []
            for i in range(args.n):
                posted, total, run = one_argument(client, CODES[i % len(CODES)], args)
                posts.append(posted)
                totals.append(total)
                words.append(len((run["outputs"][0].get("raw") or "").split()))
                if i == 0:
                    print(
                        f"first timed output: {run['outputs'][0].get('control_code')!r} -> "
                        f"{run['outputs'][0].get('raw')!r}",
                        flush=True,
                    )
            after = load_line()
        print(
            f"\n{args.n} generated arguments, one after the other (each one control code, at most "
            f"{args.max_new_tokens} new tokens; {statistics.mean(words):.0f} words generated on average; "
            f"the run polled every {args.poll * 1000:.0f} ms; timed until the GET whose outputs hold the text)"
        )
        print(
            f"request -> text in the run: p50 {percentile(totals, 50) * 1000:.0f} ms, "
            f"p99 {percentile(totals, 99) * 1000:.0f} ms (min / median / max {spread(totals, '.0f', 1000)} ms)"
        )
        print(
            f"POST /api/generate/ alone (the run id): p50 {percentile(posts, 50) * 1000:.1f} ms, "
            f"p99 {percentile(posts, 99) * 1000:.1f} ms"
        )
        print(f"paper: {PAPER_LINE}")
        print(
            f"paper's mean / our p50: {PAPER_SECONDS / percentile(totals, 50):.1f}x; "
            f"paper's mean / our p99: {PAPER_SECONDS / percentile(totals, 99):.1f}x "
            f"(different model, hardware and text length: the paper's figure is beside ours, not a baseline "
            f"run here)"
        )
        print(f"load before: {before}; after: {after}")
    finally:
        if server is not None:
            stop(server)
        if not args.keep:
            Token.objects.filter(user=user).delete()
            user.delete()
            ModelVersion.objects.filter(pk=version.pk).delete()
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept: {tmp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
