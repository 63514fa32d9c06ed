"""Release kinds contributed by the annotation app (found by ``corpus.releases.get_exporter``).

``aspects``: the App. F aspect dataset of one or more ``aspect`` projects (Arg-CTRL App. F), one JSONL file
per split. Config::

    {"projects": ["aspects-ukp"],            # slugs (or "project": "aspects-ukp")
     "split": {"mode": "cross-topic", "test": [...], "dev": [...]}   # default App. F topics
           | {"mode": "in-topic", "seed": 13}                        # sizes scaled from 3532/500/1000
           | {"mode": "none"}}                                       # one file, aspects.jsonl

Rows are the items' final answers (adjudicated > gold > crowd vote > imported reference), sorted by hash.
"""
from __future__ import annotations

from corpus.releases import CardContext, register_exporter

from annotation.aspects import appf


def prepare_aspects(config: dict) -> dict:
    from annotation.models import Project

    unknown = set(config) - {"project", "projects", "split"}
    if unknown:
        raise ValueError(f"config: unknown key(s) {', '.join(sorted(unknown))} (expected projects, split)")
    slugs = config.get("projects") or ([config["project"]] if config.get("project") else [])
    if isinstance(slugs, str):
        slugs = [s.strip() for s in slugs.split(",") if s.strip()]
    if not slugs or not all(isinstance(s, str) for s in slugs):
        raise ValueError("config.projects: name the aspect project(s) to export (their slugs)")
    for slug in slugs:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise ValueError(f"config.projects: no project with slug {slug!r}")
        if project.task_type != "aspect":
            raise ValueError(f"config.projects: project {slug!r} is a {project.task_type!r} project, not 'aspect'")
    split = config.get("split") or {"mode": "cross-topic"}
    if isinstance(split, str):
        split = {"mode": split}
    if not isinstance(split, dict):
        raise ValueError("config.split: expected an object with a mode")
    mode = split.get("mode", "cross-topic")
    if mode == "cross-topic":
        test = split.get("test", appf.CROSS_TOPIC["test"])
        dev = split.get("dev", appf.CROSS_TOPIC["dev"])
        for key, value in (("test", test), ("dev", dev)):
            if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
                raise ValueError(f"config.split.{key}: expected a non-empty list of topic names")
        if {t.lower() for t in test} & {t.lower() for t in dev}:
            raise ValueError("config.split: a topic cannot be in both test and dev")
        split = {"mode": mode, "test": sorted(test), "dev": sorted(dev)}
    elif mode == "in-topic":
        seed = split.get("seed", 13)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError(f"config.split.seed: expected an integer, got {seed!r}")
        split = {"mode": mode, "seed": seed}
    elif mode == "none":
        split = {"mode": "none"}
    else:
        raise ValueError(f"config.split.mode: {mode!r} is not one of none, cross-topic, in-topic")
    return {"projects": sorted(slugs), "split": split}


def _rows(config: dict) -> list[dict]:
    from annotation.models import Project

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
        text = (f"In-topic: rows shuffled with seed {split['seed']} and cut in App. F's proportions "
                f"(3532 / 500 / 1000 of 5032), scaled to the number of rows.")
    else:
        text = "No split: one file, aspects.jsonl."
    fmt = ("Arg-CTRL App. F JSONL: hash, aspect_pos (\"(begin,length)\" strings ordered by begin), "
           "aspect_pos_string, stance (Argument_for / Argument_against), topic, sentence. Keys sorted; rows by hash. "
           "Aspects are the adjudicated answer, the gold answer, the crowd's accepted spans (votes >= the "
           "threshold, a strict majority of R unless configured) or the imported reference, in that order.")
    return [("Format", fmt), ("Splits", text)]


@register_exporter("aspects", prepare=prepare_aspects, count=count_aspects, card=aspects_card,
                   count_by=("topic", "stance"),
                   description="Argument aspect detection dataset (Arg-CTRL App. F) from aspect projects.")
def export_aspects(config: dict):
    rows = _rows(config)
    split = config["split"]
    if split["mode"] == "none":
        yield "aspects.jsonl", iter(rows)
        return
    parts = appf.split_rows(rows, split["mode"], test=split.get("test"), dev=split.get("dev"),
                            seed=split.get("seed", 13))
    for part in appf.SPLITS:
        yield f"{part}.jsonl", iter(parts[part])


# --- bws: BWS argument similarity pairs (AugSBERT sec. 4.1) ------------------------------------------
def prepare_bws(config: dict) -> dict:
    """``{"project": slug, "split": {"mode": "cross-topic", "train": [...], "dev": [...], "test": [...]}
    | {"mode": "in-topic", "seed": 0} | {"mode": "none"}}``; cross-topic topics default to the project's
    ``config["splits"]``."""
    from annotation.bws.export import check_cross_topic
    from annotation.models import Project

    unknown = set(config) - {"project", "split"}
    if unknown:
        raise ValueError(f"config: unknown key(s) {', '.join(sorted(unknown))} (expected project, split)")
    slug = config.get("project")
    project = Project.objects.filter(slug=slug).first() if isinstance(slug, str) else None
    if project is None:
        raise ValueError(f"config.project: no project with slug {slug!r}")
    if project.task_type != "bws_similarity":
        raise ValueError(f"config.project: project {slug!r} is a {project.task_type!r} project, not 'bws_similarity'")
    split = config.get("split") or {"mode": "cross-topic"}
    if isinstance(split, str):
        split = {"mode": split}
    mode = split.get("mode", "cross-topic") if isinstance(split, dict) else None
    if mode == "cross-topic":
        parts = {k: split[k] for k in ("train", "dev", "test") if k in split} or (project.config or {}).get("splits")
        if not parts:
            raise ValueError("config.split: name the train / dev / test topics (or set the project's config.splits)")
        try:
            split = {"mode": mode, **check_cross_topic(parts)}
        except ValueError as exc:
            raise ValueError(f"config.split.{exc}") from None
    elif mode == "in-topic":
        seed = split.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError(f"config.split.seed: expected an integer, got {seed!r}")
        split = {"mode": mode, "seed": seed}
    elif mode == "none":
        split = {"mode": "none"}
    else:
        raise ValueError(f"config.split.mode: {mode!r} is not one of none, cross-topic, in-topic")
    return {"project": slug, "split": split}


def _bws_rows(config: dict) -> list[dict]:
    from annotation.bws.project import export_rows
    from annotation.models import Project

    return export_rows(Project.objects.get(slug=config["project"]))


def bws_card(ctx: CardContext) -> list[tuple[str, str]]:
    split = ctx.config["split"]
    if split["mode"] == "cross-topic":
        text = (f"Cross-topic: train {', '.join(split['train'])}; dev {', '.join(split['dev'])}; "
                f"test {', '.join(split['test'])}.")
    elif split["mode"] == "in-topic":
        text = (f"In-topic: each topic's pairs shuffled with seed {split['seed']} and cut 2471 / 478 / 451 "
                f"(of 3400) into train / dev / test.")
    else:
        text = "No split: one file, bws.jsonl."
    fmt = ("JSONL: pair_id, topic, argument1, argument2, score (counting score (#best - #worst) / #appearances "
           "mapped to [0, 1]), best, worst, appearances. Rows by topic, then pair id.")
    return [("Format", fmt), ("Splits", text)]


@register_exporter("bws", prepare=prepare_bws, count=lambda config: len(_bws_rows(config)), card=bws_card,
                   count_by=("topic",),
                   description="BWS argument similarity pairs with counting scores (AugSBERT sec. 4.1).")
def export_bws(config: dict):
    from annotation.bws import export as bws_export

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


# --- spans: KB-grounded factual spans (ArgU sec. 3.1) ------------------------------------------------
from annotation.spans.export import register_release_kind  # noqa: E402

register_release_kind()
