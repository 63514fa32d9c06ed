"""Release kind ``silver``: the predictions of silver annotation runs (:mod:`ml.silver`), apart from gold.

Config: ``{"runs": [run id, ...] (or "run"), "scheme_ratio", "discard_others", "min_confidence", "drop_unlabelled"}``
(the filters default to each run's own options). One file, ``silver.jsonl``, one row per kept sentence.
"""

from __future__ import annotations

from corpus.releases import register_exporter

from .models import SilverLabel, SilverRun
from .silver import silver_rows

FILTER_KEYS = ("scheme_ratio", "discard_others", "min_confidence", "drop_unlabelled", "scheme_threshold")


def prepare(config: dict) -> dict:
    unknown = set(config) - {"run", "runs", *FILTER_KEYS}
    if unknown:
        raise ValueError(
            f"config: unknown key(s) {', '.join(sorted(unknown))} (expected runs, {', '.join(FILTER_KEYS)})"
        )
    runs = config.get("runs") if config.get("runs") is not None else ([config["run"]] if config.get("run") else [])
    if isinstance(runs, (int, str)):
        runs = [runs]
    try:
        runs = sorted({int(r) for r in runs})
    except (TypeError, ValueError):
        raise ValueError("config.runs: give silver run ids (integers)") from None
    if not runs:
        raise ValueError("config.runs: name the silver run(s) to publish")
    for pk in runs:
        run = SilverRun.objects.filter(pk=pk).first()
        if run is None:
            raise ValueError(f"config.runs: no silver run {pk}")
        if run.status != SilverRun.Status.DONE:
            raise ValueError(f"config.runs: silver run {pk} is {run.status}; only a done run can be released")
    out = {"runs": runs}
    for key in FILTER_KEYS:
        if key in config:
            out[key] = config[key]
    return out


def _rows(config: dict):
    overrides = {k: config[k] for k in FILTER_KEYS if k in config}
    for pk in config["runs"]:
        yield from silver_rows(SilverRun.objects.get(pk=pk), options=overrides)


def count(config: dict) -> int:
    return SilverLabel.objects.filter(run_id__in=config["runs"]).count()


def card(ctx) -> list[tuple[str, str]]:
    lines = []
    for run in SilverRun.objects.filter(pk__in=ctx.config["runs"]).select_related("model_version", "topic"):
        mv = run.model_version
        lines.append(
            f"- run {run.pk}: {run.kind} model version {mv.pk} (base {mv.base_model or '-'}, dev "
            f"{mv.metrics.get('primary_metric', 'primary')} = {mv.metrics.get('primary')}), selection "
            f"topic={run.topic.name if run.topic else '*'} source={run.source or '*'}, {run.processed} "
            f"sentences, options {run.options}"
        )
    fmt = (
        "JSONL (silver.jsonl), one row per sentence: run, kind, model_version, source (model:<version>), "
        "sentence_id, hash, topic, stance, sentence, corpus_source, spans [{begin, end (exclusive), text, "
        "confidence[, variable, variable_confidence]}], confidence, silver: true; tagger runs add App. F "
        "aspect_pos / aspect_pos_string; scheme runs add scheme_probabilities, schemes (kept: p >= scheme_ratio x "
        "the scheme's mean over the run, ArgU §3.2.4), scheme. Sentences whose top scheme is Others are dropped "
        "when discard_others."
    )
    return [("Silver labels", "Model predictions, not human annotations. Runs:\n" + "\n".join(lines)), ("Format", fmt)]


register_exporter(
    "silver",
    prepare=prepare,
    count=count,
    card=card,
    count_by=("topic", "kind"),
    description="Silver (model-predicted) labels of silver annotation runs (ml.silver)",
)(lambda config: iter([("silver.jsonl", _rows(config))]))

import ml.generation.exporters  # noqa: E402,F401  (release kinds aspect-docs, debate-paths, argu-inputs)
