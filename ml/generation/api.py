"""JSON API of generation under ``/api/generate/`` (the Researcher role; session with CSRF or token auth).

- ``POST /api/generate/`` ``{"mode", "inputs": [objects] | "lines": "one input a line", "model_version"?: id,
  "kind"?: "generator"|"seq2seq", "decoding"?: {...}, "options"?: {...}, "references"?: [rows], "name"?}``
  -> 202 ``{"run": id, "status": "queued", "url": run page, "job": job page, "state": run JSON, "mode",
  "model_version"}`` at once: the request is checked here (400 ``{"errors": {field: reason}}``, nothing stored or
  queued), the decoding runs on a worker (:mod:`ml.generation.runs`); 503 ``{"errors": {"queue": ...}}`` when the
  task queue does not answer. Modes and inputs: :mod:`ml.generation.generate`.
- ``GET /api/generate/runs/`` -> the caller's latest runs; ``GET /api/generate/runs/<id>/`` -> one run:
  ``status`` (queued / running / done / failed), ``error``, ``progress`` {done, total, percent}, the ``outputs``
  stored so far, metrics once evaluated. A run is readable by its creator and superusers only (404 otherwise).
- ``POST /api/generate/runs/<id>/evaluate/`` -> the stored metrics (:func:`ml.generation.evaluate.evaluate_run`;
  400 ``run`` while the run is not done).
- ``POST /api/generate/runs/<id>/ratings/`` ``{"project"?: slug}`` -> ``{"project", "task_type", "created",
  "skipped", "hits"}`` (:func:`ml.generation.evaluate.send_to_ratings`).
"""

from __future__ import annotations

import re

from django.urls import path, reverse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import permissions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access
from annotation.task_types.ratings import RatingsError
from corpus.importers.base import ImportFailed

from . import evaluate as ev
from . import generate as gen
from . import runs


class IsResearcher(permissions.BasePermission):
    """Generation runs belong to no project: users who may make projects (the Researcher role) and superusers."""

    message = "generation is for researchers (the Researcher role)"

    def has_permission(self, request, view):
        return access.may_create_projects(request.user)


MAX_INPUTS = 200


def _bad(field: str, reason: str) -> Response:
    return Response({"errors": {field: reason}}, status=status.HTTP_400_BAD_REQUEST)


REQUEST_FIELDS = (
    "mode",
    "inputs",
    "lines",
    "model_version",
    "kind",
    "decoding",
    "options",
    "references",
    "name",
    "store",
    "project",
    "run",
)


def _error(exc: Exception, default_field: str = "inputs") -> Response:
    """400 with the request field named at the start of the message (``"model_version: ..."``,
    ``"inputs[2].stance: ..."``); a message naming something inside an input goes under ``default_field``."""
    text = str(exc)
    match = re.match(r"^([a-z_]+)(?:[.\[][^:]*)?:", text)
    field = match.group(1) if match else default_field
    if field not in REQUEST_FIELDS or (field == "inputs" and default_field == "lines"):
        field = default_field
    return _bad(field, text)


GenerateRequest = inline_serializer(
    "GenerateRequest",
    {
        "mode": serializers.ChoiceField(choices=gen.MODES),
        "inputs": serializers.ListField(child=serializers.JSONField(), required=False),
        "lines": serializers.CharField(required=False),
        "model_version": serializers.IntegerField(required=False),
        "kind": serializers.ChoiceField(choices=("generator", "seq2seq"), required=False),
        "decoding": serializers.DictField(required=False),
        "options": serializers.DictField(required=False),
        "references": serializers.ListField(child=serializers.DictField(), required=False),
        "name": serializers.CharField(required=False),
    },
)


class Generate(APIView):
    """Queue a run: arguments, counter-arguments, ArgU arguments, debate responses or debates."""

    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    @extend_schema(operation_id="generate_create", request=GenerateRequest, responses={202: dict, 400: dict})
    def post(self, request):
        data = request.data if isinstance(request.data, dict) else {}
        mode = data.get("mode")
        if mode not in gen.MODES:
            return _bad("mode", f"mode: {mode!r} is not one of {', '.join(gen.MODES)}")
        for name in ("decoding", "options"):
            if data.get(name) is not None and not isinstance(data[name], dict):
                return _bad(name, f"{name}: an object is required")
        references = data.get("references")
        if references is not None and (
            not isinstance(references, list) or not all(isinstance(r, dict) for r in references)
        ):
            return _bad("references", "references: a list of objects {topic, stance, aspect(s), text} is required")
        if data.get("kind") is not None and data["kind"] not in ("generator", "seq2seq"):
            return _bad("kind", "kind: generator or seq2seq")
        if data.get("store") is False:
            return _bad("store", "store: every request is a stored run on a worker (leave store out)")
        if data.get("name") is not None and not isinstance(data["name"], str):
            return _bad("name", "name: a string is required")
        source = "inputs" if data.get("inputs") is not None else "lines"
        try:
            if source == "inputs":
                inputs = data["inputs"]
                if not isinstance(inputs, list) or not inputs:
                    return _bad("inputs", "inputs: a non-empty list is required")
                if len(inputs) > MAX_INPUTS:
                    return _bad("inputs", f"inputs: at most {MAX_INPUTS} per request")
                gen.check_inputs(mode, inputs)
                if mode == "arguments":
                    inputs = [dict(zip(("topic", "stance", "aspect"), gen.parse_code(c))) for c in inputs]
            else:
                if not isinstance(data.get("lines"), str):
                    return _bad("inputs", "inputs: give inputs (a list of objects) or lines (text, one input a line)")
                inputs = gen.parse_lines(mode, data["lines"])
                if len(inputs) > MAX_INPUTS:
                    return _bad("lines", f"lines: at most {MAX_INPUTS} per request")
            run = runs.start_run(
                mode,
                inputs,
                user=request.user,
                version=data.get("model_version"),
                kind=data.get("kind"),
                decoding=data.get("decoding"),
                options=data.get("options"),
                references=references,
                name=str(data.get("name") or ""),
            )
        except gen.GenerationError as exc:
            return _error(exc, source)
        except runs.QueueUnavailable as exc:
            return Response({"errors": {"queue": str(exc)}}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        state = runs.public({**run, "outputs": []})
        return Response(
            {
                "run": run["id"],
                "status": run["status"],
                "url": state["url"],
                "job": state["job"],
                "state": reverse("api-generate-run", args=[run["id"]]),
                "mode": mode,
                "model_version": run["model_version"],
            },
            status=status.HTTP_202_ACCEPTED,
        )


def _visible_run(request, run_id: str) -> dict:
    """The run if the caller may read it; :class:`~ml.generation.generate.GenerationError` (a 404) otherwise."""
    run = gen.get_run(run_id)
    if not runs.visible(request.user, run):
        raise gen.GenerationError(f"run: no run {run_id!r}")
    return run


def _not_found(exc) -> Response:
    return Response({"detail": str(exc)}, status=status.HTTP_404_NOT_FOUND)


class RunList(APIView):
    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    @extend_schema(operation_id="generate_runs_list", responses=dict)
    def get(self, request):
        return Response({"runs": runs.runs_for(request.user, 100)})


class RunDetail(APIView):
    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    @extend_schema(operation_id="generate_runs_retrieve", responses=dict)
    def get(self, request, run_id: str):
        try:
            run = _visible_run(request, run_id)
        except gen.GenerationError as exc:
            return _not_found(exc)
        return Response(runs.public(run))


class RunEvaluate(APIView):
    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    @extend_schema(operation_id="generate_runs_evaluate", request=None, responses=dict)
    def post(self, request, run_id: str):
        try:
            run = _visible_run(request, run_id)
        except gen.GenerationError as exc:
            return _not_found(exc)
        if run["status"] != runs.DONE:
            return _bad("run", f"run: run {run_id} is {run['status']}; evaluate it once it is done")
        try:
            return Response(ev.evaluate_run(run_id))
        except (gen.GenerationError, ValueError) as exc:
            return _error(exc, "run")


class RunRatings(APIView):
    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    @extend_schema(
        operation_id="generate_runs_ratings",
        request=inline_serializer("RunRatingsRequest", {"project": serializers.CharField(required=False)}),
        responses=dict,
    )
    def post(self, request, run_id: str):
        try:
            run = _visible_run(request, run_id)
        except gen.GenerationError as exc:
            return _not_found(exc)
        if run["status"] != runs.DONE:
            return _bad("run", f"run: run {run_id} is {run['status']}; rate it once it is done")
        data = request.data if isinstance(request.data, dict) else {}
        try:
            outcome = ev.send_to_ratings(run_id, project_slug=(data.get("project") or None))
        except RatingsError as exc:
            return _bad("project", str(exc))
        except (gen.GenerationError, ImportFailed) as exc:
            return _error(exc, "run")
        outcome.pop("file", None)
        return Response(outcome)


urlpatterns = [
    path("", Generate.as_view(), name="api-generate"),
    path("runs/", RunList.as_view(), name="api-generate-runs"),
    path("runs/<str:run_id>/", RunDetail.as_view(), name="api-generate-run"),
    path("runs/<str:run_id>/evaluate/", RunEvaluate.as_view(), name="api-generate-run-evaluate"),
    path("runs/<str:run_id>/ratings/", RunRatings.as_view(), name="api-generate-run-ratings"),
]
