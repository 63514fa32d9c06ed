"""Keyset (cursor) pagination for the REST API's large lists (``/api/sentences/``): a page is ``WHERE id > last
ORDER BY id LIMIT n``, on the primary key's index, so page 20,000 of a million rows costs what page 1 costs -- no
``OFFSET`` and no ``COUNT(*)``.

The page links keep the body of DRF's page-number pagination (``count``, ``next``, ``previous``, ``results``), so
a client that follows ``next`` keeps working:

- no parameter (or ``?page=1``): the first page, with ``count`` (one ``COUNT(*)``, as before);
- ``next`` / ``previous``: ``?cursor=<opaque>`` links, the keyset pages; their ``count`` is ``null``;
- ``?page=last``: the last ``page_size`` rows, read backwards on the index (``previous`` leads on), ``count``
  ``null`` (without a count the page is not aligned to the numbered pages: with 130 rows it holds rows 81-130);
- ``?page=<n>`` for n > 1 still answers the n-th page with its ``count`` (an ``OFFSET`` query; a client walking a
  large list should follow the links instead).

A cursor that is not one of this list's is HTTP 400 naming ``cursor``; a page number past the end 404, as before.
"""

from __future__ import annotations

import base64
import binascii

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.paginator import InvalidPage, Paginator
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import BasePagination
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.utils.urls import remove_query_param, replace_query_param

AFTER, BEFORE = "a", "b"


class KeysetPagination(BasePagination):
    """Pages of ``page_size`` rows in ascending ``key`` order (a unique, indexed field: the primary key)."""

    # argora.settings always sets PAGE_SIZE (ARGORA_API_PAGE_SIZE, 50 unless told); DRF types it as optional
    page_size: int = api_settings.PAGE_SIZE or 50
    key = "id"
    cursor_query_param = "cursor"
    page_query_param = "page"

    def paginate_queryset(self, queryset, request, view=None):
        self.request = request
        self.count = None
        self.has_next = self.has_previous = False
        size = self.page_size
        key = self.key
        ordered = queryset.order_by(key)
        raw = request.query_params.get(self.cursor_query_param)
        page = request.query_params.get(self.page_query_param)
        if raw is not None:
            direction, value = self._decode(raw, queryset.model)
            if direction == AFTER:
                rows = list(ordered.filter(**{f"{key}__gt": value})[: size + 1])
                self.has_next, self.has_previous = len(rows) > size, True
                rows = rows[:size]
            else:
                rows = list(ordered.filter(**{f"{key}__lt": value}).order_by(f"-{key}")[: size + 1])
                self.has_next, self.has_previous = True, len(rows) > size
                rows = rows[:size][::-1]
        elif page == "last":
            rows = list(ordered.order_by(f"-{key}")[: size + 1])
            self.has_previous = len(rows) > size
            rows = rows[:size][::-1]
        elif page in (None, "", "1"):
            rows = list(ordered[: size + 1])
            self.has_next = len(rows) > size
            rows = rows[:size]
            self.count = len(rows) if not self.has_next else queryset.count()
        else:
            paginator = Paginator(ordered, size)
            try:
                numbered = paginator.page(page)
            except InvalidPage as exc:
                raise NotFound(f"Invalid page: {exc}") from None
            rows = list(numbered)
            self.count, self.has_next, self.has_previous = paginator.count, numbered.has_next(), numbered.has_previous()
        self.rows = rows
        return rows

    # --- cursors --------------------------------------------------------------------------------
    def _encode(self, direction: str, value) -> str:
        return base64.urlsafe_b64encode(f"{direction}:{value}".encode()).decode().rstrip("=")

    def _decode(self, raw: str, model) -> tuple[str, object]:
        try:
            text = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode()
            direction, _, value = text.partition(":")
            if direction not in (AFTER, BEFORE) or not value:
                raise ValueError(text)
            return direction, model._meta.get_field(self.key).to_python(value)
        except (ValueError, binascii.Error, UnicodeDecodeError, DjangoValidationError):
            raise ValidationError(
                {self.cursor_query_param: "not a cursor of this list (follow the next / previous links)"}
            ) from None

    def _link(self, direction: str, row) -> str:
        url = remove_query_param(self.request.build_absolute_uri(), self.page_query_param)
        return replace_query_param(url, self.cursor_query_param, self._encode(direction, getattr(row, self.key)))

    def get_next_link(self):
        if not self.has_next or not self.rows:
            return None
        return self._link(AFTER, self.rows[-1])

    def get_previous_link(self):
        if not self.has_previous:
            return None
        if not self.rows:  # past the end: the last page leads back
            url = remove_query_param(self.request.build_absolute_uri(), self.cursor_query_param)
            return replace_query_param(url, self.page_query_param, "last")
        return self._link(BEFORE, self.rows[0])

    def get_paginated_response(self, data):
        return Response(
            {"count": self.count, "next": self.get_next_link(), "previous": self.get_previous_link(), "results": data}
        )

    def get_paginated_response_schema(self, schema):
        return {
            "type": "object",
            "required": ["count", "results"],
            "properties": {
                "count": {
                    "type": "integer",
                    "nullable": True,
                    "example": 123,
                    "description": "rows in the list: on the first page and numbered pages only (null on "
                    "cursor pages and the last page)",
                },
                "next": {
                    "type": "string",
                    "nullable": True,
                    "format": "uri",
                    "example": "http://api.example.org/accounts/?cursor=YTo1MA",
                },
                "previous": {
                    "type": "string",
                    "nullable": True,
                    "format": "uri",
                    "example": "http://api.example.org/accounts/?cursor=Yjo1MQ",
                },
                "results": schema,
            },
        }

    def get_schema_operation_parameters(self, view):
        return [
            {
                "name": self.cursor_query_param,
                "required": False,
                "in": "query",
                "description": "A page of the list after / before a row (the value of the next / previous links).",
                "schema": {"type": "string"},
            },
            {
                "name": self.page_query_param,
                "required": False,
                "in": "query",
                "description": 'A page number (1 = the first page, with the count) or "last".',
                "schema": {"type": "string"},
            },
        ]
