"""Shared set-up for the span grounding tests: a topic with a KB, sentences, and the Figure 7 example."""

from __future__ import annotations

from corpus.hashing import fact_hash, sentence_hash
from corpus.models import FactVariable, Sentence, Topic
from tests.factories import ProjectFactory

TOPIC = "Death penalty"
FIG7 = "Criminologists familiar with the effects of the DP on crime assert that the DP does not deter crime."


def span(text: str, phrase: str, variable, start: int = 0) -> dict:
    b = text.index(phrase, start)
    return {"begin": b, "end": b + len(phrase), "variable": variable}


def fig7_spans(v1=1, v2=2, v3=3):
    """Figure 7: the human annotation [1] [2] [3] and ArgSpan's [2] [2] [3]."""
    human = [
        span(FIG7, "Criminologists", v1),
        span(FIG7, "effects of the DP on crime", v2),
        span(FIG7, "DP does not deter crime", v3, 60),
    ]
    model = [
        span(FIG7, "Criminologists", v2),
        span(FIG7, "the DP on crime", v2),
        span(FIG7, "the DP does not deter crime", v3, 60),
    ]
    return human, model


def make_kb(n: int = 6, topic_name: str = TOPIC) -> tuple[Topic, list[FactVariable]]:
    topic, _ = Topic.objects.get_or_create(name=topic_name, defaults={"slug": topic_name.lower().replace(" ", "-")})
    facts = [
        FactVariable.objects.create(
            topic=topic,
            text=f"fact {i} about {topic_name}",
            content_hash=fact_hash(topic_name, f"fact {i} about {topic_name}"),
        )
        for i in range(n)
    ]
    return topic, facts


def make_sentence(topic: Topic, text: str, stance: str = "con", **metadata) -> Sentence:
    return Sentence.objects.create(
        topic=topic, text=text, stance=stance, content_hash=sentence_hash(topic.name, text), metadata=metadata
    )


def make_project(slug="spans", config=None, **kw):
    kw.setdefault("items_per_hit", 2)
    kw.setdefault("assignments_per_item", 1)
    return ProjectFactory(
        name=slug.title(), slug=slug, task_type="span_grounding", config=config or {}, items=0, build=False, **kw
    )


def fig7_payload(variables) -> dict:
    from corpus.tokens import token_offsets

    return {
        "argument_id": None,
        "text": FIG7,
        "topic": TOPIC,
        "stance": "con",
        "tokens": token_offsets(FIG7),
        "variables": [{"id": v.pk, "text": v.text} for v in variables],
        "suggestions": [],
    }
