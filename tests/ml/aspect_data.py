"""Real-shaped aspect data for the tagger / ranker tests: App. F rows whose sentences carry SEVERAL multi-word
aspects of 2-6 tokens (the argument-aspect span corpus has long aspects: about half of its gold spans are longer
than 4 tokens), composed from small vocabularies so held-out sentences hold aspect phrases never seen whole in
training. The aspects are the noun phrases a cue ("leads to", "because of", ...) points at; other noun phrases
(subjects, "the debate about X") are not aspects, so tagging every noun does not work."""

from __future__ import annotations

import random

ADJ = (
    "high",
    "new",
    "radioactive",
    "public",
    "long-term",
    "serious",
    "lower",
    "local",
    "rising",
    "dangerous",
    "economic",
    "massive",
    "unfair",
    "global",
    "medical",
    "violent",
    "higher",
    "cheap",
)
NOUN = (
    "costs",
    "jobs",
    "waste",
    "emissions",
    "safety",
    "prices",
    "crime",
    "taxes",
    "research",
    "health",
    "risks",
    "pollution",
    "accidents",
    "freedom",
    "profits",
    "education",
    "security",
    "diseases",
    "wages",
    "energy",
)
NOUN2 = (
    "workers",
    "children",
    "families",
    "taxpayers",
    "patients",
    "students",
    "communities",
    "citizens",
    "farmers",
    "victims",
    "companies",
    "schools",
)
SUBJ = (
    "Many people",
    "Critics",
    "The government",
    "Most experts",
    "Some politicians",
    "Our neighbours",
    "The report",
    "Supporters",
    "Opponents",
    "Several studies",
    "The committee",
    "Voters",
)
SAYS = ("argue that", "believe that", "claim that", "point out that", "warn that", "say that")
CUE = (
    "leads to",
    "causes",
    "increases",
    "reduces",
    "threatens",
    "brings",
    "creates",
    "protects",
    "improves",
    "endangers",
)
LINK = (", and it also", "; moreover it", ", which", " and at the same time")
TOPICS = ("nuclear energy", "minimum wage", "gun control", "school uniforms", "cloning", "death penalty")


def aspect_phrase(rng: random.Random) -> str:
    """A noun phrase of 2-6 tokens."""
    n = rng.choice((2, 3, 3, 4, 4, 5, 6))
    if n == 2:
        return f"{rng.choice(ADJ)} {rng.choice(NOUN)}"
    if n == 3:
        return (
            f"{rng.choice(ADJ)} {rng.choice(NOUN)} {rng.choice(('levels', 'rates', 'problems'))}"
            if rng.random() < 0.5
            else f"the {rng.choice(ADJ)} {rng.choice(NOUN)}"
        )
    if n == 4:
        return (
            f"{rng.choice(NOUN)} of local {rng.choice(NOUN2)}"
            if rng.random() < 0.5
            else f"the {rng.choice(NOUN)} of {rng.choice(NOUN2)}"
        )
    if n == 5:
        return f"the {rng.choice(ADJ)} {rng.choice(NOUN)} of {rng.choice(NOUN2)}"
    return f"the {rng.choice(NOUN)} of many {rng.choice(ADJ)} {rng.choice(NOUN2)}"


def aspect_rows(n: int, *, seed: int = 1, topics=TOPICS) -> list[dict]:
    """``n`` App. F rows (``hash, sentence, topic, stance, aspect_pos, aspect_pos_string``), 2-3 aspects each."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        topic = topics[i % len(topics)]
        parts: list[tuple[str, bool]] = [(f"{rng.choice(SUBJ)} {rng.choice(SAYS)} {topic} ", False)]
        k = rng.choice((2, 2, 3))
        for j in range(k):
            if j:
                parts.append((f"{rng.choice(LINK)} ", False))
            parts.append((f"{rng.choice(CUE)} ", False))
            parts.append((aspect_phrase(rng), True))
        if rng.random() < 0.5:
            parts.append((f" in the debate about {rng.choice(NOUN)} and {rng.choice(NOUN2)}", False))
        parts.append((".", False))
        sentence, spans = "", []
        for text, is_aspect in parts:
            if is_aspect:
                spans.append((len(sentence), len(text)))
            sentence += text
        rows.append(
            {
                "hash": f"aspects-{seed}-{i}",
                "sentence": sentence,
                "topic": topic,
                "stance": "Argument_for" if rng.random() < 0.5 else "Argument_against",
                "aspect_pos": [f"({b},{l})" for b, l in spans],
                "aspect_pos_string": [sentence[b : b + l] for b, l in spans],
            }
        )
    return rows
