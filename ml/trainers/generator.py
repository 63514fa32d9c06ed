"""Kinds ``generator`` (Arg-CTRL causal LM with control codes) and ``seq2seq`` (ArgU Mono / Dual, debate responses).

The training code lives in :mod:`ml.generation.train` (rows, models, metrics: see its docstring); loading returns a
:class:`ml.generation.generate.CausalGenerator` / :class:`~ml.generation.generate.Seq2SeqGenerator`. Primary metric
of both: dev ``perplexity`` (lower is better); ``loss`` (its log) is reported beside it.

::

    manage.py train generator --data aspect_docs.jsonl --hp min_args=15 --hp block_size=256 [--base-model PATH]
    manage.py train seq2seq --data argu_inputs.jsonl --hp argu=dual      # or debate_paths.jsonl
"""
from __future__ import annotations

from pathlib import Path

from ml.registry import TrainerSpec, register_trainer


def _default_base() -> str:
    from ml.encoders import default_encoder_path

    return default_encoder_path()


def _train_causal(request):
    from ml.generation.train import train_causal

    return train_causal(request)


def _train_seq2seq(request):
    from ml.generation.train import train_seq2seq

    return train_seq2seq(request)


def _load(path: Path):
    from ml.generation.generate import load_generator

    return load_generator(path)


def _causal_rows_from_file(path):
    from ml.generation.train import causal_rows_from_file

    return causal_rows_from_file(path)


def _seq2seq_rows_from_file(path):
    from ml.generation.train import seq2seq_rows_from_file

    return seq2seq_rows_from_file(path)


def _causal_rows_from_project(project):
    from ml.generation.train import causal_rows_from_project

    return causal_rows_from_project(project)


def _seq2seq_rows_from_project(project):
    from ml.generation.train import seq2seq_rows_from_project

    return seq2seq_rows_from_project(project)


def _evaluate(generator, rows_dev):
    return generator.dev_metrics(rows_dev)


register_trainer(TrainerSpec(
    kind="generator", train=_train_causal, load=_load, primary_metric="perplexity", higher_is_better=False,
    description="Arg-CTRL (§5): causal LM conditioned on '<topic> <PRO|CON> <aspect>' control codes; dev perplexity",
    rows_from_file=_causal_rows_from_file, rows_from_project=_causal_rows_from_project, evaluate=_evaluate,
    default_base_model=_default_base,
    data_formats="aspect documents JSONL (gencorpus aspect-docs) or aspect rows {topic, stance, sentence, aspects}",
))

register_trainer(TrainerSpec(
    kind="seq2seq", train=_train_seq2seq, load=_load, primary_metric="perplexity", higher_is_better=False,
    description="ArgU Mono/Dual (§4) and debate responses: encoder-decoder with control tokens; dev perplexity",
    rows_from_file=_seq2seq_rows_from_file, rows_from_project=_seq2seq_rows_from_project, evaluate=_evaluate,
    default_base_model=_default_base,
    data_formats="ArgU inputs (gencorpus argu-inputs; --hp argu=mono|dual), debate paths {prompt, response}, "
                 "or {source, target} JSONL",
))
