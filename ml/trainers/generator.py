"""Kinds ``generator`` (Arg-CTRL causal LM with control codes) and ``seq2seq`` (ArgU Mono / Dual, debate responses).

The training code lives in :mod:`ml.generation.train` (rows, models, metrics: see its docstring); loading returns a
:class:`ml.generation.generate.CausalGenerator` / :class:`~ml.generation.generate.Seq2SeqGenerator`. Primary metric
of both: dev ``perplexity`` (lower is better); ``loss`` (its log) is reported beside it.

::

    manage.py train generator --data aspect_docs.jsonl --hp min_args=15 --hp block_size=256 [--base-model PATH]
    manage.py train seq2seq --data argu_inputs.jsonl --hp argu=dual      # or debate_paths.jsonl
"""

from __future__ import annotations

from ml.encoders import default_encoder_path
from ml.generation.generate import load_generator
from ml.generation.train import (
    causal_rows_from_file,
    causal_rows_from_project,
    seq2seq_rows_from_file,
    seq2seq_rows_from_project,
    train_causal,
    train_seq2seq,
)
from ml.registry import TrainerSpec, register_trainer


def _evaluate(generator, rows_dev):
    return generator.dev_metrics(rows_dev)


register_trainer(
    TrainerSpec(
        kind="generator",
        train=train_causal,
        load=load_generator,
        primary_metric="perplexity",
        higher_is_better=False,
        description="Arg-CTRL (§5): causal LM conditioned on '<topic> <PRO|CON> <aspect>' control codes; dev perplexity",
        rows_from_file=causal_rows_from_file,
        rows_from_project=causal_rows_from_project,
        evaluate=_evaluate,
        default_base_model=default_encoder_path,
        data_formats="aspect documents JSONL (gencorpus aspect-docs) or aspect rows {topic, stance, sentence, aspects}",
    )
)

register_trainer(
    TrainerSpec(
        kind="seq2seq",
        train=train_seq2seq,
        load=load_generator,
        primary_metric="perplexity",
        higher_is_better=False,
        description="ArgU Mono/Dual (§4) and debate responses: encoder-decoder with control tokens; dev perplexity",
        rows_from_file=seq2seq_rows_from_file,
        rows_from_project=seq2seq_rows_from_project,
        evaluate=_evaluate,
        default_base_model=default_encoder_path,
        data_formats="ArgU inputs (gencorpus argu-inputs; --hp argu=mono|dual), debate paths {prompt, response}, "
        "or {source, target} JSONL",
    )
)
