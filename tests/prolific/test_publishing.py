"""Publishing against the fake Prolific API: the draft (study URL with the placeholders, completion codes and their
actions, reward from the wage floor), the cost preview from Prolific's calculator, publish / pause / start / add
places, each call logged once; the wage floor refuses before anything is sent; the CLI exits 2 naming the field."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Project
from prolific import publishing
from prolific.models import ProlificOperation, ProlificStudy

from .conftest import STUDY_ID, make_project

pytestmark = pytest.mark.django_db


def test_create_publish_pause_start_and_add_places(fake):
    project = make_project()
    cfg = publishing.create_study(project)
    assert (cfg.study_id, cfg.status) == (STUDY_ID, "UNPUBLISHED")
    [call] = [c for c in fake.calls if c["method"] == "POST" and c["path"] == "studies/"]
    body = call["body"]
    assert call["auth"] == "Token test-token-prolific"
    assert body["external_study_url"] == (
        "https://argora.example.org/prolific/nuclear-prolific/start/?PROLIFIC_PID="
        "{%PROLIFIC_PID%}&STUDY_ID={%STUDY_ID%}&SESSION_ID={%SESSION_ID%}"
    )
    assert body["prolific_id_option"] == "url_parameters"
    # 10 minutes at the floor of GBP 9.00/h = 150 pence per place
    assert (body["reward"], body["estimated_completion_time"], body["total_available_places"]) == (150, 10, 10)
    assert body["completion_codes"] == [
        {
            "code": "DONE2026",
            "code_type": "COMPLETED",
            "actor": "participant",
            "actions": [{"action": "MANUALLY_REVIEW"}],
        },
        {
            "code": "SCREEN26",
            "code_type": "SCREENED_OUT",
            "actor": "participant",
            "actions": [{"action": "MANUALLY_REVIEW"}],
        },
    ]
    assert body["internal_name"] == f"argora:nuclear-prolific:{cfg.pk}"
    # creating again makes no second draft
    assert publishing.create_study(project).study_id == STUDY_ID
    assert fake.paths("POST").count("studies/") == 1

    assert publishing.publish(project).status == "ACTIVE"
    assert publishing.pause(project).status == "PAUSED"
    assert publishing.start(project).status == "ACTIVE"
    assert publishing.pause(project).status == "PAUSED"  # a second pause is a new call
    actions = [c["body"]["action"] for c in fake.calls if c["path"].endswith("/transition/")]
    assert actions == ["PUBLISH", "PAUSE", "START", "PAUSE"]
    assert fake.studies[STUDY_ID]["status"] == "PAUSED"

    assert publishing.add_places(project, 5).places == 15
    assert fake.studies[STUDY_ID]["total_available_places"] == 15
    with pytest.raises(publishing.PublishError) as err:
        publishing.add_places(project, 0)
    assert err.value.field == "places"
    assert ProlificOperation.objects.filter(status="done").count() == 6
    assert not ProlificOperation.objects.exclude(status="done").exists()


def test_cost_preview_uses_prolifics_calculator(fake):
    project = make_project(places=20)
    preview = publishing.cost_preview(project)
    assert (preview.reward_cents, preview.places, preview.rewards_total_cents) == (150, 20, 3000)
    assert preview.total_cost_cents == 4200  # the fake's fees: rewards x 1.4
    assert any("£42.00" in line for line in preview.lines())
    call = [c for c in fake.calls if c["path"] == "study-cost-calculator/"][-1]
    assert call["body"] == {"reward": 150, "total_available_places": 20}
    assert ProlificStudy.objects.get(project=project).total_cost_cents == 4200
    assert not ProlificOperation.objects.exists()  # read-only: not logged


def test_wage_floor_refusal_names_the_field_and_sends_nothing(fake):
    project = make_project(reward_cents=100)  # 100 pence for 10 min = GBP 6.00/h, floor 9.00
    with pytest.raises(publishing.PublishError) as err:
        publishing.publish(project)
    assert err.value.field == "reward_cents"
    assert str(err.value) == (
        "reward_cents: £1.00 for 10 min pays £6.00/h, below the wage floor of £9.00/h "
        "(ARGORA_PROLIFIC_MIN_HOURLY_CENTS): raise the reward to at least £1.50 or lower the "
        "estimated time"
    )
    assert not fake.calls and not ProlificOperation.objects.exists()
    with pytest.raises(publishing.PublishError) as err:
        publishing.save_study_settings(project, {"hourly_wage_cents": 700, "reward_cents": None})
    assert err.value.field == "hourly_wage_cents"
    assert ProlificStudy.objects.get(project=project).reward_cents == 100  # nothing saved
    out = io.StringIO()
    call_command("prolific", "preview-cost", "--project", project.slug, "--offline", "--json", stdout=out)
    assert json.loads(out.getvalue())["warnings"][0].startswith("reward_cents: £1.00 for 10 min")


def test_other_refusals_name_the_field(fake, settings):
    project = make_project(rejection_message="too short")
    with pytest.raises(publishing.PublishError) as err:
        publishing.create_study(project)
    assert err.value.field == "rejection_message"
    Project.objects.filter(pk=project.pk).update(status=Project.Status.DRAFT)
    project.refresh_from_db()
    with pytest.raises(publishing.PublishError) as err:
        publishing.publish(project)
    assert err.value.field == "status"
    settings.ARGORA_PUBLIC_URL = "http://argora.example.org"
    project.status = Project.Status.ACTIVE
    with pytest.raises(publishing.PublishError) as err:
        publishing.check_publishable(project, publishing.settings_for(project))
    assert err.value.field == "ARGORA_PUBLIC_URL"
    assert not fake.calls


def test_cli_exit_codes_and_output(fake):
    project = make_project()
    with pytest.raises(CommandError) as cmd:
        call_command("prolific", "sync", "--project", "nope", stdout=io.StringIO())
    assert cmd.value.returncode == 2 and str(cmd.value) == "prolific: project: no project with slug 'nope'"
    with pytest.raises(CommandError) as cmd:
        call_command("prolific", "pause", "--project", project.slug, stdout=io.StringIO())
    assert cmd.value.returncode == 2 and str(cmd.value) == "prolific: study_id: create the study on Prolific first"
    with pytest.raises(CommandError) as cmd:
        call_command("prolific", "publish", "--project", project.slug, stdout=io.StringIO())  # no terminal, no --yes
    assert cmd.value.returncode == 2 and "--yes" in str(cmd.value)
    assert not fake.changing_calls()
    out = io.StringIO()
    call_command("prolific", "publish", "--project", project.slug, "--yes", stdout=out)
    assert f"study {STUDY_ID} published (ACTIVE)" in out.getvalue() and "£21.00" in out.getvalue()
    with pytest.raises(CommandError) as cmd:
        call_command("prolific", "add-places", "--project", project.slug, "--places", "many", stdout=io.StringIO())
    assert cmd.value.returncode == 2 and str(cmd.value) == "prolific: places: 'many' is not a whole number"
    out = io.StringIO()
    call_command("prolific", "add-places", "--project", project.slug, "--places", "3", stdout=out)
    assert "13 places" in out.getvalue()
    with pytest.raises(CommandError) as cmd:
        call_command(
            "prolific",
            "bonus",
            "--project",
            project.slug,
            "--submission",
            "x",
            "--amount-cents",
            "5",
            "--reason",
            "r",
            stdout=io.StringIO(),
        )
    assert cmd.value.returncode == 2 and str(cmd.value).startswith("prolific: submission: unknown Prolific submission")
    with pytest.raises(CommandError) as cmd:
        call_command("prolific", "resolve", "--key", "nothing", "--happened", stdout=io.StringIO())
    assert cmd.value.returncode == 2 and str(cmd.value) == "prolific: key: no Prolific call is logged under 'nothing'"
