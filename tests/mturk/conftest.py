"""MTurk test fixtures: a real boto3 ``mturk`` client wrapped in botocore's Stubber (every call checked against
the real request/response shapes of the API; no network), and a small sentence_label project."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.stub import Stubber

from annotation.models import Project
from mturk import client as mturk_client
from mturk.models import MTurkProjectSettings
from tests.factories import ProjectFactory

TEXTS = [
    "Nuclear power plants emit almost no carbon dioxide while they run.",
    "Nuclear waste stays dangerous for thousands of years.",
    "The plant in the valley opened in 1975.",
    "Modern reactors are among the safest ways to produce electricity.",
]


@pytest.fixture
def stub():
    """``stub.add_response(op, response, expected_params)``; the client talks to the sandbox endpoint."""
    client = boto3.session.Session().client(
        "mturk",
        region_name="us-east-1",
        endpoint_url=mturk_client.SANDBOX_ENDPOINT,
        aws_access_key_id="AKIATESTTESTTESTTEST",
        aws_secret_access_key="test-secret",
    )
    stubber = Stubber(client)
    stubber.activate()
    made = []

    def factory(sandbox):
        made.append(sandbox)
        return client

    mturk_client.set_client_factory(factory)
    stubber.made = made
    try:
        yield stubber
        stubber.assert_no_pending_responses()
    finally:
        stubber.deactivate()
        mturk_client.set_client_factory(None)


def make_project(
    *,
    hits: int = 1,
    r: int = 3,
    items_per_hit: int = 4,
    slug: str = "nuclear-stance",
    time_estimate: int = 120,
    **mturk,
) -> Project:
    project = ProjectFactory(
        name="Nuclear energy: stance",
        slug=slug,
        config={"labels": ["pro", "con", "none"]},
        assignments_per_item=r,
        items_per_hit=items_per_hit,
        time_estimate_seconds=time_estimate,
        items=[
            {"text": TEXTS[i % len(TEXTS)] + f" ({i})", "topic": "nuclear energy"} for i in range(hits * items_per_hit)
        ],
    )
    defaults = {
        "title": "Label the stance of sentences on nuclear energy",
        "description": "Read 4 sentences and say whether each is for or against nuclear energy.",
        "keywords": "argument, stance, nuclear",
        "sandbox": True,
    }
    defaults.update(mturk)
    MTurkProjectSettings.objects.create(project=project, **defaults)
    return project


def hit_response(
    hit_id: str,
    *,
    hit_type: str = "3HITTYPEAAAAAAAAAAAAAAAAAAAAAA",
    max_assignments: int = 3,
    reward: str = "0.26",
    annotation: str = "",
    status: str = "Assignable",
    expiration: datetime | None = None,
) -> dict:
    now = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
    hit = {
        "HITId": hit_id,
        "HITTypeId": hit_type,
        "HITGroupId": "3GROUPAAAAAAAAAAAAAAAAAAAAAAAA",
        "CreationTime": now,
        "Title": "t",
        "Description": "d",
        "HITStatus": status,
        "MaxAssignments": max_assignments,
        "Reward": reward,
        "Expiration": expiration or now + timedelta(days=7),
        "AssignmentDurationInSeconds": 3600,
        "AutoApprovalDelayInSeconds": 259200,
        "NumberOfAssignmentsPending": 0,
        "NumberOfAssignmentsAvailable": max_assignments,
        "NumberOfAssignmentsCompleted": 0,
    }
    if annotation:
        hit["RequesterAnnotation"] = annotation
    return {"HIT": hit}
