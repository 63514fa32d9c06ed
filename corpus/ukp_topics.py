"""The eight topics of the UKP Sentential Argument Mining Corpus with the topic-relevance synonyms of
Arg-CTRL (Schiller et al. 2021), App. B, Table 9. A topic created by an import gets these as its
``Topic.synonyms`` when its name is one of the eight; the documents import falls back to them for a
UKP topic whose synonyms are empty."""

from __future__ import annotations

from corpus.hashing import normalise

UKP_TOPIC_SYNONYMS: dict[str, list[str]] = {
    "abortion": ["abort", "termination", "misbirth", "birth control"],
    "cloning": ["clone", "cloned", "duplicate", "copy", "reproduct", "asexual"],
    "death penalty": ["capital punishment", "execution", "electric chair", "punishment", "punish"],
    "gun control": ["second amendment", "ownership", "arms reduction", "arms limitation"],
    "marijuana legalization": ["cannabis", "legalization of marijuana", "legal", "illegal", "law", "weed", "dope"],
    "minimum wage": ["living wage", "base pay", "average wage", "low income"],
    "nuclear energy": [
        "fission",
        "fusion",
        "atomic energy",
        "nuclear power",
        "atomic power",
        "radioactive",
        "radioactivity",
    ],
    "school uniforms": ["uniform", "college", "outfit", "dress", "suit", "jacket", "cloth"],
}

UKP_TOPICS: tuple[str, ...] = tuple(UKP_TOPIC_SYNONYMS)


def default_synonyms(topic_name: str) -> list[str]:
    """Table 9's synonyms for a UKP topic (matched case-insensitively), else an empty list."""
    return list(UKP_TOPIC_SYNONYMS.get(normalise(topic_name).lower(), []))
