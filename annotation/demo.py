"""Demo data for the annotation engine: a small active ``sentence_label`` project built from corpus sentences, with
some HITs already answered by simulated workers (so that ``make demo`` opens on dashboards with real figures).

The simulation goes through the real services -- :func:`~annotation.services.reserve_next_assignment` and
:func:`~annotation.services.submit_assignment` -- so gold scoring, the agreement snapshot and everything else a
real submission triggers happen as for a person. Workers are seeded: :data:`SIMULATED_WORKERS` (invite-link workers
``demo-crowd-1..4`` without a login, each answering the sentence's corpus stance with their own probability, else a
random label) and the ``expert`` demo account (staff) for one HIT, so crowd-vs-expert figures exist. They fill
:data:`SIMULATED_HITS` of the project's HITs; the rest stays open for the demo accounts ``worker1`` / ``worker2``.
Idempotent: a second load finds the simulated workers' submissions and adds nothing.

A second project, :data:`PHASES_SLUG`, has every study phase on (:mod:`annotation.phases`), so that a new user sees
the whole worker journey from its invite link: consent, the instructions, a training of four items with explanations
and a qualification (75% right, two attempts), the HITs, and an exit survey (free text, a Likert scale and a
demographics choice). Three simulated trainees go through it (two qualify, do a HIT and answer the survey; one is
screened out), so that its studio page shows how many passed each phase.
"""

from __future__ import annotations

import random
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone

from corpus.models import Sentence

from . import phases, services
from .agreement.snapshots import store_snapshots
from .models import Assignment, GoldItem, Item, Participation, Project, Worker

DEMO_SLUG = "demo-stance"
GUIDELINES = (
    "<p>Read each sentence and decide whether it is an argument <b>for</b> (pro) or <b>against</b> (con) "
    "the topic, or <b>no argument</b> at all (none).</p>"
    "<p>Keys: <kbd>1</kbd>/<kbd>2</kbd>/<kbd>3</kbd> choose a label, <kbd>Enter</kbd> goes on.</p>"
)
LABELS = ["pro", "con", "none"]
SIMULATION_SEED = 2024
SIMULATED_WORKERS = (("demo-crowd-1", 0.92), ("demo-crowd-2", 0.85), ("demo-crowd-3", 0.75), ("demo-crowd-4", 0.6))
EXPERT_USERNAME, EXPERT_SKILL = "expert", 0.97
SIMULATED_HITS = 4  # HITs filled by the simulation (R = 3 assignments each); the others stay open


def _demo_owner():
    """The demo researcher (``expert``) owns the demo projects: its studio shows them (``annotation.access``)."""
    return get_user_model().objects.filter(username=EXPERT_USERNAME).first()


def load(stdout=None, *, n_items: int = 30, n_gold: int = 4) -> Project | None:
    """Create (once) the demo project from up to ``n_items`` corpus sentences; gold items come from sentences
    whose stance is known. Then simulate the seeded workers (once). Returns the project, or ``None`` when the
    corpus has no sentences."""

    def say(msg: str) -> None:
        if stdout is not None:
            stdout.write(msg + ("\n" if not msg.endswith("\n") else ""))

    project = Project.objects.filter(slug=DEMO_SLUG).first()
    if project is not None:
        say(f"annotation demo: project {DEMO_SLUG!r} exists (invite link /invite/{project.invite_token}/)")
    else:
        sentences = list(Sentence.objects.select_related("topic").order_by("id")[: n_items + n_gold])
        if not sentences:
            say("annotation demo: no corpus sentences, no demo project")
            return None
        gold_rows = [s for s in sentences[:n_gold] if s.stance in LABELS] if len(sentences) > n_gold + 5 else []
        item_rows = sentences[len(gold_rows) :]
        project = services.create_project(
            name="Demo: stance of argument sentences",
            slug=DEMO_SLUG,
            task_type="sentence_label",
            config={"labels": LABELS},
            guidelines=GUIDELINES,
            assignments_per_item=3,
            items_per_hit=5,
            gold_rate=0.2 if gold_rows else 0.0,
            reward_cents=50,
            time_estimate_seconds=120,
            status="active",
            created_by=_demo_owner(),
        )
        tt = project.get_task_type()
        gold = [
            {
                "payload": payload,
                "expected": {"label": s.stance},
                "explanation": f"This sentence is labelled {s.stance}.",
            }
            for s, payload in zip(gold_rows, tt.build_items(project, gold_rows))
        ]
        services.add_items_from_rows(project, item_rows, gold=gold)
        hits = services.build_hits(project)
        say(
            f"annotation demo: project {DEMO_SLUG!r} with {len(item_rows)} items, {len(gold)} gold, {hits} HITs; "
            f"invite link /invite/{project.invite_token}/"
        )
    n = simulate_workers(project)
    if n:
        store_snapshots(project)  # the dashboard opens on current figures (the debounced task would come later)
        say(
            f"annotation demo: {n} HITs answered by simulated workers "
            f"({', '.join(name for name, _ in SIMULATED_WORKERS)}, {EXPERT_USERNAME}); dashboard "
            f"/projects/{DEMO_SLUG}/agreement/"
        )
    load_phases_project(say)
    return project


def links() -> list[tuple[str, str]]:
    """``(path, what)`` of the invite link of every active project, the demo's first (``manage.py run_demo`` prints
    them as full URLs at the end of its start-up output: a worker opens one, no login needed)."""
    first = {DEMO_SLUG: 0, PHASES_SLUG: 1}
    projects = sorted(Project.objects.filter(status=Project.Status.ACTIVE), key=lambda p: (first.get(p.slug, 2), p.pk))
    return [(reverse("annotation:invite", args=[p.invite_token]), f"{p.name} ({p.task_type})") for p in projects]


# --- the study phases demo -----------------------------------------------------------------------------------------
PHASES_SLUG = "demo-phases"
PHASES_CONSENT = """**Stance of argument sentences -- a demo study of Argora.**

You will label sentences: is each one an argument *for* a topic, *against* it, or no argument at all? It takes about
five minutes. Before the tasks there is a short training with explanations; the study continues with people who
answer at least three of its four items right (you have two tries).

* We record your answers, the time you spend and the answers to a short survey at the end. We never record your name;
  your platform id is kept apart from the answers, which are released for research under a pseudonymous id.
* Taking part is voluntary: you may stop at any time by closing the page, without giving a reason.
* Questions: write to the research team (this demo has none: `research@demo.argora.invalid`).
"""
PHASES_SURVEY = [
    {
        "name": "clarity",
        "label": "How clear were the instructions and the training?",
        "kind": "likert",
        "scale": ["Very unclear", "Unclear", "Neither", "Clear", "Very clear"],
        "required": True,
    },
    {
        "name": "age_group",
        "label": "Your age group",
        "kind": "choice",
        "options": ["18-24", "25-34", "35-49", "50-64", "65 or older", "Prefer not to say"],
        "required": True,
    },
    {"name": "comments", "label": "Anything you want to tell us about the task?", "kind": "text"},
]
TRAINEES = (("demo-trainee-1", True), ("demo-trainee-2", True), ("demo-trainee-3", False))
WHY = {
    "pro": "It gives a reason in favour of {topic}: that makes it an argument for (pro) the topic.",
    "con": "It gives a reason against {topic}: that makes it an argument against (con) the topic.",
    "none": "It says something about {topic} but gives no reason for or against it: no argument (none).",
}


def load_phases_project(say) -> Project | None:
    """Create (once) :data:`PHASES_SLUG` with every phase on, then simulate its trainees (once)."""
    project = Project.objects.filter(slug=PHASES_SLUG).first()
    if project is None:
        sentences = list(Sentence.objects.select_related("topic").order_by("-id")[:24])
        training = []
        for stance in ("pro", "con", "none", "pro"):  # one of each label, then one more
            pick = next((s for s in sentences if s.stance == stance and s not in training), None)
            if pick is not None:
                training.append(pick)
        if len(training) < 4 or len(sentences) < 14:
            say("annotation demo: too few corpus sentences with a stance, no study phases demo")
            return None
        rows = [s for s in sentences if s not in training][:15]
        project = services.create_project(
            name="Demo: the whole worker journey (consent, training, survey)",
            slug=PHASES_SLUG,
            task_type="sentence_label",
            config={"labels": LABELS},
            guidelines=GUIDELINES,
            assignments_per_item=2,
            items_per_hit=5,
            reward_cents=50,
            time_estimate_seconds=300,
            gold_min_items=0,
            status="active",
            created_by=_demo_owner(),
        )
        tt = project.get_task_type()
        gold = [
            {
                "payload": payload,
                "expected": {"label": s.stance},
                "training": True,
                "explanation": WHY[s.stance].format(topic=str(s.topic) if s.topic_id else "the topic"),
            }
            for s, payload in zip(training, tt.build_items(project, training))
        ]
        services.add_items_from_rows(project, rows, gold=gold)
        hits = services.build_hits(project)
        phases.configure(
            project,
            {
                "consent_required": True,
                "consent_text": PHASES_CONSENT,
                "instructions_required": True,
                "training_enabled": True,
                "pass_threshold": 0.75,
                "window": 0,
                "max_attempts": 2,
                "survey_enabled": True,
                "survey_questions": PHASES_SURVEY,
            },
        )
        say(
            f"annotation demo: project {PHASES_SLUG!r} with every study phase on ({len(rows)} items, "
            f"{len(training)} training items, {hits} HITs); invite link /invite/{project.invite_token}/"
        )
    else:
        say(f"annotation demo: project {PHASES_SLUG!r} exists (invite link /invite/{project.invite_token}/)")
    n = simulate_trainees(project)
    if n:
        say(f"annotation demo: {n} simulated trainees went through the phases of {PHASES_SLUG!r}")
    return project


def simulate_trainees(project: Project, *, seed: int = SIMULATION_SEED) -> int:
    """:data:`TRAINEES` through the phases, with the real services: consent, instructions, training (right answers
    for those who pass; wrong ones twice for the last, who is screened out), one HIT and the survey. Returns how many
    went through (0 when they did before)."""
    names = [name for name, _ in TRAINEES]
    if Participation.objects.filter(project=project, worker__external_id__in=names).exists():
        return 0
    rng = random.Random(seed)
    clock = timezone.now() - timedelta(hours=2)
    truth = {
        pk: (stance if stance in LABELS else "none")
        for pk, stance in Item.objects.filter(project=project, is_gold=False).values_list("pk", "sentence__stance")
    }
    training = list(
        Item.objects.filter(project=project, is_training=True).select_related("gold").order_by("position", "id")
    )
    for name, passes in TRAINEES:
        worker = services.worker_for_external_id(name, source=Worker.Source.INVITE)
        clock += timedelta(minutes=7)
        phases.record_consent(project, worker, agreed=True, now=clock)
        phases.record_instructions_opened(project, worker, now=clock + timedelta(seconds=40))
        for attempt in (1, 2):
            for n, item in enumerate(training):
                right = item.gold.expected["label"]
                wrong = next(label for label in LABELS if label != right)
                answer = right if passes and (attempt == 2 or n != 1) else wrong
                phases.answer_training_item(
                    project, worker, item.pk, {"label": answer}, now=clock + timedelta(seconds=60 + 20 * n)
                )
            if phases.next_step(project, worker) != phases.RETRY:
                break
            phases.start_retry(project, worker, attempt=attempt)
        if not passes:
            continue
        assignment = services.reserve_next_assignment(project, worker, now=clock + timedelta(minutes=3))
        if assignment is None:
            continue
        answers = {
            str(item.pk): {"label": (truth.get(item.pk) or "none") if rng.random() < 0.85 else rng.choice(LABELS)}
            for item in services.assignment_items(assignment)
        }
        services.submit_assignment(
            assignment, worker, answers, client_seconds=70 + rng.random() * 60, now=clock + timedelta(minutes=5)
        )
        phases.record_survey(
            project,
            worker,
            {
                "clarity": rng.choice(["4", "5"]),
                "age_group": rng.choice(["25-34", "35-49"]),
                "comments": "Clear enough." if rng.random() < 0.5 else "",
            },
            now=clock + timedelta(minutes=6),
        )
    return len(TRAINEES)


def _simulated_workers() -> list[tuple[Worker, float]]:
    people = [
        (services.worker_for_external_id(name, source=Worker.Source.INVITE), skill) for name, skill in SIMULATED_WORKERS
    ]
    expert = get_user_model().objects.filter(username=EXPERT_USERNAME).first()
    if expert is not None:
        people.insert(1, (services.worker_for_user(expert), EXPERT_SKILL))
    return people


def simulate_workers(project: Project, *, seed: int = SIMULATION_SEED) -> int:
    """Answer :data:`SIMULATED_HITS` HITs' worth of assignments as the simulated workers; returns the assignments
    submitted (0 when the simulation ran before: any simulated worker already has an assignment in the project)."""
    names = [name for name, _ in SIMULATED_WORKERS]
    if Assignment.objects.filter(
        project=project, worker__external_id__in=names, worker__source=Worker.Source.INVITE
    ).exists():
        return 0
    rng = random.Random(seed)
    truth = {
        pk: (stance if stance in LABELS else "none")
        for pk, stance in Item.objects.filter(project=project, is_gold=False).values_list("pk", "sentence__stance")
    }
    truth.update({g.item_id: g.expected.get("label") for g in GoldItem.objects.filter(item__project=project)})
    people = _simulated_workers()
    expert_worker = people[1][0] if len(people) > len(SIMULATED_WORKERS) else None
    budget = SIMULATED_HITS * project.assignments_per_item
    clock = timezone.now() - timedelta(hours=3)
    done = 0
    for _round in range(SIMULATED_HITS):
        for worker, skill in people:
            if done >= budget:
                return done
            if worker is expert_worker and _round:  # the expert answers one HIT
                continue
            clock += timedelta(minutes=3)
            try:
                assignment = services.reserve_next_assignment(project, worker, now=clock)
            except services.AllocationError:  # blocked after gold, quota...: this worker stops
                continue
            if assignment is None:
                continue
            answers = {}
            for item in services.assignment_items(assignment):
                right = truth.get(item.pk) or rng.choice(LABELS)
                answers[str(item.pk)] = {"label": right if rng.random() < skill else rng.choice(LABELS)}
            services.submit_assignment(
                assignment, worker, answers, client_seconds=60 + rng.random() * 120, now=clock + timedelta(seconds=90)
            )
            done += 1
    return done
