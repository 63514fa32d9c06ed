"""Evaluation metrics for generated arguments (Arg-CTRL §5.2, §6; ArgU §4.2.1; debate-trees §3).

Every metric is a plain function; scores are in [0, 1] unless said otherwise (multiply by 100 for the papers'
tables). Texts are compared lower-cased and tokenised by :func:`tokenize` (words and single punctuation marks)
where a metric works on tokens.

- :func:`meteor` (``hypothesis, references``): NLTK's METEOR (alpha 0.9, beta 3, gamma 0.5), max over the
  references. Matching stages: exact, then Porter stem; WordNet synonyms only with ``synonyms=True``, which needs
  NLTK's WordNet data (not installed here: :func:`wordnet_available`). Scores without synonyms are somewhat
  lower than the paper's METEOR 1.5 numbers.
- :func:`rouge_l` (``hypothesis, references``): ROUGE-L F-measure (``rouge-score``), max over the references.
- :func:`bleu` (``hypotheses, references``): corpus BLEU (``sacrebleu``, 13a tokenisation, exp smoothing) / 100;
  references per hypothesis may differ in number. :func:`sentence_bleu` for one hypothesis.
- :func:`reference_scores` (``generated, references``): Arg-CTRL §5.2 / Table 5. Reference arguments are grouped
  by control code ``(topic, stance, aspect stem)`` (a reference with several aspects is in several groups);
  every generated argument is scored against the group of its own code (METEOR and ROUGE-L, each the max over
  the group's arguments) and the scores are averaged over the generated arguments that have a group.
- :func:`retrieval_baseline` (``codes, training``): the retrieval approach of §5.2, as "generated" rows for
  :func:`reference_scores`. For each control code (topic, stance, aspect stem) the candidates are the training
  arguments with that code (same topic and stance, an aspect with the same stem). ``mode="nearest"`` (default):
  the one candidate whose sentence embedding has the highest cosine to the embedding of the code's query text
  ``"<topic> <aspect>"`` (the code without the stance word; ties -> first in training order) -- it uses only what
  a generator is given. ``mode="all"``: every candidate (the paper's wording: "returns all arguments ... that
  match a given topic, stance, and aspect"). ``mode="oracle"``: the candidate closest to the centroid of the
  code's reference embeddings (an upper bound that peeks at the references). Codes without candidates yield
  nothing.
- :func:`aspect_present` (``text, aspect``): Arg-CTRL §6: the aspect (all its words, contiguous) appears in the
  text as written, or stem by stem (Porter: covers "costs"/"cost", "expensive"/"expens..."), or one of the given
  synonyms does (same matching). Synonyms: a list, a ``{aspect: [synonyms]}`` mapping, a callable, or
  ``"wordnet"`` (lemma names of the aspect's WordNet synsets; needs the WordNet data). Lemmas are covered by the
  stems for regular inflection; no WordNet lemmatiser is used. :func:`aspect_presence_rate` over rows.
- :func:`novelty` (``generated, training``): Arg-CTRL §5.2 / Table 6. For each generated argument the training
  argument with the highest embedding cosine, the character-level Levenshtein distance to it
  (:func:`levenshtein`; the paper's Table 6 pairs give 88 and 99, as the tests check), and the relative overlap:
  the longest common substring in characters divided by the generated argument's length
  (:func:`longest_common_substring`; Table 6's second pair gives 17%, the first 7% where the table says 8%).
- :func:`fact_faithfulness` (``variables, output``): ArgU §4.2.1: the mean cosine between the sentence embeddings
  of the input variables and of the generated argument; :func:`mean_fact_faithfulness` over examples.
- :func:`perplexity` (``model, tokenizer, texts``): exp of the mean negative log-likelihood per predicted token of
  a causal LM over held-out texts (token-weighted over all texts; the first token of each text is context, or
  ``contexts`` give a conditioning prefix that is not scored, e.g. a debate prompt).

Embeddings: ``encode`` arguments take ``fn(list[str]) -> array`` (rows L2-normalised or not: cosines are
computed after normalising); the default is :func:`ml.encoders.encode` (the packaged MiniLM).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from difflib import SequenceMatcher
from functools import lru_cache

import numpy as np

from ml.encoders import encode as default_encode

from .corpora import aspect_stem, normalise_stance, stem, words

Encode = Callable[[list[str]], "np.ndarray"]
_TOKEN = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens and single punctuation marks."""
    return [t.lower() for t in _TOKEN.findall(text or "")]


def _references(references) -> list[str]:
    if isinstance(references, str):
        return [references]
    refs = [r for r in references if isinstance(r, str)]
    if not refs:
        raise ValueError("references: give at least one reference text")
    return refs


# --- METEOR / ROUGE-L / BLEU -----------------------------------------------------------------------------


class _NoWordNet:
    """Stands in for NLTK's WordNet reader: no synonyms, so METEOR matches exact words and stems only."""

    def synsets(self, *args, **kwargs):
        return []


def wordnet_available() -> bool:
    try:
        from nltk.corpus import wordnet

        wordnet.ensure_loaded()
        return True
    except LookupError:
        return False


def _wordnet():
    from nltk.corpus import wordnet

    try:
        wordnet.ensure_loaded()
    except LookupError:
        raise LookupError(
            "synonyms need NLTK's WordNet data, which is not installed (nltk.download('wordnet') "
            "or a package shipping it); use synonyms=False for exact + stem matching"
        ) from None
    return wordnet


def meteor(
    hypothesis: str, references, *, synonyms: bool = False, alpha: float = 0.9, beta: float = 3.0, gamma: float = 0.5
) -> float:
    """METEOR of one hypothesis against one or more references (max over references); see the module docstring."""
    from nltk.stem import PorterStemmer
    from nltk.translate.meteor_score import meteor_score

    refs = [tokenize(r) for r in _references(references)]
    hyp = tokenize(hypothesis)
    if not hyp or not any(refs):
        return 0.0
    wordnet = _wordnet() if synonyms else _NoWordNet()
    return float(meteor_score(refs, hyp, stemmer=PorterStemmer(), wordnet=wordnet, alpha=alpha, beta=beta, gamma=gamma))


@lru_cache(maxsize=2)
def _rouge_scorer(use_stemmer: bool):
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=use_stemmer)


def rouge_l(hypothesis: str, references, *, use_stemmer: bool = False) -> float:
    """ROUGE-L F-measure (rouge-score; its tokeniser lower-cases and keeps [a-z0-9] words), max over references."""
    scorer = _rouge_scorer(use_stemmer)
    return max(float(scorer.score(ref, hypothesis)["rougeL"].fmeasure) for ref in _references(references))


def _reference_streams(hypotheses: Sequence[str], references) -> list[list[str | None]]:
    if len(references) != len(hypotheses):
        raise ValueError(f"references: {len(references)} entries for {len(hypotheses)} hypotheses")
    per = [_references(r) for r in references]
    width = max((len(r) for r in per), default=0)
    return [[r[i] if i < len(r) else None for r in per] for i in range(width)]


def bleu(hypotheses: Sequence[str], references: Sequence) -> float:
    """Corpus BLEU / 100 (sacrebleu defaults). ``references[i]``: a text or a list of texts for hypothesis i."""
    import sacrebleu

    hypotheses = list(hypotheses)
    if not hypotheses:
        raise ValueError("hypotheses: give at least one")
    return float(sacrebleu.corpus_bleu(hypotheses, _reference_streams(hypotheses, list(references))).score) / 100.0


def sentence_bleu(hypothesis: str, references) -> float:
    """Sentence BLEU / 100 (sacrebleu, exp smoothing)."""
    import sacrebleu

    return float(sacrebleu.sentence_bleu(hypothesis, _references(references)).score) / 100.0


# --- grouped reference scores and the retrieval baseline (Arg-CTRL §5.2) ---------------------------------


def code_key(topic: str, stance: str, aspect: str) -> tuple[str, str, str]:
    """The grouping key of a control code: ``(topic lower-cased, pro|con, aspect stem)``."""
    return " ".join(topic.lower().split()), normalise_stance(stance) or "", aspect_stem(aspect)


def _row_text(row: Mapping) -> str:
    for key in ("text", "argument", "sentence"):
        if isinstance(row.get(key), str):
            return row[key]
    raise ValueError(f"row has no text (text / argument / sentence): {dict(row)!r}")


def _row_aspects(row: Mapping) -> list[str]:
    aspects = row.get("aspects", row.get("aspect_pos_string"))
    if aspects is None:
        aspects = [row["aspect"]] if row.get("aspect") else []
    return [aspects] if isinstance(aspects, str) else list(aspects)


def group_by_code(rows: Iterable[Mapping]) -> dict[tuple[str, str, str], list[str]]:
    """``{code_key: [texts]}`` of rows with ``topic``, ``stance``, ``aspect`` or ``aspects``, and a text."""
    groups: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for row in rows:
        text = _row_text(row)
        for aspect in _row_aspects(row):
            key = code_key(row["topic"], row["stance"], aspect)
            if key[1] and key[2] and text not in groups[key]:
                groups[key].append(text)
    return dict(groups)


def reference_scores(generated: Iterable[Mapping], references: Iterable[Mapping], *, synonyms: bool = False) -> dict:
    """Mean METEOR and ROUGE-L of generated arguments against the reference arguments of their control code.

    ``generated``: rows ``{"topic", "stance", "aspect", "text"}``; ``references``: rows with ``topic``,
    ``stance``, ``aspect`` or ``aspects`` and ``text``/``sentence``. Returns ``{"meteor", "rouge_l",
    "scored", "without_reference", "codes"}`` (means over the scored arguments; 0.0 when none is scored).
    """
    groups = group_by_code(references)
    met, rl, missing, codes = [], [], 0, set()
    for row in generated:
        key = code_key(row["topic"], row["stance"], row["aspect"])
        refs = groups.get(key)
        if not refs:
            missing += 1
            continue
        text = _row_text(row)
        met.append(meteor(text, refs, synonyms=synonyms))
        rl.append(rouge_l(text, refs))
        codes.add(key)
    return {
        "meteor": float(np.mean(met)) if met else 0.0,
        "rouge_l": float(np.mean(rl)) if rl else 0.0,
        "scored": len(met),
        "without_reference": missing,
        "codes": len(codes),
    }


def _encoder(encode: Encode | None) -> Encode:
    if encode is not None:
        return encode

    return default_encode


def _unit(matrix) -> np.ndarray:
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim == 1:
        m = m[None, :]
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1.0, norms)


def retrieval_baseline(
    codes: Iterable,
    training: Iterable[Mapping],
    *,
    mode: str = "nearest",
    references: Iterable[Mapping] | None = None,
    encode: Encode | None = None,
) -> list[dict]:
    """The retrieval baseline's "generated" rows ``{"topic", "stance", "aspect", "text"}`` (module docstring).

    ``codes``: ``(topic, stance, aspect)`` tuples or rows with those keys (duplicates, by :func:`code_key`,
    are answered once); ``training``: rows with ``topic``, ``stance``, ``aspect``/``aspects`` and a text
    (aspect rows, or the arguments of :class:`~ml.generation.corpora.AspectDocument` s).
    ``mode="oracle"`` needs ``references``.
    """
    if mode not in ("nearest", "all", "oracle"):
        raise ValueError(f"mode: {mode!r} is not nearest, all or oracle")
    candidates = group_by_code(training)
    ref_groups = group_by_code(references) if references is not None else {}
    if mode == "oracle" and references is None:
        raise ValueError("references: mode='oracle' needs the reference rows")
    seen, wanted = set(), []
    for code in codes:
        topic, stance, aspect = (
            (code["topic"], code["stance"], code["aspect"]) if isinstance(code, Mapping) else tuple(code)
        )
        key = code_key(topic, stance, aspect)
        if key in seen or key not in candidates:
            continue
        seen.add(key)
        wanted.append((key, topic, stance, aspect))
    out: list[dict] = []
    if mode == "all":
        for key, topic, stance, aspect in wanted:
            out.extend({"topic": topic, "stance": stance, "aspect": aspect, "text": t} for t in candidates[key])
        return out
    encode = _encoder(encode)
    for key, topic, stance, aspect in wanted:
        texts = candidates[key]
        if len(texts) == 1:
            best = 0
        else:
            cand = _unit(encode(list(texts)))
            if mode == "nearest":
                target = _unit(encode([f"{topic} {aspect}"]))[0]
            else:
                refs = ref_groups.get(key)
                if not refs:
                    continue
                target = _unit(_unit(encode(list(refs))).mean(axis=0))[0]
            best = int(np.argmax(cand @ target))
        out.append({"topic": topic, "stance": stance, "aspect": aspect, "text": texts[best]})
    return out


# --- aspect presence (Arg-CTRL §6) ------------------------------------------------------------------------


def _contains(seq: list[str], sub: list[str]) -> bool:
    n = len(sub)
    return n > 0 and any(seq[i : i + n] == sub for i in range(len(seq) - n + 1))


def wordnet_synonyms(aspect: str) -> list[str]:
    """Lemma names (underscores -> spaces) of the aspect's WordNet synsets; needs NLTK's WordNet data."""
    wn = _wordnet()
    query = "_".join(words(aspect))
    return sorted({l.name().replace("_", " ") for s in wn.synsets(query) for l in s.lemmas()})


def _synonyms_for(aspect: str, synonyms) -> list[str]:
    if synonyms is None:
        return []
    if synonyms == "wordnet":
        return wordnet_synonyms(aspect)
    if callable(synonyms):
        return list(synonyms(aspect))
    if isinstance(synonyms, Mapping):
        return list(synonyms.get(aspect) or synonyms.get(aspect.lower()) or [])
    return [synonyms] if isinstance(synonyms, str) else list(synonyms)


def aspect_present(text: str, aspect: str, *, synonyms=None) -> bool:
    """Whether ``aspect`` (or a synonym) appears in ``text``, as written or stem by stem (module docstring)."""
    tokens = words(text)
    stems = [stem(t) for t in tokens]
    for term in [aspect] + _synonyms_for(aspect, synonyms):
        term_words = words(term)
        if _contains(tokens, term_words) or _contains(stems, [stem(w) for w in term_words]):
            return True
    return False


def aspect_presence_rate(rows: Iterable[Mapping], *, synonyms=None) -> float:
    """Share of rows ``{"aspect", "text"}`` whose text contains their aspect (:func:`aspect_present`)."""
    hits = [aspect_present(_row_text(r), r["aspect"], synonyms=synonyms) for r in rows]
    return sum(hits) / len(hits) if hits else 0.0


# --- novelty against the training data (Arg-CTRL §5.2, Table 6) -----------------------------------------


def levenshtein(a: str, b: str) -> int:
    """Character-level edit distance (insertions, deletions, substitutions cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def longest_common_substring(a: str, b: str) -> str:
    """The longest common (contiguous) character substring of ``a`` and ``b`` (first in ``a`` on ties)."""
    match = SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b))
    return a[match.a : match.a + match.size]


def overlap(generated: str, training: str) -> float:
    """Relative longest common overlap: len(longest common substring) / len(generated)."""
    return len(longest_common_substring(generated, training)) / len(generated) if generated else 0.0


def novelty(
    generated: Sequence[str], training: Sequence[str], *, encode: Encode | None = None, batch: int = 1024
) -> dict:
    """Nearest training argument (embedding cosine) of each generated one, with edit distance and overlap.

    Returns ``{"pairs": [{"generated", "nearest", "cosine", "edit_distance", "overlap", "common"}],
    "mean_cosine", "mean_edit_distance", "mean_overlap"}``.
    """
    generated, training = list(generated), list(training)
    if not training:
        raise ValueError("training: give at least one training argument")
    if not generated:
        return {"pairs": [], "mean_cosine": 0.0, "mean_edit_distance": 0.0, "mean_overlap": 0.0}
    encode = _encoder(encode)
    train_vecs = _unit(encode(training))
    pairs = []
    for start in range(0, len(generated), batch):
        chunk = generated[start : start + batch]
        sims = _unit(encode(chunk)) @ train_vecs.T
        for text, row in zip(chunk, sims):
            best = int(np.argmax(row))
            nearest = training[best]
            common = longest_common_substring(text, nearest)
            pairs.append(
                {
                    "generated": text,
                    "nearest": nearest,
                    "cosine": float(row[best]),
                    "edit_distance": levenshtein(text, nearest),
                    "overlap": len(common) / len(text) if text else 0.0,
                    "common": common,
                }
            )
    return {
        "pairs": pairs,
        "mean_cosine": float(np.mean([p["cosine"] for p in pairs])),
        "mean_edit_distance": float(np.mean([p["edit_distance"] for p in pairs])),
        "mean_overlap": float(np.mean([p["overlap"] for p in pairs])),
    }


# --- fact faithfulness (ArgU §4.2.1) --------------------------------------------------------------------


def fact_faithfulness(variables: Sequence[str], output: str, *, encode: Encode | None = None) -> float:
    """Mean cosine between the embeddings of the input variables and of the generated argument."""
    variables = [v for v in variables if isinstance(v, str) and v.strip()]
    if not variables:
        raise ValueError("variables: give at least one input variable")
    vecs = _unit(_encoder(encode)(variables + [output]))
    return float(np.mean(vecs[:-1] @ vecs[-1]))


def mean_fact_faithfulness(examples: Iterable[tuple[Sequence[str], str]], *, encode: Encode | None = None) -> float:
    """Mean of :func:`fact_faithfulness` over ``(variables, output)`` examples (one encoder call)."""
    examples = [([v for v in variables if isinstance(v, str) and v.strip()], output) for variables, output in examples]
    examples = [e for e in examples if e[0]]
    if not examples:
        return 0.0
    texts = [t for variables, output in examples for t in list(variables) + [output]]
    vecs = _unit(_encoder(encode)(texts))
    scores, i = [], 0
    for variables, _ in examples:
        n = len(variables)
        scores.append(float(np.mean(vecs[i : i + n] @ vecs[i + n])))
        i += n + 1
    return float(np.mean(scores))


# --- perplexity -----------------------------------------------------------------------------------------


def perplexity(
    model,
    tokenizer,
    texts: Sequence[str],
    *,
    contexts: Sequence[str] | None = None,
    batch_size: int = 8,
    max_length: int | None = None,
    add_bos: bool = False,
    device: str | None = None,
) -> float:
    """Perplexity of a causal LM on held-out ``texts``: ``exp(sum NLL / number of predicted tokens)``.

    Each text is tokenised on its own (``tokenizer.encode(..., add_special_tokens=False)``); with ``add_bos`` the
    tokenizer's BOS token is put first so that the first text token is scored too. ``contexts[i]`` (optional) is
    put before text i and conditions it without being scored. Sequences are cut to ``max_length`` tokens (default:
    the model's ``n_positions`` / ``max_position_embeddings`` if it has one) keeping the start; batches are padded
    on the right and the padding is masked.
    """
    import torch

    texts = list(texts)
    if not texts:
        raise ValueError("texts: give at least one text")
    if contexts is not None and len(contexts) != len(texts):
        raise ValueError(f"contexts: {len(contexts)} for {len(texts)} texts")
    config = getattr(model, "config", None)
    if max_length is None and config is not None:
        max_length = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
    if device is None:
        try:
            device = next(model.parameters()).device
        except StopIteration:  # pragma: no cover - a model without parameters
            device = "cpu"
    bos = getattr(tokenizer, "bos_token_id", None) if add_bos else None
    if add_bos and bos is None:
        raise ValueError("add_bos: the tokenizer has no BOS token")

    sequences: list[tuple[list[int], int]] = []  # (ids, index of the first scored token)
    for i, text in enumerate(texts):
        prefix = [bos] if bos is not None else []
        if contexts is not None and contexts[i]:
            prefix += list(tokenizer.encode(contexts[i], add_special_tokens=False))
        ids = prefix + list(tokenizer.encode(text, add_special_tokens=False))
        first = max(len(prefix), 1)
        if max_length is not None:
            ids = ids[:max_length]
        if len(ids) > first:
            sequences.append((ids, first))
    if not sequences:
        raise ValueError("texts: nothing to score (every text has fewer than two tokens after its context)")

    was_training = model.training
    model.eval()
    total_nll, total_tokens = 0.0, 0
    try:
        with torch.no_grad():
            for start in range(0, len(sequences), batch_size):
                batch = sequences[start : start + batch_size]
                width = max(len(ids) for ids, _ in batch)
                input_ids = torch.zeros((len(batch), width), dtype=torch.long)
                attention = torch.zeros((len(batch), width), dtype=torch.long)
                scored = torch.zeros((len(batch), width), dtype=torch.bool)
                for row, (ids, first) in enumerate(batch):
                    input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
                    attention[row, : len(ids)] = 1
                    scored[row, first : len(ids)] = True
                input_ids, attention, scored = input_ids.to(device), attention.to(device), scored.to(device)
                logits = model(input_ids=input_ids, attention_mask=attention).logits.float()
                logprobs = torch.log_softmax(logits[:, :-1], dim=-1)
                targets = input_ids[:, 1:]
                token_lp = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
                mask = scored[:, 1:]
                total_nll -= float(token_lp[mask].sum())
                total_tokens += int(mask.sum())
    finally:
        if was_training:
            model.train()
    return math.exp(total_nll / total_tokens)
