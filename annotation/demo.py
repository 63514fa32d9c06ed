"""Demo data for the annotation engine: a small active ``sentence_label`` project built from corpus sentences, with
some HITs already answered by simulated workers (so that ``make demo`` opens on dashboards with real figures).

The simulation goes through the real services -- :func:`~annotation.services.reserve_next_assignment` and
:func:`~annotation.services.submit_assignment` -- so gold scoring, the agreement snapshot and everything else a
real submission triggers happen as for a person. Workers are seeded: :data:`SIMULATED_WORKERS` (invite-link workers
``demo-crowd-1..4`` without a login, each answering the sentence's corpus stance with their own probability, else a
random label) and the ``expert`` demo account (staff) for one HIT, so crowd-vs-expert figures exist. They fill
:data:`SIMULATED_HITS` of the project's HITs; the rest stays open for the demo accounts ``worker1`` / ``worker2``.
Idempotent: a second load finds the simulated workers' submissions and adds nothing.
"""
from __future__ import annotations

import random
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone

from corpus.models import Sentence

from . import services
from .agreement.snapshots import store_snapshots
from .models import Assignment, GoldItem, Item, Project, Worker

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
SIMULATED_HITS = 4       # HITs filled by the simulation (R = 3 assignments each); the others stay open


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
        item_rows = sentences[len(gold_rows):]
        project = services.create_project(
            name="Demo: stance of argument sentences", slug=DEMO_SLUG, task_type="sentence_label",
            config={"labels": LABELS}, guidelines=GUIDELINES, assignments_per_item=3, items_per_hit=5,
            gold_rate=0.2 if gold_rows else 0.0, reward_cents=50, time_estimate_seconds=120, status="active")
        tt = project.get_task_type()
        gold = [{"payload": payload, "expected": {"label": s.stance},
                 "explanation": f"This sentence is labelled {s.stance}."}
                for s, payload in zip(gold_rows, tt.build_items(project, gold_rows))]
        services.add_items_from_rows(project, item_rows, gold=gold)
        hits = services.build_hits(project)
        say(f"annotation demo: project {DEMO_SLUG!r} with {len(item_rows)} items, {len(gold)} gold, {hits} HITs; "
            f"invite link /invite/{project.invite_token}/")
    n = simulate_workers(project)
    if n:
        store_snapshots(project)  # the dashboard opens on current figures (the debounced task would come later)
        say(f"annotation demo: {n} HITs answered by simulated workers "
            f"({', '.join(name for name, _ in SIMULATED_WORKERS)}, {EXPERT_USERNAME}); dashboard "
            f"/projects/{DEMO_SLUG}/agreement/")
    return project


def _simulated_workers() -> list[tuple[Worker, float]]:
    people = [(services.worker_for_external_id(name, source=Worker.Source.INVITE), skill)
              for name, skill in SIMULATED_WORKERS]
    expert = get_user_model().objects.filter(username=EXPERT_USERNAME).first()
    if expert is not None:
        people.insert(1, (services.worker_for_user(expert), EXPERT_SKILL))
    return people


def simulate_workers(project: Project, *, seed: int = SIMULATION_SEED) -> int:
    """Answer :data:`SIMULATED_HITS` HITs' worth of assignments as the simulated workers; returns the assignments
    submitted (0 when the simulation ran before: any simulated worker already has an assignment in the project)."""
    names = [name for name, _ in SIMULATED_WORKERS]
    if Assignment.objects.filter(project=project, worker__external_id__in=names,
                                 worker__source=Worker.Source.INVITE).exists():
        return 0
    rng = random.Random(seed)
    truth = {pk: (stance if stance in LABELS else "none") for pk, stance in
             Item.objects.filter(project=project, is_gold=False).values_list("pk", "sentence__stance")}
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
            services.submit_assignment(assignment, worker, answers, client_seconds=60 + rng.random() * 120,
                                       now=clock + timedelta(seconds=90))
            done += 1
    return done
