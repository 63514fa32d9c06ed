from django.http import JsonResponse
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from . import jobs


class JobSerializer(serializers.Serializer):
    id = serializers.CharField()
    state = serializers.CharField()
    progress = serializers.DictField(allow_null=True)
    result = serializers.JSONField(allow_null=True)
    error = serializers.CharField(allow_null=True)


class JobDetail(APIView):
    """State and progress of a background job (Celery task)."""

    permission_classes = [permissions.IsAdminUser]

    @extend_schema(responses=JobSerializer)
    def get(self, request, task_id: str):
        return Response(jobs.job_state(task_id))


def not_found(request, *args, **kwargs):
    """Any other path under /api/: a JSON 404 (not the HTML page), as the API's clients expect."""
    return JsonResponse({"detail": "Not found."}, status=404)
