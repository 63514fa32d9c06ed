"""Release kind ``bws``: BWS argument similarity pairs with counting scores (AugSBERT sec. 4.1)."""

from __future__ import annotations

from annotation.models import Project
from annotation.releases import check_keys
from annotation.selectors import project_of_type
from corpus.releases import CardContext, clean_split, register_exporter, split_seed

from . import export as bws_export
from .export import check_cross_topic
from .project import export_rows
from .task_type import BWSSimilarity


def prepare_bws(config: dict) -> dict:
    """``{"project": slug, "split": {"mode": "cross-topic", "train": [...], "dev": [...], "test": [...]}
    | {"mode": "in-topic", "seed": 0} | {"mode": "none"}}``; cross-topic topics default to the project's
    ``config["splits"]``."""
    check_keys(config, ("project", "split"))
    slug = config.get("project")
    if not isinstance(slug, str):
        raise ValueError(f"config.project: no project with slug {slug!r}")
    project = project_of_type(slug, BWSSimilarity.name, error=lambda reason: ValueError(f"config.project: {reason}"))

    def cross_topic(split: dict) -> dict:
        parts = {k: split[k] for k in ("train", "dev", "test") if k in split} or (project.config or {}).get("splits")
        if not parts:
            raise ValueError("config.split: name the train / dev / test topics (or set the project's config.splits)")
        try:
            return check_cross_topic(parts)
        except ValueError as exc:
            raise ValueError(f"config.split.{exc}") from None

    split = clean_split(
        config.get("split"),
        default_mode="cross-topic",
        cross_topic=cross_topic,
        in_topic=lambda s: {"seed": split_seed(s, 0)},
    )
    return {"project": slug, "split": split}


def _bws_rows(config: dict) -> list[dict]:
    return export_rows(Project.objects.get(slug=config["project"]))


def bws_card(ctx: CardContext) -> list[tuple[str, str]]:
    split = ctx.config["split"]
    if split["mode"] == "cross-topic":
        text = (
            f"Cross-topic: train {', '.join(split['train'])}; dev {', '.join(split['dev'])}; "
            f"test {', '.join(split['test'])}."
        )
    elif split["mode"] == "in-topic":
        text = (
            f"In-topic: each topic's pairs shuffled with seed {split['seed']} and cut 2471 / 478 / 451 "
            f"(of 3400) into train / dev / test."
        )
    else:
        text = "No split: one file, bws.jsonl."
    fmt = (
        "JSONL: pair_id, topic, argument1, argument2, score (counting score (#best - #worst) / #appearances "
        "mapped to [0, 1]), best, worst, appearances. Rows by topic, then pair id."
    )
    return [("Format", fmt), ("Splits", text)]


@register_exporter(
    "bws",
    prepare=prepare_bws,
    count=lambda config: len(_bws_rows(config)),
    card=bws_card,
    count_by=("topic",),
    description="BWS argument similarity pairs with counting scores (AugSBERT sec. 4.1).",
)
def export_bws(config: dict):
    rows = _bws_rows(config)
    split = config["split"]
    if split["mode"] == "none":
        yield "bws.jsonl", iter(rows)
        return
    if split["mode"] == "cross-topic":
        parts = bws_export.cross_topic(rows, {k: split[k] for k in bws_export.SPLITS})
    else:
        parts = bws_export.in_topic(rows, seed=split["seed"])
    for part in bws_export.SPLITS:
        yield f"{part}.jsonl", iter(parts[part])
