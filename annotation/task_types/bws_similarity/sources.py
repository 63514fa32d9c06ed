"""Where ``bws_similarity`` items come from (the studio, ``/studio/``): the arguments of one or more topics, from an
uploaded corpus file (UKP TSV, JSONL arguments: imported into the corpus first; :mod:`annotation.studio.sentences`) or
already in the corpus. For each topic, :func:`.project.sample` draws the argument pairs (``pairs`` per topic, with the
project's scorer and seed) and :func:`.project.build` makes the 4-pair tuples, the attention checks (gold) and the HITs
-- what ``manage.py bws sample`` and ``bws build`` do."""
from __future__ import annotations

from annotation.studio import sentences
from annotation.task_types.base import Preview, Source, SourceInput, SourceOption
from argora.errors import FieldError
from corpus.hashing import normalise, sentence_hash
from corpus.models import Sentence, Topic

from . import design
from . import project as bws

PREVIEW_ROWS = 10
PAIRS = SourceOption("pairs", "Argument pairs per topic", kind="int", default=20, minimum=design.TUPLE_SIZE,
                     help="pairs drawn from each topic's arguments (at most all pairs); every pair is in "
                          "tuples_per_pair tasks of 4 pairs")
SOURCES = tuple(
    Source(s.name, s.label, s.description.replace("Imported into the corpus first.",
                                                  "Imported into the corpus first; pairs are drawn from all the "
                                                  "corpus's arguments of the file's topics."),
           extensions=s.extensions, example=s.example, rows=s.rows, options=(PAIRS,))
    for s in sentences.SOURCES if s.is_upload) + (
    Source("corpus", "Arguments already in the corpus",
           "The arguments of the topics you choose (at least one topic); the limit is not used.", options=(PAIRS,)),)


def _topics(data: SourceInput) -> dict[str, int]:
    """``{topic name: number of arguments}`` the sampling will see (the corpus's, plus the file's new ones)."""
    if data.source.is_upload:
        records = sentences.parse_file(data)
        counts: dict[str, int] = {}
        names: dict[str, str] = {}
        present = set(Sentence.objects.filter(content_hash__in=[sentence_hash(r.topic, r.text) for r in records])
                      .values_list("content_hash", flat=True))
        for r in records:
            key = normalise(r.topic).lower()
            if key not in names:
                topic = Topic.objects.filter(name__iexact=key).order_by("id").first()
                names[key] = topic.name if topic else r.topic
                counts[names[key]] = Sentence.objects.filter(topic=topic).count() if topic else 0
            if sentence_hash(r.topic, r.text) not in present:
                counts[names[key]] += 1
        return counts
    if not data.topics:
        raise FieldError("topics", "choose the topic(s) whose arguments are paired")
    return {t.name: Sentence.objects.filter(topic=t).count() for t in data.topics}


def preview(project, data: SourceInput) -> Preview:
    counts = _topics(data)
    config = project.config or {}
    n_pairs = int(data.options.get("pairs") or PAIRS.default)
    rows, tuples, checks = [], 0, 0
    for topic, n_args in sorted(counts.items(), key=lambda kv: kv[0].lower()):
        candidates = n_args * (n_args - 1) // 2
        pairs = min(n_pairs, candidates)
        if pairs < design.TUPLE_SIZE:
            raise FieldError("pairs", f"topic {topic!r} has {n_args} argument(s), {candidates} possible pair(s); a BWS "
                                      f"task needs {design.TUPLE_SIZE} pairs")
        n_tuples = int(config.get("tuples_per_pair", 2)) * pairs
        n_checks = min(int(config.get("attention_checks", 2)), n_args)
        tuples, checks = tuples + n_tuples, checks + n_checks
        rows.append([topic, str(n_args), str(pairs), str(n_tuples), str(n_checks)])
    notes = [f"pairs are drawn with the {config.get('scorer', 'cosine')} scorer, seed {config.get('seed', 0)}"]
    if data.source.is_upload:
        notes.insert(0, "the file's arguments go into the corpus first")
    return Preview(items=tuples, gold=checks, columns=["topic", "arguments", "pairs", "tasks of 4 pairs",
                                                       "attention checks"], rows=rows[:PREVIEW_ROWS], notes=notes)


def write(project, data: SourceInput, progress) -> dict:
    counts = _topics(data)  # before the import: the same checks as the preview
    if data.source.is_upload:
        sentences.write_corpus(data, progress)
    n_pairs = int(data.options.get("pairs") or PAIRS.default)
    for n, topic in enumerate(sorted(counts, key=str.lower)):
        progress(n, len(counts), f"sampling pairs of {topic}")
        bws.sample(project, topic, n_pairs)
    progress(len(counts), len(counts), "building tasks")
    built = bws.build(project)
    checks = sum(t["attention_checks"] for t in built["topics"].values())
    return {"items": sum(t["tuples"] for t in built["topics"].values()), "gold": checks}


def summary(payload: dict) -> str:
    pairs = payload.get("pairs") or []
    return f"{payload.get('topic', '')}: {len(pairs)} pairs" + (" (attention check)" if payload.get("check") else "")
