"""Release kinds contributed by the annotation app (found by ``corpus.releases.get_exporter``).

``aspects``: the App. F aspect dataset of one or more ``aspect`` projects (Arg-CTRL App. F), one JSONL file
per split. Config::

    {"projects": ["aspects-ukp"],            # slugs (or "project": "aspects-ukp")
     "split": {"mode": "cross-topic", "test": [...], "dev": [...]}   # default App. F topics
           | {"mode": "in-topic", "seed": 13}                        # sizes scaled from 3532/500/1000
           | {"mode": "none"}}                                       # one file, aspects.jsonl

Rows are the items' final answers (adjudicated > gold > crowd vote > imported reference), sorted by hash.

``annotations``: any project of any task type (``sentence_label`` and the other generic ones included), one row
per item with the task type's ``export_row``, its aggregate and every counted response per worker
(``annotations.jsonl``). Config::

    {"projects": ["stance-pilot"],   # slugs (or "project": "stance-pilot"); any task type
     "include_gold": false}          # also export the gold (control) items
"""
from __future__ import annotations

from corpus.releases import CardContext, register_exporter

from annotation.task_types.aspect import appf


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
    from annotation.task_types.bws_similarity.export import check_cross_topic
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
    from annotation.task_types.bws_similarity.project import export_rows
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
    from annotation.task_types.bws_similarity import export as bws_export

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
from annotation.task_types.span_grounding.export import register_release_kind  # noqa: E402

register_release_kind()


# --- annotations: every item of any task type, aggregate + responses per worker ----------------------
ANNOTATIONS_FILE = "annotations.jsonl"
# keys the release sets on every row; a task type's export_row may carry "aggregate" (the same value)
RESERVED_KEYS = ("project", "task_type", "is_gold", "annotations")


def prepare_annotations(config: dict) -> dict:
    from annotation.models import Project

    unknown = set(config) - {"project", "projects", "include_gold"}
    if unknown:
        raise ValueError(f"config: unknown key(s) {', '.join(sorted(unknown))} (expected projects, include_gold)")
    slugs = config.get("projects") or ([config["project"]] if config.get("project") else [])
    if isinstance(slugs, str):
        slugs = [s.strip() for s in slugs.split(",") if s.strip()]
    if not slugs or not isinstance(slugs, list) or not all(isinstance(s, str) for s in slugs):
        raise ValueError("config.projects: name the project(s) to export (their slugs)")
    for slug in slugs:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise ValueError(f"config.projects: no project with slug {slug!r}")
        try:
            project.get_task_type()
        except KeyError as exc:
            raise ValueError(f"config.projects: project {slug!r}: {exc.args[0]}") from None
    flag = config.get("include_gold", False)
    if not isinstance(flag, bool):
        raise ValueError("config.include_gold: true or false")
    return {"projects": list(dict.fromkeys(slugs)), "include_gold": flag}


def annotation_rows(config: dict):
    """One row per item: ``{**task_type.export_row(...), "project", "task_type", "aggregate", "annotations"}``.

    ``annotations`` lists every counted response (submitted or approved assignments; MTurk assignments that no
    sync has confirmed are left out) as ``{"worker", "assignment", "status", "response"}`` ordered by worker;
    the ``responses`` handed to ``export_row`` / ``aggregate`` are the same, in the same order. Projects in the
    order given, items by position.
    """
    from annotation import selectors
    from annotation.models import Item, Project

    for slug in config["projects"]:
        project = Project.objects.get(slug=slug)
        tt = project.get_task_type()
        include_gold = config.get("include_gold", False)
        per_item = selectors.item_annotations(project, include_gold=include_gold)
        items = Item.objects.filter(project=project)
        if not include_gold:
            items = items.filter(is_gold=False)
        for item in items.order_by("position", "id"):
            records = per_item.get(item.pk, [])
            responses = [r["response"] for r in records]
            row = dict(tt.export_row(project, item, responses))
            clash = [key for key in RESERVED_KEYS if key in row]
            if clash:
                raise ValueError(f"task type {tt.name!r}: export_row uses the key(s) {', '.join(clash)} that the "
                                 f"annotations release sets itself")
            row.setdefault("item_id", item.pk)
            row.update({"project": slug, "task_type": tt.name, "is_gold": item.is_gold,
                        "aggregate": tt.aggregate(project, item, responses), "annotations": records})
            yield row


def annotations_card(ctx: CardContext) -> list[tuple[str, str]]:
    fmt = (f"JSONL ({ANNOTATIONS_FILE}), one row per item: the task type's own export row (e.g. item_id, text, "
           "labels, label, share, n for sentence_label), plus project, task_type, is_gold, aggregate (the task "
           "type's aggregate of the responses: majority label, counts, scores...) and annotations: every response "
           "of a submitted or approved assignment as {worker, assignment, status, response}, ordered by worker. "
           "Workers are Argora's worker ids (no MTurk WorkerId, Prolific PID or user name). MTurk assignments that "
           "no sync has confirmed yet are not included. Rows: projects in the configured order, items by position.")
    return [("Format", fmt)]


def count_annotations(config: dict) -> int:
    from annotation.models import Item

    items = Item.objects.filter(project__slug__in=config["projects"])
    return (items if config.get("include_gold") else items.filter(is_gold=False)).count()


@register_exporter("annotations", prepare=prepare_annotations, count=count_annotations, card=annotations_card,
                   count_by=("project", "task_type"),
                   description="Every item of one or more annotation projects (any task type) with its aggregate "
                               "and the responses per worker.")
def export_annotations(config: dict):
    yield ANNOTATIONS_FILE, annotation_rows(config)
