from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from . import access, errors, jobs


class IsTeamUser(permissions.BasePermission):
    """A user of some project's team (:func:`argora.access.team_user`)."""

    def has_permission(self, request, view):
        return access.team_user(request.user)


class JobBadgeSerializer(serializers.Serializer):
    state = serializers.CharField()
    text = serializers.CharField(help_text="the state in words: waiting, running, done, failed, cancelled")
    css = serializers.CharField()


class JobLinkSerializer(serializers.Serializer):
    url = serializers.CharField(help_text="a path on this site: what the job made")
    text = serializers.CharField()


class JobSerializer(serializers.Serializer):
    id = serializers.CharField()
    state = serializers.CharField()
    progress = serializers.DictField(allow_null=True)
    result = serializers.JSONField(allow_null=True)
    error = serializers.CharField(allow_null=True)
    title = serializers.CharField(help_text="the task in words")
    badge = JobBadgeSerializer()
    percent = serializers.FloatField(allow_null=True)
    progress_text = serializers.CharField(help_text='e.g. "412 of 1,000 (41%) — writing"')
    summary = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="the result as [label, text] rows (done jobs)",
    )
    link = JobLinkSerializer(allow_null=True, help_text="from the result's url / link_text keys")
    error_line = serializers.CharField(help_text="the error's last line (failed jobs)")


class JobDetail(APIView):
    """State and progress of a background job (Celery task)."""

    permission_classes = [permissions.IsAuthenticated, IsTeamUser]

    @extend_schema(responses=JobSerializer)
    def get(self, request, task_id: str):
        return Response(jobs.job_state(task_id))


@csrf_exempt  # it changes nothing: an unknown path is a 404 whatever the method and cookies, not a CSRF failure
def not_found(request, *args, **kwargs):
    """Any other path under /api/: a JSON 404 (not the HTML page), as the API's clients expect."""
    return errors.page_not_found(request, None)
