"""argora.html, the one sanitiser of Researcher-set HTML and Markdown, and its template filters: scripts, handlers,
``javascript:``/``data:`` URLs, styles, frames, ids and classes go; formatting, lists, tables, links and images stay;
cleaning twice changes nothing; the filters show what is stored (a row written before the sanitiser) cleaned."""

from __future__ import annotations

import re

import pytest
from django.template import Context, Template

from argora.html import clean_html, markdown_html

RUN = "window.__xss=1"


@pytest.mark.parametrize(
    "dirty,clean",
    [
        (f"<img src=x onerror={RUN}>", '<img src="x">'),
        (f"<script>{RUN}</script>ok", "ok"),
        (f"<svg onload={RUN}></svg>", ""),
        (f'<a href="javascript:{RUN}">a</a>', '<a rel="noopener noreferrer">a</a>'),
        (f'<a href="JaVaScRiPt&#x3a;{RUN}">a</a>', '<a rel="noopener noreferrer">a</a>'),
        ('<a href="data:text/html,<script>x</script>">a</a>', '<a rel="noopener noreferrer">a</a>'),
        (f'"><script>{RUN}</script>', '"&gt;'),
        (f'<iframe src="javascript:{RUN}"></iframe>', ""),
        (f"<details open ontoggle={RUN}>x</details>", "<details>x</details>"),
        ('<p id="hit-submit" class="button" style="position:fixed" onclick="x()">t</p>', "<p>t</p>"),
        ("<style>body{display:none}</style><form action=/x><input name=a></form>", ""),
        (f"<math><mtext><table><mglyph><style><img src=x onerror={RUN}>", ""),
    ],
)
def test_clean_html_removes_what_could_run(dirty, clean):
    assert clean_html(dirty) == clean
    assert clean_html(clean_html(dirty)) == clean_html(dirty)  # idempotent: cleaning on write and on display agree


def test_clean_html_keeps_the_formatting_of_guidelines():
    html = (
        "<h2>Task</h2><p>Mark <b>every</b> <em>sentence</em>; keys: <kbd>1</kbd>.</p><ul><li>one</li></ul>"
        '<table><tr><td>a</td></tr></table><img src="/static/x.png" alt="x">'
    )
    assert clean_html(html) == html.replace("<tr>", "<tbody><tr>").replace("</table>", "</tbody></table>")
    assert (
        clean_html('<a href="https://example.org/g">g</a>')
        == '<a href="https://example.org/g" rel="noopener noreferrer">g</a>'
    )
    assert clean_html(None) == "" and clean_html("a < b & c") == "a &lt; b &amp; c"


def test_markdown_html_renders_then_cleans_raw_html_and_links():
    out = markdown_html(
        f"# Read\n\n**bold** [ok](https://example.org) [bad](javascript:{RUN})\n\n"
        f"<img src=x onerror={RUN}>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    assert out.startswith("<h1>Read</h1>") and "<strong>bold</strong>" in out and "<td>1</td>" in out
    assert '<a href="https://example.org" rel="noopener noreferrer">ok</a>' in out
    assert '<a rel="noopener noreferrer">bad</a>' in out
    assert not re.search(r"<[^>]*(onerror|javascript)", out)  # raw HTML is cleaned (or escaped as text)


def test_the_filters_clean_what_is_stored_and_mark_it_safe():
    template = Template(
        "{% load argora_html %}<div>{{ raw|clean_html }}</div><div>{{ md|markdown_html }}</div><div>{{ raw }}</div>"
    )
    html = template.render(Context({"raw": f"<b>b</b><img src=x onerror={RUN}>", "md": f"*e* <script>{RUN}</script>"}))
    assert html == (
        '<div><b>b</b><img src="x"></div><div><p><em>e</em> </p></div>'
        f"<div>&lt;b&gt;b&lt;/b&gt;&lt;img src=x onerror={RUN}&gt;</div>"
    )  # plain text: escaped
