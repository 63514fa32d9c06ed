"""Pay from a wage floor, the same on every crowd platform: the reward that pays an hourly wage for a working time
(rounded UP to the cent, so a rounding never pays below the floor) and the wage top-up bonus that makes up the rest
when the real working time was longer than the reward paid for."""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal

from django.db import IntegrityError, transaction

from .models import Bonus


def reward_for_wage(hourly_cents: int, seconds: float) -> int:
    """Cents so that ``seconds`` of work pay ``hourly_cents`` per hour, rounded UP (0 for no time)."""
    if seconds <= 0:
        return 0
    exact = Decimal(hourly_cents) * Decimal(str(seconds)) / Decimal(3600)
    return int(exact.to_integral_value(rounding=ROUND_CEILING))


def topup_cents(hourly_cents: int, seconds: float, reward_cents: int) -> int:
    """What ``seconds`` of work are still owed at ``hourly_cents`` per hour after a reward of ``reward_cents``."""
    return max(0, reward_for_wage(hourly_cents, seconds) - int(reward_cents))


def plan_topup(model: type[Bonus], *, hourly_cents: int, seconds: float, reward_cents: int, **fields) -> Bonus | None:
    """A ``wage-topup`` bonus for one piece of work (``fields``: its project, its work, the reason), or ``None`` when
    nothing is owed or it has one already (each platform's unique constraint allows one top-up per piece of work)."""
    missing = topup_cents(hourly_cents, seconds, reward_cents)
    if missing < 1:
        return None
    try:
        with transaction.atomic():
            return model.objects.create(amount_cents=missing, kind=Bonus.WAGE_TOPUP, **fields)
    except IntegrityError:
        return None
