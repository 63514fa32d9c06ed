from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render

from . import access, jobs


def _staff(check):
    """Anonymous -> login; a user ``check`` refuses -> 403."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not check(request.user):
                raise PermissionDenied("for the research team only")
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def home(request):
    return render(request, "home.html")


def healthz(request):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})


@_staff(
    access.is_superuser
)  # every job of every project: the operator's page (a team sees its jobs where it started them)
def job_list(request):
    return render(request, "jobs/list.html", {"jobs": jobs.recent_jobs()})


@_staff(access.team_user)  # the id is a random UUID the page that started the job links to
def job_detail(request, task_id: str):
    return render(request, "jobs/detail.html", {"job": jobs.job_state(task_id)})
