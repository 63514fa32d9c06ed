"""Evaluating a generation run and sending its outputs to human evaluation (issue 12, item 6).

:func:`evaluate_run` computes, with :mod:`ml.generation.metrics`, what fits the run's mode and stores it as the
run's ``metrics.json``:

- every mode: ``n_outputs``, ``empty`` (outputs without text), ``mean_words``, ``distinct_1`` / ``distinct_2``
  (distinct uni/bigrams over all tokens of the outputs), and the model version's dev metrics (``model_dev``);
- ``arguments`` / ``counter`` (Arg-CTRL §5.2, §6): ``aspect_presence`` (share of outputs whose text contains the
  control code's aspect, :func:`~ml.generation.metrics.aspect_presence_rate`); with the model's training arguments
  (``train_arguments.jsonl`` of its artifact): ``novelty`` (nearest training argument by embedding cosine, edit
  distance, relative overlap; means + the pairs); with reference rows (``{"topic", "stance", "aspect"|"aspects",
  "text"}``, stored with the run -- by default the model's held-out dev arguments -- or given): ``reference`` METEOR / ROUGE-L against the references of the same
  control code (Table 5), and ``retrieval`` the same scores of the retrieval baseline (every training argument of
  the output's control code, as in §5.2);
- ``argu`` (ArgU §4.2.1): ``fact_faithfulness`` (mean cosine of the input variables and the argument); with a
  ``reference`` per input: corpus ``bleu`` and mean ``rouge_l``;
- ``responses``: with a ``reference`` per prompt: ``bleu``, ``rouge_l``, ``meteor``;
- ``debate``: ``debates``, ``mean_turns``, ``mean_words_per_turn``.

``encode`` (a function ``list[str] -> array``) replaces the default sentence encoder (tests).

:func:`send_to_ratings` creates human-evaluation items through :mod:`annotation.task_types.ratings.items` in one step:
argument outputs become ``pairwise_preference`` pairs (generated vs. a reference argument of the same topic and
stance, preferring one with the same aspect stem; seeded choice), debates become ``likert_debate`` items. The
rows are written to ``pairs.jsonl`` / ``debates.jsonl`` in the run folder and imported all-or-nothing; the
project (created as a draft when missing) is recorded in the run's ``ratings``.
"""

from __future__ import annotations

import os
import random
from collections import defaultdict
from collections.abc import Callable, Sequence

from annotation.task_types.ratings import LIKERT, PAIRWISE
from annotation.task_types.ratings.items import (
    get_project,
    import_payloads,
    read_debates,
    read_pairs,
)
from argora.jsonl import read_jsonl, write_jsonl
from ml.models import ModelVersion

from . import metrics as M
from .corpora import aspect_stem, normalise_stance
from .generate import GenerationError, _write_json_atomic, get_run, run_dir, update_run
from .train import TRAIN_ARGUMENTS


def _texts(outputs: Sequence[dict]) -> list[str]:
    return [o.get("text") or "" for o in outputs]


def distinct_n(texts: Sequence[str], n: int) -> float:
    grams, total = set(), 0
    for text in texts:
        toks = M.tokenize(text)
        for i in range(len(toks) - n + 1):
            grams.add(tuple(toks[i : i + n]))
            total += 1
    return len(grams) / total if total else 0.0


def _common(outputs: list[dict]) -> dict:
    texts = _texts(outputs)
    nonempty = [t for t in texts if t.strip()]
    return {
        "n_outputs": len(outputs),
        "empty": len(texts) - len(nonempty),
        "mean_words": (sum(len(M.tokenize(t)) for t in nonempty) / len(nonempty)) if nonempty else 0.0,
        "distinct_1": distinct_n(nonempty, 1),
        "distinct_2": distinct_n(nonempty, 2),
    }


def _model_info(version_id) -> tuple[dict | None, list[dict]]:
    """(dev metrics, training arguments) of the run's model version."""
    from pathlib import Path

    if version_id is None:
        return None, []
    version = ModelVersion.objects.filter(pk=version_id).first()
    if version is None:
        return None, []
    training = []
    if version.artifact_path and (Path(version.artifact_path) / TRAIN_ARGUMENTS).exists():
        training = [row for _, row in read_jsonl(Path(version.artifact_path) / TRAIN_ARGUMENTS)]
    return (version.metrics or {}).get("dev"), training


def evaluate_outputs(
    mode: str,
    outputs: list[dict],
    *,
    references: list[dict] | None = None,
    training: list[dict] | None = None,
    encode: Callable | None = None,
    novelty_pairs: int = 20,
) -> dict:
    """The metrics of one run's outputs (module docstring); pure, no files."""
    result: dict = {"mode": mode, **_common(outputs)}
    scored = [o for o in outputs if (o.get("text") or "").strip()]
    if mode in ("arguments", "counter"):
        with_aspect = [o for o in scored if o.get("aspect")]
        result["aspect_presence"] = M.aspect_presence_rate(with_aspect) if with_aspect else None
        result["aspect_present"] = [M.aspect_present(o["text"], o["aspect"]) for o in with_aspect]
        if training and scored:
            nov = M.novelty([o["text"] for o in scored], [t["text"] for t in training], encode=encode)
            result["novelty"] = {
                "mean_cosine": nov["mean_cosine"],
                "mean_edit_distance": nov["mean_edit_distance"],
                "mean_overlap": nov["mean_overlap"],
                "pairs": nov["pairs"][:novelty_pairs],
            }
        if references and with_aspect:
            result["reference"] = M.reference_scores(with_aspect, references)
            if training:
                codes = [(o["topic"], o["stance"], o["aspect"]) for o in with_aspect]
                # Arg-CTRL §5.2: the retrieval approach returns *all* training arguments of the code
                retrieved = M.retrieval_baseline(codes, training, mode="all")
                result["retrieval"] = dict(M.reference_scores(retrieved, references), n=len(retrieved))
    elif mode == "argu":
        examples = [(o.get("variables") or [], o["text"]) for o in scored if o.get("variables")]
        result["fact_faithfulness"] = M.mean_fact_faithfulness(examples, encode=encode) if examples else None
        with_ref = [o for o in scored if o.get("reference")]
        if with_ref:
            result["bleu"] = M.bleu([o["text"] for o in with_ref], [o["reference"] for o in with_ref])
            result["rouge_l"] = sum(M.rouge_l(o["text"], o["reference"]) for o in with_ref) / len(with_ref)
            result["n_references"] = len(with_ref)
    elif mode == "responses":
        with_ref = [o for o in scored if o.get("reference")]
        if with_ref:
            result["bleu"] = M.bleu([o["text"] for o in with_ref], [o["reference"] for o in with_ref])
            result["rouge_l"] = sum(M.rouge_l(o["text"], o["reference"]) for o in with_ref) / len(with_ref)
            result["meteor"] = sum(M.meteor(o["text"], o["reference"]) for o in with_ref) / len(with_ref)
            result["n_references"] = len(with_ref)
    elif mode == "debate":
        turns = [t for o in outputs for t in (o.get("turns") or [])]
        result["debates"] = len(outputs)
        result["mean_turns"] = len(turns) / len(outputs) if outputs else 0.0
        result["mean_words_per_turn"] = sum(len(M.tokenize(t["text"])) for t in turns) / len(turns) if turns else 0.0
    return result


def evaluate_run(run_id: str, *, references: list[dict] | None = None, encode: Callable | None = None) -> dict:
    """Evaluate a stored run (its stored references unless ``references`` are given) and store ``metrics.json``."""
    from django.utils import timezone

    run = get_run(run_id)
    refs = references if references is not None else run.get("references_rows") or None
    dev, training = _model_info(run.get("model_version"))
    result = evaluate_outputs(run["mode"], run["outputs"], references=refs, training=training, encode=encode)
    result["model_dev"] = dev
    result["evaluated_at"] = timezone.now().isoformat()
    result["training_arguments"] = len(training)
    _write_json_atomic(run_dir(run_id) / "metrics.json", result)
    return result


# --- human evaluation ------------------------------------------------------------------------------


def pair_rows(run: dict, references: list[dict], *, seed: int = 13) -> list[dict]:
    """``PAIRS.jsonl`` rows: each generated argument against its own ``reference`` (ArgU inputs may carry one), else
    a reference argument of the same topic and stance (preferring the same aspect stem; seeded choice)."""
    by_ts: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for ref in references:
        text = ref.get("text") or ref.get("sentence") or ref.get("argument")
        stance = normalise_stance(ref.get("stance"))
        if isinstance(text, str) and text.strip() and stance and ref.get("topic"):
            aspects = ref.get("aspects") or ([ref["aspect"]] if ref.get("aspect") else [])
            by_ts[(ref["topic"].lower().strip(), stance)].append(
                {"text": text.strip(), "stems": {aspect_stem(a) for a in aspects}}
            )
    rng = random.Random(f"{seed}:{run['id']}")
    system = run.get("system") or "generator"
    rows = []
    for out in run["outputs"]:
        text = (out.get("text") or "").strip()
        stance = normalise_stance(out.get("stance"))
        if not text or not stance or not out.get("topic"):
            continue
        own = out.get("reference")
        if isinstance(own, str) and own.strip() and own.strip() != text:  # ArgU: the input's own reference
            ref = {"text": own.strip()}
        else:
            pool = [r for r in by_ts.get((out["topic"].lower().strip(), stance), []) if r["text"] != text]
            if not pool:
                continue
            stem = aspect_stem(out["aspect"]) if out.get("aspect") else None
            same = [r for r in pool if stem and stem in r["stems"]]
            ref = rng.choice(same or pool)
        rows.append(
            {
                "id": f"{run['id']}:{out['id']}",
                "topic": out["topic"],
                "stance": stance,
                "a": {"system": system, "text": text},
                "b": {"system": "reference", "text": ref["text"]},
            }
        )
    return rows


def debate_rows(run: dict) -> list[dict]:
    """``DEBATES.jsonl`` rows of a debate run."""
    system = run.get("system") or "generator"
    rows = []
    for out in run["outputs"]:
        turns = [{"speaker": t["speaker"], "text": t["text"]} for t in out.get("turns") or [] if t.get("text")]
        if len(turns) >= 2:
            rows.append(
                {"id": f"{run['id']}:{out['id']}", "system": system, "topic": out.get("topic", ""), "turns": turns}
            )
    return rows


def send_to_ratings(
    run_id: str, *, project_slug: str | None = None, references: list[dict] | None = None, seed: int = 13
) -> dict:
    """Create rating items for a run in one step (module docstring). Returns
    ``{"project", "task_type", "created", "skipped", "hits", "file"}``."""
    from django.db import transaction

    run = get_run(run_id)
    folder = run_dir(run_id)
    if run["mode"] == "debate":
        rows, task_type, name, reader = debate_rows(run), LIKERT, "debates.jsonl", read_debates
        if not rows:
            raise GenerationError("run: no debate with at least 2 turns to rate")
    elif run["mode"] in ("arguments", "counter", "argu", "responses"):
        refs = references if references is not None else run.get("references_rows") or []
        rows, task_type, name, reader = pair_rows(run, refs, seed=seed), PAIRWISE, "pairs.jsonl", read_pairs
        if not rows:
            raise GenerationError(
                "references: no reference argument shares topic and stance with an output; "
                "store references with the run (or pass --references FILE)"
            )
    else:  # pragma: no cover - MODES is closed
        raise GenerationError(f"mode: {run['mode']} cannot be rated")
    slug = project_slug or f"gen-{run_id}-{'pairs' if task_type == PAIRWISE else 'debates'}"
    path = folder / name
    part = folder / f".{name}.part"
    write_jsonl(rows, part)
    os.replace(part, path)  # a reader never sees half a file
    payloads = reader(path)  # validates every row (ImportFailed "file:line: reason") before anything is created
    with transaction.atomic():  # a project created here disappears again if the import fails
        project = get_project(slug, task_type, create=True, name=f"Generation run {run_id} ({task_type})")
        outcome = import_payloads(project, payloads)
    ratings = dict(run.get("ratings") or {})
    ratings[task_type] = project.slug
    update_run(run_id, ratings=ratings)
    return {"project": project.slug, "task_type": task_type, "file": str(path), **outcome}
