"""Generating arguments and debates with trained generators (issue 12, item 5), and generation runs.

Loaded models (``ml.registry.load_model(version)`` of a ``generator`` / ``seq2seq`` version, or
:func:`load_generator` on an artifact folder):

:class:`CausalGenerator` (Arg-CTRL §5.2)
    ``generate_arguments(codes)``: for each control code ``(topic, stance, aspect)`` the prompt is the code plus
    the punctuation the model was trained with (``code_suffix``, default ``" ."``: "signalling the model to start
    a new sentence"), decoded with *penalised sampling* (Keskar et al. 2019): near-greedy (greedy by default;
    ``temperature > 0`` samples at that temperature) with every token already generated down-weighted by the
    penalty ``theta`` (1.2): its logit is divided by theta when positive, multiplied when negative. Unlike
    transformers' ``repetition_penalty`` the control code itself is not penalised (so the aspect may still be
    written). The output is split into sentences (NLTK Punkt; the untrained Punkt model when the punkt data is
    not installed); a trailing fragment without final punctuation is dropped when a complete sentence precedes it.
    Each sentence is one generated argument; ``text`` is the first.
    ``counter_arguments(argument, topic, stance)`` (Arg-CTRL §7.2): the aspects of the input argument are
    detected with the active ``tagger`` model (:func:`detect_aspects`; without one, the best baseline candidates of
    :mod:`annotation.task_types.aspect`), the stance is flipped and one argument is generated per aspect.

:class:`Seq2SeqGenerator` (ArgU §4, App. A.3; debate trees §2.3)
    Beam search (5 beams), ``no_repeat_ngram_size=3`` (trigram blocking), at most 50 new tokens by default.
    ``argu(topic, variables, stance, scheme, mode="mono"|"dual")``: encoder input ``"<topic> <VAR_0> v0 ..."``
    and the decoder prefix ``"<pro> <scheme> <argument>"`` (Mono) or ``"<pro> <scheme> <pattern>"`` (Dual: the
    model writes the template, then ``<argument>`` and the argument). ``respond(prompts)``: one debate response per
    prompt (a last sentence cut off by the token limit is dropped when a complete one precedes it). ``debate(thesis, turns)``: a multi-turn debate, each response fed back as the next prompt (the last
    ``context_turns`` turns joined by ``" <turn> "``), speakers alternating Alice / Bob.

Generation runs (:func:`create_run`, :func:`get_run`, :func:`list_runs`)
    A run is a folder ``ARTIFACT_ROOT/generation/runs/<id>/`` written atomically (temp folder + rename):
    ``run.json`` (id, mode, model version, kind, config, created_at, references, rating projects),
    ``outputs.jsonl`` (one generated row a line) and, once evaluated, ``metrics.json``
    (:mod:`ml.generation.evaluate`). Ids sort by creation time. :func:`run_generation` generates and stores one
    (the CLI); the API and pages queue runs on a worker instead (:mod:`ml.generation.runs`: ``run.json`` adds
    ``status`` queued / running / done / failed, ``created_by``, ``task_id``, ``n_inputs``, ``inputs_done``,
    ``error``, and :func:`write_outputs` replaces ``outputs.jsonl`` atomically after each input). Runs stored
    before that read as ``done`` with no creator.

Modes of a run and their inputs (each input one dict):

========== ============================================================= ===================================
mode       input                                                         output row adds
========== ============================================================= ===================================
arguments  ``{"topic", "stance", "aspect"}``                              control_code, text, sentences
counter    ``{"argument", "topic", "stance"}``                            aspects, aspect_source, text (per aspect)
argu       ``{"topic", "variables": [str], "stance", "scheme"?}``         text, template (dual), reference?
responses  ``{"prompt"}`` (+ ``"reference"``)                             text
debate     ``{"thesis", "turns"?}``                                      turns [{speaker, text}]
========== ============================================================= ===================================
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from annotation.task_types.aspect.candidates import candidates
from annotation.task_types.aspect.rankers import BaselineRanker, rank
from argora.jsonl import read_jsonl, write_jsonl
from ml import registry
from ml.models import ModelVersion
from ml.training import pick_device, without_denormals

from . import corpora
from .metrics import perplexity
from .train import (
    DEV_ARGUMENTS,
    META,
    SEQ2SEQ_DEFAULTS,
    TRAIN_ARGUMENTS,
    code_argument_pairs,
    encode_pairs,
    read_meta,
    seq2seq_loss,
    seq2seq_pair,
)

MODES = ("arguments", "counter", "argu", "responses", "debate")
SPEAKERS = ("Alice", "Bob")
CAUSAL_DECODING = {"max_new_tokens": 60, "theta": 1.2, "temperature": 0.0, "top_k": 0, "n": 1, "seed": 13}
SEQ2SEQ_DECODING = {
    "num_beams": 5,
    "no_repeat_ngram_size": 3,
    "max_new_tokens": 50,
    "do_sample": False,
    "top_k": 0,
    "temperature": 1.0,
    "theta": 1.0,
    "seed": 13,
}


class GenerationError(ValueError):
    """A generation request that cannot be served (bad input, wrong model kind); ``str()`` names the field."""


# --- sentence splitting ----------------------------------------------------------------------------


def _punkt():
    try:
        import nltk

        nltk.data.find("tokenizers/punkt_tab/english/")
        return nltk.sent_tokenize
    except LookupError:
        from nltk.tokenize.punkt import PunktSentenceTokenizer

        tokenizer = PunktSentenceTokenizer()
        return tokenizer.tokenize


_SPLIT = None
_END = re.compile(r"""[.!?]["'”’)\]]*$""")


def split_sentences(text: str, *, drop_fragment: bool = True) -> list[str]:
    """Sentences of ``text`` (NLTK Punkt); a last sentence without end punctuation is dropped when
    ``drop_fragment`` and a complete one precedes it."""
    global _SPLIT
    if _SPLIT is None:
        _SPLIT = _punkt()
    text = " ".join((text or "").split())
    if not text:
        return []
    sentences = [s.strip() for s in _SPLIT(text) if s.strip()]
    if drop_fragment and len(sentences) > 1 and not _END.search(sentences[-1]):
        sentences = sentences[:-1]
    return sentences


# --- penalised sampling ----------------------------------------------------------------------------


def penalty_processor(theta: float, prompt_length: int):
    """CTRL's penalty over the tokens generated after the prompt (not the prompt's own tokens)."""
    import torch
    from transformers import LogitsProcessor

    class GeneratedTokenPenalty(LogitsProcessor):
        def __call__(self, input_ids, scores):
            generated = input_ids[:, prompt_length:]
            if generated.shape[1] == 0 or theta == 1.0:
                return scores
            picked = torch.gather(scores, 1, generated)
            picked = torch.where(picked > 0, picked / theta, picked * theta)
            return scores.scatter(1, generated, picked)

    return GeneratedTokenPenalty()


def _clean_decode(tokenizer, ids, keep: Sequence[str] = ()) -> str:
    """Decode keeping the control tokens in ``keep`` and dropping the tokenizer's own special tokens."""
    text = tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=True)
    for tok in set(tokenizer.all_special_tokens) - set(keep):
        if tok and tok != getattr(tokenizer, "unk_token", None):
            text = text.replace(tok, " ")
    return " ".join(text.split())


class _Base:
    kind = ""

    def __init__(self, model, tokenizer, meta: dict, path: Path | None = None, device: str | None = None):
        self.model, self.tokenizer, self.meta, self.path = model, tokenizer, meta, path
        self.device = pick_device(device)
        self.model.to(self.device)
        self.model.eval()
        if self.device.startswith("cuda"):
            self.model.half()

    def _generate(self, **kwargs):
        """``model.generate(**kwargs)`` without gradients, denormals flushed on CPU (see ``without_denormals``)."""
        import torch

        with torch.inference_mode(), without_denormals(self.device):
            return self.model.generate(**kwargs)

    @property
    def info(self) -> dict:
        return {"kind": self.kind, "model": self.meta.get("model"), "path": str(self.path) if self.path else None}


# --- causal LM (Arg-CTRL) --------------------------------------------------------------------------


def parse_code(code) -> tuple[str, str, str]:
    """``(topic, pro|con, aspect)`` of a dict, a 3-sequence or a ``"topic|stance|aspect"`` string."""
    if isinstance(code, dict):
        topic, stance, aspect = code.get("topic"), code.get("stance"), code.get("aspect")
    elif isinstance(code, str) and code.count("|") == 2:
        topic, stance, aspect = (p.strip() for p in code.split("|"))
    elif isinstance(code, (list, tuple)) and len(code) == 3:
        topic, stance, aspect = code
    else:
        raise GenerationError(f"codes: {code!r} is not {{topic, stance, aspect}} or 'topic|stance|aspect'")
    for name, value in (("topic", topic), ("aspect", aspect)):
        if not isinstance(value, str) or not value.strip():
            raise GenerationError(f"codes.{name}: a non-empty string is required")
    norm = corpora.normalise_stance(stance)
    if norm is None:
        raise GenerationError(f"codes.stance: {stance!r} is not pro or con")
    return " ".join(topic.split()), norm, " ".join(aspect.split())


class CausalGenerator(_Base):
    kind = "generator"

    @property
    def code_suffix(self) -> str:
        return self.meta.get("code_suffix", " .")

    def control_codes(self) -> list[str]:
        return list((self.meta.get("control_codes") or {}).keys())

    def prompt(self, topic: str, stance: str, aspect: str) -> str:
        return corpora.control_code(topic, stance, aspect) + self.code_suffix

    def complete(self, prompts: Sequence[str], decoding: dict | None = None) -> list[str]:
        """Raw continuations (text after the prompt) of each prompt; prompts of equal length are batched."""
        import torch

        cfg = dict(CAUSAL_DECODING, **(decoding or {}))
        tok = self.tokenizer
        eos = self.meta.get("eos_token_id", tok.eos_token_id if tok.eos_token_id is not None else tok.sep_token_id)
        pad = self.meta.get("pad_token_id", tok.pad_token_id if tok.pad_token_id is not None else eos)
        encoded = [tok.encode(p, add_special_tokens=False) for p in prompts]
        groups: dict[int, list[int]] = {}
        for i, ids in enumerate(encoded):
            if not ids:
                raise GenerationError(f"prompt {prompts[i]!r} has no tokens")
            groups.setdefault(len(ids), []).append(i)
        out: list[str] = [""] * len(prompts)
        temperature = float(cfg.get("temperature") or 0.0)
        torch.manual_seed(int(cfg.get("seed") or 0))
        for length, members in groups.items():
            ids = torch.tensor([encoded[i] for i in members], dtype=torch.long, device=self.device)
            kwargs: dict[str, Any] = {
                "max_new_tokens": int(cfg["max_new_tokens"]),
                "pad_token_id": pad,
                "eos_token_id": eos,
                "attention_mask": torch.ones_like(ids),
                "logits_processor": [penalty_processor(float(cfg["theta"]), length)],
            }
            if temperature > 0:
                kwargs.update(do_sample=True, temperature=temperature, top_k=int(cfg.get("top_k") or 0) or None)
            else:
                kwargs.update(do_sample=False)
            generated = self._generate(input_ids=ids, **kwargs)
            for row, i in enumerate(members):
                out[i] = _clean_decode(tok, generated[row, length:].tolist())
        return out

    def generate_arguments(self, codes: Iterable, decoding: dict | None = None) -> list[dict]:
        """One row per (code, sample): ``{"topic", "stance", "aspect", "control_code", "prompt", "text",
        "sentences", "raw", "sample"}``."""
        cfg = dict(CAUSAL_DECODING, **(decoding or {}))
        n = max(1, int(cfg.get("n") or 1))
        if n > 1 and not float(cfg.get("temperature") or 0):
            cfg["temperature"] = 0.7  # several samples of one code need sampling to differ
        parsed = [parse_code(c) for c in codes]
        prompts, meta = [], []
        for topic, stance, aspect in parsed:
            for k in range(n):
                prompts.append(self.prompt(topic, stance, aspect))
                meta.append((topic, stance, aspect, k))
        rows = []
        for k in range(n):
            idx = [i for i, m in enumerate(meta) if m[3] == k]
            texts = self.complete([prompts[i] for i in idx], dict(cfg, seed=int(cfg.get("seed") or 0) + k))
            for i, raw in zip(idx, texts):
                topic, stance, aspect, sample = meta[i]
                sentences = split_sentences(raw)
                rows.append(
                    {
                        "topic": topic,
                        "stance": stance,
                        "aspect": aspect,
                        "control_code": corpora.control_code(topic, stance, aspect),
                        "prompt": prompts[i],
                        "text": sentences[0] if sentences else raw,
                        "sentences": sentences,
                        "raw": raw,
                        "sample": sample,
                    }
                )
        order = {m: i for i, m in enumerate(meta)}
        rows.sort(key=lambda r: order[(r["topic"], r["stance"], r["aspect"], r["sample"])])
        return rows

    def counter_arguments(
        self,
        argument: str,
        topic: str,
        stance: str,
        *,
        project=None,
        max_aspects: int = 3,
        decoding: dict | None = None,
    ) -> dict:
        """Arg-CTRL §7.2: aspects of ``argument`` -> one argument of the opposite stance per aspect."""
        own = corpora.normalise_stance(stance)
        if own is None:
            raise GenerationError(f"stance: {stance!r} is not pro or con")
        if not isinstance(argument, str) or not argument.strip():
            raise GenerationError("argument: a non-empty string is required")
        aspects, source = detect_aspects(argument, topic, project=project, max_aspects=max_aspects)
        flipped = "con" if own == "pro" else "pro"
        rows = self.generate_arguments([(topic, flipped, a) for a in aspects], decoding) if aspects else []
        return {
            "argument": argument,
            "topic": topic,
            "stance": own,
            "counter_stance": flipped,
            "aspects": aspects,
            "aspect_source": source,
            "arguments": rows,
        }

    def dev_metrics(self, rows_dev: list[dict]) -> dict:
        import math

        pairs = code_argument_pairs(rows_dev)
        if not pairs:
            return {}
        with without_denormals(self.device):
            ppl = perplexity(
                self.model,
                self.tokenizer,
                [p["text"] for p in pairs],
                contexts=[p["control_code"] + self.code_suffix for p in pairs],
                device=self.device,
            )
        return {"perplexity": ppl, "loss": math.log(ppl), "n_dev": len(pairs)}

    def training_arguments(self) -> list[dict]:
        return self._stored(TRAIN_ARGUMENTS)

    def dev_arguments(self) -> list[dict]:
        """The held-out dev arguments of training (``{"topic", "stance", "aspect", "control_code", "text"}``)."""
        return self._stored(DEV_ARGUMENTS)

    def _stored(self, name: str) -> list[dict]:
        path = self.path / name if self.path else None
        if not path or not path.exists():
            return []
        return [row for _, row in read_jsonl(path)]


def detect_aspects(
    argument: str,
    topic: str,
    *,
    project=None,
    max_aspects: int = 3,
    use_tagger: bool = True,
    ranker=None,
    max_n: int = 2,
) -> tuple[list[str], str]:
    """Aspects of one argument: the active ``tagger`` (``"tagger #<id>"``), else the baseline candidates of
    :mod:`annotation.task_types.aspect` ranked by ``ranker`` (default: its baseline ranker over the topic's corpus
    sentences; candidates of at most ``max_n`` words, as aspects mostly are; ``"baseline"``). At most ``max_aspects``, not overlapping, lower-cased, distinct, in text order."""
    aspects: list[str] = []
    source = "baseline"
    version = registry.active_version("tagger", project) if use_tagger else None
    if version is not None:
        try:
            tagger = registry.load_model(version)
            spans = tagger.predict([argument])[0]["spans"]
            aspects = [s["text"] for s in sorted(spans, key=lambda s: s["begin"])]
            source = f"tagger #{version.pk}"
        except Exception:  # noqa: BLE001 - a broken tagger artifact falls back to the baseline
            import logging

            logging.getLogger(__name__).exception("tagger #%s failed; using the baseline candidates", version.pk)
            aspects = []
    if not aspects:
        source = "baseline"
        cands = [c for c in candidates(argument) if c.n <= max_n]
        ranked = rank(ranker or BaselineRanker(), argument, topic, cands) if cands else []
        chosen = []
        for cand, _score in ranked:
            if any(cand.begin < c.end and c.begin < cand.end for c in chosen):
                continue  # no overlapping aspects
            chosen.append(cand)
            if len(chosen) >= max_aspects:
                break
        aspects = [c.text for c in sorted(chosen, key=lambda c: c.begin)]
    out: list[str] = []
    for a in aspects:
        a = " ".join(a.lower().split())
        if a and a not in out:
            out.append(a)
    return out[:max_aspects], source


# --- seq2seq (ArgU, debates) -----------------------------------------------------------------------


def argu_encoder_input(topic: str, variables: Sequence[str]) -> str:
    """ArgU §4.1.1 input ``"<topic> <VAR_0> v0 <VAR_1> v1 ..."`` (the order given is the tag order)."""
    if not 1 <= len(variables) <= len(corpora.VAR_TAGS):
        raise GenerationError(f"variables: give 1 to {len(corpora.VAR_TAGS)} variables, got {len(variables)}")
    parts = [" ".join(topic.split())]
    for tag, value in zip(corpora.VAR_TAGS, variables):
        if not isinstance(value, str) or not value.strip():
            raise GenerationError("variables: every variable must be a non-empty string")
        parts.append(f"{tag} {' '.join(value.split())}")
    return " ".join(parts)


def argu_decoder_prefix(stance: str, scheme: str | None, mode: str) -> str:
    norm = corpora.normalise_stance(stance)
    if norm is None:
        raise GenerationError(f"stance: {stance!r} is not pro or con")
    if mode not in ("mono", "dual"):
        raise GenerationError(f"mode: {mode!r} is not mono or dual")
    codes = [corpora.STANCE_TOKENS[norm]]
    if scheme:
        code = scheme if scheme.startswith("<") else corpora.scheme_code(scheme)
        codes.append(code)
    codes.append(corpora.ARGUMENT_BOS if mode == "mono" else corpora.PATTERN_BOS)
    return " ".join(codes)


class Seq2SeqGenerator(_Base):
    kind = "seq2seq"

    @property
    def control_tokens(self) -> list[str]:
        return list(self.meta.get("special_tokens") or [])

    def _start_id(self) -> int:
        start = self.model.config.decoder_start_token_id
        if start is None:
            start = self.model.generation_config.decoder_start_token_id
        return int(start)

    def generate(
        self, sources: Sequence[str], prefixes: Sequence[str] | None = None, decoding: dict | None = None
    ) -> list[str]:
        """Decoded outputs (control tokens kept, the prefix included) for each source; sources sharing a prefix
        length are batched."""
        import torch

        cfg = dict(SEQ2SEQ_DECODING, **(decoding or {}))
        tok = self.tokenizer
        prefixes = list(prefixes) if prefixes is not None else [""] * len(sources)
        start = self._start_id()
        pre_ids = [[start] + (tok.encode(p, add_special_tokens=False) if p else []) for p in prefixes]
        groups: dict[int, list[int]] = {}
        for i, ids in enumerate(pre_ids):
            groups.setdefault(len(ids), []).append(i)
        out = [""] * len(sources)
        torch.manual_seed(int(cfg.get("seed") or 0))
        max_src = int(self.meta.get("max_source_length") or 256)
        for length, members in groups.items():
            enc = tok(
                [sources[i] for i in members], return_tensors="pt", padding=True, truncation=True, max_length=max_src
            ).to(self.device)
            dec = torch.tensor([pre_ids[i] for i in members], dtype=torch.long, device=self.device)
            kwargs: dict[str, Any] = {
                "input_ids": enc["input_ids"],
                "attention_mask": enc["attention_mask"],
                "decoder_input_ids": dec,
                "max_new_tokens": int(cfg["max_new_tokens"]),
                "num_beams": int(cfg["num_beams"]),
                "no_repeat_ngram_size": int(cfg["no_repeat_ngram_size"]) or None,
                "decoder_start_token_id": start,
                "pad_token_id": self.model.generation_config.pad_token_id,
                "eos_token_id": self.model.generation_config.eos_token_id,
            }
            if cfg.get("do_sample"):
                kwargs.update(
                    do_sample=True,
                    temperature=float(cfg.get("temperature") or 1.0),
                    top_k=int(cfg.get("top_k") or 0) or None,
                    num_beams=1,
                )
            if float(cfg.get("theta") or 1.0) != 1.0:
                kwargs["logits_processor"] = [penalty_processor(float(cfg["theta"]), length)]
            generated = self._generate(**kwargs)
            for row, i in enumerate(members):
                out[i] = _clean_decode(tok, generated[row, 1:].tolist(), keep=self.control_tokens)
        return out

    # ArgU
    def argu(self, items: Sequence[dict], *, mode: str | None = None, decoding: dict | None = None) -> list[dict]:
        """``items``: ``{"topic", "variables": [str], "stance", "scheme"?, "reference"?}``; one row each with
        ``text`` (the argument), ``template`` (Dual) and ``output`` (the whole decoded sequence)."""
        mode = mode or self.meta.get("argu") or "mono"
        sources, prefixes = [], []
        for item in items:
            topic = item.get("topic")
            if not isinstance(topic, str) or not topic.strip():
                raise GenerationError("topic: a non-empty string is required")
            variables = item.get("variables") or []
            if isinstance(variables, str):
                variables = [v.strip() for v in variables.split(";") if v.strip()]
            variables = [v["text"] if isinstance(v, dict) else v for v in variables]
            sources.append(argu_encoder_input(topic, variables))
            prefixes.append(argu_decoder_prefix(item.get("stance", ""), item.get("scheme"), mode))
        outputs = self.generate(sources, prefixes, decoding)
        rows = []
        for item, source, output in zip(items, sources, outputs):
            template, text = None, output
            if corpora.ARGUMENT_BOS in output:
                head, _, text = output.partition(corpora.ARGUMENT_BOS)
                if corpora.PATTERN_BOS in head:
                    template = head.split(corpora.PATTERN_BOS, 1)[1].strip()
            elif mode == "dual" and corpora.PATTERN_BOS in output:
                template, text = output.split(corpora.PATTERN_BOS, 1)[1].strip(), ""
            text = _strip_tokens(text, self.control_tokens)
            variables = [v["text"] if isinstance(v, dict) else v for v in (item.get("variables") or [])]
            if isinstance(item.get("variables"), str):
                variables = [v.strip() for v in item["variables"].split(";") if v.strip()]
            rows.append(
                {
                    "topic": item["topic"],
                    "stance": corpora.normalise_stance(item.get("stance")),
                    "scheme": item.get("scheme"),
                    "variables": variables,
                    "mode": mode,
                    "encoder_input": source,
                    "text": text,
                    "template": template,
                    "output": output,
                    **({"reference": item["reference"]} if item.get("reference") else {}),
                }
            )
        return rows

    # debates
    def respond(self, prompts: Sequence[str], decoding: dict | None = None) -> list[str]:
        """One response per prompt; a last sentence cut off by ``max_new_tokens`` is dropped when a complete one
        precedes it."""
        outputs = self.generate(list(prompts), None, decoding)
        return [" ".join(split_sentences(_strip_tokens(o, self.control_tokens))) for o in outputs]

    def debate(self, thesis: str, *, turns: int = 10, context_turns: int = 1, decoding: dict | None = None) -> dict:
        """A multi-turn debate: each response is fed back as the next prompt (debate trees §2.3)."""
        if not isinstance(thesis, str) or not thesis.strip():
            raise GenerationError("thesis: a non-empty string is required")
        if not 1 <= int(turns) <= 50:
            raise GenerationError("turns: between 1 and 50")
        history = [" ".join(thesis.split())]
        out_turns = []
        for n in range(int(turns)):
            prompt = corpora.TURN_SEP.join(history[-max(1, int(context_turns)) :])
            text = self.respond([prompt], decoding)[0] or "…"
            out_turns.append({"speaker": SPEAKERS[n % 2], "text": text, "prompt": prompt})
            history.append(text)
        return {"topic": history[0], "turns": out_turns}

    def dev_metrics(self, rows_dev: list[dict]) -> dict:
        argu = self.meta.get("argu") or "mono"
        pairs = [seq2seq_pair(r, argu=argu) for r in rows_dev]
        if not pairs:
            return {}
        params = dict(SEQ2SEQ_DEFAULTS, **(self.meta.get("hyperparameters") or {}))
        with without_denormals(self.device):
            m = seq2seq_loss(
                self.model, self.tokenizer, encode_pairs(self.tokenizer, pairs, params), device=self.device
            )
        return {"loss": m["loss"], "perplexity": m["perplexity"], "n_dev": len(pairs)}


def _strip_tokens(text: str, tokens: Sequence[str]) -> str:
    for tok in tokens:
        text = text.replace(tok, " ")
    return " ".join(text.split())


def load_generator(path, *, device: str | None = None):
    """The generator saved at ``path`` (a ``generator`` or ``seq2seq`` artifact folder)."""
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForSeq2SeqLM,
        AutoTokenizer,
        EncoderDecoderModel,
    )

    path = Path(path)
    meta = read_meta(path)
    if not meta:
        raise GenerationError(f"{path}: no {META}; not a generator artifact")
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    if meta.get("architecture") == "causal":
        model = AutoModelForCausalLM.from_pretrained(str(path))
        return CausalGenerator(model, tokenizer, meta, path, device)
    config = json.loads((path / "config.json").read_text())
    if config.get("model_type") == "encoder-decoder":
        model = EncoderDecoderModel.from_pretrained(str(path))
    else:
        model = AutoModelForSeq2SeqLM.from_pretrained(str(path))
    return Seq2SeqGenerator(model, tokenizer, meta, path, device)


# --- generation runs -------------------------------------------------------------------------------


def runs_root() -> Path:
    from django.conf import settings

    return Path(settings.ARTIFACT_ROOT) / "generation" / "runs"


_RUN_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")


def run_dir(run_id: str) -> Path:
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
        raise GenerationError(f"run: {run_id!r} is not a run id")
    return runs_root() / run_id


def _write_json_atomic(path: Path, data) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.part")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(tmp, path)


RUN_STATUSES = ("queued", "running", "done", "failed")


def create_run(
    *,
    mode: str,
    outputs: list[dict],
    version=None,
    config: dict | None = None,
    references: list[dict] | None = None,
    name: str = "",
    status: str = "done",
    created_by: int | None = None,
    extra: dict | None = None,
) -> dict:
    """Store a run (module docstring); returns its ``run.json`` dict. ``status`` ``"queued"``: a run a worker
    fills (:mod:`ml.generation.runs`); ``created_by``: the user id who may read it (None: superusers only)."""
    if mode not in MODES:
        raise GenerationError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    if status not in RUN_STATUSES:
        raise GenerationError(f"status: {status!r} is not one of {', '.join(RUN_STATUSES)}")
    root = runs_root()
    root.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    run_id = f"{now:%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    meta = {
        "id": run_id,
        "mode": mode,
        "name": name or "",
        "created_at": now.isoformat(),
        "model_version": getattr(version, "pk", None),
        "kind": getattr(version, "kind", None),
        "system": system_name(version),
        "config": config or {},
        "n_outputs": len(outputs),
        "references": len(references or []),
        "ratings": {},
        "status": status,
        "created_by": created_by,
        **(extra or {}),
    }
    tmp = root / f".tmp-{run_id}"
    tmp.mkdir()
    try:
        write_jsonl(({"id": i, **row} for i, row in enumerate(outputs)), tmp / "outputs.jsonl")
        if references:
            write_jsonl(references, tmp / "references.jsonl")
        _write_json_atomic(tmp / "run.json", meta)
        os.rename(tmp, root / run_id)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return meta


def system_name(version) -> str:
    if version is None:
        return "generator"
    return f"{version.kind}-v{version.pk}"


def get_run(run_id: str) -> dict:
    """``run.json`` + ``outputs`` + ``metrics`` (None until evaluated) + ``references`` of a run."""
    folder = run_dir(run_id)
    if not (folder / "run.json").exists():
        raise GenerationError(f"run: no run {run_id!r}")
    meta = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    meta.setdefault("status", "done")  # runs stored before runs went to workers
    meta.setdefault("created_by", None)
    meta["outputs"] = _read_jsonl(folder / "outputs.jsonl")  # read after run.json: never fewer than it counts
    meta["references_rows"] = _read_jsonl(folder / "references.jsonl")
    metrics = folder / "metrics.json"
    meta["metrics"] = json.loads(metrics.read_text(encoding="utf-8")) if metrics.exists() else None
    return meta


def update_run(run_id: str, **fields) -> dict:
    folder = run_dir(run_id)
    meta = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    meta.update(fields)
    _write_json_atomic(folder / "run.json", meta)
    return meta


def _write_jsonl_atomic(path: Path, rows: list[dict]) -> None:
    """Replace ``path`` atomically (temp file + rename): a reader sees the old rows or all the new ones, never half a
    line."""
    part = path.with_name(f".{path.name}.{uuid.uuid4().hex}.part")
    try:
        write_jsonl(rows, part)
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)


def write_outputs(run_id: str, outputs: list[dict]) -> None:
    """Replace the run's ``outputs.jsonl`` atomically (:func:`_write_jsonl_atomic`)."""
    _write_jsonl_atomic(run_dir(run_id) / "outputs.jsonl", outputs)


def write_references(run_id: str, references: list[dict]) -> None:
    _write_jsonl_atomic(run_dir(run_id) / "references.jsonl", references)


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [row for _, row in read_jsonl(path)]


def list_runs(limit: int = 50, keep=None) -> list[dict]:
    """Newest first: the ``run.json`` of each run, with ``evaluated``; ``keep(meta)``: only the runs it accepts
    (the ones a user may read, :func:`ml.generation.runs.visible`)."""
    root = runs_root()
    if not root.exists():
        return []
    out = []
    for folder in sorted((p for p in root.iterdir() if _RUN_ID.match(p.name)), reverse=True):
        if len(out) >= limit:
            break
        try:
            meta = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        meta["evaluated"] = (folder / "metrics.json").exists()
        meta.setdefault("status", "done")
        meta.setdefault("created_by", None)
        if keep is None or keep(meta):
            out.append(meta)
    return out


def resolve_version(version=None, *, kind: str | None = None, project=None):
    """A ready ModelVersion: the given one (object or id) or the active one of ``kind``."""
    if version is not None and not isinstance(version, ModelVersion):
        try:
            pk = int(version)
        except (TypeError, ValueError):
            raise GenerationError(f"model_version: {version!r} is not a model version id") from None
        found = ModelVersion.objects.filter(pk=pk).first()
        if found is None:
            raise GenerationError(f"model_version: no model version {version}")
        version = found
    if version is None:
        if kind not in ("generator", "seq2seq"):
            raise GenerationError("kind: generator or seq2seq")
        version = registry.active_version(kind, project)
        if version is None:
            raise GenerationError(
                f"model_version: no active {kind} model; train one (manage.py train {kind}) or name a version"
            )
    if version.kind not in ("generator", "seq2seq"):
        raise GenerationError(f"model_version: version {version.pk} is a {version.kind}, not a generator")
    if version.status not in ("ready", "archived") or not version.artifact_path:
        raise GenerationError(f"model_version: version {version.pk} is {version.status}")
    return version


MODE_KINDS = {
    "arguments": "generator",
    "counter": "generator",
    "argu": "seq2seq",
    "responses": "seq2seq",
    "debate": "seq2seq",
}

# name -> (type, minimum, maximum); bools are no ints here
DECODING_FIELDS = {
    "max_new_tokens": (int, 1, 512),
    "theta": (float, 1.0, 10.0),
    "temperature": (float, 0.0, 10.0),
    "top_k": (int, 0, 100_000),
    "n": (int, 1, 20),
    "num_beams": (int, 1, 10),
    "no_repeat_ngram_size": (int, 0, 10),
    "seed": (int, 0, 2**31 - 1),
    "do_sample": (bool, None, None),
}
OPTION_FIELDS = {
    "turns": (int, 1, 50),
    "context_turns": (int, 1, 10),
    "max_aspects": (int, 1, 10),
    "argu": (str, None, None),
}


def _clean_fields(what: str, values, fields: dict) -> dict:
    """``values`` checked against ``fields`` (``GenerationError("<what>.<name>: reason")``); a copy."""
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise GenerationError(f"{what}: an object is required")
    out = {}
    for name, value in values.items():
        if name not in fields:
            raise GenerationError(f"{what}.{name}: unknown (known: {', '.join(sorted(fields))})")
        cast, low, high = fields[name]
        if cast is bool:
            if not isinstance(value, bool):
                raise GenerationError(f"{what}.{name}: true or false is required")
        elif cast is str:
            if not isinstance(value, str):
                raise GenerationError(f"{what}.{name}: a string is required")
        else:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            if ok and cast is int and float(value) != int(value):
                ok = False
            if not ok:
                raise GenerationError(f"{what}.{name}: {value!r} is not a{'n integer' if cast is int else ' number'}")
            value = cast(value)
            if (low is not None and value < low) or (high is not None and value > high):
                raise GenerationError(f"{what}.{name}: {value} is not between {low} and {high}")
        out[name] = value
    if "argu" in out and out["argu"] not in ("mono", "dual"):
        raise GenerationError(f"{what}.argu: {out['argu']!r} is not mono or dual")
    return out


def clean_decoding(decoding) -> dict:
    return _clean_fields("decoding", decoding, DECODING_FIELDS)


def clean_options(options) -> dict:
    return _clean_fields("options", options, OPTION_FIELDS)


def generate_outputs(
    generator, mode: str, inputs: list[dict], decoding: dict | None = None, *, project=None, options: dict | None = None
) -> list[dict]:
    """The output rows of ``mode`` for ``inputs`` (see the table in the module docstring)."""
    options = clean_options(options)
    decoding = clean_decoding(decoding)
    if mode not in MODES:
        raise GenerationError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    if MODE_KINDS[mode] != generator.kind:
        raise GenerationError(f"mode: {mode} needs a {MODE_KINDS[mode]} model, this is a {generator.kind}")
    check_inputs(mode, inputs)
    if mode == "arguments":
        return generator.generate_arguments(inputs, decoding)
    if mode == "counter":
        rows = []
        for i, item in enumerate(inputs):
            if not isinstance(item, dict):
                raise GenerationError(f"inputs[{i}]: an object {{argument, topic, stance}} is required")
            result = generator.counter_arguments(
                item.get("argument", ""),
                item.get("topic", ""),
                item.get("stance", ""),
                project=project,
                max_aspects=int(options.get("max_aspects", 3)),
                decoding=decoding,
            )
            for row in result["arguments"]:
                rows.append(
                    {
                        **row,
                        "input": i,
                        "argument": result["argument"],
                        "input_stance": result["stance"],
                        "aspects": result["aspects"],
                        "aspect_source": result["aspect_source"],
                    }
                )
            if not result["arguments"]:
                rows.append(
                    {
                        "input": i,
                        "argument": result["argument"],
                        "topic": result["topic"],
                        "stance": result["counter_stance"],
                        "aspects": [],
                        "aspect_source": result["aspect_source"],
                        "text": "",
                        "note": "no aspect found",
                    }
                )
        return rows
    if mode == "argu":
        return generator.argu(inputs, mode=options.get("argu"), decoding=decoding)
    if mode == "responses":
        prompts = []
        for i, item in enumerate(inputs):
            prompt = item.get("prompt") if isinstance(item, dict) else item
            if not isinstance(prompt, str) or not prompt.strip():
                raise GenerationError(f"inputs[{i}].prompt: a non-empty string is required")
            prompts.append(prompt)
        texts = generator.respond(prompts, decoding)
        return [
            {
                "prompt": p,
                "text": t,
                **({"reference": item["reference"]} if isinstance(item, dict) and item.get("reference") else {}),
                **({"topic": item["topic"]} if isinstance(item, dict) and item.get("topic") else {}),
            }
            for p, t, item in zip(prompts, texts, inputs)
        ]
    rows = []
    for item in inputs:
        thesis = item.get("thesis") if isinstance(item, dict) else item
        turns = int((item.get("turns") if isinstance(item, dict) else None) or options.get("turns", 10))
        debate = generator.debate(
            thesis, turns=turns, context_turns=int(options.get("context_turns", 1)), decoding=decoding
        )
        rows.append(
            {"topic": debate["topic"], "turns": debate["turns"], "text": " ".join(t["text"] for t in debate["turns"])}
        )
    return rows


def check_inputs(mode: str, inputs) -> None:
    """The shape of ``inputs`` for ``mode`` (the table in the module docstring), before any model runs:
    ``GenerationError("inputs[i].field: reason")``."""
    if mode not in MODES:
        raise GenerationError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise GenerationError("inputs: give at least one input")

    def text(i, item, name, required=True):
        value = item.get(name)
        if value is None and not required:
            return
        if not isinstance(value, str) or not value.strip():
            raise GenerationError(f"inputs[{i}].{name}: a non-empty string is required")

    for i, item in enumerate(inputs):
        if mode == "arguments":
            try:
                parse_code(item)
            except GenerationError as exc:
                raise GenerationError(f"inputs[{i}]{str(exc)[len('codes') :]}") from None
            continue
        if mode in ("responses", "debate") and isinstance(item, str):
            item = {"prompt" if mode == "responses" else "thesis": item}
        if not isinstance(item, dict):
            raise GenerationError(f"inputs[{i}]: an object is required")
        if mode == "counter":
            text(i, item, "argument")
            text(i, item, "topic")
            if corpora.normalise_stance(item.get("stance")) is None:
                raise GenerationError(f"inputs[{i}].stance: {item.get('stance')!r} is not pro or con")
        elif mode == "argu":
            text(i, item, "topic")
            variables = item.get("variables")
            if isinstance(variables, str):
                variables = [v.strip() for v in variables.split(";") if v.strip()]
            if not isinstance(variables, list):
                raise GenerationError(
                    f"inputs[{i}].variables: a list of 1 to {len(corpora.VAR_TAGS)} strings is required"
                )
            variables = [v.get("text") if isinstance(v, dict) else v for v in variables]
            try:
                argu_encoder_input(item["topic"], variables)
                argu_decoder_prefix(item.get("stance", ""), item.get("scheme") or None, "mono")
            except GenerationError as exc:
                raise GenerationError(f"inputs[{i}].{exc}") from None
            if item.get("scheme") is not None and not isinstance(item["scheme"], str):
                raise GenerationError(f"inputs[{i}].scheme: a string is required")
            text(i, item, "reference", required=False)
        elif mode == "responses":
            text(i, item, "prompt")
            text(i, item, "reference", required=False)
        else:
            text(i, item, "thesis")
            turns = item.get("turns")
            if turns is not None and (not isinstance(turns, int) or isinstance(turns, bool) or not 1 <= turns <= 50):
                raise GenerationError(f"inputs[{i}].turns: an integer between 1 and 50 is required")


def run_generation(
    mode: str,
    inputs: list[dict],
    *,
    version=None,
    kind: str | None = None,
    project=None,
    decoding: dict | None = None,
    options: dict | None = None,
    references: list[dict] | None = None,
    name: str = "",
    store: bool = True,
    created_by: int | None = None,
) -> dict:
    """Generate with a registry version (given, or the active one of the mode's kind) and store the run.
    Argument runs without ``references`` store the model's held-out dev arguments as their references (METEOR /
    ROUGE-L per control code, and the reference side of pairwise human evaluation).
    Returns the run's dict (``outputs`` included; ``id`` None when ``store`` is False). ``created_by``: the user id
    who may read the run on the pages (None: superusers only)."""
    if mode not in MODES:
        raise GenerationError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    decoding, options = clean_decoding(decoding), clean_options(options)
    check_inputs(mode, inputs)
    version = resolve_version(version, kind=kind or MODE_KINDS.get(mode), project=project)
    if version.kind != MODE_KINDS[mode]:
        raise GenerationError(
            f"model_version: mode {mode} needs a {MODE_KINDS[mode]} model; version {version.pk} is a {version.kind}"
        )
    try:
        generator = registry.load_model(version)
    except (OSError, ValueError) as exc:
        raise GenerationError(f"model_version: version {version.pk} could not be loaded: {exc}") from None
    outputs = generate_outputs(generator, mode, list(inputs), decoding, project=project, options=options)
    references_source = "given" if references else None
    if not references and mode in ("arguments", "counter"):
        references = generator.dev_arguments() or None  # held out from training: fair references
        references_source = "model dev split" if references else None
    config = {
        "decoding": dict(decoding or {}),
        "options": dict(options or {}),
        "inputs": list(inputs),
        "model": generator.info,
        "references_source": references_source,
    }
    if not store:
        return {"id": None, "mode": mode, "model_version": version.pk, "config": config, "outputs": outputs}
    meta = create_run(
        mode=mode,
        outputs=outputs,
        version=version,
        config=config,
        references=references,
        name=name,
        created_by=created_by,
    )
    meta["outputs"] = [{"id": i, **o} for i, o in enumerate(outputs)]
    return meta


# --- text input (the expert page, the CLI) ---------------------------------------------------------

LINE_FORMATS = {
    "arguments": "topic | pro|con | aspect",
    "counter": "topic | pro|con | argument text",
    "argu": "topic | pro|con | scheme (or empty) | variable; variable; ... | reference (optional)",
    "responses": "prompt | reference (optional)",
    "debate": "thesis",
}


def parse_lines(mode: str, text: str) -> list[dict]:
    """Inputs of ``mode`` from one line each (``LINE_FORMATS``); ``GenerationError("inputs line N: reason")``."""
    if mode not in MODES:
        raise GenerationError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    out = []
    for number, line in enumerate((text or "").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|")]
        try:
            if mode == "arguments":
                if len(parts) != 3:
                    raise GenerationError(f"expected {LINE_FORMATS[mode]}")
                topic, stance, aspect = parse_code(parts)
                out.append({"topic": topic, "stance": stance, "aspect": aspect})
            elif mode == "counter":
                if len(parts) < 3:
                    raise GenerationError(f"expected {LINE_FORMATS[mode]}")
                stance = corpora.normalise_stance(parts[1])
                if stance is None:
                    raise GenerationError(f"stance {parts[1]!r} is not pro or con")
                out.append({"topic": parts[0], "stance": stance, "argument": line.split("|", 2)[2].strip()})
            elif mode == "argu":
                if len(parts) not in (4, 5):
                    raise GenerationError(f"expected {LINE_FORMATS[mode]}")
                variables = [v.strip() for v in parts[3].split(";") if v.strip()]
                argu_encoder_input(parts[0], variables)
                argu_decoder_prefix(parts[1], parts[2] or None, "mono")
                item = {"topic": parts[0], "stance": parts[1], "scheme": parts[2] or None, "variables": variables}
                if len(parts) == 5 and parts[4]:
                    item["reference"] = parts[4]
                out.append(item)
            elif mode == "responses":
                item = {"prompt": parts[0]}
                if len(parts) > 1 and parts[1]:
                    item["reference"] = line.split("|", 1)[1].strip()
                out.append(item)
            else:
                out.append({"thesis": line.strip()})
        except GenerationError as exc:
            raise GenerationError(f"inputs line {number}: {exc}") from None
    if not out:
        raise GenerationError(f"inputs: give at least one line ({LINE_FORMATS[mode]})")
    return out
