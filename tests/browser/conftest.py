"""One headless Chromium per test session (Debian's /usr/bin/chromium, driven by Playwright)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from django.conf import settings

CHROMIUM = os.environ.get("ARGORA_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
]


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


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    page.set_default_timeout(15000)
    try:
        yield page
    finally:
        context.close()


def staff_screenshot(page, name: str) -> Path:
    """Save a screenshot of a staff page as ``$ARGORA_VAR_DIR/screenshots/<name>.png`` (the 1366x768 viewport of
    :func:`page`) and check that the page fits it: no horizontal scroll bar."""
    overflow = page.evaluate("() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth")
    out = Path(settings.VAR_DIR) / "screenshots" / f"{name}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(out))
    assert overflow <= 0, f"{name}: the page is {overflow}px wider than the 1366px window (horizontal scroll)"
    return out
