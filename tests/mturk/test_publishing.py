"""Publishing with botocore's Stubber: ExternalQuestion HITs with the qualification requirements, the
qualification test, idempotent re-publishing and resuming an interrupted CreateHIT, the block list."""

from __future__ import annotations

import io
from datetime import UTC

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation import services
from annotation.models import Worker
from mturk import publishing
from mturk.client import request_token
from mturk.models import MTurkHIT, MTurkOperation, MTurkProjectSettings

from .conftest import hit_response, make_project

pytestmark = pytest.mark.django_db

QUALS_US_95_100 = [
    {
        "QualificationTypeId": "000000000000000000L0",
        "Comparator": "GreaterThanOrEqualTo",
        "IntegerValues": [95],
        "ActionsGuarded": "Accept",
    },
    {
        "QualificationTypeId": "00000000000000000040",
        "Comparator": "GreaterThanOrEqualTo",
        "IntegerValues": [100],
        "ActionsGuarded": "Accept",
    },
    {
        "QualificationTypeId": "00000000000000000071",
        "Comparator": "EqualTo",
        "LocaleValues": [{"Country": "US"}],
        "ActionsGuarded": "Accept",
    },
]


@pytest.fixture(autouse=True)
def public_url(settings):
    settings.ARGORA_PUBLIC_URL = "https://argora.example.org"


def expected_create(project, hit, *, quals, reward="0.26"):
    key = f"create_hit:sandbox:{hit.pk}"
    return {
        "MaxAssignments": 3,
        "AutoApprovalDelayInSeconds": 259200,
        "LifetimeInSeconds": 604800,
        "AssignmentDurationInSeconds": 3600,
        "Reward": reward,
        "Title": "Label the stance of sentences on nuclear energy",
        "Keywords": "argument, stance, nuclear",
        "Description": "Read 4 sentences and say whether each is for or against nuclear energy.",
        "Question": (
            '<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/'
            '2006-07-14/ExternalQuestion.xsd"><ExternalURL>https://argora.example.org/mturk/external/'
            f"{project.slug}/</ExternalURL><FrameHeight>800</FrameHeight></ExternalQuestion>"
        ),
        "QualificationRequirements": quals,
        "RequesterAnnotation": f"argora:{project.slug}:{hit.pk}",
        "UniqueRequestToken": request_token(key),
    }


def test_publish_creates_external_question_hits_with_qualifications(stub):
    project = make_project(hits=2)
    hits = list(project.hits.order_by("position"))
    for n, hit in enumerate(hits):
        stub.add_response(
            "create_hit",
            hit_response(f"3HIT{n}XXXXXXXXXXXXXXXXXXXXXXXXX"),
            expected_create(project, hit, quals=QUALS_US_95_100),
        )
    rows = publishing.publish_project(project)
    assert [r.mturk_hit_id for r in rows] == ["3HIT0XXXXXXXXXXXXXXXXXXXXXXXXX", "3HIT1XXXXXXXXXXXXXXXXXXXXXXXXX"]
    row = MTurkHIT.objects.get(hit=hits[0])
    assert (row.sandbox, row.reward_cents, row.max_assignments, row.status) == (True, 26, 3, "Assignable")
    assert row.hit_type_id.startswith("3HITTYPE") and row.expires_at is not None
    assert stub.made == [True]  # the sandbox endpoint
    ops = MTurkOperation.objects.filter(operation="create_hit")
    assert ops.count() == 2 and set(ops.values_list("status", flat=True)) == {"done"}
    # publishing again makes no call (the Stubber would fail on an unexpected call)
    assert publishing.publish_project(project) == []


def test_locales_masters_and_qualification_test(stub):
    test_xml = "<QuestionForm>...</QuestionForm>"
    key_xml = "<AnswerKey>...</AnswerKey>"
    project = make_project(
        hits=1,
        locales="US, CA",
        require_masters=True,
        min_approved_hits=None,
        qualification_test_xml=test_xml,
        qualification_answer_key_xml=key_xml,
        qualification_min_score=75,
    )
    stub.add_response(
        "create_qualification_type",
        {
            "QualificationType": {
                "QualificationTypeId": "3QUALAAAAAAAAAAAAAAAAAAAAAAAAA",
                "Name": "q",
                "QualificationTypeStatus": "Active",
            }
        },
        {
            "Name": f"Argora: {project.name} ({project.slug})",
            "Keywords": "argument, stance, nuclear",
            "Description": f"Qualification test for {project.name}",
            "QualificationTypeStatus": "Active",
            "Test": test_xml,
            "AnswerKey": key_xml,
            "TestDurationInSeconds": 1800,
        },
    )
    hit = project.hits.get()
    quals = [
        QUALS_US_95_100[0],
        {
            "QualificationTypeId": "00000000000000000071",
            "Comparator": "In",
            "LocaleValues": [{"Country": "US"}, {"Country": "CA"}],
            "ActionsGuarded": "Accept",
        },
        {"QualificationTypeId": "2ARFPLSP75KLA8M8DH1HTEQVJT3SY6", "Comparator": "Exists", "ActionsGuarded": "Accept"},
        {
            "QualificationTypeId": "3QUALAAAAAAAAAAAAAAAAAAAAAAAAA",
            "Comparator": "GreaterThanOrEqualTo",
            "IntegerValues": [75],
            "ActionsGuarded": "Accept",
        },
    ]
    stub.add_response(
        "create_hit", hit_response("3HITQXXXXXXXXXXXXXXXXXXXXXXXXX"), expected_create(project, hit, quals=quals)
    )
    publishing.publish_project(project)
    assert MTurkProjectSettings.objects.get(project=project).qualification_type_id == "3QUALAAAAAAAAAAAAAAAAAAAAAAAAA"


def test_interrupted_create_hit_is_found_again_not_duplicated(stub):
    project = make_project(hits=1)
    hit = project.hits.get()
    annotation = f"argora:{project.slug}:{hit.pk}"
    # a crash after MTurk created the HIT but before Argora stored it: the log row is pending
    MTurkOperation.objects.create(
        key=f"create_hit:sandbox:{hit.pk}",
        operation="create_hit",
        project=project,
        request=expected_create(project, hit, quals=QUALS_US_95_100),
        attempts=1,
    )
    stub.add_response(
        "list_hits",
        {"NumResults": 1, "HITs": [hit_response("3HITZXXXXXXXXXXXXXXXXXXXXXXXXX", annotation=annotation)["HIT"]]},
        {"MaxResults": 100},
    )
    rows = publishing.publish_project(project)
    assert [r.mturk_hit_id for r in rows] == ["3HITZXXXXXXXXXXXXXXXXXXXXXXXXX"]
    assert MTurkOperation.objects.get(key=f"create_hit:sandbox:{hit.pk}").status == "done"


def test_publish_refusals_name_the_field(stub, settings):
    project = make_project(hits=1)
    settings.ARGORA_PUBLIC_URL = "http://argora.example.org"
    with pytest.raises(publishing.PublishError) as exc:
        publishing.publish_project(project)
    assert exc.value.field == "ARGORA_PUBLIC_URL"
    settings.ARGORA_PUBLIC_URL = "https://argora.example.org"
    services.set_project_status(project, "draft")
    with pytest.raises(CommandError) as cmd:
        call_command("mturk", "publish", "--project", project.slug, "--yes", stdout=io.StringIO())
    assert cmd.value.returncode == 2 and "status" in str(cmd.value)


def test_publish_command_with_yes(stub):
    project = make_project(hits=1)
    hit = project.hits.get()
    stub.add_response(
        "create_hit",
        hit_response("3HITCXXXXXXXXXXXXXXXXXXXXXXXXX"),
        expected_create(project, hit, quals=QUALS_US_95_100),
    )
    out = io.StringIO()
    call_command("mturk", "publish", "--project", project.slug, "--sandbox", "--yes", stdout=out)
    text = out.getvalue()
    assert "environment: sandbox" in text and "total $0.93" in text  # 3 x (26 + 5)
    assert "published 1 HIT(s) on sandbox" in text


def test_block_list_sync(stub):
    project = make_project(hits=1)
    a = services.worker_for_external_id("A1BLOCKEDWORKER", source=Worker.Source.MTURK)
    b = services.worker_for_external_id("A2ALREADYBLOCKED", source=Worker.Source.MTURK)
    services.worker_for_external_id("A3FINEWORKER", source=Worker.Source.MTURK)
    services.block_worker(a, "gold accuracy 20% on 5 gold items")
    services.block_worker(b, "spam")
    stub.add_response(
        "list_worker_blocks",
        {"NumResults": 1, "WorkerBlocks": [{"WorkerId": "A2ALREADYBLOCKED", "Reason": "spam"}]},
        {"MaxResults": 100},
    )
    stub.add_response(
        "create_worker_block", {}, {"WorkerId": "A1BLOCKEDWORKER", "Reason": "gold accuracy 20% on 5 gold items"}
    )
    assert publishing.sync_blocks(sandbox=True, project=project) == 1


def _published(n=1):
    from datetime import datetime

    project = make_project(hits=n)
    expiry = datetime(2030, 1, 1, tzinfo=UTC)
    rows = [
        MTurkHIT.objects.create(
            project=project,
            hit=hit,
            mturk_hit_id=f"3EXPHIT{i}XXXXXXXXXXXXXXXXXXXXXX",
            sandbox=True,
            created_at=expiry,
            expires_at=expiry,
        )
        for i, hit in enumerate(project.hits.order_by("position"))
    ]
    return project, rows


def test_expire_then_extend_then_expire_calls_mturk_each_time(stub):
    from datetime import datetime

    from botocore.stub import ANY

    project, [row] = _published()
    past = datetime(2015, 1, 1, tzinfo=UTC)
    expire = {"HITId": row.mturk_hit_id, "ExpireAt": past}
    stub.add_response("update_expiration_for_hit", {}, expire)
    assert publishing.expire_hits(project) == 1
    row.refresh_from_db()
    assert row.status == "Expired"
    assert publishing.expire_hits(project) == 0  # expired already: nothing to call
    stub.add_response("update_expiration_for_hit", {}, {"HITId": row.mturk_hit_id, "ExpireAt": ANY})
    assert publishing.extend_hits(project, seconds=2 * 3600) == 1
    row.refresh_from_db()
    assert row.status == "Assignable" and row.expires_at > datetime.now(UTC)
    # the second expire is a new call (the key carries the expiry it ends), not a no-op on the first one's log row
    stub.add_response("update_expiration_for_hit", {}, expire)
    assert publishing.expire_hits(project) == 1
    row.refresh_from_db()
    assert row.status == "Expired" and row.expires_at <= datetime.now(UTC)
    expires = MTurkOperation.objects.filter(operation="update_expiration_for_hit", key__startswith="expire:")
    assert expires.count() == 2 and set(expires.values_list("status", flat=True)) == {"done"}
    # a crash after MTurk expired the HIT but before Argora marked it: the retry finds the call logged, calls nothing
    stub.add_response("update_expiration_for_hit", {}, {"HITId": row.mturk_hit_id, "ExpireAt": ANY})
    publishing.extend_hits(project, seconds=3600)
    row.refresh_from_db()
    MTurkOperation.objects.create(
        key=f"expire:{row.mturk_hit_id}:{row.expires_at.isoformat()}",
        status="done",
        operation="update_expiration_for_hit",
        project=project,
    )
    assert publishing.expire_hits(project) == 1
    assert MTurkHIT.objects.get(pk=row.pk).status == "Expired"
    stub.assert_no_pending_responses()


def test_extend_refuses_a_non_positive_time(stub):
    project, _ = _published()
    with pytest.raises(publishing.PublishError) as exc:
        publishing.extend_hits(project, seconds=0)
    assert exc.value.field == "seconds"


def test_grant_qualification_associates_once(stub):
    project = make_project(
        hits=1, qualification_test_xml="<QuestionForm/>", qualification_type_id="3QUALBBBBBBBBBBBBBBBBBBBBBBBBB"
    )
    cfg = MTurkProjectSettings.objects.get(project=project)
    params = {
        "QualificationTypeId": "3QUALBBBBBBBBBBBBBBBBBBBBBBBBB",
        "WorkerId": "AQUALWORKER",
        "IntegerValue": 80,
        "SendNotification": True,
    }
    stub.add_response("associate_qualification_with_worker", {}, params)
    op = publishing.grant_qualification(cfg, "AQUALWORKER", 80)
    assert op.status == "done" and op.request == params
    assert publishing.grant_qualification(cfg, "AQUALWORKER", 80).pk == op.pk  # logged: no second call
    # a failed association is logged with MTurk's reason and raised
    stub.add_client_error(
        "associate_qualification_with_worker",
        service_error_code="RequestError",
        http_status_code=400,
        service_message="Worker does not exist.",
        expected_params={**params, "WorkerId": "ANOSUCHWORKER"},
    )
    with pytest.raises(publishing.MTurkError, match="Worker does not exist"):
        publishing.grant_qualification(cfg, "ANOSUCHWORKER", 80)
    bare = make_project(hits=1, slug="no-qualification")
    with pytest.raises(publishing.PublishError) as exc:
        publishing.grant_qualification(MTurkProjectSettings.objects.get(project=bare), "AQUALWORKER")
    assert exc.value.field == "qualification_test_xml"
