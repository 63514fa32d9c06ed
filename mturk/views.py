"""MTurk pages: the ExternalQuestion (preview / accept), its submit endpoint, the staff panel, and a stand-in
for MTurk's ``/mturk/externalSubmit`` that exists only in DEBUG or with ``ARGORA_MTURK_FAKE_TURK`` (tests).

The ExternalQuestion is shown inside MTurk's iframe, so these views (and only these) are :func:`framed_by_mturk`
(no X-Frame-Options; the Content-Security-Policy lets MTurk's hosts frame them); MTurk's page is cross-site, so
they are ``csrf_exempt`` and authenticate with the signed binding instead (see :mod:`mturk.binding`). They reuse
``annotation/hit.html`` and ``hit.js``: the page's JSON submit goes to :func:`external_submit`, which stores the
answers through ``annotation.services.submit_assignment`` and then hands the worker a form that posts
``assignmentId`` to ``turkSubmitTo + "/mturk/externalSubmit"``.

The study's phases (:mod:`annotation.phases`) run inside the frame too (:func:`external_phase`, the pages of
:mod:`annotation.phase_views`): a worker whose claimed workerId has not passed the consent, instructions and training
gets them on accept, before any HIT is reserved; their record belongs to a provisional worker of the claim until a
sync confirms the id (``annotation.services.confirm_assignment`` moves it). The phase pages trust only a token this
server signed (salt ``ARGORA_MTURK_SIGNING_SALT + ":phases"``), naming that record's worker and the MTurk ids. A worker
screened out hands the HIT back with their screened-out code (``completion_code``, ``outcome=screened_out``: review
such submissions by hand on MTurk); the exit survey comes once per worker, after their first submitted HIT.
"""

from __future__ import annotations

from urllib.parse import urlencode

from csp.decorators import csp_replace, csp_update
from django.conf import settings
from django.contrib import messages
from django.core import signing
from django.db import transaction
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from annotation import access, phase_views, phases, selectors, teams
from annotation import services as annotation_services
from annotation.forms import HITSubmitForm, parse_item_responses
from annotation.hit_page import hit_context, refused_submission
from annotation.models import Assignment, HITItem, Project, Worker
from annotation.views import expert_required, team_project
from argora.clientaddr import client_address
from argora.errors import FieldError
from argora.inputs import parse_json

from . import binding as binding_mod
from . import payments, publishing, sync
from .client import MTurkError, account_balance
from .models import MTurkHIT, MTurkOperation, MTurkProjectSettings
from .tasks import sync_project_task

RECEIVED: list[dict] = []  # what the local MTurk stand-in received (tests read it)
# MTurk's hosts (and ARGORA_MTURK_SUBMIT_TO's): they frame the ExternalQuestion pages, whose forms post to them
MTURK_ORIGINS = (*binding_mod.MTURK_SUBMIT_HOSTS, *(v.rstrip("/") for v in settings.ARGORA_MTURK_SUBMIT_TO))


def framed_by_mturk(view):
    """A page shown inside MTurk's iframe: no X-Frame-Options (it cannot name MTurk), the Content-Security-Policy's
    ``frame-ancestors`` names MTurk's hosts instead of ``'none'``, and ``form-action`` adds them (externalSubmit)."""
    view = csp_update({"form-action": list(MTURK_ORIGINS)})(csp_replace({"frame-ancestors": list(MTURK_ORIGINS)})(view))
    return xframe_options_exempt(view)


def _notice(request, heading, lines, *, status):
    response = render(request, "mturk/notice.html", {"heading": heading, "lines": lines}, status=status)
    return response


def _bound_urls(project, b: binding_mod.Binding, name: str = "mturk:external-submit") -> str:
    query = urlencode(
        {"assignmentId": b.assignment_id, "workerId": b.worker_id, "hitId": b.hit_id, "binding": b.dumps()}
    )
    return reverse(name, args=[project.slug]) + "?" + query


def _render_hit(request, project, assignment, b, *, status=200, **extra):
    url = _bound_urls(project, b)
    mhit = MTurkHIT.objects.filter(mturk_hit_id=b.hit_id).first()
    if "values" not in extra:  # the answers saved as the worker gave them (a reload of MTurk's frame)
        extra["values"], extra["feedback"] = annotation_services.draft_values(assignment)
        extra["restored"] = bool(extra["values"] or extra["feedback"])
    context = hit_context(
        project,
        annotation_services.assignment_items(assignment),
        assignment=assignment,
        submit_url=url,
        next_url=url,
        draft_url=_bound_urls(project, b, "mturk:external-draft"),
        reward_cents=mhit.reward_cents if mhit else None,
        preview=False,
        mturk=True,
        **extra,
    )
    return render(request, "mturk/hit.html", context, status=status)


@framed_by_mturk
@csrf_exempt
@require_GET
def external(request, slug: str):
    """The ExternalQuestion URL: preview (no reservation) or accept (bind and show the HIT)."""
    project = get_object_or_404(Project, slug=slug)
    q = request.GET
    assignment_id = q.get("assignmentId", "")
    hit_id = q.get("hitId", "")
    mhit = (
        MTurkHIT.objects.select_related("hit").filter(project=project, mturk_hit_id=hit_id).first() if hit_id else None
    )
    if project.status != Project.Status.ACTIVE:
        return _notice(
            request,
            "This study is closed",
            [f"{project.name} takes no more answers. Please return the HIT."],
            status=410,
        )
    if not assignment_id or assignment_id == binding_mod.PREVIEW_ASSIGNMENT_ID:
        hit = mhit.hit if mhit is not None else project.hits.order_by("position").first()
        items = (
            [hi.item for hi in HITItem.objects.filter(hit=hit).select_related("item").order_by("position")]
            if hit is not None
            else []
        )
        context = hit_context(
            project,
            items,
            preview=True,
            mturk=True,
            next_url=request.get_full_path(),
            reward_cents=mhit.reward_cents if mhit else None,
            phases_note=_phases_note(project),
        )
        return render(request, "mturk/hit.html", context)
    if mhit is None:
        return _notice(request, "Unknown HIT", ["This HIT is not part of this project. Please return it."], status=404)
    turk_submit_to = q.get("turkSubmitTo", "")
    if not binding_mod.allowed_submit_to(turk_submit_to, request):
        return _notice(
            request,
            "Cannot open this HIT",
            ["turkSubmitTo is missing or not an MTurk address; open the HIT from MTurk."],
            status=400,
        )
    gate = _phases_gate(
        request,
        project,
        assignment_id=assignment_id,
        worker_id=q.get("workerId", ""),
        hit_id=hit_id,
        turk_submit_to=turk_submit_to,
    )
    if gate is not None:
        return gate
    try:
        b = binding_mod.bind(
            project,
            mhit,
            assignment_id=assignment_id,
            worker_id=q.get("workerId", ""),
            turk_submit_to=turk_submit_to,
            client=client_address(request),
        )
    except binding_mod.BindingRefused as exc:
        return _notice(request, "Not your HIT", [str(exc)], status=403)
    except binding_mod.BindingConflict as exc:
        return _notice(request, "Please return this HIT", [str(exc)], status=409)
    except annotation_services.WorkerBlocked as exc:
        return _notice(request, "No more HITs for you here", [str(exc), "Please return the HIT."], status=403)
    except annotation_services.ProjectNotActive as exc:
        return _notice(request, "This study is closed", [str(exc)], status=410)
    except annotation_services.AllocationError as exc:  # quota, too many unconfirmed HITs
        return _notice(request, "Please return this HIT", [str(exc)], status=exc.status)
    assignment, _worker = binding_mod.assignment_for(b, project)
    if assignment.status in SENT:
        return _handoff(request, project, b, assignment)
    return _render_hit(request, project, assignment, b)


SENT = ("submitted", "approved", "late")  # answers stored (late ones too): hand the worker over to MTurk


def _handoff(request, project, b, assignment):
    """The last page: post assignmentId to MTurk's externalSubmit (automatically, or with the button) -- after the
    study's exit survey when this worker has not answered it yet."""
    if selectors.claim_survey_pending(project, Worker.Source.MTURK, b.worker_id):
        record = phases.claim_record(
            project, source=Worker.Source.MTURK, claimed_id=b.worker_id, platform_assignment=b.assignment_id
        )
        return redirect(
            _phase_url(
                project,
                record.worker,
                phases.SURVEY,
                assignment_id=b.assignment_id,
                worker_id=b.worker_id,
                hit_id=b.hit_id,
                turk_submit_to=b.turk_submit_to,
                binding=b.dumps(),
            )
        )
    return render(
        request,
        "mturk/external_submit.html",
        {
            "project": project,
            "action": b.submit_url,
            "assignment_id": b.assignment_id,
            "argora_assignment": assignment.pk,
            "submission": assignment.submission_key[:16],
        },
    )


# --- the study's phases inside the frame ----------------------------------------------------------------------------
def _phases_note(project) -> str:
    cfg = selectors.phase_config(project)
    if not selectors.gates_work(cfg):
        return ""
    parts = [
        name
        for name, on in (
            ("your consent", cfg.consent_required),
            ("the instructions", cfg.instructions_required),
            ("a short training with explanations", cfg.training_enabled),
        )
        if on
    ]
    note = "Before your first HIT of this study: " + ", ".join(parts) + "."
    if cfg.training_enabled:
        note += (
            f" The training decides whether you can do the HITs (at least {round(100 * cfg.pass_threshold)}% "
            f"right, {cfg.max_attempts} attempt{'s' if cfg.max_attempts != 1 else ''})."
        )
    return note


def _phase_salt() -> str:
    return settings.ARGORA_MTURK_SIGNING_SALT + ":phases"


def _phase_url(
    project,
    worker,
    step: str,
    *,
    assignment_id: str,
    worker_id: str,
    hit_id: str,
    turk_submit_to: str,
    binding: str = "",
) -> str:
    """A phase page in the frame, with the signed token that names the claim's record (its worker) and the MTurk
    ids of the HIT the worker has open (and, after a submitted HIT, its binding)."""
    token = signing.dumps(
        {
            "p": project.slug,
            "k": worker.pk,
            "a": assignment_id,
            "w": worker_id,
            "h": hit_id,
            "t": turk_submit_to,
            "b": binding,
        },
        salt=_phase_salt(),
        compress=True,
    )
    return reverse("mturk:external-phase", args=[project.slug, step]) + "?" + urlencode({"token": token})


def _phases_gate(request, project, *, assignment_id: str, worker_id: str, hit_id: str, turk_submit_to: str):
    """Accepting a HIT: a worker whose claimed id has not passed the phases before the HITs goes to them (nothing is
    reserved); one screened out is told to return the HIT. ``None``: go on and bind."""
    if not selectors.gates_work(selectors.phase_config(project)):
        return None
    if not assignment_id or not worker_id or len(assignment_id) > 200 or len(worker_id) > 200:
        return None  # bind refuses it with its own words
    if Assignment.objects.filter(project=project, external_id=assignment_id).exists():
        return None  # bound already (a reload): the HIT is theirs
    real = annotation_services.confirmed_worker(Worker.Source.MTURK, worker_id)
    if real is not None and real.blocked:
        return None  # bind says so
    state, record = selectors.claim_admission(project, Worker.Source.MTURK, worker_id)
    if state == "admitted":
        return None
    ids = {"assignment_id": assignment_id, "worker_id": worker_id, "hit_id": hit_id, "turk_submit_to": turk_submit_to}
    if state == phases.SCREENED_OUT:
        if record is not None and record.worker.claimed_external_id and record.platform_assignment == assignment_id:
            return redirect(_phase_url(project, record.worker, phases.SCREENED_OUT, **ids))
        return _notice(
            request,
            "Please return this HIT",
            [
                "You took part in this study's training before and it did not admit you to its HITs, so "
                "there is no HIT for you here. Thank you for your interest."
            ],
            status=403,
        )
    try:
        record = phases.claim_record(
            project,
            source=Worker.Source.MTURK,
            claimed_id=worker_id,
            platform_assignment=assignment_id,
            client=client_address(request),
        )
    except annotation_services.AllocationError as exc:  # too many new claims from one address
        return _notice(request, "Please return this HIT", [str(exc)], status=exc.status)
    return redirect(_phase_url(project, record.worker, "next", **ids))


def _phase_channel(request, project, token: str) -> phase_views.Channel:
    """The channel of a phase page in the frame, from its signed token (:class:`binding_mod.BindingRefused`: 403)."""
    max_age = getattr(settings, "ARGORA_MTURK_BINDING_MAX_AGE", 14 * 24 * 3600)
    try:
        data = signing.loads(token or "", salt=_phase_salt(), max_age=max_age)
    except signing.SignatureExpired:
        raise binding_mod.BindingRefused("this page is too old; open the HIT again from MTurk") from None
    except signing.BadSignature:
        raise binding_mod.BindingRefused(
            "the study page's token is not valid (tampered or from another server)"
        ) from None
    if not isinstance(data, dict) or data.get("p") != project.slug:
        raise binding_mod.BindingRefused("this study page belongs to another project")
    worker = Worker.objects.filter(
        pk=data.get("k"), source=Worker.Source.MTURK, claimed_external_id=data.get("w") or "-"
    ).first()
    if worker is None:
        raise binding_mod.BindingRefused(
            "this study page has expired (MTurk has confirmed your HIT meanwhile); open the HIT again from MTurk"
        )
    ids = {"assignmentId": data["a"], "workerId": data["w"], "hitId": data["h"], "turkSubmitTo": data["t"]}
    work_url = reverse("mturk:external", args=[project.slug]) + "?" + urlencode(ids)
    done_url, step_fn = work_url, None
    if data.get("b"):  # after a submitted HIT: the survey, then MTurk's hand-over
        done_url = _bound_urls(project, binding_mod.load(data["b"], project=project, query={}))

        def step_fn() -> str:
            pending = selectors.claim_survey_pending(project, Worker.Source.MTURK, data["w"])
            return phases.SURVEY if pending else phases.DONE

    handoff = None
    if binding_mod.allowed_submit_to(data["t"], request):
        handoff = {"action": data["t"].rstrip("/") + "/mturk/externalSubmit", "assignment_id": data["a"]}
    return phase_views.Channel(
        project=project,
        worker=worker,
        frame=True,
        finished=bool(data.get("b")),
        step_fn=step_fn,
        handoff=handoff,
        url=lambda step: reverse("mturk:external-phase", args=[project.slug, step]) + "?" + urlencode({"token": token}),
        work_url=work_url,
        done_url=done_url,
    )


@framed_by_mturk
@csrf_exempt
@require_http_methods(["GET", "POST", "PUT"])
def external_phase(request, slug: str, step: str):
    """A page of the study's phases inside MTurk's frame (consent, instructions, training, result, screened out,
    survey), for the claim's record named by the signed token."""
    project = get_object_or_404(Project, slug=slug)
    try:
        channel = _phase_channel(request, project, request.GET.get("token", ""))
    except binding_mod.BindingRefused as exc:
        if _wants_json(request):
            return JsonResponse({"detail": str(exc)}, status=403)
        return _notice(request, "Not your HIT", [str(exc)], status=403)
    return phase_views.handle(request, channel, step)


@framed_by_mturk
@csrf_exempt
@require_http_methods(["GET", "POST"])
def external_submit(request, slug: str):
    """Store the answers (JSON from hit.js, or the plain form), then hand over to MTurk. 403 on a bad binding."""
    project = get_object_or_404(Project, slug=slug)
    try:
        b = binding_mod.load(request.GET.get("binding", ""), project=project, query=request.GET)
        assignment, worker = binding_mod.assignment_for(b, project)
    except binding_mod.BindingRefused as exc:
        if _wants_json(request):
            return JsonResponse({"detail": str(exc)}, status=403)
        return _notice(request, "Not your HIT", [str(exc)], status=403)
    if request.method == "GET":
        if assignment.status in SENT:
            return _handoff(request, project, b, assignment)
        query = urlencode(
            {
                "assignmentId": b.assignment_id,
                "workerId": b.worker_id,
                "hitId": b.hit_id,
                "turkSubmitTo": b.turk_submit_to,
            }
        )
        return redirect(reverse("mturk:external", args=[project.slug]) + "?" + query)
    if request.content_type == "application/json":
        return _submit_json(request, assignment, worker)
    return _submit_form(request, project, assignment, worker, b)


@framed_by_mturk
@csrf_exempt
@require_http_methods(["PUT", "POST"])
def external_draft(request, slug: str):
    """The answers given so far in an MTurk HIT (hit.js saves them as they change; the page restores them)."""
    project = get_object_or_404(Project, slug=slug)
    try:
        b = binding_mod.load(request.GET.get("binding", ""), project=project, query=request.GET)
        assignment, worker = binding_mod.assignment_for(b, project)
        body = parse_json(request.body or b"{}")
    except binding_mod.BindingRefused as exc:
        return JsonResponse({"detail": str(exc)}, status=403)
    except FieldError as exc:
        return JsonResponse({"errors": exc.as_dict()}, status=400)
    if not isinstance(body, dict):
        return JsonResponse({"errors": {"body": "expected an object"}}, status=400)
    try:
        annotation_services.save_draft(
            assignment, worker, body.get("fields"), feedback=body.get("feedback") or "", revision=body.get("revision")
        )
    except annotation_services.ValidationFailed as exc:
        return JsonResponse({"errors": exc.errors}, status=400)
    except annotation_services.SubmissionError as exc:
        return JsonResponse({"detail": str(exc)}, status=exc.status)
    return HttpResponse(status=204)


def _wants_json(request) -> bool:
    return request.content_type == "application/json" or "application/json" in request.headers.get("Accept", "")


def _submit_json(request, assignment, worker):
    try:
        body = parse_json(request.body or b"{}")
    except FieldError as exc:
        return JsonResponse({"errors": exc.as_dict()}, status=400)
    if not isinstance(body, dict):
        return JsonResponse({"errors": {"body": "expected an object"}}, status=400)
    try:
        done = annotation_services.submit_assignment(
            assignment,
            worker,
            body.get("responses"),
            feedback=body.get("feedback") or "",
            client_seconds=body.get("client_seconds"),
        )
    except annotation_services.ValidationFailed as exc:
        return JsonResponse({"errors": exc.errors}, status=400)
    except annotation_services.SubmissionError as exc:
        return JsonResponse({"detail": str(exc)}, status=exc.status)
    return JsonResponse({"assignment": done.pk, "status": done.status})


def _submit_form(request, project, assignment, worker, b):
    form = HITSubmitForm(request.POST)
    item_ids = [item.pk for item in annotation_services.assignment_items(assignment)]
    responses = parse_item_responses(request.POST, item_ids)
    if not form.is_valid() or form.cleaned_data["assignment"] != assignment.pk:
        lines = [f"{f}: {' '.join(e)}" for f, e in form.errors.items()] or ["assignment: does not match this HIT"]
        return _render_hit(request, project, assignment, b, values=responses, general_errors=lines, status=400)
    feedback = form.cleaned_data["feedback"]
    try:
        annotation_services.submit_assignment(
            assignment, worker, responses, feedback=feedback, client_seconds=form.cleaned_data["client_seconds"]
        )
    except annotation_services.ValidationFailed as exc:
        return _render_hit(
            request,
            project,
            assignment,
            b,
            values=responses,
            feedback=feedback,
            status=400,
            **refused_submission(exc.errors, item_ids),
        )
    except annotation_services.SubmissionError as exc:
        return _notice(request, "Could not submit", [str(exc)], status=exc.status)
    assignment.refresh_from_db()
    return _handoff(request, project, b, assignment)


@framed_by_mturk
@csrf_exempt
def fake_external_submit(request):
    """Local stand-in for MTurk's externalSubmit (DEBUG or ARGORA_MTURK_FAKE_TURK only): records the POST."""
    if not binding_mod.fake_turk_enabled():
        raise Http404("not available")
    data = {
        k: request.POST.get(k) if request.method == "POST" else request.GET.get(k)
        for k in (request.POST if request.method == "POST" else request.GET)
    }
    RECEIVED.append({"method": request.method, "data": data})
    return render(request, "mturk/fake_turk.html", {"method": request.method, "data": sorted(data.items())})


# --- staff panel --------------------------------------------------------------------------------
PANEL_ACTIONS = ("publish", "sync", "sync_blocks", "expire", "extend", "wage_topups")
MAX_EXTEND_HOURS = 365 * 24  # MTurk's longest HIT lifetime is one year


def _hours(value) -> int:
    """The panel's "extend by" field: whole hours, 1 .. one year (empty = 24)."""
    if value in (None, ""):
        return 24
    try:
        hours = int(value)
    except (TypeError, ValueError):
        raise publishing.PublishError("hours", f"{value!r} is not a whole number of hours") from None
    if not 1 <= hours <= MAX_EXTEND_HOURS:
        raise publishing.PublishError("hours", f"extend by 1 to {MAX_EXTEND_HOURS} hours, not {hours}")
    return hours


@expert_required
@require_http_methods(["GET", "POST"])
def panel(request, slug: str):
    project = team_project(request, slug, access.CHANGE if request.method == "POST" else access.VIEW)
    cfg = MTurkProjectSettings.objects.filter(project=project).first()
    if request.method == "POST":
        action = request.POST.get("action", "")
        if action not in PANEL_ACTIONS or cfg is None:
            messages.error(request, f"action: unknown action {action!r} or no MTurk settings")
            return redirect("mturk:panel", slug=slug)
        try:
            if action == "publish":
                if request.POST.get("confirm") != "yes":
                    messages.error(request, "confirm: tick the box to confirm the cost before publishing")
                else:
                    rows = publishing.publish_project(project)
                    messages.success(request, f"published {len(rows)} HIT(s) on {publishing.env_name(cfg.sandbox)}")
            elif action == "sync":
                transaction.on_commit(lambda: sync_project_task.delay(project.pk))
                messages.success(request, "sync queued (see Jobs)")
            elif action == "sync_blocks":
                n = publishing.sync_blocks(sandbox=cfg.sandbox, project=project)
                messages.success(request, f"blocked {n} worker(s) on MTurk")
            elif action == "expire":
                messages.success(request, f"expired {publishing.expire_hits(project)} HIT(s)")
            elif action == "extend":
                hours = _hours(request.POST.get("hours"))
                messages.success(request, f"extended {publishing.extend_hits(project, seconds=hours * 3600)} HIT(s)")
            elif action == "wage_topups":
                n = len(sync.plan_wage_topups(project))
                messages.success(request, f"planned {n} wage top-up bonus(es); the next sync pays them")
        except (publishing.PublishError, MTurkError, ValueError) as exc:
            messages.error(request, str(exc))
        else:  # what was done (a publish not confirmed did nothing)
            if action != "publish" or request.POST.get("confirm") == "yes":
                teams.record(project, request.user, f"mturk.{action}", {"sandbox": cfg.sandbox})
        return redirect("mturk:panel", slug=slug)
    balance, balance_error = None, ""
    preview = None
    if cfg is not None:
        try:
            balance = account_balance(cfg.sandbox)
        except MTurkError as exc:
            balance_error = str(exc)
        except Exception as exc:  # noqa: BLE001 - no credentials in this environment
            balance_error = f"{type(exc).__name__}: {exc}"
        preview = payments.cost_preview(project)
    hits = MTurkHIT.objects.filter(project=project).select_related("hit")
    status_counts: dict[str, int] = {}
    for row in hits:
        status_counts[row.status] = status_counts.get(row.status, 0) + 1
    return render(
        request,
        "mturk/panel.html",
        {
            "project": project,
            "cfg": cfg,
            "hits": hits[:200],
            "hit_count": hits.count(),
            "status_counts": status_counts,
            "cost": sync.cost_so_far(project),
            "balance": balance,
            "balance_error": balance_error,
            "preview": preview,
            "wage": payments.wage_check(project),
            "external_url": publishing.external_url(project),
            "operations": MTurkOperation.objects.filter(project=project)[:50],
            "pending_ops": MTurkOperation.objects.filter(project=project).exclude(status="done").count(),
        },
    )
