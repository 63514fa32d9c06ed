"""The REST API's JSON parser (``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``): DRF's, reading the body with
:func:`argora.inputs.parse_json` (bounded nesting, no NUL, no NaN, no duplicate keys). A module of its own: DRF
imports it while its views module is being defined."""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser as DRFJSONParser

from .errors import FieldError
from .inputs import parse_json


class JSONParser(DRFJSONParser):
    """DRF's JSON parser with :func:`argora.inputs.parse_json`'s checks (``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return parse_json(stream.read())
        except FieldError as exc:
            raise ParseError(exc.reason) from None
