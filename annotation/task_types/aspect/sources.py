"""Where ``aspect`` items come from (the studio, ``/studio/``): an Arg-CTRL App. F file (the importer of
``manage.py aspects import``: :mod:`annotation.task_types.aspect.appf`; with "as gold" every row is a gold item whose
expected answer is its aspects), the argument-aspect span corpus in CoNLL (:mod:`annotation.task_types.aspect.conll`,
``aspects import --format conll``: converted to App. F rows and imported as those), or corpus sentences from an
uploaded corpus file or a corpus selection (:mod:`annotation.studio.sentences`)."""
from __future__ import annotations

from annotation.studio import sentences
from annotation.task_types.base import Preview, Source, SourceInput, SourceOption
from argora.errors import FieldError
from corpus.hashing import sentence_hash
from corpus.models import Sentence

from . import appf, conll

PREVIEW_ROWS = 10
APPF = Source(
    "appf-jsonl", "Arg-CTRL App. F aspects (JSONL)",
    "One JSON object a line: hash, topic, sentence, stance (Argument_for or Argument_against) and the aspects as "
    "aspect_pos \"(begin,length)\" with their aspect_pos_string. The sentences go into the corpus; the aspects are "
    "kept as the reference (or, as gold, as the expected answer).",
    extensions=(".jsonl", ".ndjson"), rows="jsonl",
    options=(SourceOption("as_gold", "Every row is a gold item (expected answer: its aspects)",
                          help="aspects import --as-gold: quality-check items; the project needs other items too"),),
    example='{"hash": "a1", "topic": "nuclear energy", "sentence": "Nuclear power is clean but expensive.", '
            '"stance": "Argument_for", "aspect_pos": ["(17,5)", "(27,9)"], "aspect_pos_string": ["clean", '
            '"expensive"]}')
CONLL = Source(
    "conll", "Argument-aspect spans (CoNLL)",
    "One token and its label a line (token, a tab, then O, B-ASP or I-ASP; B and I also do), a blank line between "
    "sentences; the corpus's own files (numbered tokens, each labelled with its aspect category, e.g. "
    "mw_conll_gold_chunk.txt) read as they are. One file a topic (the topic is the file's name unless you give one). "
    "The sentences are rebuilt from "
    "their tokens and go into the corpus; the aspects are kept as the reference (or, as gold, as the expected answer). "
    "A sentence's stance is the corpus's for the same sentence, else the stance you give.",
    extensions=conll.EXTENSIONS, rows="",
    options=(SourceOption("as_gold", "Every sentence is a gold item (expected answer: its aspects)",
                          help="quality-check items; the project needs other items too"),
             SourceOption("topic", "Topic", kind="text", help="default: the file's name (nuclear_energy.conll: "
                                                              "nuclear energy)"),
             SourceOption("stance", "Stance of sentences the corpus does not have (pro or con)", kind="text",
                          help="App. F rows are arguments with a stance; empty: every sentence must be in the "
                               "corpus")),
    example="Nuclear\tO\npower\tB-ASP\nis\tO\ncheap\tB-ASP\n.\tO\n")
SOURCES = (APPF, CONLL, *sentences.SOURCES)


def _rows(data: SourceInput) -> list[appf.AppFRow]:
    if data.source.name == APPF.name:
        return appf.parse_appf(data.path)
    stance = (data.options.get("stance") or "").strip().lower() or None
    if stance is not None and stance not in conll.STANCES:
        raise FieldError("stance", f"pro or con (or empty), not {stance!r}")
    topic = (data.options.get("topic") or "").strip() or conll.topic_of_file(data.file_name or data.path.name)
    return conll.appf_rows(data.path, topic=topic, stance=stance)


def preview(project, data: SourceInput) -> Preview:
    if data.source.name not in (APPF.name, CONLL.name):
        return sentences.preview(project, data)
    rows = _rows(data)
    as_gold = bool(data.options.get("as_gold"))
    present = Sentence.objects.filter(content_hash__in=[sentence_hash(r.topic, r.sentence) for r in rows]).count()
    notes = [f"{len(rows)} row(s), {present} sentence(s) already in the corpus (reused)"]
    if as_gold:
        notes.append("every row becomes a gold item: add items for the workers (another import) before HITs exist")
    shown = [[str(n), r.topic, r.stance, r.sentence, ", ".join(r.aspect_pos_string) or "(no aspect)"]
             for n, r in enumerate(rows[:PREVIEW_ROWS], start=1)]
    return Preview(items=0 if as_gold else len(rows), gold=len(rows) if as_gold else 0,
                   columns=["#", "topic", "stance", "sentence", "aspects" + (" (expected)" if as_gold else "")],
                   rows=shown, notes=notes)


def write(project, data: SourceInput, progress) -> dict:
    if data.source.name not in (APPF.name, CONLL.name):
        return sentences.write(project, data, progress)
    s = appf.import_appf(data.path, project, as_gold=bool(data.options.get("as_gold")), progress=progress,
                         rows=_rows(data))
    return {"items": s["items_created"], "gold": s["gold_created"], "sentences_created": s["sentences_created"]}


def summary(payload: dict) -> str:
    return str(payload.get("text", ""))
