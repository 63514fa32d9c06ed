"""clone&mutate (Heinisch et al. 2022, §3.2 and Table 1): synthetic rows for the classes a data set lacks, and
class balancing to a target size.

Mutations (Table 1's symbols)
    ``~x``       rephrase x: *paraphrase* or *summarise* with a configured seq2seq model (a local path in
                 ``ARGORA_VALNOV_PARAPHRASE_MODEL`` / ``ARGORA_VALNOV_SUMMARY_MODEL``, or ``--paraphrase-model`` /
                 ``--summary-model``; without one the operation is skipped and reported), or *substitute*: WordNet
                 synonyms / hypernyms (:mod:`.wordnet`; the first synset, words with few synsets first, a random
                 share of the candidates), a non-content phrase ("Hence, ") and punctuation cues removed, each with
                 a probability. Summarising is offered only where the premise is rephrased.
    ``¬c``       negate: remove the first "not" / "n't" (or a leading "It is not the case that"), else add "not"
                 after the first auxiliary / modal / copula, else turn a third-person or past verb into
                 "does not V" / "did not V", else prefix "It is not the case that".
    ``p + x``    copy-conclusion: append the (rephrased or negated) conclusion to the premise.
    ``p ↦ c``    move-premise: the premise's last sentence moves to the front of the conclusion (needs >= 2
                 sentences).

Table 1 (rows: from, columns: to; v valid, n novel; the diagonal cells share the union of the diagonal operations,
"paraphrase or substitute the premise or the conclusion")::

    from \\ to   v/n         v/¬n                 ¬v/n        ¬v/¬n
    v/n         p:=~p c:=~c  c:=~p                c:=¬c       p:=p+¬c
    v/¬n        -           p:=~p c:=~c          -           c:=¬c
    ¬v/n        -           c:=~p, p:=p+~c       p:=~p c:=~c p:=p+¬c
    ¬v/¬n       -           c:=~p, p:=p+~c       p↦c         p:=~p c:=~c

One applicable operation of the cell is drawn at random; an empty cell, or an operation that does not apply to the
drawn instance (a one-sentence premise for move-premise), means: draw another source instance.

Balancing (:func:`balance`): the target size N is shared equally by the four classes (after up to
``max_unknown_share`` = 20 % of N for rows with an unknown validity or novelty, which are kept but never mutated);
a class with more original rows than its share is under-sampled, a class with fewer is filled with synthetic rows
made from original rows (never from synthetic ones). Synthetic rows are marked (``Synthetic`` = 1, ``Mutation`` =
the operation, ``Source-Line``) and weighted: ``Instance-Weight`` = the source's individual weight x
``synthetic_factor`` (0.5 by default; the paper scales synthetic weights without giving the factor). Their
confidence words are the source's.
"""

from __future__ import annotations

import math
import os
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from annotation.task_types.validity_novelty.csvio import (
    guess_format,
    merge_columns,
    read_file,
    write_csv,
    write_jsonl,
)

from .data import WEIGHT_COLUMN, row_from_columns
from .score import (
    CLASSES,
    LABELS_OF,
    NOT_VALID_NOT_NOVEL,
    NOT_VALID_NOVEL,
    VALID_NOT_NOVEL,
    VALID_NOVEL,
    class_of,
    gold_label,
)
from .wordnet import load_wordnet

# --- Table 1 -----------------------------------------------------------------------------------------
REPHRASE_PREMISE, REPHRASE_CONCLUSION = "p:=~p", "c:=~c"
CONCLUSION_FROM_PREMISE = "c:=~p"
NEGATE_CONCLUSION = "c:=¬c"
COPY_NEGATED_CONCLUSION, COPY_CONCLUSION = "p:=p+¬c", "p:=p+~c"
MOVE_PREMISE = "p↦c"
DIAGONAL = (REPHRASE_PREMISE, REPHRASE_CONCLUSION)
OPERATIONS = (
    REPHRASE_PREMISE,
    REPHRASE_CONCLUSION,
    CONCLUSION_FROM_PREMISE,
    NEGATE_CONCLUSION,
    COPY_NEGATED_CONCLUSION,
    COPY_CONCLUSION,
    MOVE_PREMISE,
)

TABLE1: dict[tuple[str, str], tuple[str, ...]] = {
    (VALID_NOVEL, VALID_NOVEL): DIAGONAL,
    (VALID_NOVEL, VALID_NOT_NOVEL): (CONCLUSION_FROM_PREMISE,),
    (VALID_NOVEL, NOT_VALID_NOVEL): (NEGATE_CONCLUSION,),
    (VALID_NOVEL, NOT_VALID_NOT_NOVEL): (COPY_NEGATED_CONCLUSION,),
    (VALID_NOT_NOVEL, VALID_NOT_NOVEL): DIAGONAL,
    (VALID_NOT_NOVEL, NOT_VALID_NOT_NOVEL): (NEGATE_CONCLUSION,),
    (NOT_VALID_NOVEL, VALID_NOT_NOVEL): (CONCLUSION_FROM_PREMISE, COPY_CONCLUSION),
    (NOT_VALID_NOVEL, NOT_VALID_NOVEL): DIAGONAL,
    (NOT_VALID_NOVEL, NOT_VALID_NOT_NOVEL): (COPY_NEGATED_CONCLUSION,),
    (NOT_VALID_NOT_NOVEL, VALID_NOT_NOVEL): (CONCLUSION_FROM_PREMISE, COPY_CONCLUSION),
    (NOT_VALID_NOT_NOVEL, NOT_VALID_NOVEL): (MOVE_PREMISE,),
    (NOT_VALID_NOT_NOVEL, NOT_VALID_NOT_NOVEL): DIAGONAL,
}


def operations_for(source: str, target: str) -> tuple[str, ...]:
    """The operations Table 1 offers to turn an instance of class ``source`` into one of ``target`` (may be empty)."""
    if source not in CLASSES or target not in CLASSES:
        raise ValueError(f"classes must be among {', '.join(CLASSES)}")
    return TABLE1.get((source, target), ())


def choose_operation(
    source: str, target: str, rng: random.Random, available: Callable[[str], bool] = lambda op: True
) -> str | None:
    """One operation drawn at random among the cell's available ones; None for an empty cell."""
    ops = [op for op in operations_for(source, target) if available(op)]
    return rng.choice(ops) if ops else None


# --- text helpers ------------------------------------------------------------------------------------
END_PUNCT = ".!?"
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")


def sentences(text: str) -> list[str]:
    """Sentences of a text (pysbd), stripped, empty ones dropped."""
    try:
        import pysbd

        parts = pysbd.Segmenter(language="en", clean=False).segment(text)
    except ImportError:  # pragma: no cover
        parts = re.split(r"(?<=[.!?])\s+", text)
    return [p.strip() for p in parts if p.strip()]


def with_end(text: str) -> str:
    text = text.strip()
    return text if not text or text[-1] in END_PUNCT + "\"'”" else text + "."


def join_texts(first: str, second: str) -> str:
    return f"{with_end(first)} {second.strip()}".strip()


def _match_case(template: str, word: str) -> str:
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


# --- negation ----------------------------------------------------------------------------------------
CONTRACTIONS = {
    "isn't": "is",
    "aren't": "are",
    "wasn't": "was",
    "weren't": "were",
    "can't": "can",
    "cannot": "can",
    "won't": "will",
    "don't": "do",
    "doesn't": "does",
    "didn't": "did",
    "shouldn't": "should",
    "wouldn't": "would",
    "couldn't": "could",
    "hasn't": "has",
    "haven't": "have",
    "hadn't": "had",
    "mustn't": "must",
    "needn't": "need",
    "mightn't": "might",
    "shan't": "shall",
    "ain't": "is",
}
AUXILIARIES = (
    "am",
    "is",
    "are",
    "was",
    "were",
    "can",
    "could",
    "will",
    "would",
    "shall",
    "should",
    "may",
    "might",
    "must",
)
HAVE = {"has": "does", "have": "do", "had": "did"}
DETERMINERS = {
    "the",
    "a",
    "an",
    "this",
    "that",
    "these",
    "those",
    "its",
    "their",
    "his",
    "her",
    "my",
    "our",
    "your",
    "some",
    "many",
    "much",
    "more",
    "most",
    "few",
    "all",
    "any",
    "every",
    "each",
    "no",
    "of",
    "in",
    "on",
    "at",
    "for",
    "with",
    "by",
    "from",
    "to",
    "and",
    "or",
    "as",
    "than",
    "very",
}
NOT_THE_CASE = "It is not the case that "
_NOT_PREFIX = re.compile(r"^\s*it\s+is\s+not\s+(?:the\s+case|true)\s+that\s+", re.I)
_CONTRACTION = re.compile(r"\b(" + "|".join(re.escape(k) for k in CONTRACTIONS) + r")\b", re.I)
_NOT = re.compile(r"\bnot\s+", re.I)


def _lower_first(text: str, known: Callable[[str], bool]) -> str:
    m = _WORD.match(text)
    if not m:
        return text
    word = m.group(0)
    if word == "I" or (len(word) > 1 and word[1:2].isupper()):
        return text
    if word[:1].isupper() and (word.lower() in DETERMINERS or word.lower() in STOPWORDS or known(word.lower())):
        return word.lower() + text[len(word) :]
    return text


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def negate(
    text: str, *, verb_lemmas: set | frozenset | None = None, known: Callable[[str], bool] = lambda w: True
) -> str:
    """Add or remove "not" (see the module docstring); ``verb_lemmas``: base forms of verbs (WordNet) for the
    "does not V" rule; ``known``: whether a word is a common word (lower-cased after "It is not the case that")."""
    stripped = _NOT_PREFIX.sub("", text, count=1)
    if stripped != text:
        return _upper_first(stripped)
    m = _CONTRACTION.search(text)
    if m:
        word = m.group(0).replace("’", "'")
        return text[: m.start()] + _match_case(word, CONTRACTIONS[word.lower()]) + text[m.end() :]
    m = _NOT.search(text)
    if m:
        out = text[: m.start()] + text[m.end() :]
        return _upper_first(out) if m.start() == 0 else out
    tokens = list(_WORD.finditer(text))
    for i, tok in enumerate(tokens):
        word = tok.group(0).lower()
        if word in AUXILIARIES:
            return text[: tok.end()] + " not" + text[tok.end() :]
        if word in HAVE:
            nxt = tokens[i + 1].group(0).lower() if i + 1 < len(tokens) else ""
            if nxt == "been" or nxt.endswith(("ed", "en", "wn")):
                return text[: tok.end()] + " not" + text[tok.end() :]
            return text[: tok.start()] + _match_case(tok.group(0), HAVE[word]) + " not have" + text[tok.end() :]
    if verb_lemmas:
        for i, tok in enumerate(tokens):
            if i == 0:
                continue
            word = tok.group(0).lower()
            if tokens[i - 1].group(0).lower() in DETERMINERS or word in STOPWORDS:
                continue
            stem, aux = None, None
            if word.endswith("s") and not word.endswith(("ss", "us", "is")):
                for cand in (
                    (word[:-3] + "y") if word.endswith("ies") else None,
                    word[:-2] if word.endswith("es") else None,
                    word[:-1],
                ):
                    if cand and cand in verb_lemmas:
                        stem, aux = cand, "does"
                        break
            elif word.endswith("ed") and len(word) > 4:
                for cand in (word[:-1], word[:-2], word[:-3] if word[-3:-2] == word[-4:-3] else None):
                    if cand and cand in verb_lemmas:
                        stem, aux = cand, "did"
                        break
            if stem:
                return text[: tok.start()] + f"{aux} not {stem}" + text[tok.end() :]
    return NOT_THE_CASE + _lower_first(text.strip(), known)


# --- substitution ------------------------------------------------------------------------------------
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me might more most must my myself no nor not
now of off on once only or other our ours ourselves out over own same shall she should so some such than that the
their theirs them themselves then there these they this those through to too under until up very was we were what when
where which while who whom why will with would you your yours yourself yourselves also may many much one ones very
""".split()
)
NON_CONTENT_PHRASES = ("Hence, ", "Therefore, ", "Thus, ", "Indeed, ", "In fact, ", "Clearly, ")
_CUES = re.compile(r"[\"“”]|!+|\.{3}|…")


def remove_punctuation_cues(text: str) -> str:
    """Quotation marks dropped, "!" and ellipses made a plain period."""
    out = _CUES.sub(lambda m: "" if m.group(0) in '"“”' else ".", text)
    return re.sub(r"\.{2,}", ".", out)


def substitute(
    text: str, rng: random.Random, wordnet, *, phrase_probability: float = 0.3, cue_probability: float = 0.3
) -> tuple[str, dict]:
    """WordNet synonym / hypernym substitution + a non-content phrase + punctuation-cue removal (module docstring).
    Returns ``(text, details)``; the text always changes where anything can change."""
    tokens = list(_WORD.finditer(text))
    candidates = []
    for tok in tokens:
        word = tok.group(0)
        lower = word.lower()
        if lower in STOPWORDS or len(lower) < 3 or "'" in lower or "’" in lower:
            continue
        lemma, plural = lower, False
        if not wordnet.knows(lemma) and lemma.endswith("s") and wordnet.knows(lemma[:-1]):
            lemma, plural = lemma[:-1], True
        options = [(o, "synonym") for o in wordnet.synonyms(lemma)] + [
            (o, "hypernym") for o in wordnet.hypernyms(lemma)
        ]
        options = [(o, how) for o, how in options if o.lower() != lemma and "_" not in o]
        if options:
            candidates.append((wordnet.n_senses(lemma) or 1, rng.random(), tok, options, plural))
    candidates.sort(key=lambda c: (c[0], c[1]))  # few synsets first (the paper's footnote 1)
    share = rng.uniform(0.2, 0.6)
    chosen = candidates[: max(1, math.ceil(share * len(candidates)))] if candidates else []
    replaced = []
    pieces, last = [], 0
    for _, _, tok, options, plural in sorted(chosen, key=lambda c: c[2].start()):
        new, how = rng.choice(options)
        if plural and not new.endswith("s"):
            new += "s"
        new = _match_case(tok.group(0), new)
        pieces.append(text[last : tok.start()] + new)
        last = tok.end()
        replaced.append({"word": tok.group(0), "by": new, "relation": how})
    out = "".join(pieces) + text[last:]
    details = {"replaced": replaced, "phrase": "", "cues_removed": False}
    if rng.random() < cue_probability:
        cleaned = remove_punctuation_cues(out)
        details["cues_removed"] = cleaned != out
        out = cleaned
    if rng.random() < phrase_probability or out == text:
        phrase = rng.choice(NON_CONTENT_PHRASES)
        out = phrase + _lower_first(out.lstrip(), wordnet.knows)
        details["phrase"] = phrase.strip(" ,")
    return out, details


# --- seq2seq rewriters -------------------------------------------------------------------------------
class Seq2SeqRewriter:
    """A local seq2seq model (paraphrase or summarisation), loaded on first use; ``__call__(text) -> text | None``."""

    def __init__(
        self, path: str, *, prefix: str = "", max_new_tokens: int = 64, num_beams: int = 4, max_length: int = 256
    ):
        self.path, self.prefix = path, prefix
        self.max_new_tokens, self.num_beams, self.max_length = int(max_new_tokens), int(num_beams), int(max_length)
        self._model = self._tokenizer = None

    def _load(self):
        if self._model is None:
            from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self.path)
            self._model = AutoModelForSeq2SeqLM.from_pretrained(self.path)
            self._model.eval()
        return self._model, self._tokenizer

    def __call__(self, text: str) -> str | None:
        import torch

        model, tok = self._load()
        enc = tok(self.prefix + text, return_tensors="pt", truncation=True, max_length=self.max_length)
        enc.pop("token_type_ids", None)
        with torch.inference_mode():
            out = model.generate(**enc, max_new_tokens=self.max_new_tokens, num_beams=self.num_beams, do_sample=False)
        result = tok.decode(out[0], skip_special_tokens=True).strip()
        return result or None


def configured_model(name: str) -> str:
    """A configured seq2seq model path: setting or environment ``ARGORA_VALNOV_<NAME>_MODEL`` ('' if none)."""
    key = f"ARGORA_VALNOV_{name.upper()}_MODEL"
    try:
        from django.conf import settings

        value = getattr(settings, key, "")
    except Exception:  # noqa: BLE001
        value = ""
    return value or os.environ.get(key, "")


# --- the mutator -------------------------------------------------------------------------------------
@dataclass
class Mutation:
    premise: str
    conclusion: str
    operation: str
    how: str  # which realisation: paraphrase / summarise / substitute / negate / move


@dataclass
class Mutator:
    """Applies Table 1 operations. ``paraphraser`` / ``summariser``: callables text -> text (or None); without them
    those realisations are skipped and listed in :attr:`skipped`."""

    rng: random.Random
    wordnet: object = None
    paraphraser: Callable[[str], str | None] | None = None
    summariser: Callable[[str], str | None] | None = None
    skipped: dict = field(default_factory=dict)
    used: Counter = field(default_factory=Counter)

    def __post_init__(self):
        if self.wordnet is None:
            self.wordnet = load_wordnet()
        verbs = {lemma for (pos, lemma) in getattr(self.wordnet, "lemmas", {}) if pos == "v"}
        self.verb_lemmas = frozenset(verbs)
        if self.paraphraser is None:
            self.skipped["paraphrase"] = (
                "no seq2seq paraphrase model configured (ARGORA_VALNOV_PARAPHRASE_MODEL or --paraphrase-model)"
            )
        if self.summariser is None:
            self.skipped["summarise"] = (
                "no seq2seq summarisation model configured (ARGORA_VALNOV_SUMMARY_MODEL or --summary-model)"
            )

    def negate(self, text: str) -> str:
        return negate(text, verb_lemmas=self.verb_lemmas, known=self.wordnet.knows)

    def rephrase(self, text: str, *, allow_summary: bool = False) -> tuple[str, str] | None:
        """``(new text, how)`` by a randomly chosen available realisation, or None."""
        ways = ["substitute"]
        if self.paraphraser is not None:
            ways.append("paraphrase")
        if allow_summary and self.summariser is not None:
            ways.append("summarise")
        self.rng.shuffle(ways)
        for how in ways:
            if how == "paraphrase":
                out = self.paraphraser(text)
            elif how == "summarise":
                out = self.summariser(text)
            else:
                out = substitute(text, self.rng, self.wordnet)[0]
            if out and out.strip() and out.strip() != text.strip():
                return out.strip(), how
        return None

    def apply(self, operation: str, premise: str, conclusion: str) -> Mutation | None:
        """The mutated pair, or None when the operation does not apply to this instance."""
        if operation == REPHRASE_PREMISE:
            r = self.rephrase(premise, allow_summary=True)
            result = r and Mutation(r[0], conclusion, operation, r[1])
        elif operation == REPHRASE_CONCLUSION:
            r = self.rephrase(conclusion)
            result = r and Mutation(premise, r[0], operation, r[1])
        elif operation == CONCLUSION_FROM_PREMISE:
            r = self.rephrase(premise, allow_summary=True)
            result = r and Mutation(premise, r[0], operation, r[1])
        elif operation == NEGATE_CONCLUSION:
            result = Mutation(premise, self.negate(conclusion), operation, "negate")
        elif operation == COPY_NEGATED_CONCLUSION:
            result = Mutation(join_texts(premise, self.negate(conclusion)), conclusion, operation, "negate")
        elif operation == COPY_CONCLUSION:
            r = self.rephrase(conclusion)
            result = r and Mutation(join_texts(premise, r[0]), conclusion, operation, r[1])
        elif operation == MOVE_PREMISE:
            result = move_premise(premise, conclusion)
        else:
            raise ValueError(f"unknown operation {operation!r} (known: {', '.join(OPERATIONS)})")
        if result:
            self.used[operation] += 1
            self.used[f"how:{result.how}"] += 1
        return result or None


def move_premise(premise: str, conclusion: str) -> Mutation | None:
    """The premise's last sentence moves to the front of the conclusion; None for a one-sentence premise."""
    parts = sentences(premise)
    if len(parts) < 2:
        return None
    return Mutation(" ".join(parts[:-1]), join_texts(parts[-1], conclusion), MOVE_PREMISE, "move")


def copy_conclusion(premise: str, conclusion: str) -> str:
    return join_texts(premise, conclusion)


# --- balancing ---------------------------------------------------------------------------------------
SYNTHETIC_FACTOR = 0.5
MAX_UNKNOWN_SHARE = 0.2
ATTEMPTS_PER_ROW = 25


def quotas(total: int, n_classes: int = 4) -> list[int]:
    base, rest = divmod(int(total), n_classes)
    return [base + (1 if i < rest else 0) for i in range(n_classes)]


def _label_of(flag: int) -> int:
    return 1 if flag else -1


def balance(
    records: Sequence[dict],
    target_size: int,
    mutator: Mutator,
    *,
    synthetic_factor: float = SYNTHETIC_FACTOR,
    max_unknown_share: float = MAX_UNKNOWN_SHARE,
    progress=None,
) -> tuple[list[dict], dict]:
    """Class-balance shared-task records (column dicts with ``Instance-Weight`` and ``Source-Line``) to
    ``target_size`` rows. Returns ``(records, summary)`` (module docstring)."""
    if target_size < 1:
        raise ValueError("target size must be >= 1")
    rng = mutator.rng
    by_class: dict[str, list[int]] = {c: [] for c in CLASSES}
    unknown: list[int] = []
    parsed = []
    for i, rec in enumerate(records):
        row = row_from_columns(rec)
        parsed.append(row)
        v, n = gold_label(row["validity"]), gold_label(row["novelty"])
        if v is None or n is None:
            if not row["synthetic"]:
                unknown.append(i)
            continue
        by_class[class_of(v, n)].append(i)
    n_unknown = min(len(unknown), int(math.floor(max_unknown_share * target_size)))
    keep = set(rng.sample(unknown, n_unknown)) if n_unknown < len(unknown) else set(unknown)
    shares = quotas(target_size - len(keep))
    before = {c: len(by_class[c]) for c in CLASSES}
    synthetic: list[dict] = []
    shortfall, undersampled = {}, {}
    for target, quota in zip(CLASSES, shares):
        members = by_class[target]
        if len(members) >= quota:
            chosen = rng.sample(members, quota) if len(members) > quota else members
            keep.update(chosen)
            undersampled[target] = len(members) - len(chosen)
            continue
        keep.update(members)
        need = quota - len(members)
        sources = [i for c in CLASSES if operations_for(c, target) for i in by_class[c] if not parsed[i]["synthetic"]]
        made, attempts = 0, 0
        while made < need and sources and attempts < need * ATTEMPTS_PER_ROW:
            attempts += 1
            i = rng.choice(sources)
            src = parsed[i]
            src_class = class_of(gold_label(src["validity"]), gold_label(src["novelty"]))
            op = choose_operation(src_class, target, rng)
            result = mutator.apply(op, src["premise"], src["conclusion"]) if op else None
            if result is None:
                continue
            v, n = LABELS_OF[target]
            rec = dict(records[i])
            rec.update(
                {
                    "Premise": result.premise,
                    "Conclusion": result.conclusion,
                    "Validity": _label_of(v),
                    "Novelty": _label_of(n),
                    "Instance-Weight": round(src["weight"] * synthetic_factor, 6),
                    "Synthetic": 1,
                    "Mutation": f"{result.operation} ({result.how}) from {src_class}",
                    "Source-Line": records[i].get("Source-Line", i + 1),
                }
            )
            synthetic.append(rec)
            made += 1
            if progress:
                progress(len(synthetic), None, f"synthetic rows for {target}")
        if made < need:
            shortfall[target] = need - made
    out = [
        dict(rec, Synthetic=rec.get("Synthetic", 0) or 0, Mutation=rec.get("Mutation", "") or "")
        for i, rec in enumerate(records)
        if i in keep
    ]
    out.extend(synthetic)
    after = Counter()
    for rec in out:
        row = row_from_columns(rec)
        v, n = gold_label(row["validity"]), gold_label(row["novelty"])
        after["unknown" if v is None or n is None else class_of(v, n)] += 1
    summary = {
        "input_rows": len(records),
        "target_size": int(target_size),
        "output_rows": len(out),
        "synthetic": len(synthetic),
        "originals_kept": len(out) - len(synthetic),
        "unknown_kept": len(keep & set(unknown)),
        "per_class_before": dict(before, unknown=len(unknown)),
        "per_class_after": {c: after.get(c, 0) for c in (*CLASSES, "unknown")},
        "undersampled": {c: k for c, k in undersampled.items() if k},
        "shortfall": shortfall,
        "operations": {k: v for k, v in mutator.used.items() if not k.startswith("how:")},
        "realisations": {k[4:]: v for k, v in mutator.used.items() if k.startswith("how:")},
        "skipped_operations": dict(mutator.skipped),
        "wordnet": getattr(mutator.wordnet, "source", ""),
        "synthetic_factor": synthetic_factor,
    }
    return out, summary


def augment_file(
    path,
    target_size: int,
    *,
    out=None,
    seed: int = 13,
    paraphrase_model: str | None = None,
    summary_model: str | None = None,
    synthetic_factor: float = SYNTHETIC_FACTOR,
    max_unknown_share: float = MAX_UNKNOWN_SHARE,
    fmt: str | None = None,
    progress=None,
) -> dict:
    """Read a shared-task CSV / JSONL file, balance it with clone&mutate to ``target_size`` rows, write ``out``
    (default ``<name>.augmented<ext>`` beside the input; the format follows ``out``'s extension). Returns the
    summary with ``out``. Raises ``ImportFailed`` (``file:line: reason``) for a bad input file."""
    from pathlib import Path

    path = Path(path)
    table = read_file(path)
    records = []
    for r in table.rows:
        rec = r.as_columns()
        rec.setdefault(WEIGHT_COLUMN, row_from_columns(rec)["weight"])
        rec.setdefault("Source-Line", r.line)
        records.append(rec)
    paraphrase_model = paraphrase_model if paraphrase_model is not None else configured_model("paraphrase")
    summary_model = summary_model if summary_model is not None else configured_model("summary")
    mutator = Mutator(
        rng=random.Random(seed),
        paraphraser=Seq2SeqRewriter(paraphrase_model) if paraphrase_model else None,
        summariser=Seq2SeqRewriter(summary_model) if summary_model else None,
    )
    rows, summary = balance(
        records,
        target_size,
        mutator,
        synthetic_factor=synthetic_factor,
        max_unknown_share=max_unknown_share,
        progress=progress,
    )
    out = Path(out) if out else path.with_name(f"{path.stem}.augmented{path.suffix or '.csv'}")
    columns = merge_columns(table.columns, [WEIGHT_COLUMN, "Synthetic", "Mutation", "Source-Line"])
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8", newline="") as fh:
        (write_jsonl if (fmt or guess_format(out)) == "jsonl" else write_csv)(fh, columns, rows)
    summary["out"] = str(out)
    summary["seed"] = seed
    summary["models"] = {"paraphrase": paraphrase_model or None, "summary": summary_model or None}
    return summary
