"""Where ``likert_debate`` items come from (the studio, ``/studio/``): a file of debates (a generation run's debates,
the reader of ``manage.py ratings debates --file``) or human debates from the debate trees in the corpus, root-to-leaf
paths of ``length`` turns (``--from-trees``); :mod:`annotation.task_types.ratings.items`. Ratings carry no answer, so
there are no gold items."""
from __future__ import annotations

from annotation.task_types.base import Preview, Source, SourceInput, SourceOption
from annotation.task_types.ratings import RatingsError, items
from corpus.models import DebateTree

PREVIEW_ROWS = 10
DEBATES = Source(
    "debates-jsonl", "Debates (JSONL)",
    "One JSON object a line: id, system (\"human\" or a model's name), an optional topic, and turns: a list of at "
    "least 2 {speaker, text}. Workers never see the system.",
    extensions=(".jsonl", ".ndjson"), rows="jsonl",
    example='{"id": "d1", "system": "bart", "topic": "Ban zoos", "turns": [{"speaker": "Alice", "text": "..."}, '
            '{"speaker": "Bob", "text": "..."}]}')
TREES = Source(
    "debate-trees", "Human debates from the corpus's debate trees",
    "Root-to-leaf paths of the imported debate trees (of the chosen topics; all trees when none is chosen), cut to "
    "the number of turns below; at most the limit.",
    options=(SourceOption("length", "Turns per debate", kind="int", default=10, minimum=2, maximum=50),))
SOURCES = (DEBATES, TREES)


def _payloads(data: SourceInput) -> list[dict]:
    if data.source.name == DEBATES.name:
        return items.read_debates(data.path)
    trees = DebateTree.objects.order_by("id")
    if data.topics:
        trees = trees.filter(topic__in=data.topics)
    length = int(data.options.get("length") or 10)
    payloads = items.tree_debates(trees, length=length, limit=data.limit)
    if not payloads:
        raise RatingsError(f"length: no root-to-leaf path of {length} turns in the debate trees"
                           + (" of these topics" if data.topics else ""))
    return payloads


def preview(project, data: SourceInput) -> Preview:
    payloads = _payloads(data)
    rows = [[str(n), p["debate_id"], p["system"], p.get("topic", ""), str(len(p["turns"])),
             f"{p['turns'][0]['speaker']}: {p['turns'][0]['text']}"] for n, p in enumerate(payloads[:PREVIEW_ROWS], 1)]
    return Preview(items=len(payloads), columns=["#", "debate", "system", "topic", "turns", "first turn"], rows=rows,
                   notes=[f"{len(payloads)} debate(s), {sum(len(p['turns']) for p in payloads)} turns in all"])


def write(project, data: SourceInput, progress) -> dict:
    return items.write_payloads(project, _payloads(data), progress, "importing debates")


def summary(payload: dict) -> str:
    turns = payload.get("turns") or []
    first = turns[0].get("text", "") if turns and isinstance(turns[0], dict) else ""
    return f"{payload.get('topic') or payload.get('debate_id', '')}: {first}"
