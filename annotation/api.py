"""JSON API of the annotation engine (thin views: parse, call one service, render).

- ``POST /api/projects/<slug>/next/``: reserve (or resume) a HIT -> 200, 204 when none is left, 403 when blocked.
- ``POST /api/assignments/<id>/submit/``: submit all responses -> 200, 400 ``{"errors": {field: reason}}``, 403, 409.
  ``?next=1``: the same, and the next HIT is reserved in the same transaction and returned as ``"next"`` (the body
  ``POST .../next/`` returns; null with ``"next_detail"`` saying why when none is handed out).
  After the reservation's deadline the answers are kept as late answers: 200 with ``"status": "late"``.
- ``PUT /api/assignments/<id>/draft/`` (or POST, for ``fetch(..., {keepalive})`` on leaving the page): the answers
  given so far, as the HIT form's fields, restored when the page is opened again -> 204, 400, 403, 409.
- ``POST /api/assignments/<id>/extend/``: another reservation timeout -> 200 ``{"expires_at"}``, 403, 409.
- ``GET /api/projects/<slug>/progress/``: staff progress numbers.
- ``POST /api/projects/``: create a draft project (``annotation.add_project``) -> 201, 400 naming the field
  (``task_type`` for one that is not installed), 403.
Session (with CSRF) or token auth.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import permissions, serializers, status
from rest_framework.response import Response as HttpResponse
from rest_framework.views import APIView

from argora.schema import DetailSerializer, ErrorsSerializer

from . import access, selectors, services
from .models import Assignment, Project


class IsExpert(permissions.BasePermission):
    message = "staff (experts) only"

    def has_permission(self, request, view):
        return access.is_team_user(request.user)


class ItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    payload = serializers.JSONField()


class AssignmentSerializer(serializers.Serializer):
    assignment = serializers.IntegerField()
    project = serializers.CharField()
    hit = serializers.IntegerField()
    status = serializers.CharField()
    reserved_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    items = ItemSerializer(many=True)


class SubmitSerializer(serializers.Serializer):
    responses = serializers.DictField(
        child=serializers.JSONField(), help_text='{"<item_id>": {...response in the task type\'s format...}}'
    )
    feedback = serializers.CharField(required=False, allow_blank=True, default="", max_length=10000)
    client_seconds = serializers.FloatField(required=False, allow_null=True, default=None, min_value=0)


class SubmittedSerializer(serializers.Serializer):
    assignment = serializers.IntegerField()
    status = serializers.CharField(
        help_text='"submitted", or "late": the reservation had ended, the answers are kept '
        "but count only if staff accept them"
    )
    submitted_at = serializers.DateTimeField()
    work_seconds = serializers.FloatField(allow_null=True)
    blocked = serializers.BooleanField()


class DraftSerializer(serializers.Serializer):
    fields = serializers.DictField(
        child=serializers.DictField(),
        help_text=(
            '{"<item_id>": {"<field>": "text" or ["text", ...]}}: the HIT form\'s fields item-<id>-<field>, partial '
            "answers allowed"
        ),
    )
    feedback = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=10000, trim_whitespace=False
    )
    revision = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=services.DRAFT_REVISION_MAX,
        help_text=(
            "optional: a number that grows with each save (the HIT page sends its clock in ms); a save older than the "
            "stored draft's is dropped, so saves that cross on the way never bring back older answers"
        ),
    )


def _flatten(errors, prefix="") -> dict[str, str]:
    out: dict[str, str] = {}
    if isinstance(errors, dict):
        for key, value in errors.items():
            out.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(errors, list):
        if errors and all(not isinstance(e, (dict, list)) for e in errors):
            out[prefix or "non_field_errors"] = str(errors[0])
        else:
            for e in errors:
                out.update(_flatten(e, prefix))
    else:
        out[prefix or "non_field_errors"] = str(errors)
    return out


def assignment_data(assignment: Assignment) -> dict:
    task_type = assignment.project.get_task_type()
    return {
        "assignment": assignment.pk,
        "project": assignment.project.slug,
        "hit": assignment.hit_id,
        "status": assignment.status,
        "reserved_at": assignment.reserved_at,
        "expires_at": assignment.expires_at,
        "items": [
            {"id": item.pk, "payload": task_type.worker_payload(assignment.project, item, assignment=assignment)}
            for item in services.assignment_items(assignment)
        ],
    }


class NextAssignment(APIView):
    """Reserve the next HIT for the calling worker, or return the one they still hold."""

    @extend_schema(
        request=None,
        responses={
            200: AssignmentSerializer,
            204: OpenApiResponse(description="nothing left for this worker"),
            403: DetailSerializer,
            404: DetailSerializer,
        },
    )
    def post(self, request, slug: str):
        project = get_object_or_404(Project, slug=slug)
        worker = services.worker_for_user(request.user)
        if not access.worker_admitted(project, worker):  # another study's worker, by slug: not through its door
            return HttpResponse(
                {"detail": "this project takes workers through its own invite link only"},
                status=status.HTTP_403_FORBIDDEN,
            )
        try:
            assignment = services.reserve_next_assignment(project, worker, fresh=True)
        except services.QuotaReached:
            return HttpResponse(status=status.HTTP_204_NO_CONTENT)
        except services.AllocationError as exc:
            return HttpResponse({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
        if assignment is None:
            return HttpResponse(status=status.HTTP_204_NO_CONTENT)
        return HttpResponse(assignment_data(assignment))


class SubmittedNextSerializer(SubmittedSerializer):
    next = AssignmentSerializer(
        allow_null=True,
        help_text="the next HIT reserved for you (as POST .../next/ returns it), null when none is handed out",
    )
    next_detail = serializers.CharField(
        allow_null=True,
        help_text="why no next HIT: a rule (blocked, quota, phases, project not active); null otherwise",
    )


NEXT_PARAMETER = OpenApiParameter(
    "next",
    bool,
    description=(
        "1: also reserve the next HIT in the same project and return it as ``next`` (one request per HIT; the answers "
        "and the reservation are committed together, a retry gets the same next HIT)"
    ),
)


class SubmitAssignment(APIView):
    """Submit the responses of an assignment (idempotent: an identical retry changes nothing); with ``?next=1`` the
    response carries the next HIT reserved for the worker (``next``, or null and ``next_detail``)."""

    @extend_schema(
        request=SubmitSerializer,
        parameters=[NEXT_PARAMETER],
        responses={
            200: SubmittedNextSerializer,
            400: ErrorsSerializer,
            403: DetailSerializer,
            404: DetailSerializer,
            409: DetailSerializer,
        },
    )
    def post(self, request, pk: int):
        body = SubmitSerializer(data=request.data)
        if not body.is_valid():
            return HttpResponse({"errors": _flatten(body.errors)}, status=status.HTTP_400_BAD_REQUEST)
        want_next = request.query_params.get("next", "").lower() in ("1", "true", "yes")
        try:
            assignment = services.submittable_assignment(pk)
        except Assignment.DoesNotExist:
            raise Http404("No Assignment matches the given query.") from None
        worker = selectors.worker_of_user(request.user)
        if worker is None or worker.pk != assignment.worker_id:
            return HttpResponse({"detail": "this assignment is not held by you"}, status=status.HTTP_403_FORBIDDEN)
        answers = {
            "feedback": body.validated_data["feedback"],
            "client_seconds": body.validated_data["client_seconds"],
            "fresh": True,
        }
        try:
            if want_next:
                done, following, refusal = services.submit_and_reserve_next(
                    assignment, worker, body.validated_data["responses"], **answers
                )
            else:
                done = services.submit_assignment(assignment, worker, body.validated_data["responses"], **answers)
        except services.ValidationFailed as exc:
            return HttpResponse({"errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
        except services.SubmissionError as exc:
            return HttpResponse({"detail": str(exc)}, status=exc.status)
        if done.gold_scored is not False:  # only scoring gold answers can have blocked the worker
            worker.refresh_from_db(fields=["blocked"])
        data = {
            "assignment": done.pk,
            "status": done.status,
            "submitted_at": done.submitted_at,
            "work_seconds": done.work_seconds,
            "blocked": worker.blocked,
        }
        if want_next:
            data["next"] = None if following is None else assignment_data(following)
            data["next_detail"] = None if refusal is None else str(refusal)
        return HttpResponse(data)


def _own_assignment(request, pk: int):
    """``(assignment, worker, None)`` or ``(None, None, error response)``: only the worker holding it may touch it."""
    assignment = get_object_or_404(Assignment.objects.select_related("project"), pk=pk)
    worker = selectors.worker_of_user(request.user)
    if worker is None or worker.pk != assignment.worker_id:
        return (
            None,
            None,
            HttpResponse({"detail": "this assignment is not held by you"}, status=status.HTTP_403_FORBIDDEN),
        )
    return assignment, worker, None


class SaveDraft(APIView):
    """Save the answers given so far in a HIT (restored when the HIT page is opened again)."""

    @extend_schema(
        request=DraftSerializer,
        responses={
            204: OpenApiResponse(description="saved"),
            400: ErrorsSerializer,
            403: DetailSerializer,
            404: DetailSerializer,
            409: DetailSerializer,
        },
    )
    def put(self, request, pk: int):
        body = DraftSerializer(data=request.data)
        if not body.is_valid():
            return HttpResponse({"errors": _flatten(body.errors)}, status=status.HTTP_400_BAD_REQUEST)
        assignment, worker, refused = _own_assignment(request, pk)
        if refused is not None:
            return refused
        try:
            services.save_draft(
                assignment,
                worker,
                body.validated_data["fields"],
                feedback=body.validated_data["feedback"],
                revision=body.validated_data.get("revision"),
            )
        except services.ValidationFailed as exc:
            return HttpResponse({"errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
        except services.SubmissionError as exc:
            return HttpResponse({"detail": str(exc)}, status=exc.status)
        return HttpResponse(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        request=DraftSerializer,
        responses={
            204: OpenApiResponse(description="saved"),
            400: ErrorsSerializer,
            403: DetailSerializer,
            404: DetailSerializer,
            409: DetailSerializer,
        },
    )
    def post(self, request, pk: int):
        return self.put(request, pk)


class ExtendAssignment(APIView):
    """Hold the HIT for another reservation timeout (while its place is still free)."""

    @extend_schema(
        request=None,
        responses={
            200: inline_serializer(
                "Extended", {"assignment": serializers.IntegerField(), "expires_at": serializers.DateTimeField()}
            ),
            403: DetailSerializer,
            404: DetailSerializer,
            409: DetailSerializer,
        },
    )
    def post(self, request, pk: int):
        assignment, worker, refused = _own_assignment(request, pk)
        if refused is not None:
            return refused
        try:
            extended = services.extend_reservation(assignment, worker)
        except services.SubmissionError as exc:
            return HttpResponse({"detail": str(exc)}, status=exc.status)
        return HttpResponse({"assignment": extended.pk, "expires_at": extended.expires_at})


class ProjectProgress(APIView):
    """Items done / needed, assignments by status and per-worker counts (staff only)."""

    permission_classes = [permissions.IsAuthenticated, IsExpert]

    @extend_schema(
        responses={
            200: inline_serializer(
                "ProjectProgress",
                {
                    "project": serializers.CharField(),
                    "status": serializers.CharField(),
                    "items": serializers.IntegerField(),
                    "gold_items": serializers.IntegerField(),
                    "needed": serializers.IntegerField(),
                    "done": serializers.IntegerField(),
                    "percent": serializers.FloatField(),
                    "hits": serializers.IntegerField(),
                    "hits_complete": serializers.IntegerField(),
                    "assignments": serializers.DictField(child=serializers.IntegerField()),
                    "workers": serializers.ListField(child=serializers.DictField()),
                },
            ),
            403: DetailSerializer,
            404: DetailSerializer,
        }
    )
    def get(self, request, slug: str):
        project = get_object_or_404(access.projects(request.user), slug=slug)  # outside its team: 404
        return HttpResponse(selectors.project_progress(project))


# --- project writes ------------------------------------------------------------------------------------------------
class CanAddProject(permissions.BasePermission):
    message = "creating projects needs the permission annotation.add_project (the Researcher role)"

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated and request.user.has_perm("annotation.add_project"))


class ProjectCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    task_type = serializers.CharField(max_length=100, help_text="a registered task type, e.g. sentence_label")
    slug = serializers.SlugField(max_length=200, required=False, allow_blank=True, default="")
    config = serializers.DictField(required=False, default=dict, help_text="the task type's options")
    guidelines = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        help_text="HTML, sanitised before it is stored (an allow-list: no scripts, styles or event handlers)",
    )
    assignments_per_item = serializers.IntegerField(required=False, min_value=1, max_value=1000)
    items_per_hit = serializers.IntegerField(required=False, min_value=1, max_value=500)
    gold_rate = serializers.FloatField(required=False, min_value=0, max_value=1)


class ProjectCreate(APIView):
    """Create a draft project (no items yet: add them in the studio or with the task type's command). A task type that
    is not installed, a bad config or setting -> 400 ``{"errors": {field: reason}}`` (e.g. ``task_type``)."""

    permission_classes = [CanAddProject]

    @extend_schema(
        request=ProjectCreateSerializer,
        responses={
            201: inline_serializer(
                "ProjectCreated",
                {
                    "slug": serializers.CharField(),
                    "name": serializers.CharField(),
                    "task_type": serializers.CharField(),
                    "status": serializers.CharField(),
                    "studio_url": serializers.CharField(),
                },
            ),
            400: ErrorsSerializer,
            403: DetailSerializer,
        },
    )
    def post(self, request):
        body = ProjectCreateSerializer(data=request.data)
        if not body.is_valid():
            return HttpResponse({"errors": _flatten(body.errors)}, status=status.HTTP_400_BAD_REQUEST)
        data = dict(body.validated_data)
        # services.create_project checks the task type, its config and the settings: ProjectInvalid -> 400 naming them
        project = services.create_project(
            name=data.pop("name"),
            task_type=data.pop("task_type"),
            slug=data.pop("slug") or None,
            config=data.pop("config"),
            created_by=request.user,
            **data,
        )
        return HttpResponse(
            {
                "slug": project.slug,
                "name": project.name,
                "task_type": project.task_type,
                "status": project.status,
                "studio_url": reverse("annotation:studio-project", args=[project.slug]),
            },
            status=status.HTTP_201_CREATED,
        )
