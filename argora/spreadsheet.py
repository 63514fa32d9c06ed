"""CSV for people who open it in a spreadsheet: the one writer the staff pages' CSV downloads use.

A cell a spreadsheet would run as a formula (text starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return, e.g. an annotator's ``=HYPERLINK(...)`` in a feedback box or a sentence) is written with a leading ``'``
(OWASP's "CSV injection" advice), so it shows as the text it is. Numbers, also negative ones, are written as
they are. Every CSV download of the site goes through here, the ValNov shared-task download and the model list
included; data files written for programs (``manage.py valnov export``, the KB export, release files) keep their
exact contents and do not.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any

from django.http import HttpResponse

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def safe_cell(value: Any) -> Any:
    """``value`` as a spreadsheet shows it without running it (see the module doc)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


def write_rows(fh, rows: Iterable[Iterable[Any]], **csv_options) -> int:
    """Write ``rows`` (the header included) to ``fh`` with every cell made safe; returns the number of rows."""
    writer = csv.writer(fh, **csv_options)
    n = 0
    for row in rows:
        writer.writerow([safe_cell(value) for value in row])
        n += 1
    return n


def csv_response(filename: str, rows: Iterable[Iterable[Any]]) -> HttpResponse:
    """A CSV download named ``filename`` holding ``rows`` (the header first), every cell made safe."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    write_rows(response, rows)
    return response
