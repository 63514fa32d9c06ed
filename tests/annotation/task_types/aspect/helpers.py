"""Small builders shared by the aspect tests."""

from annotation import services
from annotation.task_types.aspect.items import build_payload
from annotation.task_types.aspect.rankers import BaselineRanker

SENTENCES = [
    ("Gun control needs background checks, not bans.", "gun control", "pro"),
    ("Nuclear energy is clean but expensive.", "nuclear energy", "con"),
]


def aspect_project(slug="asp", *, r=1, items_per_hit=2, config=None, sentences=SENTENCES):
    project = services.create_project(
        name=slug,
        slug=slug,
        task_type="aspect",
        status="active",
        assignments_per_item=r,
        items_per_hit=items_per_hit,
        config=config or {},
    )
    ranker = BaselineRanker(load_from_db=False)
    services.add_items(
        project,
        [build_payload(text, topic, stance=stance, ranker=ranker, top_k=3) for text, topic, stance in sentences],
    )
    services.build_hits(project)
    return project


def span(text, phrase):
    begin = text.index(phrase)
    return f"{begin}:{len(phrase)}"
