"""Where ``pairwise_preference`` items come from (the studio, ``/studio/``): a file of argument pairs (a generation
run's pairs, the reader of ``manage.py ratings pairwise --file``), a file of candidate arguments that are each paired
with a corpus argument of the same topic and stance (``--from-corpus``), or a Kialo discussion export whose
supportive and contradicting replies to the same claim are paired (:func:`annotation.task_types.ratings.items.
tree_pairs`; the tree goes into the corpus); :mod:`annotation.task_types.ratings.items`. Pairs carry no answer, so
there are no gold items."""

from __future__ import annotations

from annotation.task_types.base import Preview, Source, SourceInput, SourceOption
from annotation.task_types.ratings import items
from corpus.importers import ImportFailed

PREVIEW_ROWS = 10
PAIRS = Source(
    "pairs-jsonl",
    "Argument pairs (JSONL)",
    "One JSON object a line: topic, stance, and the two arguments a and b, each {system, text} (two different "
    "systems); an id is optional. Workers never see the systems.",
    extensions=(".jsonl", ".ndjson"),
    rows="jsonl",
    example='{"topic": "nuclear energy", "stance": "pro", "a": {"system": "arg-ctrl", "text": "..."}, '
    '"b": {"system": "reference", "text": "..."}}',
)
CANDIDATES = Source(
    "candidates-jsonl",
    "Candidate arguments against corpus arguments (JSONL)",
    "One JSON object a line: topic, stance (pro or con), text, optionally id and system. Each candidate is paired with "
    "a corpus argument of the same topic and stance (seeded choice), so the topic's arguments must be imported.",
    extensions=(".jsonl", ".ndjson"),
    rows="jsonl",
    options=(
        SourceOption("system", "System of candidates that name none", kind="text", default="candidate"),
        SourceOption("seed", "Seed of the reference choice", kind="int", default=13),
    ),
    example='{"topic": "nuclear energy", "stance": "pro", "text": "Nuclear power keeps the lights on without CO2.", '
    '"system": "arg-ctrl"}',
)
KIALO = Source(
    "kialo",
    "Kialo discussion export (.txt)",
    'Kialo\'s plain-text export of one discussion ("Discussion Title: ...", then numbered claims 1., 1.1., 1.1.1. '
    "with Pro: / Con: towards their parent). The tree goes into the corpus (all or nothing; a file imported before is "
    "reused). A pair is two human replies to the same claim, compared as the two single-claim responses of the "
    "debate-trees paper (§2.2, Table 2): for each prompt of its supportive and contradicting strategies (the thesis, "
    'or a claim reached from it through Pro claims only) its k-th Pro reply (system "supportive") against its '
    'k-th Con reply (system "contradicting"), so each reply is in at most one pair. The topic shown is the claim '
    'replied to and the stance "one supports it, one refutes it": the two arguments do not share a stance, so say '
    "so in the guidelines (the default ones speak of the same stance). The results compare the two strategies.",
    extensions=(".txt",),
    rows="",
    options=(
        SourceOption("limit", "At most (pairs)", kind="int", default=0, help="0: every pair of the tree"),
        SourceOption(
            "topic",
            "Corpus topic of the tree",
            kind="text",
            help="optional: the corpus topic the imported tree is linked to",
        ),
    ),
    example="Discussion Title: Should schools require uniforms?\n\n1. Schools should require uniforms.\n"
    "1.1. Pro: Uniforms reduce bullying over clothes.\n1.2. Con: Uniforms cost families money.",
)
SOURCES = (PAIRS, CANDIDATES, KIALO)


def _kialo(data: SourceInput) -> list[dict]:
    tree = items.read_kialo(data.path, topic=data.options.get("topic") or None, source=data.file_name or None)
    payloads = items.tree_pairs(tree, limit=int(data.options.get("limit") or 0) or None)
    if not payloads:
        raise ImportFailed(
            data.path,
            tree.line,
            f"no claim of the discussion {tree.title!r} has both a Pro and a Con "
            f"reply on a supportive path (thesis, then Pro claims only)",
        )
    return payloads


def _payloads(data: SourceInput) -> list[dict]:
    if data.source.name == KIALO.name:
        return _kialo(data)
    if data.source.name == CANDIDATES.name:
        return items.read_corpus_pairs(
            data.path, system=data.options.get("system") or None, seed=int(data.options.get("seed") or 0)
        )
    return items.read_pairs(data.path)


def preview(project, data: SourceInput) -> Preview:
    payloads = _payloads(data)
    rows = [
        [
            str(n),
            p["topic"],
            p["stance"],
            f"{p['a']['text']}  [{p['a']['system']}]",
            f"{p['b']['text']}  [{p['b']['system']}]",
        ]
        for n, p in enumerate(payloads[:PREVIEW_ROWS], start=1)
    ]
    systems = sorted({p[side]["system"] for p in payloads for side in ("a", "b")})
    return Preview(
        items=len(payloads),
        columns=["#", "topic", "stance", "argument a", "argument b"],
        rows=rows,
        notes=[f"{len(payloads)} pair(s) of the systems {', '.join(systems)}"],
    )


def write(project, data: SourceInput, progress) -> dict:
    payloads = _payloads(data)
    if data.source.name == KIALO.name:
        tree = items.import_kialo(
            data.path, topic=data.options.get("topic") or None, source=data.file_name or None, progress=progress
        )
        for payload in payloads:
            payload["source"]["tree_id"] = tree.pk
    return items.write_payloads(project, payloads, progress, "importing pairs")


def summary(payload: dict) -> str:
    a, b = payload.get("a") or {}, payload.get("b") or {}
    return f"{payload.get('topic', '')}: {a.get('text', '')} | {b.get('text', '')}"
