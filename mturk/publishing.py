"""Publishing a project on MTurk: ExternalQuestion HITs, qualification requirements, the qualification test,
the block list.

Every HIT is created through :func:`mturk.client.call_once` (key ``create_hit:<env>:<argora hit id>``, with a
UniqueRequestToken from that key and the key in RequesterAnnotation), so publishing twice, or after a crash,
never creates a second MTurk HIT for the same Argora HIT.
"""

from __future__ import annotations

from datetime import UTC, datetime
from xml.sax.saxutils import escape

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.models import HIT, Project, Worker
from argora.errors import FieldError

from . import payments
from .client import MTurkError, call_once, get_client, request_token
from .models import (
    QUAL_APPROVAL_RATE,
    QUAL_APPROVED_HITS,
    QUAL_LOCALE,
    QUAL_MASTERS,
    MTurkHIT,
    MTurkProjectSettings,
)

EXTERNAL_QUESTION_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
)


class PublishError(FieldError):
    """A set-up problem naming the field to fix."""


def env_name(sandbox: bool) -> str:
    return "sandbox" if sandbox else "production"


def settings_for(project: Project) -> MTurkProjectSettings:
    cfg = MTurkProjectSettings.objects.filter(project=project).first()
    if cfg is None:
        raise PublishError(
            "mturk",
            f"project {project.slug!r} has no MTurk settings: add them in the admin (MTurk project settings) first",
        )
    return cfg


def external_url(project: Project) -> str:
    return settings.ARGORA_PUBLIC_URL.rstrip("/") + reverse("mturk:external", args=[project.slug])


def external_question_xml(url: str, frame_height: int) -> str:
    """The ExternalQuestion data structure (schema 2006-07-14): the URL must be HTTPS."""
    return (
        f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_NS}">'
        f"<ExternalURL>{escape(url)}</ExternalURL><FrameHeight>{int(frame_height)}</FrameHeight>"
        "</ExternalQuestion>"
    )


def qualification_requirements(cfg: MTurkProjectSettings, *, sandbox: bool) -> list[dict]:
    """MTurk QualificationRequirements: approval rate, approved HITs, locale, Masters, the custom test."""
    reqs: list[dict] = []
    if cfg.min_approval_rate is not None:
        reqs.append(
            {
                "QualificationTypeId": QUAL_APPROVAL_RATE,
                "Comparator": "GreaterThanOrEqualTo",
                "IntegerValues": [int(cfg.min_approval_rate)],
                "ActionsGuarded": "Accept",
            }
        )
    if cfg.min_approved_hits is not None:
        reqs.append(
            {
                "QualificationTypeId": QUAL_APPROVED_HITS,
                "Comparator": "GreaterThanOrEqualTo",
                "IntegerValues": [int(cfg.min_approved_hits)],
                "ActionsGuarded": "Accept",
            }
        )
    locales = cfg.locale_list
    if len(locales) == 1:
        reqs.append(
            {
                "QualificationTypeId": QUAL_LOCALE,
                "Comparator": "EqualTo",
                "LocaleValues": [{"Country": locales[0]}],
                "ActionsGuarded": "Accept",
            }
        )
    elif locales:
        reqs.append(
            {
                "QualificationTypeId": QUAL_LOCALE,
                "Comparator": "In",
                "LocaleValues": [{"Country": c} for c in locales],
                "ActionsGuarded": "Accept",
            }
        )
    if cfg.require_masters:
        reqs.append(
            {"QualificationTypeId": QUAL_MASTERS[bool(sandbox)], "Comparator": "Exists", "ActionsGuarded": "Accept"}
        )
    if cfg.has_qualification_test:
        if not cfg.qualification_type_id:
            raise PublishError("qualification_type_id", "create the qualification test first")
        reqs.append(
            {
                "QualificationTypeId": cfg.qualification_type_id,
                "Comparator": "GreaterThanOrEqualTo",
                "IntegerValues": [int(cfg.qualification_min_score)],
                "ActionsGuarded": "Accept",
            }
        )
    return reqs


def ensure_qualification_type(cfg: MTurkProjectSettings, *, sandbox: bool | None = None) -> str | None:
    """Create the project's qualification test (QuestionForm + AnswerKey) once; returns its type id."""
    if not cfg.has_qualification_test:
        return None
    if cfg.qualification_type_id:
        return cfg.qualification_type_id
    sandbox = cfg.sandbox if sandbox is None else sandbox
    project = cfg.project
    params = {
        "Name": cfg.qualification_name or f"Argora: {project.name} ({project.slug})",
        "Keywords": cfg.keywords,
        "Description": f"Qualification test for {project.name}",
        "QualificationTypeStatus": "Active",
        "Test": cfg.qualification_test_xml,
        "TestDurationInSeconds": int(cfg.qualification_test_duration_seconds),
    }
    if cfg.qualification_answer_key_xml.strip():
        params["AnswerKey"] = cfg.qualification_answer_key_xml
    if cfg.qualification_retry_delay_seconds is not None:
        params["RetryDelayInSeconds"] = int(cfg.qualification_retry_delay_seconds)
    op = call_once(
        f"create_qualification_type:{env_name(sandbox)}:{project.pk}",
        "create_qualification_type",
        params,
        sandbox=sandbox,
        project=project,
    )
    type_id = op.response["QualificationType"]["QualificationTypeId"]
    MTurkProjectSettings.objects.filter(pk=cfg.pk).update(qualification_type_id=type_id)
    cfg.qualification_type_id = type_id
    return type_id


def grant_qualification(cfg: MTurkProjectSettings, worker_id: str, value: int = 1, *, sandbox: bool | None = None):
    """Give a worker the project's qualification (e.g. after an offline test), logged and idempotent."""
    sandbox = cfg.sandbox if sandbox is None else sandbox
    type_id = ensure_qualification_type(cfg, sandbox=sandbox)
    if not type_id:
        raise PublishError("qualification_test_xml", "this project has no qualification")
    return call_once(
        f"associate_qualification:{env_name(sandbox)}:{type_id}:{worker_id}:{value}",
        "associate_qualification_with_worker",
        {"QualificationTypeId": type_id, "WorkerId": worker_id, "IntegerValue": int(value), "SendNotification": True},
        sandbox=sandbox,
        project=cfg.project,
    )


def _parse_time(value) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        parsed = parse_datetime(value)
        if parsed is not None and parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed
    return None


def _find_hit_by_annotation(sandbox: bool, annotation: str) -> dict | None:
    """After an interrupted CreateHIT: look the HIT up by its RequesterAnnotation (ListHITs, all pages)."""
    client = get_client(sandbox)
    token = None
    for _ in range(1000):
        kwargs = {"MaxResults": 100}
        if token:
            kwargs["NextToken"] = token
        page = client.list_hits(**kwargs)
        for hit in page.get("HITs", []):
            if hit.get("RequesterAnnotation") == annotation:
                return {"HIT": hit}
        token = page.get("NextToken")
        if not token:
            return None
    return None


def check_publishable(project: Project, cfg: MTurkProjectSettings) -> None:
    if project.status != Project.Status.ACTIVE:
        raise PublishError(
            "status",
            f"project {project.slug!r} is {project.status}: activate it before publishing "
            "(MTurk workers would find it closed)",
        )
    if not settings.ARGORA_PUBLIC_URL.startswith("https://"):
        raise PublishError(
            "ARGORA_PUBLIC_URL",
            f"{settings.ARGORA_PUBLIC_URL!r} is not HTTPS; MTurk only frames "
            "HTTPS pages (set ARGORA_PUBLIC_URL=https://your.host)",
        )
    if not cfg.title.strip():
        raise PublishError("title", "give the HITs a title")
    if not cfg.description.strip():
        raise PublishError("description", "give the HITs a description")
    if not HIT.objects.filter(project=project).exists():
        raise PublishError("hits", "the project has no HITs: add items and build HITs first")


def publish_project(
    project: Project, *, sandbox: bool | None = None, pilot: bool = True, limit: int | None = None
) -> list[MTurkHIT]:
    """Create one MTurk HIT (ExternalQuestion, MaxAssignments = R) per Argora HIT not yet published in this
    environment. Returns the MTurkHIT rows created now. Raises :class:`PublishError` or MTurkError."""
    cfg = settings_for(project)
    sandbox = cfg.sandbox if sandbox is None else bool(sandbox)
    check_publishable(project, cfg)
    ensure_qualification_type(cfg, sandbox=sandbox)
    reward, _seconds, _source = payments.reward_cents_for(project, pilot=pilot)
    if reward <= 0:
        raise PublishError("reward_cents", "the reward would be $0.00: set a reward, a time estimate or run a pilot")
    env = env_name(sandbox)
    published = MTurkHIT.objects.filter(project=project, sandbox=sandbox).values("hit_id")
    todo = list(HIT.objects.filter(project=project).exclude(pk__in=published).order_by("position"))
    if limit is not None:
        todo = todo[:limit]
    question = external_question_xml(external_url(project), cfg.frame_height or settings.ARGORA_MTURK_FRAME_HEIGHT)
    base = {
        "MaxAssignments": int(project.assignments_per_item),
        "AutoApprovalDelayInSeconds": int(cfg.auto_approval_delay_seconds),
        "LifetimeInSeconds": int(cfg.lifetime_seconds),
        "AssignmentDurationInSeconds": int(cfg.assignment_duration_seconds),
        "Reward": payments.mturk_amount(reward),
        "Title": cfg.title,
        "Keywords": cfg.keywords,
        "Description": cfg.description,
        "Question": question,
        "QualificationRequirements": qualification_requirements(cfg, sandbox=sandbox),
    }
    created: list[MTurkHIT] = []
    for hit in todo:
        key = f"create_hit:{env}:{hit.pk}"
        annotation = f"argora:{project.slug}:{hit.pk}"[:255]
        params = dict(base, RequesterAnnotation=annotation, UniqueRequestToken=request_token(key))
        op = call_once(
            key,
            "create_hit",
            params,
            sandbox=sandbox,
            project=project,
            already_done=lambda _op, a=annotation: _find_hit_by_annotation(sandbox, a),
            duplicate_ok=False,
        )
        created.append(_record_hit(project, hit, op.response["HIT"], sandbox=sandbox, reward=reward))
    return created


def _record_hit(project: Project, hit: HIT, data: dict, *, sandbox: bool, reward: int) -> MTurkHIT:
    with transaction.atomic():
        row, _ = MTurkHIT.objects.get_or_create(
            mturk_hit_id=data["HITId"],
            defaults={
                "project": project,
                "hit": hit,
                "hit_type_id": data.get("HITTypeId", ""),
                "sandbox": sandbox,
                "status": data.get("HITStatus", "Assignable"),
                "max_assignments": data.get("MaxAssignments") or project.assignments_per_item,
                "reward_cents": reward,
                "created_at": _parse_time(data.get("CreationTime")) or timezone.now(),
                "expires_at": _parse_time(data.get("Expiration")),
            },
        )
    return row


# --- HIT lifetime -------------------------------------------------------------------------------
def _expiry_tag(row: MTurkHIT) -> str:
    """The HIT's expiry as Argora last recorded it, part of the expire / extend keys: expiring again after an
    extension is a new call (a fixed ``expire:<hit>`` key would find the first expiry done and call nothing)."""
    return row.expires_at.isoformat() if row.expires_at else "none"


def expire_hits(project: Project, *, hits=None) -> int:
    """Stop the project's HITs from taking new workers now (UpdateExpirationForHIT with a past time).

    Without ``hits``: every HIT of the project that is not expired already (locally marked Expired or past its
    recorded expiry). The call is logged under ``expire:<hit id>:<expiry before the call>``, so a retry after a
    crash repeats nothing, while an expire after an extend (a new expiry) calls MTurk again.
    """
    if hits is None:
        hits = (
            MTurkHIT.objects.filter(project=project).exclude(status="Expired").exclude(expires_at__lte=timezone.now())
        )
    rows = list(hits)
    past = datetime(2015, 1, 1, tzinfo=UTC)
    for row in rows:
        call_once(
            f"expire:{row.mturk_hit_id}:{_expiry_tag(row)}",
            "update_expiration_for_hit",
            {"HITId": row.mturk_hit_id, "ExpireAt": past},
            sandbox=row.sandbox,
            project=project,
        )
        MTurkHIT.objects.filter(pk=row.pk).update(status="Expired", expires_at=timezone.now())
    return len(rows)


def extend_hits(project: Project, *, seconds: int, hits=None) -> int:
    """Move the expiry of the project's HITs to ``seconds`` from now (key: ``extend:<hit>:<old>:<new>``)."""
    if seconds <= 0:
        raise PublishError("seconds", "extend by a positive number of seconds")
    new = (timezone.now() + timezone.timedelta(seconds=seconds)).replace(microsecond=0)
    rows = list(hits if hits is not None else MTurkHIT.objects.filter(project=project))
    for row in rows:
        call_once(
            f"extend:{row.mturk_hit_id}:{_expiry_tag(row)}:{new.isoformat()}",
            "update_expiration_for_hit",
            {"HITId": row.mturk_hit_id, "ExpireAt": new},
            sandbox=row.sandbox,
            project=project,
        )
        MTurkHIT.objects.filter(pk=row.pk).update(status="Assignable", expires_at=new)
    return len(rows)


def refresh_hit(row: MTurkHIT) -> dict:
    """GetHIT (read-only, not logged): store MTurk's HITStatus, expiry and MaxAssignments on the row."""
    data = get_client(row.sandbox).get_hit(HITId=row.mturk_hit_id).get("HIT", {})
    values = {"status": data.get("HITStatus") or row.status, "synced_at": timezone.now()}
    expires = _parse_time(data.get("Expiration"))
    if expires is not None:
        values["expires_at"] = expires
    if data.get("MaxAssignments"):
        values["max_assignments"] = int(data["MaxAssignments"])
    MTurkHIT.objects.filter(pk=row.pk).update(**values)
    for name, value in values.items():
        setattr(row, name, value)
    return data


# --- block list ---------------------------------------------------------------------------------
def blocked_on_mturk(sandbox: bool) -> set[str]:
    client = get_client(sandbox)
    found: set[str] = set()
    token = None
    for _ in range(10000):
        kwargs = {"MaxResults": 100}
        if token:
            kwargs["NextToken"] = token
        page = client.list_worker_blocks(**kwargs)
        found |= {b["WorkerId"] for b in page.get("WorkerBlocks", [])}
        token = page.get("NextToken")
        if not token:
            break
    return found


def sync_blocks(*, sandbox: bool = True, project: Project | None = None) -> int:
    """Argora's blocked MTurk workers -> CreateWorkerBlock (those not blocked on MTurk yet); returns how many."""
    blocked = list(Worker.objects.filter(source=Worker.Source.MTURK, blocked=True).exclude(external_id=""))
    if not blocked:
        return 0
    already = blocked_on_mturk(sandbox)
    n = 0
    for worker in blocked:
        if worker.external_id in already:
            continue
        reason = (worker.blocked_reason or "Failed the quality checks of an Argora annotation project.")[:1000]
        since = int(worker.blocked_at.timestamp()) if worker.blocked_at else 0
        call_once(
            f"block:{env_name(sandbox)}:{worker.external_id}:{since}",
            "create_worker_block",
            {"WorkerId": worker.external_id, "Reason": reason},
            sandbox=sandbox,
            project=project,
        )
        n += 1
    return n


__all__ = [
    "MTurkError",
    "PublishError",
    "ensure_qualification_type",
    "expire_hits",
    "extend_hits",
    "external_question_xml",
    "external_url",
    "grant_qualification",
    "publish_project",
    "qualification_requirements",
    "refresh_hit",
    "settings_for",
    "sync_blocks",
]
