"""The worker's pages of the study phases (consent, instructions, training with its feedback and the qualification
result, the exit survey, the screened-out page), for every channel.

The pages are written once, against a :class:`Channel`: who the worker is, where each page lives and where the HITs
and the end are. An invite-link / Prolific / logged-in worker gets the channel of :func:`study` (under
``/work/<slug>/study/``, a logged-in session); MTurk's ExternalQuestion builds its own channel from a signed token
(:mod:`mturk.views`) and shows the same pages inside MTurk's frame. Thin views: every change is a call into
:mod:`annotation.phases`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from argora.errors import FieldError
from argora.html import markdown_html
from argora.inputs import parse_json

from . import access, phases, selectors, services
from .forms import parse_item_responses
from .hit_page import hit_context
from .models import Participation, Project, Worker, WorkerProjectCode
from .views import _closed, _not_admitted

# the pages a step may show while the project is not active (the end of the study stays reachable)
OPEN_WHEN_CLOSED = (phases.SURVEY, "survey-draft", phases.SCREENED_OUT, "declined")
STEP_LABELS = (
    (phases.CONSENT, "Consent"),
    (phases.INSTRUCTIONS, "Instructions"),
    (phases.TRAINING, "Training"),
    (phases.WORK, "Task"),
    (phases.SURVEY, "Survey"),
)


@dataclass
class Channel:
    """How a worker reaches the phase pages: ``url(step)`` is a phase page (with whatever the channel needs to know
    the worker again, e.g. MTurk's signed token), ``work_url`` the HITs, ``done_url`` the end (after the survey).
    ``frame``: inside a platform's frame (no site navigation). ``finished``: the worker has no HIT left or stopped.
    ``step_fn``: the channel's own rule for the current step (default: :func:`annotation.phases.next_step`).
    ``handoff``: for MTurk, the form that hands the HIT back (``{"action", "assignment_id"}``)."""

    project: Project
    worker: Worker
    url: Callable[[str], str]
    work_url: str
    done_url: str
    frame: bool = False
    finished: bool = False
    step_fn: Callable[[], str] | None = None
    handoff: dict | None = None

    def step(self, *, finished: bool | None = None) -> str:
        """The page the worker must see now; ``finished=True``: as once they finish (the survey's own pages)."""
        if self.step_fn is not None:
            return self.step_fn()
        return phases.next_step(self.project, self.worker, finished=self.finished if finished is None else finished)

    def target(self, step: str) -> str:
        if step == phases.WORK:
            return self.work_url
        if step == phases.DONE:
            return self.done_url
        return self.url(step)


def with_query(url: str, **params) -> str:
    return url + ("&" if "?" in url else "?") + urlencode(params)


def step_url(project: Project, step: str, **params) -> str:
    """A phase page of the logged-in channel."""
    url = reverse("annotation:study-step", args=[project.slug, step])
    return with_query(url, **params) if params else url


def local_channel(request, project: Project, worker: Worker) -> Channel:
    finished = bool(request.GET.get("finished") or request.POST.get("finished"))
    done = reverse("annotation:done", args=[project.slug]) + ("?finished=1" if finished else "")
    return Channel(
        project=project,
        worker=worker,
        url=lambda step: step_url(project, step, **({"finished": 1} if finished else {})),
        work_url=reverse("annotation:work", args=[project.slug]),
        done_url=done,
        finished=finished,
    )


@login_required
@require_http_methods(["GET", "POST", "PUT"])
def study(request, slug: str, step: str = "next"):
    """The phase pages of a logged-in worker (invite link, Prolific, a local account)."""
    project = get_object_or_404(Project, slug=slug)
    worker = services.worker_for_user(request.user)
    if not access.worker_admitted(project, worker):  # another study's worker, by slug: not through this door
        return _not_admitted(request, project)
    return handle(request, local_channel(request, project, worker), step)


# --- one dispatcher for every channel -----------------------------------------------------------------------------
def handle(request, channel: Channel, step: str):
    project = channel.project
    pages = {
        "next": _next,
        phases.CONSENT: _consent,
        "declined": _declined,
        phases.INSTRUCTIONS: _instructions,
        phases.TRAINING: _training,
        "training-draft": _training_draft,
        phases.RETRY: _result,
        phases.SURVEY: _survey,
        "survey-draft": _survey_draft,
        phases.SCREENED_OUT: _screened_out,
    }
    page = pages.get(step)
    if page is None:
        return _notice(request, channel, "No such page", ["This study has no such step."], status=404)
    if project.status != Project.Status.ACTIVE and step not in OPEN_WHEN_CLOSED:
        return _closed(request, project)
    if request.method == "PUT" and step not in ("training-draft", "survey-draft"):
        return HttpResponse(status=405)
    return page(request, channel)


def _next(request, channel: Channel):
    return redirect(channel.target(channel.step()))


def _context(channel: Channel, step: str, **extra) -> dict:
    cfg = selectors.phase_config(channel.project)
    shown = [
        (s, label)
        for s, label in STEP_LABELS
        if s == phases.WORK
        or (
            cfg is not None
            and {
                phases.CONSENT: cfg.consent_required,
                phases.INSTRUCTIONS: cfg.instructions_required,
                phases.TRAINING: cfg.training_enabled,
                phases.SURVEY: cfg.survey_enabled,
            }[s]
        )
    ]
    at = {phases.RETRY: phases.TRAINING, phases.SCREENED_OUT: phases.TRAINING}.get(step, step)
    order = [s for s, _ in shown]
    index = order.index(at) if at in order else -1
    steps = [{"label": label, "current": n == index, "done": n < index} for n, (_, label) in enumerate(shown)]
    context = {
        "project": channel.project,
        "cfg": cfg,
        "steps": steps,
        "step": step,
        "frame": channel.frame,
        "task_type": channel.project.get_task_type(),
        "work_url": channel.work_url,
        "done_url": channel.done_url,
    }
    if step in (phases.CONSENT, phases.INSTRUCTIONS, phases.TRAINING, phases.RETRY, phases.SURVEY):
        context["action"] = channel.url(step)
    if step == phases.CONSENT:
        context["decline_url"] = channel.url("declined")
    return {**context, **extra}


def _notice(request, channel: Channel, heading: str, lines: list[str], *, status: int, link: dict | None = None):
    return render(
        request,
        "annotation/phases/notice.html",
        _context(channel, "notice", heading=heading, lines=lines, link=link),
        status=status,
    )


def _not_now(request, channel: Channel, exc: phases.PhaseNotNow):
    if _wants_json(request):
        return JsonResponse({"detail": str(exc), "step": exc.step, "next": channel.target(exc.step)}, status=409)
    return redirect(channel.target(exc.step))


def _wants_json(request) -> bool:
    return request.content_type == "application/json" or "application/json" in request.headers.get("Accept", "")


def _at(request, channel: Channel, step: str, *, finished: bool | None = None):
    """``None`` when the worker is at ``step``; else the redirect to where they are."""
    now_at = channel.step(finished=finished)
    return None if now_at == step else redirect(channel.target(now_at))


# --- consent ----------------------------------------------------------------------------------------------------------
def _consent(request, channel: Channel):
    away = _at(request, channel, phases.CONSENT)
    if away is not None:
        return away
    error = ""
    if request.method == "POST":
        try:
            phases.record_consent(channel.project, channel.worker, agreed=request.POST.get("consent") == "yes")
        except phases.PhaseRefused as exc:
            error = exc.reason
        except phases.PhaseNotNow as exc:
            return _not_now(request, channel, exc)
        else:
            return _next(request, channel)
    cfg = selectors.phase_config(channel.project)
    return render(
        request,
        "annotation/phases/consent.html",
        _context(channel, phases.CONSENT, consent_html=markdown_html(cfg.consent_text), error=error),
        status=400 if error else 200,
    )


def _declined(request, channel: Channel):
    return render(
        request,
        "annotation/phases/declined.html",
        _context(channel, "declined", consent_url=channel.url(phases.CONSENT)),
    )


# --- instructions -----------------------------------------------------------------------------------------------------
def _instructions(request, channel: Channel):
    away = _at(request, channel, phases.INSTRUCTIONS)
    if away is not None:
        return away
    if request.method == "POST":
        try:
            phases.record_instructions_opened(channel.project, channel.worker)
        except phases.PhaseNotNow as exc:
            return _not_now(request, channel, exc)
        return _next(request, channel)
    return render(request, "annotation/phases/instructions.html", _context(channel, phases.INSTRUCTIONS))


# --- training -----------------------------------------------------------------------------------------------------
def _training(request, channel: Channel):
    project, worker = channel.project, channel.worker
    answered = request.GET.get("answered")
    if request.method == "GET" and answered:
        return _feedback(request, channel, answered, request.GET.get("attempt"))
    away = _at(request, channel, phases.TRAINING)
    if request.method == "GET" and away is not None:
        return away
    p = selectors.participation_of(project, worker)
    current = selectors.current_training_item(project, p)
    if request.method == "POST":
        return _answer(request, channel, current)
    if current is None:  # decided meanwhile
        return _next(request, channel)
    item, number, total = current
    draft = phases.drafts_of(p, "training").get(str(item.pk)) or {}
    return _training_page(
        request, channel, p, item, number, total, values={item.pk: draft} if draft else {}, restored=bool(draft)
    )


def _training_page(
    request, channel: Channel, p: Participation | None, item, number: int, total: int, *, status=200, **answers
):
    attempt = p.attempt if p is not None else 1
    context = hit_context(
        channel.project,
        [item],
        submit_url=channel.url(phases.TRAINING),
        next_url=with_query(channel.url(phases.TRAINING), answered=item.pk, attempt=attempt),
        draft_url=channel.url("training-draft"),
        show_instructions=False,
        **answers,
    )
    context.update(_context(channel, phases.TRAINING, number=number, total=total, attempt=attempt))
    return render(request, "annotation/phases/training.html", context, status=status)


def _answer(request, channel: Channel, current):
    project = channel.project
    as_json = request.content_type == "application/json"
    if as_json:
        try:
            body = parse_json(request.body or b"{}")
        except FieldError as exc:
            return JsonResponse({"errors": exc.as_dict()}, status=400)
        responses = body.get("responses") if isinstance(body, dict) else None
        if not isinstance(responses, dict) or len(responses) != 1:
            return JsonResponse({"errors": {"responses": "answer one training item: {item id: answer}"}}, status=400)
        ((item_id, data),) = responses.items()
    else:
        item_id = request.POST.get("item", "")
        data = parse_item_responses(request.POST, [int(item_id)] if item_id.isdigit() else []).get(
            int(item_id) if item_id.isdigit() else -1, {}
        )
    try:
        feedback = phases.answer_training_item(project, channel.worker, item_id, data)
    except phases.PhaseRefused as exc:
        if as_json:
            return JsonResponse({"errors": exc.as_dict()}, status=400)
        if current is None or str(current[0].pk) != str(item_id):
            return _notice(
                request,
                channel,
                "Could not save your answer",
                [str(exc)],
                status=400,
                link={"url": channel.url(phases.TRAINING), "text": "Back to the training"},
            )
        item, number, total = current
        p = selectors.participation_of(project, channel.worker)
        return _training_page(
            request,
            channel,
            p,
            item,
            number,
            total,
            values={item.pk: data},
            item_errors={item.pk: f"{exc.field.rsplit('.', 1)[-1]}: {exc.reason}"},
            status=400,
        )
    except phases.PhaseNotNow as exc:
        return _not_now(request, channel, exc)
    url = with_query(channel.url(phases.TRAINING), answered=feedback.item.pk, attempt=feedback.attempt)
    if as_json:
        return JsonResponse({"status": "answered", "correct": feedback.correct, "next": url})
    return redirect(url)


def _feedback(request, channel: Channel, item_id: str, attempt: str | None):
    """Right or wrong, the expected answer and the explanation of one answered training item (again on a reload)."""
    p = selectors.participation_of(channel.project, channel.worker)
    answer = None
    if p is not None and item_id.isdigit():
        answers = p.training_answers.filter(item_id=int(item_id))
        answer = answers.filter(attempt=int(attempt)).first() if (attempt or "").isdigit() else answers.last()
    if answer is None:
        return _next(request, channel)
    feedback = phases.feedback_for(channel.project, p, answer)
    if feedback.attempt_finished:
        continue_url = channel.url(phases.SCREENED_OUT if feedback.outcome == phases.SCREENED_OUT else phases.RETRY)
        continue_text = "See your result"
    else:
        continue_url, continue_text = channel.url(phases.TRAINING), "Next training item"
    shown = hit_context(channel.project, [feedback.item], values={feedback.item.pk: feedback.answer})["items"][0]
    return render(
        request,
        "annotation/phases/feedback.html",
        _context(
            channel,
            phases.TRAINING,
            feedback=feedback,
            entry=shown,
            continue_url=continue_url,
            continue_text=continue_text,
        ),
    )


def _training_draft(request, channel: Channel):
    if request.method not in ("PUT", "POST"):
        return HttpResponse(status=405)
    try:
        body = parse_json(request.body or b"{}")
        if not isinstance(body, dict):
            raise phases.PhaseRefused("body", "expected an object")
        phases.save_training_draft(channel.project, channel.worker, body.get("fields"))
    except FieldError as exc:
        return JsonResponse({"errors": exc.as_dict()}, status=400)
    return HttpResponse(status=204)


# --- the qualification's result ---------------------------------------------------------------------------------------
def _result(request, channel: Channel):
    project, worker = channel.project, channel.worker
    if request.method == "POST":
        try:
            attempt = int(request.POST.get("attempt", ""))
        except ValueError:
            return _notice(
                request,
                channel,
                "Could not start again",
                ["attempt: reload the page and try again"],
                status=400,
                link={"url": channel.url(phases.RETRY), "text": "Back"},
            )
        try:
            phases.start_retry(project, worker, attempt=attempt)
        except phases.PhaseNotNow as exc:
            return _not_now(request, channel, exc)
        return redirect(channel.url(phases.TRAINING))
    p = selectors.participation_of(project, worker)
    if p is None or not p.attempts_finished:
        return _next(request, channel)
    if p.screened_out_at:
        return redirect(channel.url(phases.SCREENED_OUT))
    cfg = selectors.phase_config(project)
    figures = selectors.attempt_score(project, p, p.attempts_finished)
    retry = p.qualified_at is None and p.attempts_finished >= p.attempt
    return render(
        request,
        "annotation/phases/result.html",
        _context(
            channel,
            phases.RETRY,
            participation=p,
            figures=figures,
            retry=retry,
            score_percent=round(100 * figures["score"]),
            needed_percent=round(100 * cfg.pass_threshold),
            attempts_left=max(0, cfg.max_attempts - p.attempts_finished),
            next_url=channel.target(channel.step()),
        ),
    )


# --- screened out -----------------------------------------------------------------------------------------------------
def _screened_out(request, channel: Channel):
    project, worker = channel.project, channel.worker
    p = selectors.participation_of(project, worker)
    if p is None or not p.screened_out_at:
        return _next(request, channel)
    cfg = selectors.phase_config(project)
    code = services.completion_code(project, worker, kind=WorkerProjectCode.Kind.SCREENED_OUT)
    back = None if channel.handoff else selectors.completion_return(project, worker, "screened_out")
    redirect_url = back["url"] if back else None
    code = back["code"] if back else code  # the platform's own code: the one its page checks
    return render(
        request,
        "annotation/phases/screened_out.html",
        _context(
            channel,
            phases.SCREENED_OUT,
            participation=p,
            code=code,
            redirect_url=redirect_url,
            message_html=markdown_html(
                (cfg.screened_out_message if cfg is not None else "") or phases.DEFAULT_SCREENED_OUT
            ),
            figures=selectors.attempt_score(project, p, p.attempts_finished),
            handoff=channel.handoff,
        ),
    )


# --- exit survey ------------------------------------------------------------------------------------------------------
def _survey(request, channel: Channel):
    project, worker = channel.project, channel.worker
    away = _at(request, channel, phases.SURVEY, finished=True)
    if away is not None:
        return away
    cfg = selectors.phase_config(project)
    errors: dict[str, str] = {}
    p = selectors.participation_of(project, worker)
    values = phases.drafts_of(p, "survey")
    if request.method == "POST":
        values = {q["name"]: _posted(request, q) for q in cfg.survey_questions}
        try:
            phases.record_survey(project, worker, values, finished_check=channel.step_fn is None)
        except phases.PhaseRefused as exc:
            errors = exc.errors
        except phases.PhaseNotNow as exc:
            return _not_now(request, channel, exc)
        else:
            return redirect(channel.done_url)
    questions = [
        {
            **q,
            "value": values.get(q["name"], ""),
            "error": errors.get(q["name"], ""),
            "points": [{"n": n, "label": label} for n, label in enumerate(q.get("scale") or [], start=1)],
        }
        for q in cfg.survey_questions
    ]
    return render(
        request,
        "annotation/phases/survey.html",
        _context(
            channel,
            phases.SURVEY,
            questions=questions,
            errors=errors,
            restored=bool(values) and not errors,
            draft_url=channel.url("survey-draft"),
        ),
        status=400 if errors else 200,
    )


def _posted(request, question: dict) -> str:
    return request.POST.get(f"q-{question['name']}", "")


def _survey_draft(request, channel: Channel):
    if request.method not in ("PUT", "POST"):
        return HttpResponse(status=405)
    try:
        body = parse_json(request.body or b"{}")
        if not isinstance(body, dict):
            raise phases.PhaseRefused("body", "expected an object")
        phases.save_survey_draft(channel.project, channel.worker, body.get("answers"))
    except FieldError as exc:
        return JsonResponse({"errors": exc.as_dict()}, status=400)
    except phases.PhaseNotNow as exc:
        return JsonResponse({"detail": str(exc)}, status=409)
    return HttpResponse(status=204)
