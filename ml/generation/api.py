"""JSON API of generation under ``/api/generate/`` (staff only; session with CSRF or token auth).

- ``POST /api/generate/`` ``{"mode", "inputs": [objects] | "lines": "one input a line", "model_version"?: id,
  "kind"?: "generator"|"seq2seq", "decoding"?: {...}, "options"?: {...}, "references"?: [rows], "name"?,
  "store"?: true}`` -> 200 ``{"run": id | null, "mode", "model_version", "outputs": [...]}``;
  400 ``{"errors": {field: reason}}``. Modes and inputs: :mod:`ml.generation.generate`.
- ``GET /api/generate/runs/`` -> the latest runs; ``GET /api/generate/runs/<id>/`` -> one run with outputs and metrics.
- ``POST /api/generate/runs/<id>/evaluate/`` -> the stored metrics (:func:`ml.generation.evaluate.evaluate_run`).
- ``POST /api/generate/runs/<id>/ratings/`` ``{"project"?: slug}`` -> ``{"project", "task_type", "created",
  "skipped", "hits"}`` (:func:`ml.generation.evaluate.send_to_ratings`).
"""
from __future__ import annotations

import re

from django.urls import path
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import permissions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access
from annotation.task_types.ratings import RatingsError
from corpus.importers.base import ImportFailed

from . import evaluate as ev
from . import generate as gen


class IsResearcher(permissions.BasePermission):
    """Generation runs belong to no project: users who may make projects (the Researcher role) and superusers."""

    message = "generation is for researchers (the Researcher role)"

    def has_permission(self, request, view):
        return access.may_create_projects(request.user)

MAX_INPUTS = 200


def _bad(field: str, reason: str) -> Response:
    return Response({"errors": {field: reason}}, status=status.HTTP_400_BAD_REQUEST)


REQUEST_FIELDS = ("mode", "inputs", "lines", "model_version", "kind", "decoding", "options", "references", "name",
                  "store", "project", "run")


def _error(exc: Exception, default_field: str = "inputs") -> Response:
    """400 with the request field named at the start of the message (``"model_version: ..."``,
    ``"inputs[2].stance: ..."``); a message naming something inside an input goes under ``default_field``."""
    text = str(exc)
    match = re.match(r"^([a-z_]+)(?:[.\[][^:]*)?:", text)
    field = match.group(1) if match else default_field
    if field not in REQUEST_FIELDS or (field == "inputs" and default_field == "lines"):
        field = default_field
    return _bad(field, text)


GenerateRequest = inline_serializer("GenerateRequest", {
    "mode": serializers.ChoiceField(choices=gen.MODES),
    "inputs": serializers.ListField(child=serializers.JSONField(), required=False),
    "lines": serializers.CharField(required=False),
    "model_version": serializers.IntegerField(required=False),
    "kind": serializers.ChoiceField(choices=("generator", "seq2seq"), required=False),
    "decoding": serializers.DictField(required=False),
    "options": serializers.DictField(required=False),
    "references": serializers.ListField(child=serializers.DictField(), required=False),
    "name": serializers.CharField(required=False),
    "store": serializers.BooleanField(required=False, default=True),
})


class Generate(APIView):
    """Generate arguments, counter-arguments, ArgU arguments, debate responses or debates."""

    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    @extend_schema(operation_id="generate_create", request=GenerateRequest, responses={200: dict, 400: dict})
    def post(self, request):
        data = request.data if isinstance(request.data, dict) else {}
        mode = data.get("mode")
        if mode not in gen.MODES:
            return _bad("mode", f"mode: {mode!r} is not one of {', '.join(gen.MODES)}")
        for name in ("decoding", "options"):
            if data.get(name) is not None and not isinstance(data[name], dict):
                return _bad(name, f"{name}: an object is required")
        references = data.get("references")
        if references is not None and (not isinstance(references, list)
                                       or not all(isinstance(r, dict) for r in references)):
            return _bad("references", "references: a list of objects {topic, stance, aspect(s), text} is required")
        if data.get("kind") is not None and data["kind"] not in ("generator", "seq2seq"):
            return _bad("kind", "kind: generator or seq2seq")
        if data.get("store") is not None and not isinstance(data["store"], bool):
            return _bad("store", "store: true or false")
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
            run = gen.run_generation(mode, inputs, version=data.get("model_version"), kind=data.get("kind"),
                                     decoding=data.get("decoding"), options=data.get("options"),
                                     references=references, name=str(data.get("name") or ""),
                                     store=data.get("store", True) is not False)
        except gen.GenerationError as exc:
            return _error(exc, source)
        return Response({"run": run["id"], "mode": mode, "model_version": run["model_version"],
                         "outputs": run["outputs"]})


class RunList(APIView):
    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    @extend_schema(operation_id="generate_runs_list", responses=dict)
    def get(self, request):
        return Response({"runs": gen.list_runs(100)})


class RunDetail(APIView):
    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    @extend_schema(operation_id="generate_runs_retrieve", responses=dict)
    def get(self, request, run_id: str):
        try:
            run = gen.get_run(run_id)
        except gen.GenerationError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_404_NOT_FOUND)
        run.pop("references_rows", None)
        return Response(run)


class RunEvaluate(APIView):
    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    @extend_schema(operation_id="generate_runs_evaluate", request=None, responses=dict)
    def post(self, request, run_id: str):
        try:
            gen.get_run(run_id)
        except gen.GenerationError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_404_NOT_FOUND)
        try:
            return Response(ev.evaluate_run(run_id))
        except (gen.GenerationError, ValueError) as exc:
            return _error(exc, "run")


class RunRatings(APIView):
    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    @extend_schema(operation_id="generate_runs_ratings", request=inline_serializer("RunRatingsRequest", {"project": serializers.CharField(required=False)}),
                   responses=dict)
    def post(self, request, run_id: str):
        try:
            gen.get_run(run_id)
        except gen.GenerationError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_404_NOT_FOUND)
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
