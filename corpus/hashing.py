"""Stable content hashes: the identity that makes imports idempotent."""

from __future__ import annotations

import hashlib
import re

_WS = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Collapse whitespace and strip; case and punctuation are kept (they are content)."""
    return _WS.sub(" ", text).strip()


def content_hash(*parts: str) -> str:
    """sha256 over the normalised parts joined by a unit separator."""
    joined = "\x1f".join(normalise(p) for p in parts)
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()


def sentence_hash(topic: str, text: str) -> str:
    return content_hash("sentence", topic.lower(), text)


def fact_hash(topic: str, text: str) -> str:
    return content_hash("fact", topic.lower(), text)


def document_hash(text: str) -> str:
    return content_hash("document", text)
