"""Where ``span_grounding`` items come from (the studio, ``/studio/``): corpus sentences, from an uploaded corpus file
(UKP TSV, JSONL arguments) or a selection of the corpus (:mod:`annotation.studio.sentences`). Each item offers fact
variables of its topic, so every topic needs enough active variables in the KB first (``manage.py spans
kb-import``); the preview says which topic has too few."""
from __future__ import annotations

from annotation.studio import sentences
from argora.errors import FieldError
from corpus.models import FactVariable

from .task_type import config_of

SOURCES = sentences.SOURCES
write = sentences.write


def check_kb(project, rows) -> None:
    """Every topic of the sentences has at least the project's minimum of active fact variables."""
    needed = config_of(project)["variables_per_item"][0]
    seen = {}
    for sentence in rows:
        topic = sentence.topic
        if topic is not None and topic.name.lower() not in seen:
            seen[topic.name.lower()] = topic
    for topic in sorted(seen.values(), key=lambda t: t.name.lower()):
        n = (FactVariable.objects.filter(topic_id=topic.pk, status=FactVariable.Status.ACTIVE).count()
             if topic.pk else 0)
        if n < needed:
            raise FieldError("variables", f"topic {topic.name!r} has {n} active fact variable(s) in the KB; an item "
                                          f"needs at least {needed} (import the KB first: manage.py spans kb-import)")


def preview(project, data):
    return sentences.preview(project, data, check=check_kb)


def summary(payload: dict) -> str:
    return str(payload.get("text", ""))
