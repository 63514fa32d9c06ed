"""Researcher-set HTML made safe to show: the one sanitiser of Argora (SECURITY.md, "Inputs").

Text a Researcher writes that a page shows as HTML (a project's guidelines; the Markdown of the study phases' consent
and screened-out texts) goes through :func:`clean_html`: nh3's allow-list (ammonia's defaults: formatting, lists,
tables, links and images; no ``<script>``, ``<style>``, ``<iframe>``, ``<form>``, no event-handler, ``style``, ``id``
or ``class`` attribute, no ``javascript:`` or ``data:`` URL), links get ``rel="noopener noreferrer"``. It runs where
such text is written (``annotation.models.Project.save``, the studio) and again where it is shown (the template
filters of ``argora_html``), so a row stored before the sanitiser existed is safe too. Plain text (names, labels,
survey questions, explanations, anything a worker wrote) is never HTML: Django's templates escape it.
"""

from __future__ import annotations

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe

LINK_REL = "noopener noreferrer"
MARKDOWN_EXTENSIONS = ("extra", "sane_lists")


def clean_html(html: str | None) -> SafeString:
    """``html`` with everything outside the allow-list removed (text is kept, escaped); safe to show unescaped."""
    return mark_safe(nh3.clean(str(html or ""), link_rel=LINK_REL))


def markdown_html(text: str | None) -> SafeString:
    """Markdown -> HTML (``extra``: tables, footnotes...), then :func:`clean_html` (raw HTML in the Markdown too)."""
    return clean_html(markdown.markdown(str(text or ""), extensions=list(MARKDOWN_EXTENSIONS), output_format="html"))
