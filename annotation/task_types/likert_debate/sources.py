"""Where ``likert_debate`` items come from (the studio, ``/studio/``): a file of debates (a generation run's debates,
the reader of ``manage.py ratings debates --file``), a Kialo discussion export (its tree goes into the corpus; its
root-to-leaf paths of ``length`` turns become human debates, as ``--from-trees`` makes them) or human debates from the
debate trees in the corpus (``--from-trees``); :mod:`annotation.task_types.ratings.items`. Ratings carry no answer,
so there are no gold items."""

from __future__ import annotations

from annotation.task_types.base import Preview, Source, SourceInput, SourceOption
from annotation.task_types.ratings import RatingsError, items
from corpus.models import DebateTree

PREVIEW_ROWS = 10
LENGTH = SourceOption("length", "Turns per debate", kind="int", default=10, minimum=2, maximum=50)
DEBATES = Source(
    "debates-jsonl",
    "Debates (JSONL)",
    'One JSON object a line: id, system ("human" or a model\'s name), an optional topic, and turns: a list of at '
    "least 2 {speaker, text}. Workers never see the system.",
    extensions=(".jsonl", ".ndjson"),
    rows="jsonl",
    example='{"id": "d1", "system": "bart", "topic": "Ban zoos", "turns": [{"speaker": "Alice", "text": "..."}, '
    '{"speaker": "Bob", "text": "..."}]}',
)
KIALO = Source(
    "kialo",
    "Kialo discussion export (.txt)",
    'Kialo\'s plain-text export of one discussion ("Discussion Title: ...", then numbered claims 1., 1.1., 1.1.1. '
    'with Pro: / Con: towards their parent; "-> See 1.2." copies a claim). The tree goes into the corpus (all or '
    "nothing; a file imported before is reused). Each debate is a root-to-leaf path cut to the number of turns below "
    "(debate trees §2.1: the thesis is the topic, the claims under it the turns of two alternating speakers, system "
    '"human"); shorter paths are left out, paths sharing their first turns give one debate.',
    extensions=(".txt",),
    rows="",
    options=(
        LENGTH,
        SourceOption("limit", "At most (debates)", kind="int", default=0, help="0: every debate of the tree"),
        SourceOption(
            "topic",
            "Corpus topic of the tree",
            kind="text",
            help="optional: the tree is then offered under this topic by the corpus source",
        ),
    ),
    example="Discussion Title: Should schools require uniforms?\n\n1. Schools should require uniforms.\n"
    "1.1. Pro: Uniforms reduce bullying over clothes.\n1.1.1. Con: Children are bullied for other things.\n"
    "1.2. Con: Uniforms cost families money.",
)
TREES = Source(
    "debate-trees",
    "Human debates from the corpus's debate trees",
    "Root-to-leaf paths of the imported debate trees (of the chosen topics; all trees when none is chosen), cut to "
    "the number of turns below; at most the limit.",
    options=(LENGTH,),
)
SOURCES = (DEBATES, KIALO, TREES)


def _length(data: SourceInput) -> int:
    return int(data.options.get("length") or 10)


def _none_of(length: int, where: str) -> RatingsError:
    return RatingsError(f"length: no root-to-leaf path of {length} turns in {where}")


def _kialo(data: SourceInput, *, write_progress=None) -> list[dict]:
    """The debates of the uploaded export: read from the parsed file for the preview (the tree's id is not known
    yet when it is new), from the imported tree on write (the ids ``tree<id>:<path>:<turns>`` the corpus source
    gives too, so the same debate is never added twice)."""
    length, limit = _length(data), int(data.options.get("limit") or 0) or None
    topic = data.options.get("topic") or None
    tree = items.read_kialo(data.path, topic=topic, source=data.file_name or None)
    stored = DebateTree.objects.filter(content_hash=tree.content_hash).first()
    if write_progress is not None:
        stored = items.import_kialo(data.path, topic=topic, source=data.file_name or None, progress=write_progress)
    if stored is not None:
        payloads = items.tree_debates(DebateTree.objects.filter(pk=stored.pk), length=length, limit=limit)
    else:
        payloads = items.record_debates(tree, length=length, limit=limit)
    if not payloads:
        raise _none_of(
            length, f"the discussion {tree.title!r} (its longest path has {max(n.depth for n in tree.nodes)} turns)"
        )
    return payloads


def _payloads(data: SourceInput) -> list[dict]:
    if data.source.name == DEBATES.name:
        return items.read_debates(data.path)
    if data.source.name == KIALO.name:
        return _kialo(data)
    trees = DebateTree.objects.order_by("id")
    if data.topics:
        trees = trees.filter(topic__in=data.topics)
    length = _length(data)
    payloads = items.tree_debates(trees, length=length, limit=data.limit)
    if not payloads:
        raise _none_of(length, "the debate trees" + (" of these topics" if data.topics else ""))
    return payloads


def preview(project, data: SourceInput) -> Preview:
    payloads = _payloads(data)
    rows = [
        [
            str(n),
            p["debate_id"],
            p["system"],
            p.get("topic", ""),
            str(len(p["turns"])),
            f"{p['turns'][0]['speaker']}: {p['turns'][0]['text']}",
        ]
        for n, p in enumerate(payloads[:PREVIEW_ROWS], 1)
    ]
    notes = [f"{len(payloads)} debate(s), {sum(len(p['turns']) for p in payloads)} turns in all"]
    if data.source.name == KIALO.name:
        known = (
            DebateTree.objects.filter(pk=payloads[0]["source"]["tree"]).exists()
            if isinstance(payloads[0]["source"]["tree"], int)
            else False
        )
        notes.append(
            "the discussion is in the corpus already (reused)"
            if known
            else "the discussion's tree goes into the corpus (debate ids tree<new>: the tree's id once imported)"
        )
    return Preview(
        items=len(payloads), columns=["#", "debate", "system", "topic", "turns", "first turn"], rows=rows, notes=notes
    )


def write(project, data: SourceInput, progress) -> dict:
    if data.source.name == KIALO.name:
        return items.write_payloads(project, _kialo(data, write_progress=progress), progress, "importing debates")
    return items.write_payloads(project, _payloads(data), progress, "importing debates")


def summary(payload: dict) -> str:
    turns = payload.get("turns") or []
    first = turns[0].get("text", "") if turns and isinstance(turns[0], dict) else ""
    return f"{payload.get('topic') or payload.get('debate_id', '')}: {first}"
