"""Publishing a project on Prolific: the reward from the wage floor, the cost preview, the draft study, and its
transitions (publish, pause, start again, add places). Every change goes through :func:`prolific.client.call_once`.

Reward rule
    reward per place = the study's hourly wage (default: the floor ``ARGORA_PROLIFIC_MIN_HOURLY_CENTS``) x the
    estimated minutes, rounded UP to the cent; a reward set by hand must pay at least the floor for the estimated time,
    or the study is refused (``reward_cents: ...``) before anything is sent.

Cost
    Prolific's ``POST /api/v1/study-cost-calculator/`` (reward, places) answers the total with its fees and VAT for
    the account; when it cannot be reached the preview says so and shows rewards only.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from annotation.crowd import pay
from annotation.models import HIT, Project
from argora.errors import FieldError

from .client import ProlificError, call_once, get, request
from .models import MIN_REJECTION_MESSAGE, ProlificOperation, ProlificStudy

PLACEHOLDERS = "PROLIFIC_PID={%PROLIFIC_PID%}&STUDY_ID={%STUDY_ID%}&SESSION_ID={%SESSION_ID%}"
DEVICES = {"desktop", "tablet", "mobile"}
SYMBOLS = {"GBP": "£", "USD": "$", "EUR": "€"}


class PublishError(FieldError):
    """A set-up problem naming the field to fix."""


def money(cents: int | float | Decimal | None) -> str:
    if cents is None:
        return "-"
    currency = settings.ARGORA_PROLIFIC_CURRENCY
    symbol = SYMBOLS.get(currency)
    amount = f"{Decimal(str(cents)) / 100:,.2f}"
    return f"{symbol}{amount}" if symbol else f"{amount} {currency}"


def settings_for(project: Project) -> ProlificStudy:
    cfg = ProlificStudy.objects.filter(project=project).first()
    if cfg is None:
        raise PublishError(
            "prolific",
            f"project {project.slug!r} has no Prolific study settings: add them on the "
            "Prolific panel or in the admin first",
        )
    return cfg


def entry_url(project: Project) -> str:
    """This site's study URL for Prolific, with the placeholders Prolific fills in for each participant."""
    return settings.ARGORA_PUBLIC_URL.rstrip("/") + reverse("prolific:start", args=[project.slug]) + "?" + PLACEHOLDERS


def floor_cents() -> int:
    return int(settings.ARGORA_PROLIFIC_MIN_HOURLY_CENTS)


def wage_cents(cfg: ProlificStudy) -> int:
    return int(cfg.hourly_wage_cents or floor_cents())


def reward_for_wage(hourly_cents: int, minutes: float) -> int:
    """Cents so that ``minutes`` of work pay ``hourly_cents`` per hour, rounded UP (the crowd platforms' rule)."""
    return pay.reward_for_wage(hourly_cents, minutes * 60)


def reward_cents(cfg: ProlificStudy) -> tuple[int, str]:
    """(reward per place, "fixed" | "wage")."""
    if cfg.reward_cents:
        return int(cfg.reward_cents), "fixed"
    return reward_for_wage(wage_cents(cfg), cfg.estimated_minutes), "wage"


def hourly_cents(reward: int, minutes: float) -> int:
    return int(Decimal(reward) * 60 / Decimal(str(minutes))) if minutes > 0 else 0


def check_wage(cfg: ProlificStudy) -> None:
    """Refuse a reward below the wage floor for the estimated time (the field to fix is named)."""
    floor = floor_cents()
    if cfg.estimated_minutes < 1:
        raise PublishError("estimated_minutes", "give the estimated completion time in whole minutes (at least 1)")
    if cfg.hourly_wage_cents is not None and cfg.hourly_wage_cents < floor:
        raise PublishError(
            "hourly_wage_cents",
            f"{money(cfg.hourly_wage_cents)}/h is below the wage floor of "
            f"{money(floor)}/h (ARGORA_PROLIFIC_MIN_HOURLY_CENTS)",
        )
    reward, _source = reward_cents(cfg)
    if reward * 60 < floor * cfg.estimated_minutes:
        needed = reward_for_wage(floor, cfg.estimated_minutes)
        raise PublishError(
            "reward_cents",
            f"{money(reward)} for {cfg.estimated_minutes} min pays "
            f"{money(hourly_cents(reward, cfg.estimated_minutes))}/h, below the wage "
            f"floor of {money(floor)}/h (ARGORA_PROLIFIC_MIN_HOURLY_CENTS): raise the "
            f"reward to at least {money(needed)} or lower the estimated time",
        )


def check_settings(cfg: ProlificStudy) -> None:
    """Everything Prolific needs before a draft is created (or a change is sent), each refusal naming its field."""
    if not cfg.name.strip():
        raise PublishError("name", "give the study a title")
    if not cfg.description.strip():
        raise PublishError("description", "give the study a description")
    if cfg.places < 1:
        raise PublishError("places", "at least 1 place")
    check_wage(cfg)
    unknown = set(cfg.devices) - DEVICES
    if not cfg.devices or unknown:
        raise PublishError("device_compatibility", f"choose from {', '.join(sorted(DEVICES))}")
    if len(cfg.rejection_message.strip()) < MIN_REJECTION_MESSAGE:
        raise PublishError(
            "rejection_message",
            f"Prolific needs at least {MIN_REJECTION_MESSAGE} characters "
            f"(this one has {len(cfg.rejection_message.strip())})",
        )
    if not cfg.completed_code.strip():
        raise PublishError("completed_code", "give a completion code")
    for name in ("completed_actions", "screened_out_actions"):
        actions = getattr(cfg, name)
        if (
            not isinstance(actions, list)
            or not actions
            or not all(isinstance(a, dict) and isinstance(a.get("action"), str) and a["action"] for a in actions)
        ):
            raise PublishError(
                name, 'a list of actions, e.g. [{"action": "MANUALLY_REVIEW"}] (Prolific needs at least one per code)'
            )
    if cfg.screened_out_code and cfg.screened_out_code == cfg.completed_code:
        raise PublishError("screened_out_code", "must differ from the completed code")


def check_publishable(project: Project, cfg: ProlificStudy) -> None:
    if project.status != Project.Status.ACTIVE:
        raise PublishError(
            "status",
            f"project {project.slug!r} is {project.status}: activate it before publishing "
            "(participants would find it closed)",
        )
    if not settings.ARGORA_PUBLIC_URL.startswith("https://"):
        raise PublishError(
            "ARGORA_PUBLIC_URL",
            f"{settings.ARGORA_PUBLIC_URL!r} is not HTTPS; Prolific sends "
            "participants to HTTPS study URLs (set ARGORA_PUBLIC_URL=https://...)",
        )
    if not HIT.objects.filter(project=project).exists():
        raise PublishError("hits", "the project has no HITs: add items and build HITs first")
    check_settings(cfg)


# --- settings ------------------------------------------------------------------------------------
EDITABLE = (
    "name",
    "description",
    "places",
    "estimated_minutes",
    "maximum_allowed_minutes",
    "reward_cents",
    "hourly_wage_cents",
    "device_compatibility",
    "completed_code",
    "completed_actions",
    "screened_out_code",
    "screened_out_code_type",
    "screened_out_actions",
    "approval_policy",
    "rejection_message",
    "rejection_category",
)


@transaction.atomic
def save_study_settings(project: Project, values: dict) -> ProlificStudy:
    """Create or change a project's study settings (the panel's form); all or nothing, refusals name the field.
    Once the study exists on Prolific, its places change only through :func:`add_places`."""
    cfg = ProlificStudy.objects.select_for_update().filter(project=project).first() or ProlificStudy(project=project)
    apply_settings(cfg, values)
    cfg.save()
    return cfg


def apply_settings(cfg: ProlificStudy, values: dict) -> ProlificStudy:
    """Set ``values`` on ``cfg`` (not saved) and check them: what :func:`save_study_settings` saves, and what the
    admin's form checks before it saves through it."""
    unknown = set(values) - set(EDITABLE)
    if unknown:
        raise PublishError(sorted(unknown)[0], "cannot be changed here")
    if cfg.study_id and "places" in values and values["places"] != cfg.places:
        raise PublishError("places", 'the study exists on Prolific: use "add places"')
    for name, value in values.items():
        setattr(cfg, name, value)
    check_settings(cfg)
    return cfg


# --- cost ----------------------------------------------------------------------------------------
@dataclass
class CostPreview:
    reward_cents: int
    reward_source: str  # "fixed" or "wage"
    estimated_minutes: int
    hourly_cents: int  # what the reward pays for the estimated time
    floor_cents: int
    places: int
    rewards_total_cents: int
    total_cost_cents: int | None  # Prolific's study-cost-calculator: rewards + fees + VAT
    currency: str
    warnings: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)

    def lines(self) -> list[str]:
        out = [
            f"reward {money(self.reward_cents)} per place for {self.estimated_minutes} min = "
            f"{money(self.hourly_cents)}/h (floor {money(self.floor_cents)}/h"
            f"{', from the hourly wage' if self.reward_source == 'wage' else ''})",
            f"places: {self.places} -> rewards {money(self.rewards_total_cents)}",
        ]
        if self.total_cost_cents is not None:
            out.append(
                f"total with Prolific's fees and VAT: {money(self.total_cost_cents)} (Prolific's cost calculator)"
            )
        return out + [f"WARNING: {w}" for w in self.warnings]


def cost_preview(project: Project, *, places: int | None = None, ask_prolific: bool = True) -> CostPreview:
    """What the study costs; ``places`` default: the study's places. Prolific's cost calculator is read-only (not
    logged); its answer is kept on the settings row."""
    cfg = settings_for(project)
    reward, source = reward_cents(cfg)
    places = cfg.places if places is None else places
    warnings = []
    try:
        check_wage(cfg)
    except PublishError as exc:
        warnings.append(str(exc))
    total = None
    if ask_prolific:
        try:
            # read-only and shown on the panel: one try, a page never waits for retries
            answer = (
                request(
                    "POST",
                    "study-cost-calculator/",
                    retries=0,
                    body={"reward": reward, "total_available_places": places},
                ).data
                or {}
            )
            total = int(math.ceil(float(answer["total_cost"])))
            ProlificStudy.objects.filter(pk=cfg.pk).update(total_cost_cents=total)
        except (ProlificError, KeyError, TypeError, ValueError) as exc:
            warnings.append(
                f"Prolific's cost calculator is unavailable ({exc}); the total shown is rewards only, "
                f"without Prolific's fees and VAT"
            )
    return CostPreview(
        reward_cents=reward,
        reward_source=source,
        estimated_minutes=cfg.estimated_minutes,
        hourly_cents=hourly_cents(reward, cfg.estimated_minutes),
        floor_cents=floor_cents(),
        places=places,
        rewards_total_cents=reward * places,
        total_cost_cents=total,
        currency=settings.ARGORA_PROLIFIC_CURRENCY,
        warnings=warnings,
    )


# --- the study on Prolific -----------------------------------------------------------------------
def internal_name(cfg: ProlificStudy) -> str:
    return f"argora:{cfg.project.slug}:{cfg.pk}"


def completion_codes(cfg: ProlificStudy) -> list[dict]:
    codes = [
        {
            "code": cfg.completed_code,
            "code_type": "COMPLETED",
            "actor": "participant",
            "actions": cfg.completed_actions or [{"action": "MANUALLY_REVIEW"}],
        }
    ]
    if cfg.screened_out_code:
        codes.append(
            {
                "code": cfg.screened_out_code,
                "code_type": cfg.screened_out_code_type or "SCREENED_OUT",
                "actor": "participant",
                "actions": cfg.screened_out_actions or [{"action": "MANUALLY_REVIEW"}],
            }
        )
    return codes


def study_body(project: Project, cfg: ProlificStudy) -> dict:
    reward, _source = reward_cents(cfg)
    body = {
        "name": cfg.name,
        "internal_name": internal_name(cfg),
        "description": cfg.description,
        "external_study_url": entry_url(project),
        "prolific_id_option": "url_parameters",
        "completion_codes": completion_codes(cfg),
        "total_available_places": int(cfg.places),
        "estimated_completion_time": int(cfg.estimated_minutes),
        "reward": reward,
        "device_compatibility": cfg.devices,
        "peripheral_requirements": [],
    }
    if cfg.maximum_allowed_minutes:
        body["maximum_allowed_time"] = int(cfg.maximum_allowed_minutes)
    return body


def find_study(cfg: ProlificStudy):
    """After an interrupted create: the draft with our internal name, if Prolific has it (a definitive answer)."""
    data = get("studies/") or {}
    for study in data.get("results", []) if isinstance(data, dict) else data:
        if study.get("internal_name") == internal_name(cfg):
            return study
    return None


def _store_study(cfg: ProlificStudy, data: dict) -> None:
    values = {"synced_at": timezone.now()}
    if data.get("id"):
        values["study_id"] = data["id"]
    if data.get("status"):
        values["status"] = data["status"]
    if data.get("total_available_places"):
        values["places"] = int(data["total_available_places"])
    ProlificStudy.objects.filter(pk=cfg.pk).update(**values)
    for name, value in values.items():
        setattr(cfg, name, value)


def create_study(project: Project) -> ProlificStudy:
    """Create the draft study on Prolific (once: a second call returns the study made by the first)."""
    cfg = settings_for(project)
    if cfg.study_id:
        return cfg
    check_publishable(project, cfg)
    op = call_once(
        f"create_study:{cfg.pk}",
        "create_study",
        "POST",
        "studies/",
        study_body(project, cfg),
        project=project,
        repeatable=False,
        already_done=lambda _op: find_study(cfg),
    )
    apply_create(op)
    cfg.refresh_from_db()
    return cfg


def apply_create(op: ProlificOperation) -> None:
    cfg = ProlificStudy.objects.filter(project_id=op.project_id).first()
    if cfg is not None and isinstance(op.response, dict) and op.response.get("id"):
        _store_study(cfg, op.response)


def _require_study(project: Project) -> ProlificStudy:
    cfg = settings_for(project)
    if not cfg.study_id:
        raise PublishError("study_id", "create the study on Prolific first")
    return cfg


def _transition(project: Project, cfg: ProlificStudy, action: str) -> ProlificStudy:
    # a sequence number per study: pause, start, pause again are three calls; an interrupted one resumes as itself
    seq = ProlificOperation.objects.filter(
        key__startswith=f"transition:{cfg.study_id}:", status=ProlificOperation.Status.DONE
    ).count()
    op = call_once(
        f"transition:{cfg.study_id}:{seq}:{action}",
        "transition",
        "POST",
        f"studies/{cfg.study_id}/transition/",
        {"action": action},
        project=project,
    )
    apply_transition(op)
    cfg.refresh_from_db()
    return cfg


EXPECTED_STATUS = {"PUBLISH": "ACTIVE", "PAUSE": "PAUSED", "START": "ACTIVE", "STOP": "COMPLETED"}


def apply_transition(op: ProlificOperation) -> None:
    cfg = ProlificStudy.objects.filter(project_id=op.project_id).first()
    if cfg is None:
        return
    action = (op.request.get("body") or {}).get("action", "")
    data = op.response if isinstance(op.response, dict) else {}
    _store_study(cfg, {"status": data.get("status") or EXPECTED_STATUS.get(action, "")})


def publish(project: Project) -> ProlificStudy:
    """Create the draft if needed, then publish it (the wage floor and the set-up are checked first)."""
    cfg = settings_for(project)
    check_publishable(project, cfg)
    cfg = create_study(project)
    if cfg.status.upper() in ("ACTIVE", "PUBLISHING", "SCHEDULED"):
        return cfg
    return _transition(project, cfg, "PUBLISH")


def pause(project: Project) -> ProlificStudy:
    cfg = _require_study(project)
    return _transition(project, cfg, "PAUSE")


def start(project: Project) -> ProlificStudy:
    """Resume a paused study."""
    cfg = _require_study(project)
    return _transition(project, cfg, "START")


def add_places(project: Project, extra: int) -> ProlificStudy:
    """Raise ``total_available_places`` by ``extra`` (PATCH the study)."""
    cfg = _require_study(project)
    try:
        extra = int(extra)
    except (TypeError, ValueError):
        raise PublishError("places", f"{extra!r} is not a whole number") from None
    if extra < 1:
        raise PublishError("places", "add at least 1 place")
    new = cfg.places + extra
    op = call_once(
        f"places:{cfg.study_id}:{cfg.places}->{new}",
        "places",
        "PATCH",
        f"studies/{cfg.study_id}/",
        {"total_available_places": new},
        project=project,
    )
    apply_places(op)
    cfg.refresh_from_db()
    return cfg


def apply_places(op: ProlificOperation) -> None:
    cfg = ProlificStudy.objects.filter(project_id=op.project_id).first()
    if cfg is None:
        return
    data = op.response if isinstance(op.response, dict) else {}
    places = data.get("total_available_places") or (op.request.get("body") or {}).get("total_available_places")
    _store_study(cfg, {"total_available_places": places, "status": data.get("status")})


def refresh_study(cfg: ProlificStudy) -> dict:
    """GET the study (read-only, not logged): its status and places as Prolific has them."""
    data = get(f"studies/{cfg.study_id}/") or {}
    _store_study(cfg, {"status": data.get("status"), "total_available_places": data.get("total_available_places")})
    return data
