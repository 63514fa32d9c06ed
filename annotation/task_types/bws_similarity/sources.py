"""Where ``bws_similarity`` items come from (the studio, ``/studio/``).

* Argument files (UKP TSV, JSONL arguments: imported into the corpus first; :mod:`annotation.studio.sentences`) or
  the arguments already in the corpus: for each topic, :func:`.project.sample` draws the argument pairs (``pairs`` per
  topic, with the project's scorer and seed) and :func:`.project.build` makes the 4-pair tuples, the attention checks
  (gold) and the HITs -- what ``manage.py bws sample`` and ``bws build`` do.
* Pair files, the published corpora as they are (:mod:`.pairfiles`, the readers the similarity trainers use): the
  **BWS Argument Similarity Corpus** CSV and the **UKP ASPECT** TSV. Every pair of the file becomes a pair of the
  project (:func:`.project.add_pairs`, no sampling; a pair repeated in the file is kept once), and
  :func:`.project.build` makes the tuples from them as AugSBERT sec. 4.1 / ``bws build`` does: ``tuples_per_pair``
  x N tasks of 4 pairs of one topic for its N pairs (Kiritchenko & Mohammad's 2N by default: every pair in 8), plus
  the attention checks. The file's arguments go into the corpus first (stance
  ``none``, metadata ``{"stance": "unknown"}``: the files carry no stance; a sentence already stored is reused), so
  the pairs name corpus sentences as sampled pairs do. The file's score / label is kept with each pair
  (``file_score``, ``file_label``) and never shown to a worker. Refused: a row missing a field (``file:line``), a
  pair of one argument with itself (``file:line``), a topic with fewer than 4 distinct pairs, a topic that already
  has tasks in the project. The rows carry no answers a worker could be scored on: no gold share (the attention
  checks are BWS's gold)."""

from __future__ import annotations

from annotation.studio import sentences
from annotation.task_types.base import Preview, Source, SourceInput, SourceOption
from argora.errors import FieldError
from argora.progress import null_progress
from corpus.hashing import normalise, sentence_hash
from corpus.importers.base import ImportFailed, ParsedFile, SentenceRecord
from corpus.importers.writers import save
from corpus.models import Sentence, Topic

from . import design, pairfiles
from . import project as bws

PREVIEW_ROWS = 10
PAIRS = SourceOption(
    "pairs",
    "Argument pairs per topic",
    kind="int",
    default=20,
    minimum=design.TUPLE_SIZE,
    help="pairs drawn from each topic's arguments (at most all pairs); a topic's N pairs make "
    "tuples_per_pair x N tasks of 4 pairs (2N by default: every pair in 8 tasks)",
)
BWS_CSV = Source(
    "bws-csv",
    "BWS Argument Similarity Corpus (CSV)",
    "The corpus as published (BWS_Argument_Similarity_Corpus.csv, AugSBERT sec. 4.1): a header, then one argument "
    "pair a row with the columns topic, argument1, argument2 and score (id, split / set optional). Every pair becomes "
    "a pair of the project; a topic's N pairs (at least 4) make tuples_per_pair x N tasks of 4 pairs (2N by default: "
    "every pair in 8 tasks). The file's score is kept with the pair, never shown. The arguments go into the corpus "
    "first (stance unknown).",
    extensions=(".csv",),
    rows="csv",
    example="id,topic,argument1,argument2,score\n"
    "c1,Cloning,Cloning treats children as objects.,It encourages parents to regard their children as "
    "property.,0.89",
)
ASPECT_TSV = Source(
    "ukp-aspect-tsv",
    "UKP ASPECT argument pairs (TSV)",
    "The UKP ASPECT corpus as published (UKP_ASPECT.tsv, Reimers et al. 2019) or one of its split files: tab-"
    "separated topic, sentence_1, sentence_2 and label (HS, SS, NS or DTORCD), with or without that header. Every "
    "pair becomes a pair of the project; a topic's N pairs (at least 4) make tuples_per_pair x N tasks of 4 pairs "
    "(2N by default: every pair in 8 tasks). The file's label is kept with the pair, never shown. The arguments go "
    "into the corpus first (stance unknown).",
    extensions=(".tsv",),
    rows="",  # cells split on tabs without CSV quoting: no row-by-row rescan
    example="topic\tsentence_1\tsentence_2\tlabel\n"
    "Wind power\tWind turbines kill birds.\tBirds die in the rotor blades.\tHS",
)
PAIR_FILES = {BWS_CSV.name: pairfiles.read_bws_csv, ASPECT_TSV.name: pairfiles.read_aspect_tsv}
CORPUS_SOURCE = {BWS_CSV.name: "bws-argument-similarity-corpus", ASPECT_TSV.name: "ukp-aspect"}
SOURCES = (
    tuple(
        Source(
            s.name,
            s.label,
            s.description.replace(
                "Imported into the corpus first.",
                "Imported into the corpus first; pairs are drawn from all the corpus's arguments of the file's topics.",
            ),
            extensions=s.extensions,
            example=s.example,
            rows=s.rows,
            options=(PAIRS,),
        )
        for s in sentences.SOURCES
        if s.is_upload
    )
    + (BWS_CSV, ASPECT_TSV)
    + (
        Source(
            "corpus",
            "Arguments already in the corpus",
            "The arguments of the topics you choose (at least one topic); the limit is not used.",
            options=(PAIRS,),
        ),
    )
)


# --- pair files ---------------------------------------------------------------------------------------------
def _file_pairs(project, data: SourceInput) -> tuple[dict[str, list[dict]], int]:
    """``({topic: the file's pair rows, in file order}, pairs repeated in the file)``, every check of the module doc
    made; the topic is the corpus's spelling when the corpus has it (any case), else the file's."""
    rows = PAIR_FILES[data.source.name](data.path)
    names: dict[str, str] = {}
    by_topic: dict[str, list[dict]] = {}
    seen: set = set()
    repeated = 0
    for r in rows:
        topic = normalise(r["topic"])
        key = topic.lower()
        if sentence_hash(topic, r["argument1"]) == sentence_hash(topic, r["argument2"]):
            raise ImportFailed(data.path, r["line"], "argument1 and argument2 are the same argument (a pair needs two)")
        if key not in names:
            row = Topic.objects.filter(name__iexact=topic).order_by("id").first()
            names[key] = row.name if row else topic
        pair = (key, frozenset((normalise(r["argument1"]), normalise(r["argument2"]))))
        if pair in seen:
            repeated += 1
            continue
        seen.add(pair)
        by_topic.setdefault(names[key], []).append(r)
    built = bws._built_topics(project) if project.pk else set()
    for topic, pairs in sorted(by_topic.items(), key=lambda kv: kv[0].lower()):
        if len(pairs) < design.TUPLE_SIZE:
            raise FieldError(
                "file",
                f"topic {topic!r} has {len(pairs)} distinct pair(s) in the file; a BWS task "
                f"shows {design.TUPLE_SIZE} pairs of one topic, so a topic needs at least "
                f"{design.TUPLE_SIZE}",
            )
        if topic in built:
            raise FieldError("file", f"topic {topic!r} already has tasks in this project")
    return by_topic, repeated


def _arguments(pairs: list[dict]) -> set[str]:
    return {normalise(r[k]) for r in pairs for k in ("argument1", "argument2")}


def _pair_preview(project, data: SourceInput) -> Preview:
    by_topic, repeated = _file_pairs(project, data)
    config = project.config or {}
    per_pair = int(config.get("tuples_per_pair", 2))
    n_checks = int(config.get("attention_checks", 2))
    tuples = checks = 0
    notes = [
        "the file's arguments go into the corpus first (stance unknown: the file has none); every pair of "
        "the file is a pair of the project"
    ]
    for topic in sorted(by_topic, key=str.lower):
        pairs, arguments = len(by_topic[topic]), len(_arguments(by_topic[topic]))
        topic_checks = min(n_checks, arguments)
        tuples, checks = tuples + per_pair * pairs, checks + topic_checks
        notes.append(
            f"{topic}: {pairs} pairs of {arguments} arguments, {per_pair * pairs} tasks of 4 pairs, "
            f"{topic_checks} attention check(s)"
        )
    if repeated:
        notes.append(f"{repeated} pair(s) repeated in the file, kept once")
    label = "label" if data.source.name == ASPECT_TSV.name else "score"
    shown = [r for topic in by_topic for r in by_topic[topic]]
    shown.sort(key=lambda r: r["line"])
    rows = [
        [str(r["line"]), normalise(r["topic"]), r["argument1"], r["argument2"], str(r.get("label") or r["score"])]
        for r in shown[:PREVIEW_ROWS]
    ]
    return Preview(
        items=tuples,
        gold=checks,
        columns=["line", "topic", "argument 1", "argument 2", f"{label} (the file's, not shown to workers)"],
        rows=rows,
        notes=notes,
    )


def _pair_write(project, data: SourceInput, progress) -> dict:
    by_topic, _ = _file_pairs(project, data)
    records, hashes = [], set()
    for topic, pairs in by_topic.items():
        for r in pairs:
            for key in ("argument1", "argument2"):
                digest = sentence_hash(topic, r[key])
                if digest not in hashes:
                    hashes.add(digest)
                    records.append(
                        SentenceRecord(
                            line=r["line"],
                            topic=topic,
                            text=r[key],
                            stance="none",
                            source=CORPUS_SOURCE[data.source.name],
                            metadata={"stance": "unknown"},
                        )
                    )
    progress(0, len(by_topic), "arguments into the corpus")
    corpus = save(ParsedFile(sentences=records), progress=null_progress)
    ids = dict(Sentence.objects.filter(content_hash__in=hashes).values_list("content_hash", "id"))
    name = data.file_name or data.path.name
    for n, topic in enumerate(sorted(by_topic, key=str.lower)):
        progress(n, len(by_topic), f"pairs of {topic}")
        bws.add_pairs(
            project,
            topic,
            [
                {
                    "a_id": ids[sentence_hash(topic, r["argument1"])],
                    "b_id": ids[sentence_hash(topic, r["argument2"])],
                    "file_id": r["pair_id"],
                    "score": r["score"],
                    "label": r.get("label"),
                }
                for r in by_topic[topic]
            ],
            source=name,
        )
    progress(len(by_topic), len(by_topic), "building tasks")
    built = bws.build(project)
    return {
        "items": sum(t["tuples"] for t in built["topics"].values()),
        "gold": sum(t["attention_checks"] for t in built["topics"].values()),
        "sentences_created": corpus.created["sentences"],
    }


# --- argument files and the corpus: pairs sampled per topic ---------------------------------------------------
def _topics(data: SourceInput) -> dict[str, int]:
    """``{topic name: number of arguments}`` the sampling will see (the corpus's, plus the file's new ones)."""
    if data.source.is_upload:
        records = sentences.parse_file(data)
        counts: dict[str, int] = {}
        names: dict[str, str] = {}
        present = set(
            Sentence.objects.filter(content_hash__in=[sentence_hash(r.topic, r.text) for r in records]).values_list(
                "content_hash", flat=True
            )
        )
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
    if data.source.name in PAIR_FILES:
        return _pair_preview(project, data)
    counts = _topics(data)
    config = project.config or {}
    n_pairs = int(data.options.get("pairs") or PAIRS.default)
    rows, tuples, checks = [], 0, 0
    for topic, n_args in sorted(counts.items(), key=lambda kv: kv[0].lower()):
        candidates = n_args * (n_args - 1) // 2
        pairs = min(n_pairs, candidates)
        if pairs < design.TUPLE_SIZE:
            raise FieldError(
                "pairs",
                f"topic {topic!r} has {n_args} argument(s), {candidates} possible pair(s); a BWS "
                f"task needs {design.TUPLE_SIZE} pairs",
            )
        n_tuples = int(config.get("tuples_per_pair", 2)) * pairs
        n_checks = min(int(config.get("attention_checks", 2)), n_args)
        tuples, checks = tuples + n_tuples, checks + n_checks
        rows.append([topic, str(n_args), str(pairs), str(n_tuples), str(n_checks)])
    notes = [f"pairs are drawn with the {config.get('scorer', 'cosine')} scorer, seed {config.get('seed', 0)}"]
    if data.source.is_upload:
        notes.insert(0, "the file's arguments go into the corpus first")
    return Preview(
        items=tuples,
        gold=checks,
        columns=["topic", "arguments", "pairs", "tasks of 4 pairs", "attention checks"],
        rows=rows[:PREVIEW_ROWS],
        notes=notes,
    )


def write(project, data: SourceInput, progress) -> dict:
    if data.source.name in PAIR_FILES:
        return _pair_write(project, data, progress)
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
