"""The one error type for input a person can fix, and how each surface shows it.

:class:`FieldError` names the field that is wrong and says why. Services raise it (or a subclass that only names the
situation, e.g. ``annotation.task_types.ResponseInvalid``); the surfaces turn it into their answer:

- the API: :func:`api_exception_handler` (``REST_FRAMEWORK["EXCEPTION_HANDLER"]``) answers HTTP 400
  ``{"errors": {field: reason}}``;
- the CLI: :func:`command_error` gives the ``CommandError`` that exits with status 2 and ``field: reason`` (or
  ``file:line: reason`` for a :class:`FileLineError`, an error in a file);
- pages render ``str(exc)`` (``field: reason``).

Every answer under ``/api/`` is JSON, also those Django gives before or after a view (:func:`is_api`): a CSRF failure
(``CSRF_FAILURE_VIEW``: 403 ``{"detail"}``), and the 400, 403, 404 and 500 of the URLconf's handlers
(:func:`bad_request`, :func:`permission_denied`, :func:`page_not_found`, :func:`server_error`); elsewhere they are
Django's usual pages.
"""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.management.base import CommandError
from django.http import JsonResponse
from django.views import csrf, defaults

API_PREFIX = "/api/"


class FieldError(ValueError):
    """Bad input: ``field`` names what is wrong (``"label"``, ``"config.top_k"``, ``"responses.12.aspects"``),
    ``reason`` says why in words a person can act on."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason

    def as_dict(self) -> dict[str, str]:
        return {self.field: self.reason}

    def under(self, prefix: str) -> FieldError:
        """The same error of the same class, its field named inside ``prefix`` (``config`` -> ``config.labels``)."""
        return type(self)(f"{prefix}.{self.field}" if prefix else self.field, self.reason)


class FileLineError(ValueError):
    """Bad input in a file: ``str(e) == f"{file}:{line}: {reason}"`` (``line`` 1-based; 0 = not a particular line,
    e.g. a missing or empty file). Importers raise it (``corpus.importers.ImportFailed`` is one), so do the JSONL
    reader and the trainers' data readers; the CLI exits 2 with that text."""

    def __init__(self, file, line: int, reason: str):
        self.file = str(file)
        self.line = int(line)
        self.reason = reason
        super().__init__(f"{self.file}:{self.line}: {reason}")

    def __reduce__(self):  # picklable across Celery / multiprocessing boundaries
        return (type(self), (self.file, self.line, self.reason))


def command_error(exc: Exception) -> CommandError:
    """The ``CommandError`` a management command raises for ``exc``: exit status 2, ``field: reason``."""
    return CommandError(str(exc), returncode=2)


def api_exception_handler(exc, context):
    """DRF's handler, plus: a :class:`FieldError` is HTTP 400 ``{"errors": {field: reason}}``, and so is a body
    that cannot be parsed (``{"errors": {"body": reason}}``)."""
    # DRF's views module is imported here, not at the top: this module is imported while Django loads its apps
    from rest_framework import status
    from rest_framework.exceptions import ParseError
    from rest_framework.response import Response
    from rest_framework.views import exception_handler

    if isinstance(exc, FieldError):
        return Response({"errors": exc.as_dict()}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, ParseError):  # a body that is not JSON (or too deep, or with NUL): the same shape
        return Response({"errors": {"body": str(exc.detail)}}, status=status.HTTP_400_BAD_REQUEST)
    return exception_handler(exc, context)


# --- every answer under /api/ is JSON ------------------------------------------------------------------
def is_api(request) -> bool:
    """A request for the REST API (a path under ``/api/``): its every answer is JSON."""
    return request.path_info.startswith(API_PREFIX)


def csrf_failure(request, reason: str = ""):
    """``CSRF_FAILURE_VIEW``: under ``/api/`` a JSON 403 (as DRF words it), elsewhere Django's page."""
    if is_api(request):
        return JsonResponse({"detail": f"CSRF Failed: {reason}"}, status=403)
    return csrf.csrf_failure(request, reason)


def bad_request(request, exception):
    """``handler400`` (a suspicious or oversized request): under ``/api/`` ``{"errors": {field: reason}}``."""
    if not is_api(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, (RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent)):
        return JsonResponse({"errors": {"body": str(exception)}}, status=400)
    return JsonResponse({"errors": {"request": "bad request"}}, status=400)


def permission_denied(request, exception):
    """``handler403``: under ``/api/`` ``{"detail": reason}``."""
    if not is_api(request):
        return defaults.permission_denied(request, exception)
    return JsonResponse({"detail": str(exception) or "You do not have permission to perform this action."}, status=403)


def page_not_found(request, exception):
    """``handler404``: under ``/api/`` ``{"detail": "Not found."}``."""
    if not is_api(request):
        return defaults.page_not_found(request, exception)
    return JsonResponse({"detail": "Not found."}, status=404)


def server_error(request):
    """``handler500``: under ``/api/`` ``{"detail": "Server error."}`` (what failed is in the log, not the answer)."""
    if not is_api(request):
        return defaults.server_error(request)
    return JsonResponse({"detail": "Server error."}, status=500)
