"""One headless Chromium per test session (Debian's /usr/bin/chromium, driven by Playwright)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from axe_playwright_python.base import AXE_SCRIPT
from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import connections
from playwright.sync_api import Error as PlaywrightError

CHROMIUM = os.environ.get("ARGORA_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


class _InFlight:
    """Requests the live server (threads of this process) is still handling. A test that ends while the page's
    last autosave is on its way must not flush the database under it: on PostgreSQL the TRUNCATE and the request's
    transaction deadlock, the flush fails and the next test starts on the previous test's rows. Requests of the
    test client (the main thread) are not counted: one whose streamed response is never read never finishes."""

    def __init__(self):
        self.lock = threading.Lock()
        self.active: dict[int, threading.Thread] = {}
        self.changed = time.monotonic()

    def _mark(self, busy: bool) -> None:
        thread = threading.current_thread()
        if thread is threading.main_thread():
            return
        with self.lock:
            if busy:
                self.active[thread.ident] = thread
            else:
                self.active.pop(thread.ident, None)
            self.changed = time.monotonic()

    def started(self, **kwargs):
        self._mark(True)

    def finished(self, **kwargs):
        self._mark(False)

    def wait_quiet(self, quiet=0.3, limit=20.0):
        """Return once no live-server thread has been handling a request for ``quiet`` seconds (a request sent as
        the page closed arrives a moment later), or after ``limit`` seconds."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            with self.lock:
                busy = [t for t in self.active.values() if t.is_alive()]
                idle = not busy and time.monotonic() - self.changed >= quiet
            if idle:
                return
            time.sleep(0.05)


IN_FLIGHT = _InFlight()
request_started.connect(IN_FLIGHT.started, weak=False, dispatch_uid="argora-browser-in-flight-start")
request_finished.connect(IN_FLIGHT.finished, weak=False, dispatch_uid="argora-browser-in-flight-end")


# --- axe-core on every document a browser test loads -------------------------------------------------------------
AXE_IMPACTS = ("critical", "serious")
# one evaluate both loads axe-core and runs it, so a document that navigates away in between cannot split the two
AXE_RUN = (
    "async (impacts) => {\n" + AXE_SCRIPT + "\n;const r = await axe.run(document, {resultTypes: ['violations']});"
    "return {url: location.href, violations: r.violations.filter(v => impacts.includes(v.impact)).map(v => ("
    "{id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map(n => n.target.join(' '))}))};}"
)
AXE_CHECKED: set[tuple[str, str]] = set()  # (normalised path, viewport) already checked in this session
_ID = re.compile(r"^(\d+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.IGNORECASE)
_TOKEN = re.compile(r"^(?=.*\d)[A-Za-z0-9_-]{16,}$")  # invite / study / assignment tokens
LOOPBACK = {"127.0.0.1", "localhost", "[::1]", "::1"}


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "axe_skip(*paths, reason): pages under these paths are not ours (e.g. Swagger UI): axe-core does "
        "not check them in this test; the reason is required",
    )


def axe_key(url: str) -> str | None:
    """The path of ``url`` with ids and tokens replaced (``/invite/<token>/``, ``/studio/jobs/<id>/``), or None for a
    page that is not the live server's (an external page, ``about:blank``, a ``data:`` URL)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.hostname not in LOOPBACK:
        return None
    segments = ["<id>" if _ID.match(s) else "<token>" if _TOKEN.match(s) else s for s in parts.path.split("/")]
    return "/".join(segments)


class AxeWatch:
    """Runs axe-core on each document loaded in the contexts it is attached to, once per (normalised path,
    viewport) per test session, and collects the critical/serious violations in ``found``. A document that
    navigates away (or closes) while axe-core runs is skipped: its path is checked at its next load."""

    def __init__(self, node):
        self.found: list[str] = []
        self.running = 0
        self.skip: list[str] = []
        for mark in node.iter_markers("axe_skip"):
            if not mark.kwargs.get("reason") or not mark.args:
                pytest.fail(f"{node.nodeid}: axe_skip needs the paths and a reason", pytrace=False)
            self.skip.extend(mark.args)

    def attach(self, context) -> None:
        context.on("page", lambda page: page.on("load", self.check))

    def check(self, page) -> None:
        key = axe_key(page.url)
        if key is None or any(key.startswith(prefix) for prefix in self.skip):
            return
        size = page.viewport_size or {}
        seen = (key, f"{size.get('width')}x{size.get('height')}")
        if seen in AXE_CHECKED:
            return
        AXE_CHECKED.add(seen)
        self.running += 1
        try:
            result = page.evaluate(AXE_RUN, list(AXE_IMPACTS))
        except PlaywrightError:  # the document went away (navigation, closed page): check it at its next load
            AXE_CHECKED.discard(seen)
            return
        finally:
            self.running -= 1
        for v in result["violations"]:
            self.found.append(
                f"{result['url']} ({seen[1]}): {v['impact']} {v['id']}: {v['help']} -- "
                + "; ".join(v["targets"][:8])
                + (" ..." if len(v["targets"]) > 8 else "")
            )

    def settle(self, contexts, limit: float = 30.0) -> None:
        """Let each page finish loading and the checks still running finish (the event loop runs while a page
        waits)."""
        deadline = time.monotonic() + limit
        pages = [p for c in contexts for p in c.pages if not p.is_closed()]
        for p in pages:
            try:
                # a document still loading is checked too (and closing a phone context mid-navigation can hang)
                p.wait_for_load_state("load", timeout=10000)
                p.evaluate("1")  # a round trip: a load event sent before it has been dispatched
            except PlaywrightError:
                pass
        while self.running and pages and time.monotonic() < deadline:
            try:
                pages[0].wait_for_timeout(50)
            except PlaywrightError:
                pages = [p for p in pages[1:] if not p.is_closed()]


@pytest.fixture(scope="session")
def browser():
    if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} not found: `make test` installs Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        profile = tempfile.mkdtemp(prefix="argora-chromium-")
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
            shutil.rmtree(profile, ignore_errors=True)
            # Playwright's event loop runs in this thread while the browser is open, so Django kept this thread's
            # connections apart from those it uses outside (asgiref: per context when a loop is running). Once the
            # loop stops they can no longer be reached, and pytest-django could not drop a PostgreSQL test database
            # they were still connected to ("is being accessed by other users"): close them while they can be.
            connections.close_all()


def blank(context) -> None:
    """Send each open page of ``context`` to about:blank (bounded by a timeout) before the context is closed: a
    page still navigating, running a script or holding a keep-alive request to the live server could make
    ``context.close()`` -- which has no timeout -- wait forever (seen once on a phone context, 600 s, in
    test_touch_hits); about:blank has nothing left to wait for."""
    for page in context.pages:
        if page.is_closed():
            continue
        try:
            page.goto("about:blank", timeout=10000)
        except PlaywrightError:
            pass


@pytest.fixture
def new_context(browser, request):
    """``new_context(**kwargs)``: a context of the session's browser (``browser.new_context(**kwargs)``) whose every
    page is checked by axe-core at each document load (:class:`AxeWatch`); closed at teardown, where the test fails
    listing each critical or serious violation found on its pages. Every page of a browser test comes from here."""
    watch = AxeWatch(request.node)
    contexts = []

    def make(**kwargs):
        context = browser.new_context(**kwargs)
        watch.attach(context)
        contexts.append(context)
        return context

    try:
        yield make
        watch.settle(contexts)
    finally:
        for context in contexts:
            blank(context)
            context.close()
        # the database is flushed after this fixture ends: let the live server finish what the page sent last
        IN_FLIGHT.wait_quiet()
    if watch.found:
        pytest.fail(
            "axe-core: critical/serious accessibility violations on pages this test opened:\n" + "\n".join(watch.found),
            pytrace=False,
        )


@pytest.fixture
def page(new_context):
    context = new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    page.set_default_timeout(15000)
    return page


@pytest.fixture
def phone(new_context):
    """A touch phone (390x844, ``is_mobile``, ``has_touch``): tap, no mouse, no keyboard."""
    context = new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    page.set_default_timeout(15000)
    return page


def staff_screenshot(page, name: str) -> Path:
    """Save a screenshot of a staff page as ``$ARGORA_VAR_DIR/screenshots/<name>.png`` (the 1366x768 viewport of
    :func:`page`) and check that the page fits it: no horizontal scroll bar."""
    overflow = page.evaluate("() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth")
    out = Path(settings.VAR_DIR) / "screenshots" / f"{name}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(out))
    assert overflow <= 0, f"{name}: the page is {overflow}px wider than the 1366px window (horizontal scroll)"
    return out
