"""``/api/docs/`` works offline: Swagger UI comes from drf-spectacular-sidecar (our own static files), so with every
request to another host cut off the page still renders the API's operations."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect


@pytest.mark.browser
@pytest.mark.one_database  # the documentation page, offline
@pytest.mark.django_db(transaction=True)
@pytest.mark.axe_skip(
    "/api/docs/", reason="Swagger UI (drf-spectacular-sidecar's page), not our template: its <html> has no lang"
)
def test_api_docs_render_their_operations_with_the_network_cut_off(live_server, page):
    here = urlsplit(live_server.url).netloc
    blocked: list[str] = []

    def only_loopback(route):
        url = route.request.url
        if urlsplit(url).netloc == here or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            blocked.append(url)
            route.abort()

    page.route("**/*", only_loopback)
    page.goto(f"{live_server.url}/api/docs/")
    # the operations of a real path are rendered by Swagger UI (the JS ran, the schema was fetched and parsed)
    projects = page.locator(".opblock-tag-section .opblock").filter(has_text="/api/projects/").first
    expect(projects).to_be_visible()
    expect(page.locator(".opblock-summary-path", has_text="/api/projects/{slug}/next/")).to_have_count(1)
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Argora API")
    assert blocked == [], f"the docs page asked other hosts for: {blocked}"
    scripts = page.eval_on_selector_all("script[src], link[rel=stylesheet]", "els => els.map(e => e.src || e.href)")
    assert scripts and all(urlsplit(s).netloc == here for s in scripts), scripts
