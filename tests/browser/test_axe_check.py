"""The axe-core check every browser test gets (tests/browser/conftest.py :class:`AxeWatch`): a document of ours that
loads is checked once per (path with ids and tokens normalised, viewport) per session, its critical and serious
violations are listed with the URL; another host's page and a path an ``axe_skip`` marker names are not checked.
The documents here are served by ``page.route`` (no server: the watcher goes by the URL)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from .conftest import AxeWatch, axe_key

pytestmark = [pytest.mark.browser, pytest.mark.one_database]  # no database at all: documents served by page.route

UNLABELLED = "<!doctype html><html lang='en'><title>t</title><main><h1>x</h1><input type='text'></main></html>"
FINE = (
    "<!doctype html><html lang='en'><title>t</title><main><h1>x</h1><label>Name <input type='text'></label>"
    "</main></html>"
)


def node(*marks):
    return SimpleNamespace(
        nodeid="test_axe_check.py::t", iter_markers=lambda name: [m for m in marks if m.name == name]
    )


def serve(context, html_by_url: dict[str, str]):
    context.route(
        "**/*",
        lambda route: route.fulfill(
            status=200, content_type="text/html", body=html_by_url.get(route.request.url, FINE)
        ),
    )


def load(page, watch, url):
    page.goto(url)
    watch.settle([page.context])


def test_axe_key_normalises_ids_and_tokens_and_ignores_other_hosts():
    assert axe_key("http://127.0.0.1:8123/studio/jobs/42/?page=2#x") == "/studio/jobs/<id>/"
    assert axe_key("http://localhost:1/invite/hQ3v9_xk2LmP0aZsYt7Rw-1b/") == "/invite/<token>/"
    assert axe_key("http://127.0.0.1:1/work/nuclear-energy/") == "/work/nuclear-energy/"  # a slug stays
    assert axe_key("https://app.prolific.example/submissions/complete?cc=1") is None
    assert axe_key("about:blank") is None and axe_key("data:text/html,<p>") is None


def test_a_violation_is_listed_with_its_url_once_per_path_and_viewport(browser):
    watch = AxeWatch(node())
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    watch.attach(context)
    try:
        serve(
            context,
            {
                "http://127.0.0.1:9/axe-selftest-label/1/": UNLABELLED,
                "http://127.0.0.1:9/axe-selftest-label/2/": UNLABELLED,
                "http://example.invalid/axe-selftest-label/": UNLABELLED,
            },
        )
        page = context.new_page()
        load(page, watch, "http://127.0.0.1:9/axe-selftest-label/1/")
        assert len(watch.found) == 1, watch.found
        assert watch.found[0].startswith("http://127.0.0.1:9/axe-selftest-label/1/ (1366x768): critical label:")
        assert "input" in watch.found[0]
        load(page, watch, "http://127.0.0.1:9/axe-selftest-label/2/")  # the same path with another id: done
        load(page, watch, "http://example.invalid/axe-selftest-label/")  # not ours
        assert len(watch.found) == 1, watch.found
        page.set_viewport_size({"width": 390, "height": 844})
        load(page, watch, "http://127.0.0.1:9/axe-selftest-label/2/")  # a phone: checked again
        assert len(watch.found) == 2 and "(390x844): critical label" in watch.found[1], watch.found
    finally:
        context.close()


def test_a_clean_page_and_a_skipped_path_report_nothing(browser):
    skip = pytest.mark.axe_skip("/axe-selftest-theirs/", reason="a page that is not ours").mark
    watch = AxeWatch(node(skip))
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    watch.attach(context)
    try:
        serve(context, {"http://127.0.0.1:9/axe-selftest-theirs/": UNLABELLED})
        page = context.new_page()
        load(page, watch, "http://127.0.0.1:9/axe-selftest-clean/")
        load(page, watch, "http://127.0.0.1:9/axe-selftest-theirs/")
        assert watch.found == []
    finally:
        context.close()
    with pytest.raises(pytest.fail.Exception, match="needs the paths and a reason"):
        AxeWatch(node(pytest.mark.axe_skip("/x/").mark))
