"""Study phases (annotation.phases): consent, instructions, training + qualification, exit survey -- every transition,
thresholds and the counted window, attempts, the screened-out code, survey validation, training items kept out of
HITs and counts, the release, the move of a claim's record on confirmation, and the studio's settings page."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation import phases, providers, selectors, services
from annotation.models import (
    Assignment,
    Item,
    Participation,
    Project,
    StudyPhases,
    TrainingAnswer,
    Worker,
    WorkerProjectCode,
)
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db

LABELS = ["pro", "con", "none"]
TEXTS = [
    "Wind farms cut emissions.",
    "Wind turbines kill birds.",
    "The farm has 12 turbines.",
    "Wind power is cheap to run.",
    "Turbines are noisy at night.",
    "The farm opened in 2011.",
]
TRAINING = [
    ("Solar panels lower bills.", "pro", "It gives a reason for solar power."),
    ("Solar panels need rare metals.", "con", "It gives a reason against solar power."),
    ("The roof faces south.", "none", "A fact, no reason for or against."),
    ("Solar power is clean.", "pro", "A reason for solar power."),
]
SURVEY = [
    {
        "name": "clarity",
        "label": "How clear was it?",
        "kind": "likert",
        "scale": ["Unclear", "So-so", "Clear"],
        "required": True,
    },
    {"name": "age_group", "label": "Age group", "kind": "choice", "options": ["18-34", "35+"], "required": True},
    {"name": "years", "label": "Years of English", "kind": "number", "min": 0, "max": 99, "integer": True},
    {"name": "comments", "label": "Anything else?", "kind": "text", "max_length": 50},
]


def make_project(*, training: bool = True, gold_rate: float = 0.0, **settings) -> Project:
    gold = [
        {
            "payload": {"text": text, "topic": "solar"},
            "expected": {"label": label},
            "explanation": why,
            "training": training,
        }
        for text, label, why in TRAINING
    ]
    project = ProjectFactory(
        name="Wind stance",
        config={"labels": LABELS},
        assignments_per_item=2,
        items_per_hit=3,
        gold_rate=gold_rate,
        gold_min_items=0,
        guidelines="<p>For, against or no argument?</p>",
        items=[{"text": t, "topic": "wind"} for t in TEXTS],
        gold=gold,
    )
    values = {
        "consent_required": True,
        "consent_text": "# Consent\nWe record your answers.",
        "instructions_required": True,
        "training_enabled": training,
        "pass_threshold": 0.75,
        "window": 0,
        "max_attempts": 2,
        "survey_enabled": True,
        "survey_questions": SURVEY,
    }
    values.update(settings)
    phases.configure(project, values)
    return project


def worker(name="w1") -> Worker:
    return services.worker_for_external_id(name, source=Worker.Source.INVITE)


def training_items(project):
    return list(selectors.training_items(project))


def train(project, w, rights):
    """Answer the training items in order; ``rights``: one bool per item (right or wrong answer)."""
    out = []
    for item, right in zip(training_items(project), rights):
        label = item.gold.expected["label"] if right else next(x for x in LABELS if x != item.gold.expected["label"])
        out.append(phases.answer_training_item(project, w, item.pk, {"label": label}))
    return out


def through_gate(project, w):
    phases.record_consent(project, w, agreed=True)
    phases.record_instructions_opened(project, w)


# --- transitions ----------------------------------------------------------------------------------------------------
def test_a_worker_goes_through_every_phase_in_order_and_gets_a_hit_only_after_qualifying():
    project = make_project()
    w = worker()
    assert phases.next_step(project, w) == phases.CONSENT
    with pytest.raises(services.PhasesPending) as exc:
        services.reserve_next_assignment(project, w)
    assert exc.value.step == phases.CONSENT and Assignment.objects.count() == 0
    with pytest.raises(phases.PhaseNotNow):  # no instructions before consent
        phases.record_instructions_opened(project, w)
    with pytest.raises(phases.PhaseRefused) as refused:
        phases.record_consent(project, w, agreed=False)
    assert refused.value.field == "consent"
    p = phases.record_consent(project, w, agreed=True)
    assert p.consent_at is not None and p.consent_version == phases.consent_version(project.phases.consent_text)
    first = p.consent_at
    assert phases.record_consent(project, w, agreed=True).consent_at == first  # recorded once
    assert phases.next_step(project, w) == phases.INSTRUCTIONS
    phases.record_instructions_opened(project, w)
    assert phases.next_step(project, w) == phases.TRAINING
    with pytest.raises(services.PhasesPending):
        services.reserve_next_assignment(project, w)
    feedback = train(project, w, [True, True, False, True])  # 3 of 4 = 75%: enough
    assert [f.correct for f in feedback] == [True, True, False, True]
    assert feedback[2].expected_text == "none" and feedback[2].explanation == "A fact, no reason for or against."
    assert feedback[-1].attempt_finished and feedback[-1].outcome == "qualified"
    assert not feedback[0].attempt_finished
    p.refresh_from_db()
    assert p.qualified_at is not None and p.training_score == 0.75 and p.attempts_finished == 1
    assert phases.next_step(project, w) == phases.WORK
    assignment = services.reserve_next_assignment(project, w)
    assert assignment is not None
    # the survey is due once the worker is finished, after at least one HIT
    assert phases.next_step(project, w, finished=True) == phases.DONE
    answers = {str(i.pk): {"label": "pro"} for i in services.assignment_items(assignment)}
    services.submit_assignment(assignment, w, answers)
    assert phases.next_step(project, w, finished=True) == phases.SURVEY
    phases.record_survey(project, w, {"clarity": "3", "age_group": "35+", "years": "12", "comments": " ok "})
    p.refresh_from_db()
    assert p.survey == {"clarity": 3, "age_group": "35+", "years": 12, "comments": "ok"}
    assert phases.next_step(project, w, finished=True) == phases.DONE
    # a second survey post keeps the first answers
    phases.record_survey(project, w, {"clarity": "1", "age_group": "18-34"})
    p.refresh_from_db()
    assert p.survey["clarity"] == 3


def test_no_phases_means_straight_to_work_and_done():
    project = services.create_project(
        name="Plain", task_type="sentence_label", config={"labels": LABELS}, status=Project.Status.ACTIVE
    )
    services.add_items(project, [{"text": "a"}])
    services.build_hits(project)
    w = worker()
    assert phases.next_step(project, w) == phases.WORK
    assert phases.next_step(project, w, finished=True) == phases.DONE
    assert services.reserve_next_assignment(project, w) is not None


def test_the_window_counts_only_the_last_n_training_answers():
    project = make_project(window=2, pass_threshold=1.0)
    w = worker()
    through_gate(project, w)
    feedback = train(project, w, [False, False, True, True])  # the first two are practice
    assert feedback[-1].outcome == "qualified"
    assert selectors.participation_of(project, w).training_score == 1.0


def test_a_failed_attempt_allows_one_retry_then_screens_out_with_its_own_code_and_no_hit():
    project = make_project()
    w = worker()
    through_gate(project, w)
    feedback = train(project, w, [True, False, False, True])  # 50% < 75%
    assert feedback[-1].outcome == "retry"
    assert phases.next_step(project, w) == phases.RETRY
    # an answer posted again before the retry starts counts nothing (it is the first attempt's)
    again = phases.answer_training_item(project, w, training_items(project)[1].pk, {"label": "con"})
    assert again.attempt == 1 and not again.correct and TrainingAnswer.objects.count() == 4
    # a double post of "try again" starts one attempt only
    phases.start_retry(project, w, attempt=1)
    phases.start_retry(project, w, attempt=1)
    p = selectors.participation_of(project, w)
    assert p.attempt == 2 and p.attempts_finished == 1
    assert phases.next_step(project, w) == phases.TRAINING
    feedback = train(project, w, [False, False, False, True])
    assert feedback[-1].outcome == phases.SCREENED_OUT
    p.refresh_from_db()
    assert p.screened_out_at is not None and p.qualified_at is None and p.attempts_finished == 2
    assert phases.next_step(project, w) == phases.SCREENED_OUT
    assert phases.next_step(project, w, finished=True) == phases.SCREENED_OUT
    code = WorkerProjectCode.objects.get(project=project, worker=w)
    assert code.kind == WorkerProjectCode.Kind.SCREENED_OUT
    assert services.completion_code(project, w, kind="screened_out") == code.code
    with pytest.raises(services.PhasesPending) as exc:
        services.reserve_next_assignment(project, w)
    assert exc.value.step == phases.SCREENED_OUT
    with pytest.raises(phases.PhaseNotNow):
        phases.start_retry(project, w, attempt=2)
    assert Assignment.objects.filter(worker=w).count() == 0
    assert TrainingAnswer.objects.filter(participation=p).count() == 8


def test_a_double_posted_training_answer_counts_once():
    project = make_project()
    w = worker()
    through_gate(project, w)
    item = training_items(project)[0]
    first = phases.answer_training_item(project, w, item.pk, {"label": "pro"})
    again = phases.answer_training_item(project, w, item.pk, {"label": "con"})  # the second post changes nothing
    assert first.correct and again.correct and again.answer == {"label": "pro"}
    assert TrainingAnswer.objects.count() == 1


def test_training_answers_are_checked_by_the_task_type_and_must_be_training_items():
    project = make_project()
    w = worker()
    through_gate(project, w)
    item = training_items(project)[0]
    with pytest.raises(phases.PhaseRefused) as exc:
        phases.answer_training_item(project, w, item.pk, {"label": "maybe"})
    assert exc.value.field == f"responses.{item.pk}.label"
    plain = Item.objects.filter(project=project, is_gold=False).first()
    with pytest.raises(phases.PhaseRefused) as exc:
        phases.answer_training_item(project, w, plain.pk, {"label": "pro"})
    assert exc.value.field == "item"
    assert TrainingAnswer.objects.count() == 0


def test_training_before_consent_is_refused():
    project = make_project()
    w = worker()
    with pytest.raises(phases.PhaseNotNow) as exc:
        phases.answer_training_item(project, w, training_items(project)[0].pk, {"label": "pro"})
    assert exc.value.step == phases.CONSENT


# --- survey validation ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "answers, field, reason",
    [
        ({"age_group": "35+"}, "clarity", "please answer"),
        ({"clarity": "4", "age_group": "35+"}, "clarity", "1 to 3"),
        ({"clarity": "2", "age_group": "40"}, "age_group", "choose one of"),
        ({"clarity": "2", "age_group": "35+", "years": "1.5"}, "years", "whole number"),
        ({"clarity": "2", "age_group": "35+", "years": "120"}, "years", "at most 99"),
        ({"clarity": "2", "age_group": "35+", "years": "lots"}, "years", "a number"),
        ({"clarity": "2", "age_group": "35+", "comments": "x" * 51}, "comments", "at most 50"),
        ({"clarity": "2", "age_group": "35+", "mood": "good"}, "mood", "not a question"),
    ],
)
def test_survey_answers_are_validated_naming_the_question(answers, field, reason):
    with pytest.raises(phases.PhaseRefused) as exc:
        phases.clean_survey_answers(SURVEY, answers)
    assert field in exc.value.errors and reason in exc.value.errors[field]


def test_the_survey_page_answers_400_naming_the_field_and_keeps_what_was_typed(client):
    project = make_project(training=False, consent_required=False, instructions_required=False)
    w = join(client, project)
    assignment = services.reserve_next_assignment(project, w)
    services.submit_assignment(
        assignment, w, {str(i.pk): {"label": "pro"} for i in services.assignment_items(assignment)}
    )
    done = client.get(reverse("annotation:done", args=[project.slug]) + "?finished=1")
    assert done.status_code == 302 and done["Location"].endswith("/study/survey/?finished=1")
    url = reverse("annotation:study-step", args=[project.slug, "survey"])
    r = client.post(url, {"q-clarity": "2", "q-age_group": "", "q-comments": "typed text"})
    assert r.status_code == 400
    html = r.content.decode()
    assert "age_group: please answer this question" in html and "typed text" in html
    assert not Participation.objects.filter(worker=w, survey_at__isnull=False).exists()
    r = client.post(url + "?finished=1", {"q-clarity": "2", "q-age_group": "18-34"})
    assert r.status_code == 302 and r["Location"] == reverse("annotation:done", args=[project.slug]) + "?finished=1"
    assert selectors.participation_of(project, w).survey == {
        "clarity": 2,
        "age_group": "18-34",
        "years": None,
        "comments": None,
    }
    assert client.get(r["Location"]).status_code == 200


@pytest.mark.parametrize(
    "questions, field",
    [
        ("nope", "survey_questions"),
        ([{"name": "a", "label": "A", "kind": "slider"}], "survey_questions[0].kind"),
        ([{"name": "a", "label": "A", "kind": "likert", "scale": ["only one"]}], "survey_questions[0].scale"),
        (
            [{"name": "a", "label": "A", "kind": "text"}, {"name": "a", "label": "B", "kind": "text"}],
            "survey_questions[1].name",
        ),
        ([{"name": "Age", "label": "A", "kind": "text"}], "survey_questions[0].name"),
        ([{"name": "a", "label": "A", "kind": "number", "min": 5, "max": 1}], "survey_questions[0].max"),
        (
            [{"name": "a", "label": "A", "kind": "choice", "options": ["x", "y"], "colour": "red"}],
            "survey_questions[0].colour",
        ),
    ],
)
def test_survey_questions_are_validated_naming_question_and_key(questions, field):
    project = make_project()
    with pytest.raises(phases.PhaseRefused) as exc:
        phases.configure(project, {"survey_questions": questions})
    assert exc.value.field == field
    assert StudyPhases.objects.get(project=project).survey_questions[0]["name"] == "clarity"


def test_configure_refuses_what_cannot_work():
    project = make_project(training=False)
    with pytest.raises(phases.PhaseRefused) as exc:
        phases.configure(project, {"training_enabled": True})
    assert exc.value.field == "training_enabled"
    with pytest.raises(phases.PhaseRefused) as exc:
        phases.configure(project, {"consent_text": "  "})
    assert exc.value.field == "consent_text"
    with pytest.raises(phases.PhaseRefused) as exc:
        phases.configure(project, {"pass_threshold": 1.5})
    assert exc.value.field == "pass_threshold"
    with pytest.raises(phases.PhaseRefused) as exc:
        phases.configure(project, {"max_attempts": 0})
    assert exc.value.field == "max_attempts"
    gold = list(Item.objects.filter(project=project, is_gold=True).values_list("pk", flat=True))
    with pytest.raises(phases.PhaseRefused) as exc:
        phases.configure(project, {"training_enabled": True, "window": 5}, training_items=gold)
    assert exc.value.field == "window"
    plain = Item.objects.filter(project=project, is_gold=False).first()
    with pytest.raises(phases.PhaseRefused) as exc:
        phases.configure(project, {}, training_items=[plain.pk])
    assert exc.value.field == "training_items"
    assert not Item.objects.filter(project=project, is_training=True).exists()  # nothing written
    phases.configure(project, {"training_enabled": True}, training_items=gold[:2])
    assert Item.objects.filter(project=project, is_training=True).count() == 2
    with pytest.raises(phases.PhaseRefused) as exc:
        phases.configure(project, {}, training_items=[])
    assert exc.value.field == "training_items"


# --- training items stay out of HITs, gold checks and counts ----------------------------------------------------------
def test_training_items_are_never_allocated_interleaved_or_counted(tmp_artifacts):
    project = make_project(gold_rate=1.0)  # every gold item is a training item: none may be interleaved
    assert not Item.objects.filter(project=project, is_training=True, hit_items__isnull=False).exists()
    assert services.build_hits(project) == 0
    w = worker()
    through_gate(project, w)
    train(project, w, [True] * 4)
    seen = set()
    while True:
        assignment = services.reserve_next_assignment(project, w)
        if assignment is None:
            break
        items = services.assignment_items(assignment)
        seen |= {i.pk for i in items}
        assert not any(i.is_training for i in items) and not assignment.gold_items.exists()
        services.submit_assignment(assignment, w, {str(i.pk): {"label": "pro"} for i in items})
    assert seen == set(Item.objects.filter(project=project, is_gold=False).values_list("pk", flat=True))
    progress = selectors.project_progress(project)
    assert progress["items"] == 6 and progress["gold_items"] == 0 and progress["training_items"] == 4
    assert progress["needed"] == 12
    assert {r["item"] for r in selectors.aggregated_items(project)} == seen
    from corpus.releases import build_release, release_file_path

    release = build_release("wind", "1", kind="annotations", config={"projects": [project.slug], "include_gold": True})
    rows = [json.loads(line) for line in release_file_path(release, "annotations.jsonl").read_text().splitlines()]
    assert {r["item_id"] for r in rows} == seen


def test_a_gold_item_unmarked_as_training_goes_back_to_the_gold_pool():
    project = make_project(
        training=False, gold_rate=1.0, consent_required=False, instructions_required=False, survey_enabled=False
    )
    gold = list(Item.objects.filter(project=project, is_gold=True).values_list("pk", flat=True))
    phases.set_training_items(project, gold[:3])
    w = worker()
    assignment = services.reserve_next_assignment(project, w)
    assert list(assignment.gold_items.values_list("pk", flat=True)) == gold[3:]


# --- release -------------------------------------------------------------------------------------------------------
def test_the_annotations_release_carries_each_participants_phase_data(tmp_artifacts):
    from corpus.releases import build_release, release_file_path

    project = make_project()
    passed, failed = worker("passed"), worker("failed")
    through_gate(project, passed)
    train(project, passed, [True, True, True, False])
    assignment = services.reserve_next_assignment(project, passed)
    services.submit_assignment(
        assignment, passed, {str(i.pk): {"label": "con"} for i in services.assignment_items(assignment)}
    )
    phases.record_survey(project, passed, {"clarity": "Clear", "age_group": "18-34"})
    through_gate(project, failed)
    train(project, failed, [False] * 4)
    phases.start_retry(project, failed, attempt=1)
    train(project, failed, [True, False, False, False])
    claim = phases.claim_record(
        project, source=Worker.Source.MTURK, claimed_id="AUNCONFIRMED", platform_assignment="A1"
    )
    phases.record_consent(project, claim.worker, agreed=True)

    release = build_release("wind", "1", kind="annotations", config={"projects": [project.slug]})
    rows = [json.loads(line) for line in release_file_path(release, "participants.jsonl").read_text().splitlines()]
    by_worker = {r["worker"]: r for r in rows}
    assert set(by_worker) == {passed.pk, failed.pk}  # the unconfirmed claim is left out
    ok = by_worker[passed.pk]
    assert ok["project"] == project.slug and ok["outcome"] == "qualified" and ok["consent_at"]
    assert ok["consent_version"] == phases.consent_version(project.phases.consent_text)
    assert ok["training"]["score"] == 0.75 and len(ok["training"]["answers"]) == 4
    assert ok["training"]["attempts"] == [
        {"attempt": 1, "right": 3, "counted": 4, "score": 0.75, "answered": 4, "total": 4}
    ]
    assert ok["survey"] == {"clarity": 3, "age_group": "18-34", "years": None, "comments": None}
    out = by_worker[failed.pk]
    assert out["outcome"] == "screened_out" and out["survey"] is None
    assert [a["score"] for a in out["training"]["attempts"]] == [0.0, 0.25]
    assert {a["attempt"] for a in out["training"]["answers"]} == {1, 2}
    assert "passed" not in json.dumps(rows) and "AUNCONFIRMED" not in json.dumps(rows)  # Argora ids only
    card = release_file_path(release, "README.md").read_text()
    assert "participants.jsonl" in card and "## Participants (study phases)" in card
    assert f"## Survey questions of {project.slug}" in card and '"age_group"' in card


# --- MTurk claims: the record moves to the confirmed worker ---------------------------------------------------------
def test_confirming_a_claim_moves_its_phase_record_to_the_confirmed_worker():
    project = make_project()
    claim = phases.claim_record(project, source=Worker.Source.MTURK, claimed_id="AREAL", platform_assignment="A1")
    phase_worker = claim.worker
    assert phase_worker.claimed_external_id == "AREAL" and phase_worker.external_id == ""
    through_gate(project, phase_worker)
    train(project, phase_worker, [True] * 4)
    assert selectors.claim_admission(project, Worker.Source.MTURK, "AREAL")[0] == "admitted"
    hit = project.hits.first()
    from django.utils import timezone

    assignment = services.reserve_hit_for_claim(
        project,
        hit.pk,
        source=Worker.Source.MTURK,
        claimed_id="AREAL",
        external_id="A1",
        expires_at=timezone.now() + timezone.timedelta(hours=1),
    )
    services.submit_assignment(
        assignment, assignment.worker, {str(i.pk): {"label": "pro"} for i in services.assignment_items(assignment)}
    )
    phases.record_survey(project, phase_worker, {"clarity": "2", "age_group": "35+"}, finished_check=False)
    confirmed = services.confirm_assignment(assignment, source=Worker.Source.MTURK, external_id="AREAL")
    real = Worker.objects.get(source=Worker.Source.MTURK, external_id="AREAL")
    assert confirmed.worker == real
    moved = Participation.objects.get(project=project, worker=real)
    assert moved.qualified_at and moved.consent_at and moved.survey["clarity"] == 2
    assert moved.training_answers.count() == 4 and moved.platform_assignment == ""
    assert not Worker.objects.filter(pk=phase_worker.pk).exists()  # the phase record's provisional worker is gone
    assert phases.next_step(project, real) == phases.WORK


def test_a_later_claim_record_fills_what_the_confirmed_record_lacks():
    project = make_project()
    real = services.worker_for_external_id("AREAL", source=Worker.Source.MTURK)
    through_gate(project, real)
    train(project, real, [True] * 4)
    first_consent = selectors.participation_of(project, real).consent_at
    claim = phases.claim_record(project, source=Worker.Source.MTURK, claimed_id="AREAL", platform_assignment="A2")
    phases.record_consent(project, claim.worker, agreed=True)
    phases.record_survey(project, claim.worker, {"clarity": "1", "age_group": "35+"}, finished_check=False)
    own = services.merge_claim(project, real, source=Worker.Source.MTURK, claimed_id="AREAL")
    own.refresh_from_db()
    assert own.survey["clarity"] == 1 and own.qualified_at is not None
    assert own.consent_at == first_consent  # the confirmed worker's own record wins
    assert Participation.objects.filter(project=project).count() == 1
    assert not Worker.objects.filter(pk=claim.worker_id).exists()


# --- pages (test client) ----------------------------------------------------------------------------------------------
def join(client, project) -> Worker:
    r = client.get(reverse("annotation:invite", args=[project.invite_token]))
    assert r.status_code == 302
    return Worker.objects.get(user_id=client.session["_auth_user_id"])


def test_work_sends_the_worker_through_the_phase_pages_first(client):
    project = make_project()
    w = join(client, project)
    work = reverse("annotation:work", args=[project.slug])
    r = client.get(work)
    assert r.status_code == 302 and r["Location"] == reverse("annotation:study-step", args=[project.slug, "consent"])
    page = client.get(r["Location"])
    assert page.status_code == 200 and "<h1>Consent</h1>" in page.content.decode()  # Markdown, sanitised
    r = client.post(r["Location"], {})
    assert r.status_code == 400 and "consent: tick the box" in r.content.decode()
    r = client.post(reverse("annotation:study-step", args=[project.slug, "consent"]), {"consent": "yes"})
    assert r.status_code == 302 and r["Location"].endswith("/study/instructions/")
    assert "For, against or no argument?" in client.get(r["Location"]).content.decode()
    r = client.post(r["Location"])
    assert r.status_code == 302 and r["Location"].endswith("/study/training/")
    page = client.get(r["Location"]).content.decode()
    first = training_items(project)[0]
    assert f'data-item-id="{first.pk}"' in page and "Training item 1 of 4" in page
    assert client.get(work)["Location"].endswith("/study/training/")  # still no HIT
    assert Assignment.objects.count() == 0
    # a training answer as hit.js sends it (JSON), then the feedback page
    r = client.post(
        reverse("annotation:study-step", args=[project.slug, "training"]),
        json.dumps({"responses": {str(first.pk): {"label": "con"}}}),
        content_type="application/json",
    )
    assert r.status_code == 200 and r.json()["correct"] is False
    page = client.get(r.json()["next"]).content.decode()
    assert "Not quite." in page and "It gives a reason for solar power." in page and 'id="expected-answer">pro<' in page
    # a refused answer names the field
    second = training_items(project)[1]
    r = client.post(
        reverse("annotation:study-step", args=[project.slug, "training"]),
        json.dumps({"responses": {str(second.pk): {"label": "maybe"}}}),
        content_type="application/json",
    )
    assert r.status_code == 400 and f"responses.{second.pk}.label" in r.json()["errors"]
    # the plain form post (no JavaScript) works too
    for item in training_items(project)[1:]:
        r = client.post(
            reverse("annotation:study-step", args=[project.slug, "training"]),
            {"item": item.pk, f"item-{item.pk}-label": item.gold.expected["label"]},
        )
        assert r.status_code == 302 and f"answered={item.pk}" in r["Location"]
    page = client.get(r["Location"]).content.decode()
    assert "See your result" in page
    result = client.get(reverse("annotation:study-step", args=[project.slug, "result"])).content.decode()
    assert "You qualified" in result and "3 of the 4" in result
    r = client.get(work)
    assert r.status_code == 200 and 'id="hit-form"' in r.content.decode()
    assert Assignment.objects.filter(worker=w).count() == 1


def test_training_drafts_come_back_after_a_reload(client):
    project = make_project(consent_required=False, instructions_required=False)
    join(client, project)
    item = training_items(project)[0]
    url = reverse("annotation:study-step", args=[project.slug, "training-draft"])
    r = client.put(url, json.dumps({"fields": {str(item.pk): {"label": "none"}}}), content_type="application/json")
    assert r.status_code == 204
    page = client.get(reverse("annotation:study-step", args=[project.slug, "training"])).content.decode()
    assert 'value="none" checked' in page and "Your saved answer is back." in page
    r = client.put(url, json.dumps({"fields": {"999999": {"label": "none"}}}), content_type="application/json")
    assert r.status_code == 400 and "fields.999999" in r.json()["errors"]


def test_survey_drafts_come_back_after_a_reload(client):
    project = make_project(training=False, consent_required=False, instructions_required=False)
    w = join(client, project)
    assignment = services.reserve_next_assignment(project, w)
    services.submit_assignment(
        assignment, w, {str(i.pk): {"label": "pro"} for i in services.assignment_items(assignment)}
    )
    url = reverse("annotation:study-step", args=[project.slug, "survey-draft"])
    r = client.put(
        url, json.dumps({"answers": {"comments": "half a thought", "clarity": "2"}}), content_type="application/json"
    )
    assert r.status_code == 204
    page = client.get(reverse("annotation:study-step", args=[project.slug, "survey"])).content.decode()
    assert "half a thought" in page and 'value="2" checked' in page


def test_screened_out_worker_sees_the_page_with_the_screened_out_code_and_never_a_hit(client):
    project = make_project(max_attempts=1, screened_out_message="Sorry, **not this time**.")
    w = join(client, project)
    through_gate(project, w)
    train(project, w, [False] * 4)
    r = client.get(reverse("annotation:work", args=[project.slug]))
    assert r["Location"].endswith("/study/screened-out/")
    html = client.get(r["Location"]).content.decode()
    code = services.completion_code(project, w, kind="screened_out")
    assert code in html and "<strong>not this time</strong>" in html
    r = client.get(reverse("annotation:done", args=[project.slug]))
    assert r["Location"].endswith("/study/screened-out/")
    assert not Assignment.objects.filter(worker=w).exists()


def test_done_and_screened_out_pages_send_the_worker_back_through_the_completion_return_slot(client, monkeypatch):
    calls = []

    def back(project, worker, outcome):
        calls.append(outcome)
        return {"url": f"https://platform.invalid/complete?cc={outcome.upper()}", "code": f"{outcome.upper()}-CODE"}

    monkeypatch.setattr(providers.completion_return, "provider", back)
    project = make_project(
        training=True, consent_required=False, instructions_required=False, survey_enabled=False, max_attempts=1
    )
    w = join(client, project)
    train(project, w, [True] * 4)
    assignment = services.reserve_next_assignment(project, w)
    services.submit_assignment(
        assignment, w, {str(i.pk): {"label": "pro"} for i in services.assignment_items(assignment)}
    )
    html = client.get(reverse("annotation:done", args=[project.slug])).content.decode()
    # the page goes back by a script countdown the participant can stop (no <meta http-equiv="refresh">: WCAG 2.2.1)
    assert 'href="https://platform.invalid/complete?cc=COMPLETED" id="back-to-platform-link"' in html
    assert 'id="back-to-platform-stay"' in html and 'http-equiv="refresh"' not in html
    # the platform's code is shown (the one its page checks), not Argora's own
    assert 'id="back-to-platform-link"' in html and "COMPLETED-CODE" in html
    assert services.completion_code(project, w) not in html
    client.logout()
    loser = join(client, project)
    train(project, loser, [False] * 4)
    html = client.get(reverse("annotation:study-step", args=[project.slug, "screened-out"])).content.decode()
    assert "cc=SCREENED_OUT" in html and "SCREENED_OUT-CODE" in html
    assert calls == ["completed", "screened_out"]


def test_the_api_refuses_a_hit_before_the_phases(client):
    project = make_project()
    join(client, project)
    r = client.post(reverse("api-annotation-next", args=[project.slug]))
    assert r.status_code == 403 and b"consent" in r.content
    assert Assignment.objects.count() == 0


# --- studio -----------------------------------------------------------------------------------------------------------
@pytest.fixture
def researcher(client, staff_user):
    from django.contrib.auth.models import Permission

    staff_user.user_permissions.add(*Permission.objects.filter(codename__in=["view_project", "change_project"]))
    client.force_login(staff_user)
    return staff_user


def phases_post(project, **overrides):
    gold = list(Item.objects.filter(project=project, is_gold=True).order_by("position").values_list("pk", flat=True))
    data = {
        "consent_required": "on",
        "consent_text": "Agree?",
        "instructions_required": "on",
        "training_enabled": "on",
        "pass_threshold": "0.5",
        "window": "0",
        "max_attempts": "2",
        "screened_out_message": "",
        "survey_enabled": "on",
        "survey_questions": json.dumps(SURVEY),
        "training_items": [str(pk) for pk in gold[:2]],
    }
    data.update({f"explanation_{pk}": f"why {pk}" for pk in gold})
    data.update(overrides)
    return data


def test_studio_phases_page_saves_every_phase_and_marks_training_items(client, researcher):
    project = make_project(training=False, consent_required=False, instructions_required=False, survey_enabled=False)
    url = reverse("annotation:studio-phases", args=[project.slug])
    page = client.get(url)
    assert page.status_code == 200 and 'id="training-items"' in page.content.decode()
    r = client.post(url, phases_post(project))
    assert r.status_code == 302, r.content.decode()[:2000]
    cfg = StudyPhases.objects.get(project=project)
    assert cfg.consent_required and cfg.training_enabled and cfg.pass_threshold == 0.5 and cfg.survey_enabled
    assert [q["name"] for q in cfg.survey_questions] == ["clarity", "age_group", "years", "comments"]
    training = list(selectors.training_items(project))
    assert len(training) == 2 and training[0].gold.explanation == f"why {training[0].pk}"
    html = client.get(reverse("annotation:studio-project", args=[project.slug])).content.decode()
    assert 'id="phase-counts"' in html and 'id="count-qualified">0<' in html


@pytest.mark.parametrize(
    "overrides, field, words",
    [
        ({"survey_questions": "[{"}, "survey_questions", "not JSON"),
        (
            {"survey_questions": json.dumps([{"name": "x", "label": "X", "kind": "likert", "scale": ["a"]}])},
            "survey_questions",
            "survey_questions[0].scale",
        ),
        ({"consent_text": ""}, "consent_text", "write the consent text"),
        ({"training_items": []}, "training_items", "no training items"),
        ({"pass_threshold": "2"}, "pass_threshold", "less than or equal to 1"),
        ({"window": "9"}, "window", "2 training item(s)"),
    ],
)
def test_studio_phases_form_errors_name_the_field_and_write_nothing(client, researcher, overrides, field, words):
    project = make_project(training=False, consent_required=False, instructions_required=False, survey_enabled=False)
    before = StudyPhases.objects.get(project=project).updated_at
    r = client.post(reverse("annotation:studio-phases", args=[project.slug]), phases_post(project, **overrides))
    assert r.status_code == 400
    html = r.content.decode()
    assert f'id="{field}-errors"' in html and words in html
    assert StudyPhases.objects.get(project=project).updated_at == before
    assert not Item.objects.filter(project=project, is_training=True).exists()


def test_the_studio_project_page_counts_who_passed_each_phase(client, researcher):
    project = make_project()
    for name, rights in (("a", [True] * 4), ("b", [False] * 4)):
        w = worker(name)
        through_gate(project, w)
        train(project, w, rights)
    worker("c")
    phases.record_consent(project, worker("c"), agreed=True)
    counts = selectors.phase_counts(project)
    assert counts == {
        "participants": 3,
        "consented": 3,
        "instructions": 2,
        "trained": 2,
        "qualified": 1,
        "screened_out": 0,
        "surveyed": 0,
        "retrying": 1,
        "unconfirmed": 0,
    }
    html = client.get(reverse("annotation:studio-project", args=[project.slug])).content.decode()
    assert 'id="count-consented">3<' in html and 'id="count-retrying">1<' in html


def test_admin_shows_phases_and_read_only_participation(client, admin_user_obj):
    project = make_project()
    w = worker()
    through_gate(project, w)
    client.force_login(admin_user_obj)
    p = Participation.objects.get(worker=w)
    for name in ("participation", "studyphases", "item", "workerprojectcode"):
        assert client.get(reverse(f"admin:annotation_{name}_changelist")).status_code == 200, name
    r = client.get(reverse("admin:annotation_participation_change", args=[p.pk]))
    assert r.status_code == 200 and 'name="consent_at"' not in r.content.decode()
    assert client.get(reverse("admin:annotation_participation_add")).status_code == 403
    r = client.get(reverse("admin:annotation_studyphases_change", args=[project.pk]))
    assert r.status_code == 200 and "consent_text" in r.content.decode()
    data = {
        "consent_required": "on",
        "consent_text": "",
        "pass_threshold": "0.8",
        "window": "0",
        "max_attempts": "2",
        "screened_out_message": "",
        "survey_questions": "[]",
        "training_enabled": "on",
    }
    r = client.post(reverse("admin:annotation_studyphases_change", args=[project.pk]), data)
    assert (
        r.status_code == 200 and "consent_text" in r.content.decode() and "write the consent text" in r.content.decode()
    )
    assert StudyPhases.objects.get(project=project).consent_text.startswith("# Consent")  # nothing written
    data["consent_text"] = "New text."
    r = client.post(reverse("admin:annotation_studyphases_change", args=[project.pk]), data)
    assert r.status_code == 302
    assert StudyPhases.objects.get(project=project).consent_text == "New text."
    assert client.get(reverse("admin:annotation_studyphases_add")).status_code == 200


# --- demo -------------------------------------------------------------------------------------------------------------
def test_make_demo_has_a_project_with_every_phase_on_and_prints_its_invite_link():
    import io

    from django.core.management import call_command

    from annotation.demo import PHASES_SLUG

    out = io.StringIO()
    call_command("load_demo", stdout=out)
    project = Project.objects.get(slug=PHASES_SLUG)
    cfg = project.phases
    assert cfg.consent_required and cfg.instructions_required and cfg.training_enabled and cfg.survey_enabled
    assert cfg.max_attempts == 2 and {q["kind"] for q in cfg.survey_questions} == {"likert", "choice", "text"}
    training = list(selectors.training_items(project))
    assert 3 <= len(training) <= 4 and all(item.gold.explanation for item in training)
    assert f"/invite/{project.invite_token}/" in out.getvalue()
    counts = selectors.phase_counts(project)
    assert counts["qualified"] == 2 and counts["screened_out"] == 1 and counts["surveyed"] == 2
    assert not Assignment.objects.filter(project=project, gold_items__is_training=True).exists()
    # a new worker meets the consent first
    assert phases.next_step(project, worker("newcomer")) == phases.CONSENT
    out = io.StringIO()
    call_command("load_demo", stdout=out)  # idempotent
    assert Participation.objects.filter(project=project).count() == 3


def test_one_address_starts_a_bounded_number_of_claim_records(settings):
    settings.ARGORA_UNCONFIRMED_PER_ADDRESS = 1
    project = make_project()
    for n in range(2):
        phases.claim_record(
            project, source=Worker.Source.MTURK, claimed_id=f"AFAKE{n}", platform_assignment="A", client="203.0.113.9"
        )
    phases.claim_record(
        project, source=Worker.Source.MTURK, claimed_id="AFAKE0", platform_assignment="B", client="203.0.113.9"
    )  # an existing claim's record: no new row, no count
    with pytest.raises(services.TooManyUnconfirmed):
        phases.claim_record(
            project, source=Worker.Source.MTURK, claimed_id="AFAKE9", platform_assignment="A", client="203.0.113.9"
        )
    assert Participation.objects.filter(project=project).count() == 2
