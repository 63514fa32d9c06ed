"""Rewards from a wage floor, MTurk's fees, the cost preview and the wage check.

Reward rule
    reward per assignment = target hourly wage x median working time per HIT, rounded UP to the cent
    (:func:`annotation.crowd.pay.reward_for_wage`, the same on every crowd platform).
    The working time is the median ``Assignment.work_seconds`` (server side: submitted_at - reserved_at) of the
    project's submitted/approved assignments (a pilot batch), or, before any pilot, the project's
    ``time_estimate_seconds``.

MTurk fee rules (requester pricing, https://requester.mturk.com/pricing, in force since July 2015)
    * 20% commission on the reward of every assignment and on every bonus;
    * HITs with 10 or more assignments pay 20% more: 40% on the reward (bonuses stay at 20%);
    * Masters qualification: 5% more of the reward;
    * the minimum commission is $0.01 per assignment and per bonus.
    Fees are computed per assignment in cents and rounded half up to the cent, never below 1 cent.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from decimal import ROUND_HALF_UP, Decimal

from annotation.crowd.pay import reward_for_wage
from annotation.models import HIT, Assignment, Project

from .models import MTurkHIT, MTurkProjectSettings

BASE_COMMISSION = Decimal("0.20")
LARGE_HIT_EXTRA = Decimal("0.20")  # 10 or more assignments per HIT
LARGE_HIT_ASSIGNMENTS = 10
MASTERS_EXTRA = Decimal("0.05")
MIN_FEE_CENTS = 1


def commission_rate(assignments_per_hit: int, *, masters: bool = False) -> Decimal:
    rate = BASE_COMMISSION
    if assignments_per_hit >= LARGE_HIT_ASSIGNMENTS:
        rate += LARGE_HIT_EXTRA
    if masters:
        rate += MASTERS_EXTRA
    return rate


def fee_cents(amount_cents: int, assignments_per_hit: int = 1, *, masters: bool = False) -> int:
    """MTurk's fee on one assignment's reward (rounded half up; at least 1 cent when a reward is paid)."""
    if amount_cents <= 0:
        return 0
    fee = (Decimal(amount_cents) * commission_rate(assignments_per_hit, masters=masters)).quantize(
        Decimal("1"), rounding=ROUND_HALF_UP
    )
    return max(MIN_FEE_CENTS, int(fee))


def bonus_fee_cents(amount_cents: int) -> int:
    """MTurk's fee on a bonus: 20%, at least 1 cent."""
    return fee_cents(amount_cents, 1, masters=False)


def dollars(cents: int | Decimal) -> str:
    return f"${Decimal(cents) / 100:,.2f}"


def mturk_amount(cents: int) -> str:
    """MTurk's CurrencyAmount string: "0.25" for 25 cents."""
    return f"{Decimal(cents) / 100:.2f}"


def pilot_seconds(project: Project) -> list[float]:
    return sorted(
        float(s)
        for s in Assignment.objects.filter(
            project=project, status__in=Assignment.DONE, work_seconds__isnull=False
        ).values_list("work_seconds", flat=True)
    )


def median_seconds(project: Project, *, pilot: bool = True) -> tuple[float, str]:
    """(median working seconds per HIT, where it came from: "pilot" or "estimate")."""
    if pilot:
        times = pilot_seconds(project)
        if times:
            return float(statistics.median(times)), "pilot"
    return float(project.time_estimate_seconds or 0), "estimate"


@dataclass
class CostPreview:
    source: str  # "pilot" (median of N submitted assignments), "estimate" or "fixed"
    median_seconds: float
    pilot_n: int
    hourly_wage_cents: int
    reward_cents: int
    effective_hourly_cents: int  # reward / median time
    hits: int
    assignments_per_hit: int
    assignments: int
    commission_rate: str  # e.g. "0.20"
    fee_per_assignment_cents: int
    reward_total_cents: int
    fee_total_cents: int
    total_cents: int
    masters: bool
    warnings: list

    def as_dict(self) -> dict:
        return asdict(self)

    def lines(self) -> list[str]:
        timing = (
            f"median {self.median_seconds:.0f} s over {self.pilot_n} pilot assignment(s)"
            if self.source == "pilot"
            else f"estimate {self.median_seconds:.0f} s per HIT"
            if self.source == "estimate"
            else "fixed reward"
        )
        out = [
            f"working time: {timing}",
            f"target wage: {dollars(self.hourly_wage_cents)}/h -> reward {dollars(self.reward_cents)} per assignment "
            f"(effective {dollars(self.effective_hourly_cents)}/h)",
            f"HITs: {self.hits} x {self.assignments_per_hit} assignments = {self.assignments} assignments",
            f"MTurk fee: {Decimal(self.commission_rate) * 100:.0f}% -> {dollars(self.fee_per_assignment_cents)} "
            f"per assignment{' (Masters +5%)' if self.masters else ''}",
            f"rewards {dollars(self.reward_total_cents)} + fees {dollars(self.fee_total_cents)} = "
            f"total {dollars(self.total_cents)}",
        ]
        return out + [f"WARNING: {w}" for w in self.warnings]


def _settings_for(project: Project):
    return MTurkProjectSettings.objects.filter(project=project).first()


def reward_cents_for(project: Project, *, pilot: bool = True) -> tuple[int, float, str]:
    """(reward in cents, median seconds, source) with the project's MTurk settings."""
    cfg = _settings_for(project)
    seconds, source = median_seconds(project, pilot=pilot)
    if cfg is not None and cfg.reward_cents:
        return cfg.reward_cents, seconds, "fixed"
    wage = cfg.target_hourly_wage_cents if cfg is not None else 760
    return reward_for_wage(wage, seconds), seconds, source


def cost_preview(project: Project, *, pilot: bool = True, hits: int | None = None) -> CostPreview:
    """What publishing costs: reward from the wage floor, MTurk's fee, totals (``hits`` default: the project's
    Argora HITs not yet on MTurk)."""
    cfg = _settings_for(project)
    wage = cfg.target_hourly_wage_cents if cfg is not None else 760
    masters = bool(cfg and cfg.require_masters)
    reward, seconds, source = reward_cents_for(project, pilot=pilot)
    if hits is None:
        published = MTurkHIT.objects.filter(project=project, sandbox=bool(cfg.sandbox) if cfg else True)
        hits = HIT.objects.filter(project=project).exclude(pk__in=published.values("hit_id")).count()
    r = project.assignments_per_item
    fee = fee_cents(reward, r, masters=masters)
    n = hits * r
    effective = int(Decimal(reward) * 3600 / Decimal(str(seconds))) if seconds > 0 else 0
    warnings = []
    if seconds <= 0:
        warnings.append("no working time known: run a pilot batch or set the project's time estimate")
    elif effective < wage:
        warnings.append(f"effective pay {dollars(effective)}/h is below the target wage {dollars(wage)}/h")
    return CostPreview(
        source=source,
        median_seconds=seconds,
        pilot_n=len(pilot_seconds(project)) if source == "pilot" else 0,
        hourly_wage_cents=wage,
        reward_cents=reward,
        effective_hourly_cents=effective,
        hits=hits,
        assignments_per_hit=r,
        assignments=n,
        commission_rate=str(commission_rate(r, masters=masters)),
        fee_per_assignment_cents=fee,
        reward_total_cents=reward * n,
        fee_total_cents=fee * n,
        total_cents=(reward + fee) * n,
        masters=masters,
        warnings=warnings,
    )


def wage_check(project: Project) -> dict:
    """Effective hourly pay of the submitted work (reward actually set on MTurk / median work_seconds).

    ``{"ok": bool, "median_seconds", "effective_hourly_cents", "target_hourly_cents", "n", "warning"}``."""
    cfg = _settings_for(project)
    target = cfg.target_hourly_wage_cents if cfg is not None else 760
    times = pilot_seconds(project)
    reward = (
        MTurkHIT.objects.filter(project=project).order_by("-created_at").values_list("reward_cents", flat=True).first()
    )
    if reward is None:
        reward = (cfg.reward_cents if cfg and cfg.reward_cents else project.reward_cents) or 0
    if not times:
        return {
            "ok": True,
            "median_seconds": None,
            "effective_hourly_cents": None,
            "target_hourly_cents": target,
            "n": 0,
            "reward_cents": reward,
            "warning": "",
        }
    median = float(statistics.median(times))
    effective = math.floor(reward * 3600 / median) if median > 0 else 0
    ok = effective >= target
    warning = (
        ""
        if ok
        else (
            f"submitted work pays {dollars(effective)}/h (reward {dollars(reward)}, median {median:.0f} s over "
            f"{len(times)} assignments), below the floor of {dollars(target)}/h: raise the reward "
            f"to {dollars(reward_for_wage(target, median))} or pay wage top-up bonuses"
        )
    )
    return {
        "ok": ok,
        "median_seconds": median,
        "effective_hourly_cents": effective,
        "target_hourly_cents": target,
        "n": len(times),
        "reward_cents": reward,
        "warning": warning,
    }
