"""Where ``aspect`` items come from (the studio, ``/studio/``): an Arg-CTRL App. F file (the importer of
``manage.py aspects import``: :mod:`annotation.task_types.aspect.appf`), the argument-aspect span corpus in CoNLL
(:mod:`annotation.task_types.aspect.conll`, ``aspects import --format conll``: converted to App. F rows and imported
as those), or corpus sentences from an uploaded corpus file or a corpus selection (:mod:`annotation.studio.sentences`).

The rows of the two aspect files carry labels (``Source.gold_label``: "its aspects"): the gold share of the upload
(``data.gold``, :class:`~annotation.task_types.base.GoldShare`: the first N rows, N% drawn with a seed, or every row
when adding to a project with items) picks the rows that become gold items, whose expected answer is the row's
aspects; the other rows become items for the workers (their aspects kept as the reference). Preview and write split
the rows the same way (``data.gold.split(rows)``, file order). A CoNLL sentence's stance is never invented: its own
(a ``# stance = ...`` line), else the corpus's, else the stance given for the file, else unknown."""

from __future__ import annotations

from annotation.studio import sentences
from annotation.task_types.base import Preview, Source, SourceInput, SourceOption
from argora.errors import FieldError
from corpus.hashing import sentence_hash
from corpus.models import Sentence

from . import appf, conll

GOLD_LABEL = "its aspects"

PREVIEW_ROWS = 10
APPF = Source(
    "appf-jsonl",
    "Arg-CTRL App. F aspects (JSONL)",
    "One JSON object a line: hash, topic, sentence, stance (Argument_for, Argument_against, or null when unknown) "
    'and the aspects as aspect_pos "(begin,length)" with their aspect_pos_string. The sentences go into the '
    "corpus; the aspects are kept as the reference, or, for the rows the gold share makes gold items, as the "
    "expected answer.",
    extensions=(".jsonl", ".ndjson"),
    rows="jsonl",
    gold_label=GOLD_LABEL,
    example='{"hash": "a1", "topic": "nuclear energy", "sentence": "Nuclear power is clean but expensive.", '
    '"stance": "Argument_for", "aspect_pos": ["(17,5)", "(27,9)"], "aspect_pos_string": ["clean", '
    '"expensive"]}',
)
CONLL = Source(
    "conll",
    "Argument-aspect spans (CoNLL)",
    "One token and its label a line (token, a tab, then O, B-ASP or I-ASP; B and I also do), a blank line between "
    "sentences; the corpus's own files (numbered tokens, each labelled with its aspect category, e.g. "
    "mw_conll_gold_chunk.txt) read as they are. One file a topic (the topic is the file's name unless you give one). "
    "The sentences are rebuilt from "
    "their tokens and go into the corpus; the aspects are kept as the reference, or, for the rows the gold share "
    'makes gold items, as the expected answer. A sentence\'s stance is its own when a "# stance = pro" (con, '
    "unknown) line comes before it, else the corpus's for the same sentence, else the stance you give, else "
    "unknown (never pro or con by default).",
    extensions=conll.EXTENSIONS,
    rows="",
    gold_label=GOLD_LABEL,
    options=(
        SourceOption(
            "topic", "Topic", kind="text", help="default: the file's name (nuclear_energy.conll: nuclear energy)"
        ),
        SourceOption(
            "stance",
            "Stance of sentences with none of their own (pro, con or unknown)",
            kind="text",
            help='for sentences without a "# stance" line that the corpus does not have; empty: unknown',
        ),
    ),
    example="Nuclear\tO\npower\tB-ASP\nis\tO\ncheap\tB-ASP\n.\tO\n",
)
SOURCES = (APPF, CONLL, *sentences.SOURCES)


def _rows(data: SourceInput) -> list[appf.AppFRow]:
    if data.source.name == APPF.name:
        return appf.parse_appf(data.path)
    stance = (data.options.get("stance") or "").strip().lower() or None
    if stance is not None and stance not in conll.STANCE_CHOICES:
        raise FieldError("stance", f"pro, con or unknown (or empty: unknown), not {stance!r}")
    topic = (data.options.get("topic") or "").strip() or conll.topic_of_file(data.file_name or data.path.name)
    return conll.appf_rows(data.path, topic=topic, stance=stance)


def preview(project, data: SourceInput) -> Preview:
    if data.source.name not in (APPF.name, CONLL.name):
        return sentences.preview(project, data)
    rows = _rows(data)
    gold_rows, _ = data.gold.split(rows)
    chosen = {id(r) for r in gold_rows}
    present = Sentence.objects.filter(content_hash__in=[sentence_hash(r.topic, r.sentence) for r in rows]).count()
    notes = [f"{len(rows)} row(s), {present} sentence(s) already in the corpus (reused)"]
    unknown = sum(r.stance == appf.UNKNOWN for r in rows)
    if unknown:
        notes.append(f"{unknown} sentence(s) of unknown stance (kept unknown: App. F stance null)")
    if data.gold.active:
        notes.append(f"gold: {data.gold.describe()} ({len(gold_rows)} of {len(rows)}; expected answer: {GOLD_LABEL})")
    present_rows = appf.present_hashes(project, rows)
    if present_rows:
        notes.append(f"{len(present_rows)} row(s) already in this project (skipped)")
    new_gold = sum(r.hash not in present_rows for r in gold_rows)
    new_rows = sum(r.hash not in present_rows for r in rows)
    shown = [
        [str(n), r.topic, r.stance, r.sentence, ", ".join(r.aspect_pos_string) or "(no aspect)"]
        + (["gold" if id(r) in chosen else ""] if data.gold.active else [])
        for n, r in enumerate(rows[:PREVIEW_ROWS], start=1)
    ]
    return Preview(
        items=new_rows - new_gold,
        gold=new_gold,
        columns=["#", "topic", "stance", "sentence", "aspects"] + (["gold"] if data.gold.active else []),
        rows=shown,
        notes=notes,
    )


def write(project, data: SourceInput, progress) -> dict:
    if data.source.name not in (APPF.name, CONLL.name):
        return sentences.write(project, data, progress)
    s = appf.import_appf(data.path, project, gold=data.gold, progress=progress, rows=_rows(data))
    return {"items": s["items_created"], "gold": s["gold_created"], "sentences_created": s["sentences_created"]}


def summary(payload: dict) -> str:
    return str(payload.get("text", ""))
