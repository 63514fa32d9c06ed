"""Documents import (Arg-CTRL §4): a folder of ``*.txt`` files -> Documents + topic-relevant Sentences.

Per file: a Document (skipped when its hash is stored), its sentences split offline with pysbd, stripped,
fragments under three tokens dropped, duplicates dropped (by sentence hash, within and across documents and
against the database), and -- unless switched off -- the topic-relevance filter applied.
"""

from __future__ import annotations

from pathlib import Path

from corpus.hashing import document_hash, normalise, sentence_hash
from corpus.models import Document, Topic
from corpus.sentences import MIN_TOKENS, RelevanceFilter, split_sentences, token_count
from corpus.ukp_topics import default_synonyms

from .base import DocumentRecord, ImportFailed, ParsedFile, SentenceRecord
from .parsers import MAX_SOURCE, MAX_TEXT, MAX_TOPIC, PROGRESS_EVERY
from .readers import read_text


def topic_synonyms(topic_name: str) -> list[str]:
    """The synonyms the filter uses: the stored topic's, else Table 9's for a UKP topic."""
    topic = Topic.objects.filter(name__iexact=topic_name).first()
    if topic is not None and topic.synonyms:
        return [str(s) for s in topic.synonyms]
    return default_synonyms(topic_name)


def parse_documents(directory, topic: str, *, progress, relevance_filter: bool = True) -> ParsedFile:
    directory = Path(directory)
    if not directory.is_dir():
        raise ImportFailed(directory, 0, "not a directory")
    files = sorted(p for p in directory.glob("*.txt") if p.is_file())
    if not files:
        raise ImportFailed(directory, 0, "no *.txt files in this folder")
    topic = normalise(topic or "")
    if not topic:
        raise ImportFailed(directory, 0, "a topic is required (--topic)")
    if len(topic) > MAX_TOPIC:
        raise ImportFailed(directory, 0, f"topic is longer than {MAX_TOPIC} characters")
    keep = None
    if relevance_filter:
        try:
            keep = RelevanceFilter(topic, topic_synonyms(topic))
        except ValueError as exc:
            raise ImportFailed(directory, 0, str(exc)) from None

    parsed = ParsedFile(topics=[topic], dropped={"too_short": 0, "not_relevant": 0})
    seen_documents: set[str] = set()
    seen_sentences: set[str] = set()
    for number, path in enumerate(files, start=1):
        text = read_text(path)
        source = str(path)
        if len(source) > MAX_SOURCE:
            raise ImportFailed(path, 0, f"path is longer than {MAX_SOURCE} characters")
        key = document_hash(text)
        if key in seen_documents or Document.objects.filter(content_hash=key).exists():
            parsed.skipped += 1  # the same document again: its sentences are already there
            progress(number, len(files), "splitting")
            continue
        seen_documents.add(key)
        parsed.documents.append(DocumentRecord(line=1, key=key, title=path.name, source=source, text=text, topic=topic))
        for position, sentence in enumerate(split_sentences(text)):
            if token_count(sentence) < MIN_TOKENS:
                parsed.dropped["too_short"] += 1
                continue
            if len(sentence) > MAX_TEXT:  # no sentence boundary found in a long run of text: not a sentence
                parsed.dropped["too_long"] = parsed.dropped.get("too_long", 0) + 1
                continue
            digest = sentence_hash(topic, sentence)
            if digest in seen_sentences:
                parsed.skipped += 1
                continue
            seen_sentences.add(digest)
            if keep is not None and not keep(sentence):
                parsed.dropped["not_relevant"] += 1
                continue
            parsed.sentences.append(
                SentenceRecord(
                    line=1,
                    topic=topic,
                    text=sentence,
                    stance="none",
                    source=source,
                    position=position,
                    document_key=key,
                )
            )
        if number % max(1, PROGRESS_EVERY // 50) == 0 or number == len(files):
            progress(number, len(files), "splitting")
    return parsed
