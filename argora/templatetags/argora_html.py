"""``{% load argora_html %}``: ``{{ value|clean_html }}`` and ``{{ value|markdown_html }}`` show Researcher-set HTML
or Markdown through the one sanitiser (:mod:`argora.html`) at display, whatever is stored (rows from before the
sanitiser too). Plain text needs neither: Django escapes it."""

from __future__ import annotations

from django import template

from argora import html

register = template.Library()

register.filter("clean_html", html.clean_html)
register.filter("markdown_html", html.markdown_html)
