"""Release kinds of the generation corpora (registered on import; ``ml/exporters.py`` imports this module).

``aspect-docs`` (Arg-CTRL §4)::

    {"projects": ["aspects-ukp"]          # gold: aspect projects' final answers
     | "rows_file": "silver.jsonl",       # or a JSONL of {topic, stance, sentence, aspects} (silver) / App. F rows
     | "silver_runs": {"aspects": 12,     # or silver runs: the tagger run's spans as aspects,
                       "stance": 11},     # the argument run's predicted stance (optional; a sentence's own
                                          # pro/con stance always wins) -- corpora.silver_aspect_rows
     "source": "gold" | "silver",         # label written into each document (default by input)
     "min_args": 15, "max_args": 1500, "max_per_topic_stance": 100000, "seed": 13}

-> ``aspect-docs.jsonl``: one training document per line (control_code, topic, stance, aspect, stem, aspects,
n_arguments, arguments, source). Both silver runs must be done, the aspects run of kind ``tagger`` and the stance
run of kind ``argument``.

``debate-paths`` (debate-trees §2.2)::

    {"trees": [ids] | null, "topics": [names] | null, "strategies": ["supportive", ...] (default all four),
     "seed": 13, "fractions": {"train": 0.9, "dev": 0.05, "test": 0.05}, "anchor": "root" | "any",
     "node_sep": " ", "turn_sep": " <turn> "}

-> ``<strategy>-<split>.jsonl`` for every strategy and split (split by debate).

``argu-inputs`` (ArgU §4.1)::

    {"projects": ["spans-basn"] | "rows_file": "spans.jsonl", "filters": false | true | {...},
     "seed": 13, "max_variables": 4, "min_variables": 1, "merge_goal_from_means": true, "require_scheme": false}

-> ``argu-inputs.jsonl``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator

from annotation.models import Project
from annotation.task_types.span_grounding.export import clean_filters, filter_reason
from argora.progress import Progress, null_progress
from corpus.models import DebateTree, Topic
from corpus.releases import CardContext, register_exporter
from ml.models import SilverRun

from . import corpora


def _int(config: dict, key: str, default: int, minimum: int = 0) -> int:
    value = config.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"config.{key}: expected a whole number >= {minimum}, got {value!r}")
    return value


def _bool(config: dict, key: str, default: bool) -> bool:
    value = config.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"config.{key}: true or false")
    return value


def _unknown(config: dict, allowed: set[str]) -> None:
    unknown = set(config) - allowed
    if unknown:
        raise ValueError(f"config: unknown key(s) {', '.join(sorted(unknown))} (expected {', '.join(sorted(allowed))})")


def _projects(config: dict, task_type: str) -> list[str]:
    slugs = config.get("projects") or ([config["project"]] if config.get("project") else [])
    if isinstance(slugs, str):
        slugs = [s.strip() for s in slugs.split(",") if s.strip()]
    if not isinstance(slugs, list) or not all(isinstance(s, str) for s in slugs):
        raise ValueError("config.projects: a list of project slugs")
    for slug in slugs:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise ValueError(f"config.projects: no project with slug {slug!r}")
        if project.task_type != task_type:
            raise ValueError(f"config.projects: project {slug!r} is a {project.task_type!r} project, not {task_type!r}")
    return sorted(set(slugs))


def _source(config: dict, task_type: str) -> dict:
    projects = _projects(config, task_type)
    rows_file = config.get("rows_file")
    if bool(projects) == bool(rows_file):
        raise ValueError("config: give either projects or rows_file")
    if rows_file is not None:
        if not isinstance(rows_file, str) or not os.path.isfile(rows_file):
            raise ValueError(f"config.rows_file: {rows_file!r} is not a readable file")
        return {"projects": [], "rows_file": os.path.abspath(rows_file)}
    return {"projects": projects, "rows_file": None}


# --- aspect-docs ----------------------------------------------------------------------------------------


def _silver_run(config: dict, key: str, kind: str, *, required: bool):
    value = (config.get("silver_runs") or {}).get(key)
    if value is None:
        if required:
            raise ValueError(f"config.silver_runs.{key}: the {kind} silver run id is required")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
        raise ValueError(f"config.silver_runs.{key}: a silver run id, got {value!r}")
    run = SilverRun.objects.filter(pk=int(value)).first()
    if run is None:
        raise ValueError(f"config.silver_runs.{key}: no silver run {value}")
    if run.kind != kind:
        raise ValueError(f"config.silver_runs.{key}: silver run {run.pk} is a {run.kind!r} run, not {kind!r}")
    if run.status != SilverRun.Status.DONE:
        raise ValueError(
            f"config.silver_runs.{key}: silver run {run.pk} is {run.status}, not done "
            f"(finish it: manage.py silver resume {run.pk})"
        )
    return run.pk


def _aspect_source(config: dict) -> dict:
    runs = config.get("silver_runs")
    if runs is None:
        return dict(_source(config, "aspect"), silver_runs=None)
    if not isinstance(runs, dict) or set(runs) - {"aspects", "stance"}:
        raise ValueError('config.silver_runs: {"aspects": tagger run id, "stance": argument run id}')
    if config.get("rows_file") or config.get("projects") or config.get("project"):
        raise ValueError("config: give one of projects, rows_file or silver_runs")
    return {
        "projects": [],
        "rows_file": None,
        "silver_runs": {
            "aspects": _silver_run(config, "aspects", "tagger", required=True),
            "stance": _silver_run(config, "stance", "argument", required=False),
        },
    }


def prepare_aspect_docs(config: dict) -> dict:
    _unknown(
        config,
        {
            "project",
            "projects",
            "rows_file",
            "silver_runs",
            "source",
            "min_args",
            "max_args",
            "max_per_topic_stance",
            "seed",
        },
    )
    out = _aspect_source(config)
    source = config.get("source") or ("gold" if out["projects"] else "silver")
    if source not in ("gold", "silver"):
        raise ValueError(f"config.source: {source!r} is not gold or silver")
    out.update(
        source=source,
        min_args=_int(config, "min_args", corpora.DEFAULT_MIN_ARGS, 1),
        max_args=_int(config, "max_args", corpora.DEFAULT_MAX_ARGS, 1),
        max_per_topic_stance=_int(config, "max_per_topic_stance", corpora.DEFAULT_MAX_PER_TOPIC_STANCE, 1),
        seed=_int(config, "seed", 13),
    )
    if out["min_args"] > out["max_args"]:
        raise ValueError(f"config.min_args: {out['min_args']} is more than max_args {out['max_args']}")
    return out


def aspect_input_rows(config: dict, dropped: Counter | None = None):
    """The rows of a prepared aspect-docs config; silver runs count what they leave out into ``dropped``."""
    if config.get("silver_runs"):
        runs = config["silver_runs"]
        stance = SilverRun.objects.get(pk=runs["stance"]) if runs.get("stance") else None
        return corpora.silver_aspect_rows(SilverRun.objects.get(pk=runs["aspects"]), stance, dropped=dropped)
    if config.get("rows_file"):
        return corpora.aspect_rows_from_file(config["rows_file"])
    return corpora.gold_aspect_rows(config["projects"])


def build_docs(config: dict, *, progress: Progress = null_progress) -> corpora.AspectDocs:
    """The documents of a prepared aspect-docs config; ``stats["dropped"]`` counts every filter's losses."""
    dropped: Counter = Counter()
    return corpora.build_aspect_documents(
        aspect_input_rows(config, dropped),
        min_args=config["min_args"],
        max_args=config["max_args"],
        max_per_topic_stance=config["max_per_topic_stance"],
        seed=config["seed"],
        source=config["source"],
        progress=progress,
        dropped_rows=dropped,
    )


def _input_name(c: dict) -> str:
    if c.get("silver_runs"):
        runs = c["silver_runs"]
        return f"tagger silver run {runs['aspects']}" + (
            f", stance from argument silver run {runs['stance']}" if runs.get("stance") else ""
        )
    return ", ".join(c["projects"]) or c["rows_file"]


def aspect_docs_card(ctx: CardContext) -> list[tuple[str, str]]:
    c = ctx.config
    return [
        (
            "Format",
            'JSONL, one Arg-CTRL training document per line: control_code ("<topic> <PRO|CON> '
            "<aspect>\"), topic, stance, aspect, stem (Porter stems of the aspect's words: aspects with "
            "the same stem are merged), aspects (merged surface forms), n_arguments, arguments, source.",
        ),
        (
            "Construction",
            f"Arg-CTRL §4 from {c['source']} aspects "
            f"({_input_name(c)}): documents of {c['min_args']} to "
            f"{c['max_args']} arguments, at most {c['max_per_topic_stance']} arguments per topic "
            f"and stance, seed {c['seed']} (see ml/generation/corpora.py).",
        ),
    ]


@register_exporter(
    "aspect-docs",
    prepare=prepare_aspect_docs,
    card=aspect_docs_card,
    count_by=("topic", "stance"),
    description="Arg-CTRL training documents for aspect-controlled argument generation "
    "(one control code per document).",
)
def export_aspect_docs(config: dict) -> Iterator[tuple[str, Iterator[dict]]]:
    yield "aspect-docs.jsonl", (doc.as_row() for doc in build_docs(config).documents)


# --- debate-paths ---------------------------------------------------------------------------------------


def prepare_debate_paths(config: dict) -> dict:
    _unknown(config, {"trees", "topics", "strategies", "seed", "fractions", "anchor", "node_sep", "turn_sep"})
    trees = config.get("trees")
    if trees is not None:
        if not isinstance(trees, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in trees):
            raise ValueError("config.trees: a list of debate tree ids (or null for all)")
        missing = sorted(set(trees) - set(DebateTree.objects.filter(pk__in=trees).values_list("pk", flat=True)))
        if missing:
            raise ValueError(f"config.trees: no debate tree with id(s) {missing}")
        trees = sorted(set(trees))
    topics = config.get("topics")
    if topics is not None:
        if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
            raise ValueError("config.topics: a list of topic names (or null)")
        known = set(Topic.objects.filter(name__in=topics).values_list("name", flat=True))
        if set(topics) - known:
            raise ValueError(f"config.topics: unknown topic(s) {sorted(set(topics) - known)}")
        topics = sorted(set(topics))
    strategies = config.get("strategies") or list(corpora.STRATEGIES)
    if isinstance(strategies, str):
        strategies = [s.strip() for s in strategies.split(",") if s.strip()]
    bad = [s for s in strategies if s not in corpora.STRATEGIES]
    if bad:
        raise ValueError(f"config.strategies: unknown {bad} (choose from {', '.join(corpora.STRATEGIES)})")
    anchor = config.get("anchor", "root")
    if anchor not in ("root", "any"):
        raise ValueError(f"config.anchor: {anchor!r} is not root or any")
    out = {
        "trees": trees,
        "topics": topics,
        "strategies": [s for s in corpora.STRATEGIES if s in strategies],
        "seed": _int(config, "seed", 13),
        "fractions": corpora.clean_fractions(config.get("fractions")),
        "anchor": anchor,
    }
    for key, default in (("node_sep", corpora.NODE_SEP), ("turn_sep", corpora.TURN_SEP)):
        value = config.get(key, default)
        if not isinstance(value, str):
            raise ValueError(f"config.{key}: a string")
        out[key] = value
    if not corpora.debate_trees(trees, topics).exists():
        raise ValueError("config: no debate tree matches (import trees with manage.py import --format kialo)")
    return out


def debate_rows(config: dict, strategy: str, split: str):
    return corpora.debate_path_rows(
        config["trees"],
        strategies=[strategy],
        topics=config["topics"],
        seed=config["seed"],
        fractions=config["fractions"],
        splits=[split],
        anchor=config["anchor"],
        node_sep=config["node_sep"],
        turn_sep=config["turn_sep"],
    )


def debate_paths_card(ctx: CardContext) -> list[tuple[str, str]]:
    c = ctx.config
    grammar = "; ".join(
        f"{s}: prompt {corpora.GRAMMAR[s][0]} response {corpora.GRAMMAR[s][1]}" for s in c["strategies"]
    )
    return [
        (
            "Format",
            "JSONL per strategy and split: strategy, tree_id, tree_hash, debate, topic, split, prompt, "
            "response, prompt_paths, response_paths (Kialo node numbers), prompt_turns. Turns of a "
            f"multi-turn prompt are joined with {c['turn_sep']!r}.",
        ),
        (
            "Construction",
            f"debate-trees §2.2, Table 2 ({grammar}); paths start at the "
            f"{'root (thesis)' if c['anchor'] == 'root' else 'any node'}; debates split "
            f"{c['fractions']['train']:g}/{c['fractions']['dev']:g}/{c['fractions']['test']:g} "
            f"with seed {c['seed']} (see ml/generation/corpora.py).",
        ),
    ]


@register_exporter(
    "debate-paths",
    prepare=prepare_debate_paths,
    card=debate_paths_card,
    count_by=("strategy", "split"),
    description="Prompt/response pairs from debate trees (supportive, contradicting, complex, "
    "multi-turn; debate-trees §2.2).",
)
def export_debate_paths(config: dict):
    for strategy in config["strategies"]:
        for split in corpora.SPLITS:
            yield f"{strategy}-{split}.jsonl", debate_rows(config, strategy, split)


# --- argu-inputs ----------------------------------------------------------------------------------------


def prepare_argu_inputs(config: dict) -> dict:
    _unknown(
        config,
        {
            "project",
            "projects",
            "rows_file",
            "filters",
            "seed",
            "max_variables",
            "min_variables",
            "merge_goal_from_means",
            "require_scheme",
        },
    )
    out = _source(config, "span_grounding")
    out.update(
        filters=clean_filters(config.get("filters")),
        seed=_int(config, "seed", 13),
        max_variables=_int(config, "max_variables", 4, 1),
        min_variables=_int(config, "min_variables", 1),
        merge_goal_from_means=_bool(config, "merge_goal_from_means", True),
        require_scheme=_bool(config, "require_scheme", False),
    )
    if out["max_variables"] > len(corpora.VAR_TAGS):
        raise ValueError(f"config.max_variables: at most {len(corpora.VAR_TAGS)} (<VAR_0>..<VAR_3>)")
    if out["min_variables"] > out["max_variables"]:
        raise ValueError("config.min_variables: more than max_variables")
    return out


def span_input_rows(config: dict):
    if config.get("rows_file"):

        def rows():
            for _number, row in corpora.read_jsonl(config["rows_file"]):
                filters = config.get("filters")
                if (
                    filters
                    and isinstance(row, dict)
                    and "span_details" in row
                    and filter_reason(row, filters) is not None
                ):
                    continue
                yield row

        return rows()
    return corpora.span_rows(config["projects"], filters=config.get("filters"))


def argu_rows(config: dict, skipped=None):
    return corpora.argu_inputs(
        span_input_rows(config),
        seed=config["seed"],
        max_variables=config["max_variables"],
        min_variables=config["min_variables"],
        merge_goal_from_means=config["merge_goal_from_means"],
        require_scheme=config["require_scheme"],
        skipped=skipped,
    )


def argu_card(ctx: CardContext) -> list[tuple[str, str]]:
    return [
        (
            "Format",
            "JSONL, one ArgU training example per argument: encoder_input (topic + up to four KB "
            "variables prefixed <VAR_0>..<VAR_3> in seeded random order), variables, stance_code, "
            "scheme_code, control_codes, argument, template (grounded spans replaced by their "
            "variable's tag), mono_target, dual_target, topic, stance, scheme, argument_id, item_id. "
            "Special tokens (ArgU Table 6): " + ", ".join(corpora.special_tokens()) + ".",
        )
    ]


@register_exporter(
    "argu-inputs",
    prepare=prepare_argu_inputs,
    card=argu_card,
    count_by=("topic", "stance", "scheme"),
    description="ArgU (ArgU §4.1) encoder inputs and Mono/Dual decoder targets from span-grounding annotations.",
)
def export_argu_inputs(config: dict):
    yield "argu-inputs.jsonl", argu_rows(config)
