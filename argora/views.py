from django.contrib.admin.views.decorators import staff_member_required
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render

from . import jobs


def home(request):
    return render(request, "home.html")


def healthz(request):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})


@staff_member_required
def job_list(request):
    return render(request, "jobs/list.html", {"jobs": jobs.recent_jobs()})


@staff_member_required
def job_detail(request, task_id: str):
    return render(request, "jobs/detail.html", {"job": jobs.job_state(task_id)})
