"""``manage.py run_demo``: web server + Celery worker in one command (what ``make demo`` runs).

Starts, as child processes of this command, a Celery worker on the ``default`` and ``gpu`` queues and gunicorn
(``argora.wsgi``, static files served by whitenoise), sends ``argora.ping`` through the broker and waits for
the worker's answer, prints the URLs (the invite link of every active project among them, as full URLs) and the
demo logins, and then waits. Ctrl-C or SIGTERM stops both children
(SIGTERM, then SIGKILL after a grace period). Their output goes to ``$ARGORA_VAR_DIR/logs/{web,worker}.log``.

``--smoke`` also fetches ``/``, ``/admin/login/`` and ``/api/schema/`` and every stylesheet those pages link
(the admin's CSS included), then stops everything: exit 0 when all answered 200, 1 with the reason otherwise.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from argora.tasks import ping

from .load_demo import accounts_table, app_demo_links

BIN = Path(sys.executable).parent
STOP_GRACE_S = 15.0
_CSS_LINK = re.compile(r'<link[^>]+href="([^"]+\.css)"', re.IGNORECASE)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    """Own session (a terminal's Ctrl-C reaches only us; we stop the children in order) and SIGTERM when
    this command dies without cleaning up (Linux), so no orphan keeps the port or eats queue messages."""
    os.setsid()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001
        pass


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def http_get(url: str, timeout: float = 10.0) -> tuple[int, str, bytes]:
    """(status, content type, body); HTTP errors are returned, not raised."""
    request = urllib.request.Request(url, headers={"User-Agent": "argora-run-demo"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read()


class Child:
    def __init__(self, name: str, cmd: list[str], log_path: Path, env: dict):
        self.name = name
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            log.write(f"\n==== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(cmd)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                cmd,
                cwd=settings.BASE_DIR,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def terminate(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)

    def wait_or_kill(self, grace: float = STOP_GRACE_S) -> int:
        try:
            return self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=grace)


def banner_lines(base: str) -> list[str]:
    """The end of the start-up output: the pages, every invite link (``<app>.demo.links()``) and the logins, as full
    URLs of the server at ``base`` (``http://host:port``)."""
    lines = [
        f"  {base}{path:<12} {what}"
        for path, what in (
            ("/", "home"),
            ("/admin/", "Django admin"),
            ("/api/docs/", "OpenAPI docs"),
            ("/jobs/", "background jobs and their progress"),
        )
    ]
    links = app_demo_links()
    if links:
        lines.append("Invite links (a worker opens one to join that study, no login needed):")
        lines.extend(f"  {base}{path}  {what}" for path, what in links)
    lines.append("Logins (from manage.py load_demo):")
    lines.append(accounts_table())
    return lines


class DemoFailed(Exception):
    pass


class Command(BaseCommand):
    help = "Run the demo: gunicorn + a Celery worker (queues default,gpu); --smoke checks the pages and exits."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("ARGORA_DEMO_HOST", "127.0.0.1"))
        parser.add_argument(
            "--port",
            type=int,
            default=int(os.environ.get("ARGORA_DEMO_PORT", "8000")),
            help="web port (default: $ARGORA_DEMO_PORT or 8000)",
        )
        parser.add_argument("--web-workers", type=int, default=3, help="gunicorn worker processes (default 3)")
        parser.add_argument(
            "--smoke",
            action="store_true",
            help="check /, /admin/login/ (with its CSS) and /api/schema/, then stop; exit 0 or 1",
        )
        parser.add_argument(
            "--ready-timeout",
            type=float,
            default=120.0,
            help="seconds to wait for the web server and the worker's ping answer",
        )

    def handle(self, *args, host, port, web_workers, smoke, ready_timeout, **options):
        self.children: list[Child] = []
        self.stopping = False
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            self._start(host, port, web_workers, ready_timeout)
            base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"
            if smoke:
                self._smoke(base)
                self.stdout.write(
                    self.style.SUCCESS("Smoke test passed: pages, admin CSS, API schema and worker answer.")
                )
                return
            self._banner(base)
            self._wait()
        except DemoFailed as exc:
            for child in self.children:
                self.stderr.write(f"---- last lines of {child.log_path} ----\n{child.tail()}")
            raise CommandError(f"run_demo failed: {exc}", returncode=1) from None
        finally:
            self._stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    # --- steps ----------------------------------------------------------------------------------
    def _on_signal(self, signum, frame):
        self.stopping = True

    def _start(self, host: str, port: int, web_workers: int, ready_timeout: float) -> None:
        if not port_is_free(host, port):
            raise DemoFailed(f"port {port} on {host} is in use (choose another with --port or ARGORA_DEMO_PORT)")
        self.stdout.write("Collecting static files ...")
        call_command("collectstatic", interactive=False, verbosity=0)

        env = dict(os.environ)
        env.update(
            DATABASE_URL=settings.DATABASE_URL,
            CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
            ARGORA_VAR_DIR=str(settings.VAR_DIR),
            CELERY_TASK_ALWAYS_EAGER="0",
            PYTHONUNBUFFERED="1",
        )
        logs = Path(settings.VAR_DIR) / "logs"
        self.worker = Child(
            "worker",
            [
                str(BIN / "celery"),
                "-A",
                "argora",
                "worker",
                "-Q",
                "default,gpu",
                "--pool",
                "threads",
                "--concurrency",
                "2",
                "-n",
                f"argora-demo-{os.getpid()}@%h",
                "-l",
                "info",
                "--without-gossip",
                "--without-mingle",
            ],
            logs / "worker.log",
            env,
        )
        self.children.append(self.worker)
        self.web = Child(
            "web",
            [
                str(BIN / "gunicorn"),
                "argora.wsgi:application",
                "--bind",
                f"{host}:{port}",
                "--workers",
                str(web_workers),
                "--timeout",
                "120",
                "--graceful-timeout",
                "10",
                "--access-logfile",
                "-",
                "--error-logfile",
                "-",
            ],
            logs / "web.log",
            env,
        )
        self.children.append(self.web)
        self.stdout.write(
            f"Started worker (pid {self.worker.proc.pid}) and gunicorn (pid {self.web.proc.pid}); logs in {logs}/"
        )

        deadline = time.monotonic() + ready_timeout
        base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"
        self._wait_for_web(base, deadline)
        answer = self._ping_worker(deadline)
        self.stdout.write(f"Worker {answer['worker']} answered argora.ping through {settings.CELERY_BROKER_URL}")

    def _check_children(self) -> None:
        if self.stopping:
            raise DemoFailed("interrupted")
        for child in self.children:
            if not child.alive():
                raise DemoFailed(f"{child.name} exited with status {child.proc.returncode}")

    def _wait_for_web(self, base: str, deadline: float) -> None:
        while True:
            self._check_children()
            try:
                status, _, _ = http_get(f"{base}/healthz", timeout=5)
                if status == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise DemoFailed(f"the web server did not answer {base}/healthz in time")
            time.sleep(0.3)

    def _ping_worker(self, deadline: float) -> dict:
        from celery.exceptions import TimeoutError as CeleryTimeout

        result = ping.apply_async(queue="default")
        while True:
            self._check_children()
            try:
                return result.get(timeout=1.0, interval=0.2)
            except CeleryTimeout:
                if time.monotonic() > deadline:
                    raise DemoFailed(
                        "the worker did not answer argora.ping in time (is the broker reachable?)"
                    ) from None

    def _smoke(self, base: str) -> None:
        stylesheets: set[str] = set()
        for path in ("/", "/admin/login/", "/api/schema/"):
            status, ctype, body = http_get(base + path)
            if status != 200:
                raise DemoFailed(f"GET {path} answered {status}")
            self.stdout.write(f"  GET {path}: {status} {ctype}")
            if "html" in ctype:
                stylesheets.update(_CSS_LINK.findall(body.decode("utf-8", "replace")))
        admin_css = [href for href in stylesheets if "/admin/" in href]
        if not admin_css:
            raise DemoFailed("the admin login page links no admin stylesheet")
        for href in sorted(stylesheets):
            url = href if href.startswith("http") else base + ("" if href.startswith("/") else "/") + href
            status, ctype, body = http_get(url)
            if status != 200 or "css" not in ctype or not body:
                raise DemoFailed(f"stylesheet {href} answered {status} {ctype!r} ({len(body)} bytes)")
            self.stdout.write(f"  GET {href}: {status} {ctype} ({len(body)} bytes)")

    def _banner(self, base: str) -> None:
        self.stdout.write(self.style.SUCCESS(f"\nArgora demo is running at {base}/"))
        self.stdout.write("\n".join(banner_lines(base)))
        self.stdout.write("Press Ctrl-C to stop.")

    def _wait(self) -> None:
        while not self.stopping:
            for child in self.children:
                if not child.alive():
                    raise DemoFailed(f"{child.name} exited with status {child.proc.returncode}")
            time.sleep(0.5)
        self.stdout.write("Stopping ...")

    def _stop(self) -> None:
        for child in self.children:
            child.terminate()
        for child in self.children:
            code = child.wait_or_kill()
            self.stdout.write(f"  {child.name} stopped ({code})")
