"""Demo data for the annotation engine: a small active ``sentence_label`` project built from corpus sentences."""
from __future__ import annotations

from corpus.models import Sentence

from . import services
from .models import Project

DEMO_SLUG = "demo-stance"
GUIDELINES = (
    "<p>Read each sentence and decide whether it is an argument <b>for</b> (pro) or <b>against</b> (con) "
    "the topic, or <b>no argument</b> at all (none).</p>"
    "<p>Keys: <kbd>1</kbd>/<kbd>2</kbd>/<kbd>3</kbd> choose a label, <kbd>Enter</kbd> goes on.</p>"
)


def load(stdout=None, *, n_items: int = 30, n_gold: int = 4) -> Project | None:
    """Create (once) the demo project from up to ``n_items`` corpus sentences; gold items come from sentences
    whose stance is known. Returns the project, or ``None`` when the corpus has no sentences."""
    def say(msg: str) -> None:
        if stdout is not None:
            stdout.write(msg + ("\n" if not msg.endswith("\n") else ""))

    existing = Project.objects.filter(slug=DEMO_SLUG).first()
    if existing is not None:
        say(f"annotation demo: project {DEMO_SLUG!r} exists (invite link /invite/{existing.invite_token}/)")
        return existing
    sentences = list(Sentence.objects.select_related("topic").order_by("id")[: n_items + n_gold])
    if not sentences:
        say("annotation demo: no corpus sentences, no demo project")
        return None
    labels = ["pro", "con", "none"]
    gold_rows = [s for s in sentences[:n_gold] if s.stance in labels] if len(sentences) > n_gold + 5 else []
    item_rows = sentences[len(gold_rows):]
    project = services.create_project(
        name="Demo: stance of argument sentences", slug=DEMO_SLUG, task_type="sentence_label",
        config={"labels": labels}, guidelines=GUIDELINES, assignments_per_item=3, items_per_hit=5,
        gold_rate=0.2 if gold_rows else 0.0, reward_cents=50, time_estimate_seconds=120, status="active")
    tt = project.get_task_type()
    gold = [{"payload": payload, "expected": {"label": s.stance}, "explanation": f"This sentence is labelled {s.stance}."}
            for s, payload in zip(gold_rows, tt.build_items(project, gold_rows))]
    services.add_items_from_rows(project, item_rows, gold=gold)
    hits = services.build_hits(project)
    say(f"annotation demo: project {DEMO_SLUG!r} with {len(item_rows)} items, {len(gold)} gold, {hits} HITs; "
        f"invite link /invite/{project.invite_token}/")
    return project
