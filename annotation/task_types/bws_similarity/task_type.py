"""``bws_similarity``: Best-Worst Scaling of argument similarity (AugSBERT sec. 4.1).

One item = one BWS task: four argument pairs of one topic; the worker marks the MOST and the LEAST similar pair
(they must differ). R = 4 workers per tuple by default (``manage.py bws sample --create`` sets it). Scores, split-half
reliability and the dataset export live in :mod:`annotation.task_types.bws_similarity`.

Item payload (built by :func:`annotation.task_types.bws_similarity.project.build` from the tuple design)::

    {"topic": "cloning", "tuple": "cloning:17",
     "pairs": [{"id": "12-40", "a": "argument text", "b": "argument text"}, ... 4 pairs]}

Attention checks are gold items whose tuple holds a pair of two identical arguments (``"id": "same:<sentence>"``)
with ``GoldItem.expected = {"best": "same:<sentence>"}``: that pair must be chosen as the most similar.

Response (JSON API, or the no-JS form radios ``item-<id>-best`` / ``item-<id>-worst``)::

    {"best": "<pair id>", "worst": "<pair id>"}

Refusals (HTTP 400 naming the field): unknown field; a missing choice; a pair id that is not in the tuple; the same
pair as best and worst (``worst``).

Config (``project.config``): ``scorer`` (distant supervision for pair sampling: ``cosine`` | ``jaccard`` | ...),
``seed`` (sampling and tuple design), ``tuples_per_pair`` (default 2: Kiritchenko & Mohammad's 2N tuples),
``attention_checks`` (gold tuples per topic, default 2), ``n_splits`` (split-half repetitions, default 25),
``splits`` (cross-topic ``{"train": [5 topics], "dev": [1], "test": [2]}``), and, written by ``bws sample``,
``pairs`` ``{pair id: {"topic", "a", "b", "a_id", "b_id", "ds", "bin"}}`` (a pair file's pairs, from the studio's
pair-file sources: ``"file_id", "file_score"[, "file_label"]`` instead of ``ds`` / ``bin``) and ``sampling``
(per-topic reports).
"""

from __future__ import annotations

from collections import Counter

from .. import register
from ..base import ResponseInvalid, TaskType
from .export import check_cross_topic
from .project import refresh_scores
from .sampling import scorer_names

FIELDS = ("best", "worst")
DEFAULTS = {"scorer": "cosine", "seed": 0, "tuples_per_pair": 2, "attention_checks": 2, "n_splits": 25}


def _int(config: dict, key: str, *, minimum: int) -> int:
    value = config.get(key, DEFAULTS[key])
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ResponseInvalid(key, f"a whole number >= {minimum}")
    return value


@register
class BWSSimilarity(TaskType):
    name = "bws_similarity"
    label = "Argument similarity (Best-Worst Scaling)"
    release_kinds = ("bws",)  # release.py
    template = "task_types/bws_similarity/hit.html"
    script = "task_types/bws_similarity/hit.js"
    stylesheet = "task_types/bws_similarity/hit.css"
    # the paper's defaults: R = 4 workers per tuple, 5 tuples per HIT, an attention check in about every fifth task
    project_defaults = {"assignments_per_item": 4, "items_per_hit": 5, "gold_rate": 0.2}
    items_howto = "sample pairs and build the tuples with `manage.py bws sample` and `manage.py bws build`"
    results_page = ("annotation:bws", "BWS scores and split-half reliability")
    config_keys = {
        "scorer": "the distant supervision that bins the sampled pairs: cosine, jaccard, ... (default cosine)",
        "seed": "seed of the pair sampling, the tuple design, the split-half repetitions and the in-topic split "
        "(default 0)",
        "tuples_per_pair": "tuples each pair appears in, 2N tuples for N pairs at 2 (default 2)",
        "attention_checks": "gold tuples with a pair of two identical arguments, per topic (default 2)",
        "n_splits": "repetitions of the split-half reliability (default 25)",
        "splits": 'cross-topic split {"train": [topics], "dev": [...], "test": [...]} (default none: in-topic)',
        "pairs": "the sampled or uploaded pairs {pair id: {topic, a, b, ...}}, written by bws sample and the "
        "pair-file sources (default {})",
        "sampling": "the per-topic sampling reports, written with the pairs (default none)",
    }
    keys_help = (
        ("<kbd>1</kbd>…<kbd>4</kbd>", "mark that pair as the MOST similar"),
        (
            "<kbd>Shift</kbd>+<kbd>1</kbd>…<kbd>4</kbd>",
            "mark that pair as the LEAST similar (it must differ from the most similar)",
        ),
    )

    # --- set-up ---------------------------------------------------------------------------------
    def clean_config(self, config):
        config = dict(config or {})
        scorer = config.get("scorer", DEFAULTS["scorer"])
        if scorer not in scorer_names():
            raise ResponseInvalid("scorer", f"unknown scorer {scorer!r} (known: {', '.join(scorer_names())})")
        config["scorer"] = scorer
        config["seed"] = _int(config, "seed", minimum=0)
        config["tuples_per_pair"] = _int(config, "tuples_per_pair", minimum=1)
        config["attention_checks"] = _int(config, "attention_checks", minimum=0)
        config["n_splits"] = _int(config, "n_splits", minimum=1)
        if config.get("splits") is not None:
            try:
                config["splits"] = check_cross_topic(config["splits"])
            except ValueError as exc:
                raise ResponseInvalid("splits", str(exc).split(": ", 1)[-1]) from None
        pairs = config.setdefault("pairs", {})
        if not isinstance(pairs, dict):
            raise ResponseInvalid("pairs", "expected an object {pair id: {topic, a, b}}")
        return config

    def build_items(self, project, rows):
        """Tuples of pair ids (from :func:`annotation.task_types.bws_similarity.design.make_tuples`) -> payloads."""
        pairs = (project.config or {}).get("pairs") or {}
        items = []
        for n, tup in enumerate(rows):
            shown = [pairs[pid] for pid in tup]
            topic = shown[0]["topic"]
            items.append(
                {
                    "topic": topic,
                    "tuple": f"{topic}:{n}",
                    "pairs": [{"id": pid, "a": p["a"], "b": p["b"]} for pid, p in zip(tup, shown)],
                }
            )
        return items

    def item_links(self, payload):
        key = payload.get("tuple")
        return {"external_key": f"bws:{key}"[:200]} if key else {}

    def item_context(self, project, item):
        payload = item.payload or {}
        return {
            "item": item,
            "payload": payload,
            "topic": payload.get("topic", ""),
            "pairs": [dict(p, number=n) for n, p in enumerate(payload.get("pairs") or [], start=1)],
        }

    # --- responses ------------------------------------------------------------------------------
    def validate_response(self, project, item, data, *, assignment=None):
        if not isinstance(data, dict):
            raise ResponseInvalid("best", 'expected an object {"best": pair id, "worst": pair id}')
        extra = set(data) - set(FIELDS)
        if extra:
            raise ResponseInvalid(sorted(extra)[0], "unknown field")
        ids = [str(p.get("id")) for p in (item.payload or {}).get("pairs") or []]
        setting_up_gold = item.pk is None  # an expected answer of a gold item may name only the best pair
        cleaned = {}
        for field, word in (("best", "most"), ("worst", "least")):
            value = data.get(field)
            if isinstance(value, list):  # a repeated form field
                value = value[-1] if value else None
            if value is None or value == "":
                if setting_up_gold and field == "worst":
                    continue
                raise ResponseInvalid(field, f"choose the {word} similar pair")
            if not isinstance(value, (str, int)) or isinstance(value, bool) or str(value) not in ids:
                raise ResponseInvalid(field, f"{value!r} is not one of this task's pairs")
            cleaned[field] = str(value)
        if cleaned.get("worst") is not None and cleaned["worst"] == cleaned.get("best"):
            raise ResponseInvalid("worst", "the most and the least similar pair must differ")
        return cleaned

    def score_gold(self, project, gold, data):
        """Attention check: the expected most similar pair (two identical arguments) must be chosen as best; an
        expected least similar pair, if given, must not be chosen as best either."""
        expected = gold.expected or {}
        if data.get("best") != expected.get("best"):
            return 0.0
        if expected.get("worst") and data.get("worst") != expected["worst"]:
            return 0.5
        return 1.0

    def on_recompute(self, project, *, force=False):
        """BWS pair scores are stored beside the agreement snapshots (:func:`.project.refresh_scores`)."""
        refresh_scores(project, force=force)

    def aggregate(self, project, item, responses):
        best = Counter(r.get("best") for r in responses if r.get("best"))
        worst = Counter(r.get("worst") for r in responses if r.get("worst"))
        return {"best": dict(best), "worst": dict(worst), "n": len(responses)}

    def export_row(self, project, item, responses):
        payload = item.payload or {}
        return {
            "item_id": item.pk,
            "topic": payload.get("topic"),
            "tuple": payload.get("tuple"),
            "items": [p.get("id") for p in payload.get("pairs") or []],
            "judgements": [{"best": r.get("best"), "worst": r.get("worst")} for r in responses],
            "aggregate": self.aggregate(project, item, responses),
        }
