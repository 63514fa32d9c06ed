"""What a request may carry, checked before anything reaches a view or the database.

- No NUL character anywhere in the query string or a form body (PostgreSQL refuses NUL in text: it would be a 500):
  :class:`InputGuardMiddleware` answers HTTP 400 naming the parameter.
- JSON, from a request body or a line of an imported file (:func:`loads`): at most :data:`MAX_JSON_DEPTH` levels
  of nesting, no NUL character and no lone surrogate in any string or key (neither can be stored), no NaN or
  Infinity (not JSON), no key twice in one object (which one would win?). :func:`parse_json` is how the API
  (:class:`argora.parsers.JSONParser`) and the pages read a body, :func:`argora.jsonl.read_jsonl` how importers read a
  line; so a 10,000-deep body is a 400 and such a line a ``file:line`` error, never a RecursionError or a database
  error.

The request size itself is Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (2.5 MB by default).
"""

from __future__ import annotations

import json

from django.http import HttpResponseBadRequest, JsonResponse

from .errors import FieldError, is_api

MAX_JSON_DEPTH = 64
NUL = "\x00"


class InvalidJSON(ValueError):
    """JSON that Argora does not take; ``str()`` is the reason."""


def _strict_object(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise InvalidJSON(f"the key {key!r} appears twice in one object")
        obj[key] = value
    return obj


def _no_constant(name):
    raise InvalidJSON(f"{name} is not a JSON number")


def _check_text(text: str) -> None:
    if NUL in text:
        raise InvalidJSON("contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidJSON("contains a lone surrogate (\\ud800-\\udfff), which is not text") from None


def check_json(data) -> None:
    """InvalidJSON when ``data`` nests deeper than :data:`MAX_JSON_DEPTH` or holds a string (or key) that cannot be
    stored (NUL, lone surrogate). Iterative: no recursion however deep the data."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise InvalidJSON(f"nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(value, str):
            _check_text(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                _check_text(key)
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)


def loads(raw: bytes | str):
    """The JSON value of ``raw`` under the rules of the module doc; :class:`InvalidJSON` (or ``ValueError`` from the
    decoder, with its position) otherwise."""
    try:
        data = json.loads(raw, object_pairs_hook=_strict_object, parse_constant=_no_constant)
    except RecursionError:
        raise InvalidJSON(f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    check_json(data)
    return data


def parse_json(raw: bytes | str, *, where: str = "body"):
    """The JSON value of a request body; a FieldError naming ``where`` otherwise."""
    try:
        return loads(raw)
    except InvalidJSON as exc:
        raise FieldError(where, str(exc)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise FieldError(where, f"not valid JSON ({exc})") from None


class InputGuardMiddleware:
    """HTTP 400 for a NUL character in the query string or a form body (see the module doc)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        bad = self._nul_in(request.GET)
        if (
            bad is None
            and request.method == "POST"
            and request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data")
        ):
            bad = self._nul_in(request.POST)
        if bad is not None:
            reason = "contains a NUL character"
            if is_api(request):
                return JsonResponse({"errors": {bad: reason}}, status=400)
            return HttpResponseBadRequest(f"{bad}: {reason}", content_type="text/plain; charset=utf-8")
        return self.get_response(request)

    @staticmethod
    def _nul_in(query) -> str | None:
        for key, values in query.lists():
            if NUL in key or any(NUL in value for value in values):
                return key.replace(NUL, "\\x00")
        return None
