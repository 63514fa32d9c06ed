"""Reward from the wage floor and the cost preview with MTurk's fee rules, to the cent."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from annotation.models import HIT, Assignment, Worker
from mturk import payments
from mturk.models import MTurkHIT, MTurkProjectSettings

from .conftest import make_project


def pilot(project, seconds):
    hit = HIT.objects.filter(project=project).first()
    now = timezone.now()
    for i, s in enumerate(seconds):
        worker = Worker.objects.create(source=Worker.Source.MTURK, external_id=f"APILOT{i:04d}")
        Assignment.objects.create(
            project=project,
            hit=hit,
            worker=worker,
            status=Assignment.Status.SUBMITTED,
            reserved_at=now - timedelta(seconds=s),
            expires_at=now + timedelta(hours=1),
            submitted_at=now,
            work_seconds=s,
        )


def test_fee_rules():
    assert payments.fee_cents(32, 3) == 6  # 20% of 32 = 6.4 -> 6
    assert payments.fee_cents(33, 9) == 7  # 6.6 -> 7 (half up)
    assert payments.fee_cents(32, 10) == 13  # 10+ assignments: 40% of 32 = 12.8 -> 13
    assert payments.fee_cents(32, 3, masters=True) == 8  # 25% = 8
    assert payments.fee_cents(2, 3) == 1  # 0.4 -> minimum $0.01
    assert payments.fee_cents(0, 3) == 0
    assert payments.bonus_fee_cents(50) == 10  # bonuses: 20% whatever the HIT size
    assert payments.bonus_fee_cents(1) == 1


def test_reward_for_wage_rounds_up_to_the_cent():
    assert payments.reward_for_wage(760, 150) == 32  # 31.67 -> 32
    assert payments.reward_for_wage(760, 90) == 19  # exactly 19.0 stays 19
    assert payments.reward_for_wage(725, 61) == 13  # 12.28 -> 13
    assert payments.reward_for_wage(760, 0) == 0


@pytest.mark.django_db
def test_cost_preview_from_a_pilot_is_right_to_the_cent():
    project = make_project(hits=2, r=3)
    pilot(project, [100, 150, 200])  # median 150 s
    preview = payments.cost_preview(project, pilot=True)
    assert preview.source == "pilot" and preview.pilot_n == 3 and preview.median_seconds == 150
    assert preview.reward_cents == 32  # $7.60/h x 150 s = 31.67 c, rounded up
    assert preview.fee_per_assignment_cents == 6  # 20%
    assert (preview.hits, preview.assignments) == (2, 6)
    assert preview.reward_total_cents == 192
    assert preview.fee_total_cents == 36
    assert preview.total_cents == 228  # $2.28
    assert preview.effective_hourly_cents == 768 and not preview.warnings
    assert "total $2.28" in "\n".join(preview.lines())


@pytest.mark.django_db
def test_cost_preview_large_hits_masters_and_estimate():
    project = make_project(hits=3, r=10, time_estimate=61, require_masters=True)
    MTurkProjectSettings.objects.filter(project=project).update(target_hourly_wage_cents=725)
    preview = payments.cost_preview(project, pilot=True)  # no pilot yet: the estimate
    assert preview.source == "estimate"
    assert preview.reward_cents == 13  # $7.25/h x 61 s = 12.28 c -> 13
    assert preview.commission_rate == "0.45"  # 20% + 20% (10+ assignments) + 5% Masters
    assert preview.fee_per_assignment_cents == 6  # 13 x 0.45 = 5.85 -> 6
    assert preview.total_cents == 30 * (13 + 6)  # $5.70


@pytest.mark.django_db
def test_fixed_reward_and_wage_warning():
    project = make_project(hits=1, r=3, reward_cents=20)
    pilot(project, [150, 150, 150])
    preview = payments.cost_preview(project)
    assert preview.reward_cents == 20 and preview.source == "fixed"
    assert preview.effective_hourly_cents == 480
    assert any("below the target wage $7.60/h" in w for w in preview.warnings)
    MTurkHIT.objects.create(
        project=project, hit=project.hits.first(), mturk_hit_id="H1", reward_cents=20, created_at=timezone.now()
    )
    check = payments.wage_check(project)
    assert not check["ok"] and check["effective_hourly_cents"] == 480
    assert "below the floor of $7.60/h" in check["warning"] and "$0.32" in check["warning"]


@pytest.mark.django_db
def test_preview_cost_command():
    project = make_project(hits=2, r=3)
    pilot(project, [100, 150, 200])
    out = io.StringIO()
    call_command("mturk", "preview-cost", "--project", project.slug, "--pilot", stdout=out)
    text = out.getvalue()
    assert "reward $0.32 per assignment" in text and "total $2.28" in text
    out = io.StringIO()
    call_command("mturk", "preview-cost", "--project", project.slug, stdout=out)  # the estimate: 120 s
    assert "reward $0.26 per assignment" in out.getvalue()  # 760 x 120 / 3600 = 25.33 -> 26
