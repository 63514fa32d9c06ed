"""What a request may carry, checked before anything reaches a view or the database.

- No NUL character anywhere in the query string or a form body (PostgreSQL refuses NUL in text: it would be a 500):
  :class:`InputGuardMiddleware` answers HTTP 400 naming the parameter.
- JSON bodies: at most :data:`MAX_JSON_DEPTH` levels of nesting and no NUL character in any string or key
  (:func:`parse_json`; the API's parser :class:`JSONParser` and the pages that read JSON themselves use it), so that
  a 10,000-deep body is a 400, not a RecursionError.

The request size itself is Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (2.5 MB by default).
"""
from __future__ import annotations

import json

from django.http import HttpResponseBadRequest, JsonResponse
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser as DRFJSONParser

from .errors import FieldError

MAX_JSON_DEPTH = 64
NUL = "\x00"


def check_json(data, *, where: str = "body") -> None:
    """FieldError when ``data`` nests deeper than :data:`MAX_JSON_DEPTH` or holds a NUL character (no recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise FieldError(where, f"nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(value, str):
            if NUL in value:
                raise FieldError(where, "contains a NUL character")
        elif isinstance(value, dict):
            for key, item in value.items():
                if NUL in key:
                    raise FieldError(where, "contains a NUL character")
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)


def parse_json(raw: bytes | str, *, where: str = "body"):
    """The JSON value of ``raw``, checked (:func:`check_json`); FieldError naming ``where`` otherwise."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FieldError(where, f"not valid JSON ({exc})") from None
    except RecursionError:
        raise FieldError(where, f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    check_json(data, where=where)
    return data


class JSONParser(DRFJSONParser):
    """DRF's JSON parser with :func:`parse_json`'s checks (``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return parse_json(stream.read())
        except FieldError as exc:
            raise ParseError(exc.reason) from None


class InputGuardMiddleware:
    """HTTP 400 for a NUL character in the query string or a form body (see the module doc)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        bad = self._nul_in(request.GET)
        if bad is None and request.method == "POST" and request.content_type in (
                "application/x-www-form-urlencoded", "multipart/form-data"):
            bad = self._nul_in(request.POST)
        if bad is not None:
            reason = "contains a NUL character"
            if request.path.startswith("/api/"):
                return JsonResponse({"errors": {bad: reason}}, status=400)
            return HttpResponseBadRequest(f"{bad}: {reason}", content_type="text/plain; charset=utf-8")
        return self.get_response(request)

    @staticmethod
    def _nul_in(query) -> str | None:
        for key, values in query.lists():
            if NUL in key or any(NUL in value for value in values):
                return key.replace(NUL, "\\x00")
        return None
