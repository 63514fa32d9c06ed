"""Staff page: review the proposed KB variables (accept / merge into an existing variable / reject), start the
normalisation of pending proposals, and see how annotators took the model's span suggestions (acceptance rate per
span_grounding project). Thin views over :mod:`annotation.task_types.span_grounding.review` and :mod:`.tasks`."""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.agreement.minimums import MIN_DECISIONS, mark
from annotation.views import expert_required, notice
from argora.errors import FieldError

from . import review as review_service
from .suggestions import span_projects_suggestion_stats
from .tasks import normalise_pending_task


@expert_required
@require_GET
def kb_review(request):
    topic = request.GET.get("topic") or None
    groups = review_service.pending_by_topic(topic)
    return render(
        request,
        "task_types/span_grounding/kb_review.html",
        {
            "groups": groups,
            "topic": topic,
            "n_pending": sum(len(g["pending"]) for g in groups),
            "suggestion_stats": [
                {**s, "mark": mark(s["decisions"], MIN_DECISIONS, "accept / reject decisions")}
                for s in span_projects_suggestion_stats()
            ],
            "min_decisions": MIN_DECISIONS,
        },
    )


@expert_required
@require_POST
def kb_review_action(request, variable_id: int):
    action = request.POST.get("action", "")
    try:
        v = review_service.review(variable_id, action, into=request.POST.get("into") or None, user=request.user)
    except FieldError as exc:
        return notice(
            request,
            "Review not applied",
            [f"{exc.field}: {exc.reason}"],
            status=400,
            link={"url": reverse("annotation:spans-kb-review"), "text": "Back to the review"},
        )
    verb = {"accept": "accepted", "merge": "merged", "reject": "rejected"}[action]
    messages.success(request, f"Variable {v.pk} {verb}: {v.text[:80]}")
    nxt = request.POST.get("next") or ""
    return redirect(nxt if nxt.startswith("/") and not nxt.startswith("//") else reverse("annotation:spans-kb-review"))


@expert_required
@require_POST
def kb_normalise(request):
    """Enqueue the normalisation of pending proposals (suggests a merge target for each) after commit."""
    topic_id = request.POST.get("topic_id") or None
    transaction.on_commit(lambda: normalise_pending_task.delay(int(topic_id) if topic_id else None))
    messages.info(request, "Normalisation started; reload in a moment to see the suggested merges.")
    return redirect(reverse("annotation:spans-kb-review"))
