"""Release kind ``aspects``: the App. F aspect dataset of one or more ``aspect`` projects (Arg-CTRL App. F), one JSONL
file per split. Config::

    {"projects": ["aspects-ukp"],            # slugs (or "project": "aspects-ukp")
     "split": {"mode": "cross-topic", "test": [...], "dev": [...]}   # default App. F topics
           | {"mode": "in-topic", "seed": 13}                        # sizes scaled from 3532/500/1000
           | {"mode": "none"}}                                       # one file, aspects.jsonl

Rows are the items' final answers (adjudicated > gold > crowd vote > imported reference), sorted by hash.
"""

from __future__ import annotations

from annotation.models import Project
from annotation.releases import check_keys, config_projects
from corpus.releases import CardContext, clean_split, register_exporter, split_seed

from . import appf
from .task_type import Aspect


def prepare_aspects(config: dict) -> dict:
    check_keys(config, ("project", "projects", "split"))
    slugs = config_projects(config, task_type=Aspect.name)
    split = clean_split(
        config.get("split"),
        default_mode="cross-topic",
        cross_topic=_cross_topic,
        in_topic=lambda s: {"seed": split_seed(s, 13)},
    )
    return {"projects": sorted(slugs), "split": split}


def _cross_topic(split: dict) -> dict:
    test = split.get("test", appf.CROSS_TOPIC["test"])
    dev = split.get("dev", appf.CROSS_TOPIC["dev"])
    for key, value in (("test", test), ("dev", dev)):
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise ValueError(f"config.split.{key}: expected a non-empty list of topic names")
    if {t.lower() for t in test} & {t.lower() for t in dev}:
        raise ValueError("config.split: a topic cannot be in both test and dev")
    return {"test": sorted(test), "dev": sorted(dev)}


def _rows(config: dict) -> list[dict]:
    rows: dict[str, dict] = {}
    for slug in config["projects"]:
        for row in appf.project_rows(Project.objects.get(slug=slug)):
            rows.setdefault(row["hash"], row)  # the first project listed wins for a sentence in several
    return sorted(rows.values(), key=lambda r: r["hash"])


def count_aspects(config: dict) -> int:
    return len(_rows(config))


def aspects_card(ctx: CardContext) -> list[tuple[str, str]]:
    split = ctx.config["split"]
    if split["mode"] == "cross-topic":
        text = f"Cross-topic (App. F): test {', '.join(split['test'])}; dev {', '.join(split['dev'])}; train the rest."
    elif split["mode"] == "in-topic":
        text = (
            f"In-topic: rows shuffled with seed {split['seed']} and cut in App. F's proportions "
            f"(3532 / 500 / 1000 of 5032), scaled to the number of rows."
        )
    else:
        text = "No split: one file, aspects.jsonl."
    fmt = (
        'Arg-CTRL App. F JSONL: hash, aspect_pos ("(begin,length)" strings ordered by begin), '
        "aspect_pos_string, stance (Argument_for / Argument_against; null where the source gave none, e.g. a "
        "CoNLL sentence of unknown stance: never guessed), topic, sentence. Keys sorted; rows by hash. "
        "Aspects are the adjudicated answer, the gold answer, the crowd's accepted spans (votes >= the "
        "threshold, a strict majority of R unless configured) or the imported reference, in that order."
    )
    return [("Format", fmt), ("Splits", text)]


@register_exporter(
    "aspects",
    prepare=prepare_aspects,
    count=count_aspects,
    card=aspects_card,
    count_by=("topic", "stance"),
    description="Argument aspect detection dataset (Arg-CTRL App. F) from aspect projects.",
)
def export_aspects(config: dict):
    rows = _rows(config)
    split = config["split"]
    if split["mode"] == "none":
        yield "aspects.jsonl", iter(rows)
        return
    parts = appf.split_rows(
        rows, split["mode"], test=split.get("test"), dev=split.get("dev"), seed=split.get("seed", 13)
    )
    for part in appf.SPLITS:
        yield f"{part}.jsonl", iter(parts[part])
