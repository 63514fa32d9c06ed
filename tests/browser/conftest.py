"""One headless Chromium per test session (Debian's /usr/bin/chromium, driven by Playwright)."""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import connections

CHROMIUM = os.environ.get("ARGORA_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
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


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    page.set_default_timeout(15000)
    try:
        yield page
    finally:
        context.close()
        # the database is flushed after this fixture ends: let the live server finish what the page sent last
        IN_FLIGHT.wait_quiet()


def staff_screenshot(page, name: str) -> Path:
    """Save a screenshot of a staff page as ``$ARGORA_VAR_DIR/screenshots/<name>.png`` (the 1366x768 viewport of
    :func:`page`) and check that the page fits it: no horizontal scroll bar."""
    overflow = page.evaluate("() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth")
    out = Path(settings.VAR_DIR) / "screenshots" / f"{name}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(out))
    assert overflow <= 0, f"{name}: the page is {overflow}px wider than the 1366px window (horizontal scroll)"
    return out
