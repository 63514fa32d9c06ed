"""The OpenAPI schema (drf-spectacular, ``/api/schema/``): the error answers of every operation, in one place.

:class:`AutoSchema` (``REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]``) adds to each operation the statuses that the API's
shared layers can give it, so that a view documents only its own (a 409, a 204, a body of its own for a 400 or 403):

- 400, every operation: a NUL character in the query string or a form (:mod:`argora.inputs`), a body that is not
  JSON (:func:`argora.errors.api_exception_handler`), bad input naming the field. ``{"errors": {field: reason}}``;
  views that validate with DRF's serializers (the corpus viewsets, ``auth/token/``) answer DRF's
  ``{field: reason or [reason, ...]}`` for a field they check (:data:`VALIDATION_ERRORS`).
- 401, an operation whose first authenticator asks for credentials (``WWW-Authenticate``); with session
  authentication first (the settings) DRF answers 403 instead, and no 401 is documented.
- 403, an operation with an authenticator or a permission: not signed in, not allowed (a role, a project's team),
  a CSRF failure under session authentication. ``{"detail": reason}``.
- 404, an operation with a path parameter (no such object, or one the user may not see, such as a project outside
  their team) or a paged list (a page or cursor that does not exist). ``{"detail": reason}``.
"""

from __future__ import annotations

from drf_spectacular import openapi
from drf_spectacular.utils import inline_serializer
from rest_framework import permissions, serializers

ErrorsSerializer = inline_serializer(
    "Errors", {"errors": serializers.DictField(child=serializers.CharField(), help_text="field -> why it is refused")}
)
DetailSerializer = inline_serializer("Detail", {"detail": serializers.CharField()})

# DRF's own 400 body: {field: reason}, {field: [reason, ...]}, nested for nested serializers
VALIDATION_ERRORS = {
    "type": "object",
    "description": "DRF's validation errors: field -> reason, a list of reasons, or the errors of a nested object",
    "additionalProperties": {"anyOf": [{"type": "string"}, {"type": "array", "items": {}}, {"type": "object"}]},
}


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's AutoSchema, plus the error statuses every operation can answer (see the module doc)."""

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation:
            responses = operation.setdefault("responses", {})
            for code, schema in self._error_schemas(operation).items():
                if code not in responses:
                    responses[code] = {
                        "content": {"application/json": {"schema": schema}},
                        "description": ERROR_DESCRIPTIONS[code],
                    }
        return operation

    def _error_schemas(self, operation: dict) -> dict[str, dict]:
        view = self.view
        detail = self.resolve_serializer(DetailSerializer, "response").ref
        errors = self.resolve_serializer(ErrorsSerializer, "response").ref
        out = {"400": {"anyOf": [errors, VALIDATION_ERRORS]} if hasattr(view, "get_serializer") else errors}
        authenticators = [auth() for auth in getattr(view, "authentication_classes", ())]
        checks = [p for p in getattr(view, "permission_classes", ()) if p is not permissions.AllowAny]
        if authenticators and authenticators[0].authenticate_header(view.request):
            out["401"] = detail
        if authenticators or checks:
            out["403"] = detail
        parameters = operation.get("parameters") or []
        in_path = any(p.get("in") == "path" for p in parameters)
        paged = getattr(view, "action", None) == "list" and getattr(view, "pagination_class", None) is not None
        if in_path or paged:
            out["404"] = detail
        return out


ERROR_DESCRIPTIONS = {
    "400": "bad input, naming the field",
    "401": "no valid credentials",
    "403": "not signed in, not allowed, or a CSRF failure under session authentication",
    "404": "no such object (or one you may not see), page or cursor",
}
