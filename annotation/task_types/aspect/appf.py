"""Arg-CTRL App. F aspect datasets: JSONL import into an ``aspect`` project, export, fixed splits.

One JSON object per line::

    {"hash": "...", "aspect_pos": ["(18,5)", ...], "aspect_pos_string": ["clean", ...],
     "stance": "Argument_for" | "Argument_against", "topic": "nuclear energy", "sentence": "..."}

``aspect_pos`` are ``"(begin,length)"`` character offsets into ``sentence``; ``aspect_pos_string[i]`` must be
``sentence[begin:begin + length]``. Stance mapping: ``Argument_for`` <-> ``pro``, ``Argument_against`` <-> ``con``,
and ``null`` (or ``"unknown"``) <-> ``unknown``: a sentence whose stance its source did not give (a CoNLL file
without one, :mod:`.conll`) keeps it unknown all the way -- the corpus stores it with stance ``none`` and metadata
``{"stance": "unknown"}`` (the corpus has no "unknown" stance), the item payload says ``"stance": "unknown"``, and
the export writes ``"stance": null``; nothing invents Argument_for.

Import (:func:`import_appf`) is all-or-nothing: every line is validated first (:class:`ImportFailed` names
``file:line``), then in ONE transaction each row becomes a ``corpus.Sentence`` (topic, text, stance, content
hash from :func:`corpus.hashing.sentence_hash`, the App. F hash in ``external_id``; a sentence already stored
is reused) and an item of the project: a gold item (``GoldItem.expected = {"aspects": [...], "no_aspect":
...}``) for the rows the gold share picks (``gold``, a :class:`~annotation.task_types.base.GoldShare` over the rows in
file order; ``aspects import --as-gold`` = every row), else a plain item whose ``payload["reference"]`` keeps the
imported aspects.
Re-importing the same file into the same project adds nothing (items are keyed ``appf:<hash>``).

A gold row's item also gets the quality-check instruction of App. A (``payload["instruction"]``, e.g. "Select
'clean' and 'expensive' as the aspects of this sentence.", :func:`annotation.task_types.aspect.gold_instruction`)
unless the project's ``config["gold_instructions"]`` is false. The first list has ``top_k`` or
``top_k_cross_topic`` candidates (:func:`annotation.task_types.aspect.top_k_for`).

Export (:func:`project_rows`) writes one row per item that has a final answer (see
:func:`annotation.task_types.aspect.aggregation.final_answer`: adjudicated > gold > crowd vote > imported reference).
Rows are sorted by hash, keys sorted, aspects ordered by begin; an item whose answer is still the imported
one is written with the imported strings exactly, so import + export round-trips byte for byte. App. F holds
arguments only (``stance`` is ``Argument_for``, ``Argument_against`` or ``null`` for an unknown stance, and import
refuses anything else), so an item whose sentence is not an argument (stance ``none``, UKP's ``NoArgument``) is left
out of every App. F export
and counted (``stats["non_arguments"]``; the CLI prints it), as are unresolved items (``stats["unresolved"]``).
:func:`export_appf` writes the unsplit file (``out``) and/or the split files (``split`` + ``out_dir``).

Splits (:func:`split_rows`): ``cross-topic`` (test: gun control, school uniforms; dev: death penalty; train:
the rest, App. F; or any topics named with ``test`` / ``dev``, each of which must be among the rows) and ``in-topic`` (a seeded random split whose sizes keep App. F's 3532 / 500 / 1000
proportions for the number of rows at hand, :func:`in_topic_sizes`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from annotation.models import Assignment, GoldItem, Item, Response
from annotation.selectors import unverified_q, wrong_task_type
from annotation.services import add_items
from annotation.task_types.aspect.items import (
    build_payload,
    gold_instruction,
    gold_instructions_on,
    top_k_for,
)
from annotation.task_types.aspect.rankers import get_active_ranker
from annotation.task_types.base import GoldShare
from argora.jsonl import read_jsonl, write_jsonl
from argora.progress import null_progress
from corpus.hashing import sentence_hash
from corpus.importers.base import ImportFailed, ParsedFile, SentenceRecord
from corpus.importers.readers import read_text
from corpus.importers.writers import save
from corpus.models import Sentence
from corpus.releases import check_export_args

from .aggregation import final_answer

APPF_STANCE = {"pro": "Argument_for", "con": "Argument_against"}
STANCE_FROM_APPF = {v: k for k, v in APPF_STANCE.items()}
UNKNOWN = "unknown"  # a stance the source did not give (App. F: null); never read as pro or con
UNKNOWN_METADATA = {"stance": UNKNOWN}  # how the corpus (stance "none") keeps a sentence's unknown stance
REQUIRED = ("hash", "aspect_pos", "aspect_pos_string", "stance", "topic", "sentence")
SPLITS = ("train", "dev", "test")
CROSS_TOPIC = {"test": ["gun control", "school uniforms"], "dev": ["death penalty"]}
APP_F_SIZES = {"train": 3532, "dev": 500, "test": 1000}
SOURCE = "arg-ctrl-appf"
_POS = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


@dataclass
class AppFRow:
    line: int
    hash: str
    sentence: str
    topic: str
    stance: str  # pro / con / unknown
    aspect_pos: list[str]  # as written in the file
    aspect_pos_string: list[str]
    spans: list[tuple[int, int]]
    raw_stance: str | None = ""  # App. F's: Argument_for / Argument_against / None (unknown)
    extra: dict = field(default_factory=dict)  # unknown keys, written back on export

    def reference(self) -> dict:
        return {
            "hash": self.hash,
            "aspects": [{"begin": b, "length": l, "text": self.sentence[b : b + l]} for b, l in sorted(self.spans)],
            "no_aspect": not self.spans,
            "aspect_pos": list(self.aspect_pos),
            "aspect_pos_string": list(self.aspect_pos_string),
            "stance": self.raw_stance,
            "topic": self.topic,
            "extra": dict(self.extra),
        }


# --- parsing -------------------------------------------------------------------------------------------
def parse_row(path, number: int, obj: dict) -> AppFRow:
    """One App. F row (a JSON object read from line ``number``), validated."""
    missing = [k for k in REQUIRED if k not in obj]
    if missing:
        raise ImportFailed(path, number, f"missing key(s) {', '.join(missing)}")
    for key in ("hash", "topic", "sentence"):
        if not isinstance(obj[key], str) or not obj[key].strip():
            raise ImportFailed(path, number, f'"{key}" must be a non-empty string')
    if obj["stance"] not in STANCE_FROM_APPF and obj["stance"] not in (None, UNKNOWN):
        raise ImportFailed(
            path, number, f'"stance" must be Argument_for, Argument_against or null (unknown), got {obj["stance"]!r}'
        )
    if len(obj["hash"]) > 180:
        raise ImportFailed(path, number, '"hash" is longer than 180 characters')
    if len(obj["topic"]) > 200:
        raise ImportFailed(path, number, '"topic" is longer than 200 characters')
    pos, strings = obj["aspect_pos"], obj["aspect_pos_string"]
    if not isinstance(pos, list) or not all(isinstance(p, str) for p in pos):
        raise ImportFailed(path, number, '"aspect_pos" must be a list of strings "(begin,length)"')
    if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
        raise ImportFailed(path, number, '"aspect_pos_string" must be a list of strings')
    if len(pos) != len(strings):
        raise ImportFailed(
            path, number, f'"aspect_pos" has {len(pos)} entries but "aspect_pos_string" has {len(strings)}'
        )
    sentence = obj["sentence"]
    spans = []
    for i, (p, s) in enumerate(zip(pos, strings)):
        m = _POS.match(p)
        if not m:
            raise ImportFailed(path, number, f'aspect_pos[{i}] {p!r} is not "(begin,length)"')
        begin, length = int(m.group(1)), int(m.group(2))
        if length == 0 or begin + length > len(sentence):
            raise ImportFailed(
                path, number, f"aspect_pos[{i}] {p} is outside the sentence ({len(sentence)} characters)"
            )
        if sentence[begin : begin + length] != s:
            raise ImportFailed(
                path,
                number,
                f"aspect_pos[{i}] {p} is {sentence[begin : begin + length]!r} in the "
                f"sentence, but aspect_pos_string[{i}] is {s!r}",
            )
        spans.append((begin, length))
    extra = {k: v for k, v in obj.items() if k not in REQUIRED}
    stance = STANCE_FROM_APPF.get(obj["stance"], UNKNOWN)
    return AppFRow(
        number,
        obj["hash"],
        sentence,
        obj["topic"],
        stance,
        list(pos),
        list(strings),
        spans,
        raw_stance=APPF_STANCE.get(stance),
        extra=extra,
    )


def parse_appf(path, text: str | None = None) -> list[AppFRow]:
    """Every row of an App. F file, validated; :class:`ImportFailed` (``file:line: reason``) on the first problem."""
    text = read_text(path) if text is None else text
    rows: list[AppFRow] = []
    first: dict[str, int] = {}
    for number, obj in read_jsonl(path, error=ImportFailed, require_rows=True, text=text):
        row = parse_row(path, number, obj)
        if row.hash in first:
            raise ImportFailed(path, number, f"duplicate hash {row.hash!r} (first on line {first[row.hash]})")
        first[row.hash] = number
        rows.append(row)
    return rows


# --- import --------------------------------------------------------------------------------------------
def corpus_record(row: AppFRow) -> SentenceRecord:
    """The corpus sentence of a row: its stance, or ``none`` with :data:`UNKNOWN_METADATA` when it is unknown."""
    known = row.stance in APPF_STANCE
    return SentenceRecord(
        line=row.line,
        topic=row.topic,
        text=row.sentence,
        stance=row.stance if known else "none",
        source=SOURCE,
        external_id=row.hash,
        metadata={} if known else dict(UNKNOWN_METADATA),
    )


def present_hashes(project, rows: list[AppFRow]) -> set[str]:
    """The App. F hashes of ``rows`` the (saved) project has already (:func:`import_appf` skips those rows)."""
    if project.pk is None:
        return set()
    keys = Item.objects.filter(project=project, external_key__in=[f"appf:{r.hash}" for r in rows])
    return {key.removeprefix("appf:") for key in keys.values_list("external_key", flat=True)}


def import_appf(
    path, project, *, gold: GoldShare | None = None, progress=null_progress, rows: list[AppFRow] | None = None
) -> dict:
    """Import an App. F file into ``project`` (an ``aspect`` project). All or nothing; idempotent. ``gold``: which
    rows (in file order) become gold items (default none; ``GoldShare("all")``: every row, ``--as-gold``).

    Returns ``{"rows", "sentences_created", "items_created", "gold_created", "skipped"}``.
    """
    wrong = wrong_task_type(project, "aspect")
    if wrong:
        raise ImportFailed(path, 0, f"project {wrong}")
    rows = parse_appf(path) if rows is None else rows
    total = len(rows)
    gold_rows = {id(r) for r in (gold or GoldShare()).split(rows)[0]}
    progress(0, total, "parsed")
    with transaction.atomic():
        parsed = ParsedFile(sentences=[corpus_record(r) for r in rows])
        summary = save(parsed, progress=null_progress)
        by_hash = dict(
            Sentence.objects.filter(content_hash__in=[sentence_hash(r.topic, r.sentence) for r in rows]).values_list(
                "content_hash", "id"
            )
        )
        present = set(
            Item.objects.filter(project=project, external_key__in=[f"appf:{r.hash}" for r in rows]).values_list(
                "external_key", flat=True
            )
        )
        ranker = get_active_ranker(project)
        instruct = gold_instructions_on(project)
        plain, gold_items, skipped = [], [], 0
        for i, r in enumerate(rows, start=1):
            if f"appf:{r.hash}" in present:
                skipped += 1
                continue
            payload = build_payload(
                r.sentence,
                r.topic,
                stance=r.stance,
                sentence_id=by_hash.get(sentence_hash(r.topic, r.sentence)),
                ranker=ranker,
                top_k=top_k_for(project.config, ranker, r.topic),
                extra=r.spans,
            )
            payload["reference"] = r.reference()
            if id(r) in gold_rows:
                expected = {"aspects": payload["reference"]["aspects"], "no_aspect": not r.spans}
                if instruct:
                    payload["instruction"] = gold_instruction(expected, r.sentence)
                gold_items.append((payload, expected))
            else:
                plain.append(payload)
            if i % 200 == 0:
                progress(i, total, "building items")
        if plain:
            add_items(project, plain)
        if gold_items:
            tt = project.get_task_type()
            last = Item.objects.filter(project=project).order_by("-position").values_list("position", flat=True).first()
            position = 0 if last is None else last + 1
            items = []
            for n, (payload, _) in enumerate(gold_items):
                items.append(
                    Item(
                        project=project, payload=payload, is_gold=True, position=position + n, **tt.item_links(payload)
                    )
                )
            Item.objects.bulk_create(items)
            if any(item.pk is None for item in items):
                for item in items:
                    item.pk = Item.objects.get(project=project, position=item.position).pk
            GoldItem.objects.bulk_create(
                [GoldItem(item=item, expected=expected) for item, (_, expected) in zip(items, gold_items)]
            )
    progress(total, total, "done")
    return {
        "rows": total,
        "sentences_created": summary.created["sentences"],
        "items_created": len(plain),
        "gold_created": len(gold_items),
        "skipped": skipped,
    }


# --- export --------------------------------------------------------------------------------------------
def format_pos(begin: int, length: int) -> str:
    return f"({begin},{length})"


def parse_pos(value: str) -> tuple[int, int] | None:
    """``"(18,5)"`` -> ``(18, 5)`` (the App. F ``aspect_pos`` form; :func:`format_pos` the other way), else None."""
    m = _POS.match(value) if isinstance(value, str) else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def is_argument(item) -> bool:
    """Whether an item's sentence is an App. F row (an argument: stance Argument_for / Argument_against, or one whose
    stance is unknown, null in App. F): the imported App. F stance, else the payload's ``pro`` / ``con`` /
    ``unknown``; ``none`` (not an argument) is not."""
    payload = item.payload or {}
    reference = payload.get("reference") if isinstance(payload.get("reference"), dict) else {}
    if reference.get("stance"):
        return reference["stance"] in STANCE_FROM_APPF
    return payload.get("stance") in APPF_STANCE or payload.get("stance") == UNKNOWN


def appf_row(item, answer: dict) -> dict | None:
    """The App. F row of an item with its final answer; ``None`` when the answer is unresolved or the sentence is
    not an argument (App. F has no stance for it; see the module docstring)."""
    if not answer.get("resolved") or not is_argument(item):
        return None
    payload = item.payload or {}
    text = payload.get("text", "")
    reference = payload.get("reference") if isinstance(payload.get("reference"), dict) else {}
    spans = sorted((int(a["begin"]), int(a["length"])) for a in answer.get("aspects") or [])
    ref_spans = sorted((int(a["begin"]), int(a["length"])) for a in reference.get("aspects") or [])
    if reference and spans == ref_spans and "aspect_pos" in reference:
        pairs = sorted(zip(reference["aspect_pos"], reference["aspect_pos_string"]), key=lambda ps: parse_pos(ps[0]))
        pos, strings = [p for p, _ in pairs], [s for _, s in pairs]
    else:
        pos = [format_pos(b, l) for b, l in spans]
        strings = [text[b : b + l] for b, l in spans]
    topic = reference.get("topic") or payload.get("topic", "")
    stance = (
        reference["stance"] if reference.get("stance") in STANCE_FROM_APPF else APPF_STANCE.get(payload.get("stance"))
    )  # None: unknown (never invented)
    row = dict(reference.get("extra") or {})
    row.update(
        {
            "hash": reference.get("hash") or sentence_hash(topic, text),
            "aspect_pos": pos,
            "aspect_pos_string": strings,
            "stance": stance,
            "topic": topic,
            "sentence": text,
        }
    )
    return row


def project_rows(project, *, include_gold: bool = True, stats: dict | None = None) -> list[dict]:
    """App. F rows of every resolved argument item of ``project``, sorted by hash. ``stats`` (a dict, optional)
    receives ``{"rows", "unresolved", "non_arguments"}``: what was written and what was left out."""
    items = list(Item.objects.filter(project=project).select_related("gold").order_by("position", "id"))
    if not include_gold:
        items = [i for i in items if not i.is_gold]
    by_item: dict[int, list[dict]] = {}
    for item_id, data in (
        Response.objects.filter(item__project=project, assignment__status__in=Assignment.DONE)
        .exclude(unverified_q("assignment__"))
        .order_by("id")
        .values_list("item_id", "data")
    ):
        by_item.setdefault(item_id, []).append(data)
    rows = []
    counts = {"rows": 0, "unresolved": 0, "non_arguments": 0}
    for item in items:
        if not is_argument(item):
            counts["non_arguments"] += 1
            continue
        row = appf_row(item, final_answer(project, item, by_item.get(item.pk, [])))
        if row is None:
            counts["unresolved"] += 1
        else:
            rows.append(row)
    rows.sort(key=lambda r: r["hash"])
    counts["rows"] = len(rows)
    if stats is not None:
        stats.update(counts)
    return rows


# --- splits --------------------------------------------------------------------------------------------
def in_topic_sizes(n: int, proportions: dict | None = None) -> dict[str, int]:
    """Split sizes for ``n`` rows with App. F's proportions (3532 / 500 / 1000 of 5032); dev and test are
    rounded, train takes the rest. ``in_topic_sizes(5032) == {"train": 3532, "dev": 500, "test": 1000}``."""
    proportions = proportions or APP_F_SIZES
    total = sum(proportions.values())
    dev = round(n * proportions["dev"] / total)
    test = round(n * proportions["test"] / total)
    return {"train": n - dev - test, "dev": dev, "test": test}


def split_rows(
    rows: Iterable[dict],
    mode: str = "cross-topic",
    *,
    test: list[str] | None = None,
    dev: list[str] | None = None,
    seed: int = 13,
    sizes: dict | None = None,
) -> dict[str, list[dict]]:
    """``{"train": [...], "dev": [...], "test": [...]}``, each sorted by hash.

    ``cross-topic``: rows whose topic (case-insensitive) is in ``test`` / ``dev`` (default App. F's: test gun
    control + school uniforms, dev death penalty), the rest train; ``ValueError`` (nothing to write) when a named
    (or default) test / dev topic is not among the rows, or no topic is left for train. ``in-topic``: rows (ordered by hash) shuffled with ``random.Random(seed)`` and cut into ``sizes``
    (default :func:`in_topic_sizes`). ``none``: everything in train.
    """
    rows = sorted(rows, key=lambda r: r["hash"])
    out: dict[str, list[dict]] = {part: [] for part in SPLITS}
    if mode == "none":
        out["train"] = rows
        return out
    if mode == "cross-topic":
        default = test is None and dev is None
        test_topics = {t.strip().lower() for t in (CROSS_TOPIC["test"] if test is None else test) if t.strip()}
        dev_topics = {t.strip().lower() for t in (CROSS_TOPIC["dev"] if dev is None else dev) if t.strip()}
        if test_topics & dev_topics:
            raise ValueError(f"split: topic(s) {sorted(test_topics & dev_topics)} are in both test and dev")
        present = sorted({row["topic"].lower() for row in rows})
        hint = (
            f"the rows' topics are {', '.join(repr(t) for t in present) or 'none'}; name the held-out topics "
            f"with --test T1,T2 --dev T3"
        )
        for part, named in (("test", test_topics), ("dev", dev_topics)):
            if not named:
                raise ValueError(f"split: cross-topic needs at least one {part} topic ({hint})")
            missing = sorted(named - set(present))
            if missing:
                what = "App. F's default " if default else ""
                raise ValueError(
                    f"split: {what}{part} topic(s) {', '.join(repr(t) for t in missing)} are not among "
                    f"the rows ({hint})"
                )
        if not set(present) - test_topics - dev_topics:
            raise ValueError(f"split: no topic is left for train ({hint})")
        for row in rows:
            topic = row["topic"].lower()
            out["test" if topic in test_topics else "dev" if topic in dev_topics else "train"].append(row)
        return out
    if mode == "in-topic":
        sizes = sizes or in_topic_sizes(len(rows))
        if sum(sizes.values()) > len(rows):
            raise ValueError(f"split.sizes: {sum(sizes.values())} rows wanted, {len(rows)} available")
        order = list(range(len(rows)))
        random.Random(seed).shuffle(order)
        start = 0
        for part in SPLITS:
            chosen = sorted(order[start : start + sizes[part]])
            out[part] = [rows[i] for i in chosen]
            start += sizes[part]
        return out
    raise ValueError(f"split: {mode!r} is not one of none, cross-topic, in-topic")


def export_appf(
    project,
    out=None,
    *,
    split: str | None = None,
    out_dir=None,
    seed: int = 13,
    test=None,
    dev=None,
    stats: dict | None = None,
) -> dict[str, int]:
    """Write the project's App. F rows: the unsplit file ``out`` (any name, e.g. ``aspects.jsonl``) and/or, with
    ``split`` (``cross-topic`` / ``in-topic``), ``train.jsonl`` / ``dev.jsonl`` / ``test.jsonl`` in ``out_dir``.
    Returns rows per written path; ``stats`` receives :func:`project_rows`' counts. Raises ``ValueError``
    (nothing written) for a wrong combination (see :func:`check_export_args`)."""
    split = None if split in ("none", "") else split
    problem = check_export_args(out, split, out_dir, file_name="aspects.jsonl")
    if problem:
        raise ValueError(problem)
    rows = project_rows(project, stats=stats)
    parts = split_rows(rows, split, test=test, dev=dev, seed=seed) if split else None
    written: dict[str, int] = {}
    if out is not None:
        written[str(out)] = write_jsonl(rows, out)
    if parts is not None:
        directory = Path(out_dir)
        for part in SPLITS:
            written[str(directory / f"{part}.jsonl")] = write_jsonl(parts[part], directory / f"{part}.jsonl")
    return written
