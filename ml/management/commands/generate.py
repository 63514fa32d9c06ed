"""``manage.py generate``: generation runs, their evaluation and human evaluation, and the demo (issue 12).

::

    manage.py generate run --mode arguments --input "nuclear energy | pro | waste" [--input ...]
        [--file INPUTS.jsonl | --lines INPUTS.txt] [--model-version ID] [--decoding theta=1.2 --decoding n=3]
        [--option turns=10] [--references REFS.jsonl] [--name NAME] [--evaluate] [--user USERNAME] [--json]
    manage.py generate evaluate RUN [--references REFS.jsonl] [--json]
    manage.py generate ratings RUN [--project SLUG] [--references REFS.jsonl] [--json]
    manage.py generate list [--json]
    manage.py generate demo [--steps 250] [--base-model PATH] [--user USERNAME] [--json]

``run``: inputs are JSON objects (``--file``, one a line) or text lines (``--input`` / ``--lines``; the formats of
:data:`ml.generation.generate.LINE_FORMATS`); without ``--model-version`` the active model of the mode's kind is used.
``--evaluate`` evaluates the new run at once. ``run`` generates in this process (the pages and the API queue runs
on a worker: :mod:`ml.generation.runs`); ``--user``: who may read the runs on the pages besides superusers.
``ratings`` creates ``pairwise_preference`` (argument runs; needs
reference arguments) or ``likert_debate`` (debate runs) items through :mod:`annotation.task_types.ratings`.

``demo``: trains two tiny models on the demo corpus (``argora/demo_data``): an Arg-CTRL causal LM on the demo
arguments (aspects from the baseline candidates of :mod:`annotation.task_types.aspect`, documents of >= 1 argument) and a
seq2seq debate model on the paths of the demo Kialo tree; then generates arguments for a few control codes,
counter-arguments and two short debates, evaluates the runs and prints the evaluation page URL. ``--base-model``
warm-starts both from that checkpoint (e.g. the packaged MiniLM) instead of tiny models from a config (slower).
Errors: exit 2 with ``FILE:LINE: reason`` / ``field: reason``.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.task_types.aspect.rankers import BaselineRanker
from annotation.task_types.ratings import RatingsError
from argora.progress import cli_progress, null_progress
from corpus.importers.base import ImportFailed
from corpus.importers.parsers import parse_kialo, parse_ukp_tsv
from ml import versions
from ml.errors import TrainerError
from ml.generation import corpora
from ml.generation import evaluate as ev
from ml.generation import generate as gen
from ml.generation.corpora import RowError, read_jsonl
from ml.generation.generate import detect_aspects
from ml.management.commands.train import parse_hp
from ml.splits import stable_split

DEMO_DIR = Path(__file__).resolve().parents[3] / "argora" / "demo_data"
TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128}


def _jsonl(path) -> list[dict]:
    rows = []
    try:
        for number, obj in read_jsonl(path):
            if not isinstance(obj, dict):
                raise CommandError(f"{path}:{number}: expected a JSON object", returncode=2)
            rows.append(obj)
    except FileNotFoundError:
        raise CommandError(f"{path}:0: no such file", returncode=2) from None
    except RowError as exc:
        raise CommandError(str(exc), returncode=2) from None
    return rows


# --- the demo --------------------------------------------------------------------------------------


def demo_aspect_rows(directory: Path = DEMO_DIR, *, max_aspects: int = 2) -> tuple[list[dict], list[dict]]:
    """(train, dev) aspect rows of the demo arguments (``set`` train vs. val/test); aspects are the best
    baseline candidates (document frequencies from the demo file itself)."""
    path = directory / "arguments.tsv"
    parsed = parse_ukp_tsv(path, path.read_text(encoding="utf-8"))
    by_topic: dict[str, list[str]] = {}
    for s in parsed.sentences:
        by_topic.setdefault(s.topic, []).append(s.text)
    ranker = BaselineRanker(by_topic, load_from_db=False)
    train, dev = [], []
    for s in parsed.sentences:
        if s.stance not in ("pro", "con"):
            continue
        aspects, _ = detect_aspects(s.text, s.topic, max_aspects=max_aspects, use_tagger=False, ranker=ranker)
        if not aspects:
            continue
        row = {"topic": s.topic, "stance": s.stance, "sentence": s.text, "aspects": aspects}
        (train if s.metadata.get("set") == "train" else dev).append(row)
    return train, dev


def demo_debate_rows(directory: Path = DEMO_DIR) -> tuple[list[dict], str]:
    """(debate-path rows ``{"prompt", "response", "strategy"}`` of the demo Kialo tree, its thesis)."""
    path = directory / "school-uniforms.kialo.txt"
    tree = parse_kialo(path, path.read_text(encoding="utf-8")).trees[0]
    nodes = [
        corpora.Node(
            path=n.path, parent=n.path.rsplit(".", 1)[0] if "." in n.path else None, stance=n.stance, text=n.text
        )
        for n in tree.nodes
    ]
    rows, seen = [], set()
    for strategy in ("complex", "multi-turn"):
        for pair in corpora.debate_pairs(nodes, strategy):
            key = pair.key
            if key in seen:
                continue
            seen.add(key)
            rows.append({"strategy": strategy, "prompt": pair.prompt_text(), "response": pair.response_text()})
    root = next(n for n in tree.nodes if n.path == "1")
    return rows, root.text


def run_demo(
    *, steps: int = 250, base_model: str | None = None, progress=None, seed: int = 13, created_by: int | None = None
) -> dict:
    """Train, generate, evaluate (see the module docstring); returns the run ids, versions and URLs. The runs are
    readable on the pages by ``created_by`` (a user id) and superusers."""
    from django.urls import reverse

    progress = progress or null_progress
    hp_common = {
        "max_steps": int(steps),
        "batch_size": 8,
        "lr": 5e-3 if not base_model else 1e-4,
        "warmup_ratio": 0.05,
        "patience": 1000,
        "max_evals": 2,
        "keep_best": False,
    }
    if not base_model:
        hp_common["from_config"] = dict(TINY)
    train_rows, dev_rows = demo_aspect_rows()
    causal = versions.train_version(
        "generator",
        rows_train=train_rows,
        rows_dev=dev_rows,
        base_model=base_model,
        seed=seed,
        hyperparameters=dict(hp_common, min_args=1, block_size=128),
        data_snapshot="demo:argora/demo_data/arguments.tsv",
        progress=progress,
    )
    debate_rows, thesis = demo_debate_rows()
    d_train, d_dev = stable_split(debate_rows, key="prompt", dev_fraction=0.15)
    seq = versions.train_version(
        "seq2seq",
        rows_train=d_train,
        rows_dev=d_dev,
        base_model=base_model,
        seed=seed,
        hyperparameters=dict(hp_common, max_target_length=64, max_source_length=128),
        data_snapshot="demo:argora/demo_data/school-uniforms.kialo.txt",
        progress=progress,
    )

    codes = []
    for row in dev_rows[:4] + train_rows[:: max(1, len(train_rows) // 4)][:4]:
        code = {"topic": row["topic"], "stance": row["stance"], "aspect": row["aspects"][0]}
        if code not in codes:
            codes.append(code)
    references = [
        {"topic": r["topic"], "stance": r["stance"], "aspects": r["aspects"], "text": r["sentence"]} for r in dev_rows
    ]
    args_run = gen.run_generation(
        "arguments",
        codes,
        version=causal,
        decoding={"max_new_tokens": 40},
        references=references,
        name="demo: arguments",
        created_by=created_by,
    )
    counter_inputs = [{"argument": r["sentence"], "topic": r["topic"], "stance": r["stance"]} for r in dev_rows[:2]]
    counter_run = gen.run_generation(
        "counter",
        counter_inputs,
        version=causal,
        decoding={"max_new_tokens": 40},
        options={"max_aspects": 2},
        references=references,
        name="demo: counter",
        created_by=created_by,
    )
    debate_run = gen.run_generation(
        "debate",
        [{"thesis": thesis, "turns": 4}, {"thesis": "Pupils should choose their own clothes.", "turns": 4}],
        version=seq,
        decoding={"max_new_tokens": 30},
        name="demo: debates",
        created_by=created_by,
    )
    metrics = {}
    for run in (args_run, counter_run, debate_run):
        metrics[run["id"]] = ev.evaluate_run(run["id"])
    return {
        "versions": {"generator": causal.pk, "seq2seq": seq.pk},
        "train_loss": {
            "generator": [causal.metrics["info"]["first_loss"], causal.metrics["info"]["last_loss"]],
            "seq2seq": [seq.metrics["info"]["first_loss"], seq.metrics["info"]["last_loss"]],
        },
        "runs": {"arguments": args_run["id"], "counter": counter_run["id"], "debate": debate_run["id"]},
        "outputs": {
            "arguments": [o["text"] for o in args_run["outputs"]],
            "debate": [[t["text"] for t in o["turns"]] for o in debate_run["outputs"]],
        },
        "metrics": {k: {m: v for m, v in d.items() if isinstance(v, (int, float))} for k, d in metrics.items()},
        "urls": {
            "evaluation": reverse("ml:generation-evaluation"),
            **{
                name: reverse("ml:generation-run", args=[rid])
                for name, rid in (
                    ("arguments", args_run["id"]),
                    ("counter", counter_run["id"]),
                    ("debate", debate_run["id"]),
                )
            },
        },
    }


# --- the command -----------------------------------------------------------------------------------


class Command(BaseCommand):
    help = "Generation runs (run / evaluate / ratings / list) and the demo (train tiny models, generate, evaluate)."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["run", "evaluate", "ratings", "list", "demo"])
        parser.add_argument("run_id", nargs="?", help="the run (evaluate, ratings)")
        parser.add_argument("--mode", choices=["arguments", "counter", "argu", "responses", "debate"])
        parser.add_argument("--input", action="append", default=[], help="one input line (repeatable)")
        parser.add_argument("--lines", help="a text file of input lines")
        parser.add_argument("--file", help="a JSONL file of input objects")
        parser.add_argument(
            "--model-version",
            dest="model_version",
            type=int,
            help="model version id (default: the active one of the kind)",
        )
        parser.add_argument("--decoding", action="append", default=[], help="decoding key=value (repeatable)")
        parser.add_argument("--option", action="append", default=[], help="mode option key=value (repeatable)")
        parser.add_argument("--references", help="JSONL reference rows {topic, stance, aspect(s), text}")
        parser.add_argument("--name", default="")
        parser.add_argument("--evaluate", action="store_true", help="run: evaluate the new run")
        parser.add_argument("--project", help="ratings: project slug (created as a draft if missing)")
        parser.add_argument("--steps", type=int, default=250, help="demo: optimisation steps per model")
        parser.add_argument("--base-model", dest="base_model", help="demo: warm-start from this checkpoint")
        parser.add_argument(
            "--user", help="run, demo: the username who may read the runs on the pages (default: none, superusers only)"
        )
        parser.add_argument("--json", action="store_true")

    def _out(self, opts, data, text: str):
        self.stdout.write(json.dumps(data, sort_keys=True, default=str, ensure_ascii=False) if opts["json"] else text)

    def handle(self, *args, **opts):
        action = opts["action"]
        owner = None
        if opts["user"]:
            owner = get_user_model().objects.filter(username=opts["user"]).values_list("pk", flat=True).first()
            if owner is None:
                raise CommandError(f"--user: no user {opts['user']!r}", returncode=2)
        try:
            if action == "demo":
                with cli_progress("demo: train") as progress:
                    out = run_demo(
                        steps=opts["steps"], base_model=opts["base_model"], progress=progress, created_by=owner
                    )
                lines = [f"trained generator #{out['versions']['generator']} and seq2seq #{out['versions']['seq2seq']}"]
                lines += [f"  generated: {t}" for t in out["outputs"]["arguments"]]
                lines += [f"run {name}: {out['urls'][name]}" for name in ("arguments", "counter", "debate")]
                lines.append(f"evaluation page: {out['urls']['evaluation']}")
                self._out(opts, out, "\n".join(lines))
                return
            if action == "list":
                runs = gen.list_runs(100)
                self._out(
                    opts,
                    runs,
                    "\n".join(
                        f"{r['id']}  {r['mode']:<9}  {r['system']:<16}  {r['n_outputs']:>4} "
                        f"outputs{'  evaluated' if r['evaluated'] else ''}  {r['name']}"
                        for r in runs
                    )
                    or "no runs",
                )
                return
            references = _jsonl(opts["references"]) if opts["references"] else None
            if action in ("evaluate", "ratings"):
                if not opts["run_id"]:
                    raise CommandError(f"run_id: give the run to {action}", returncode=2)
                gen.get_run(opts["run_id"])
                if action == "evaluate":
                    result = ev.evaluate_run(opts["run_id"], references=references)
                    flat = {k: v for k, v in result.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
                    self._out(opts, result, "\n".join(f"{k}: {v:.4f}" for k, v in flat.items()))
                else:
                    outcome = ev.send_to_ratings(opts["run_id"], project_slug=opts["project"], references=references)
                    self._out(
                        opts,
                        outcome,
                        f"{outcome['created']} {outcome['task_type']} items in project "
                        f"{outcome['project']} ({outcome['skipped']} skipped, {outcome['hits']} HITs)",
                    )
                return
            # run
            if not opts["mode"]:
                raise CommandError("--mode: required for run", returncode=2)
            if opts["file"]:
                inputs = _jsonl(opts["file"])
            else:
                text = "\n".join(opts["input"])
                if opts["lines"]:
                    try:
                        text += "\n" + Path(opts["lines"]).read_text(encoding="utf-8")
                    except FileNotFoundError:
                        raise CommandError(f"{opts['lines']}:0: no such file", returncode=2) from None
                inputs = gen.parse_lines(opts["mode"], text)
            run = gen.run_generation(
                opts["mode"],
                inputs,
                version=opts["model_version"],
                decoding=parse_hp(opts["decoding"], "decoding"),
                options=parse_hp(opts["option"], "option"),
                references=references,
                name=opts["name"],
                created_by=owner,
            )
            result = {"run": run["id"], "outputs": run["outputs"]}
            if opts["evaluate"]:
                result["metrics"] = ev.evaluate_run(run["id"])
            from django.urls import reverse

            result["url"] = reverse("ml:generation-run", args=[run["id"]])
            text = [f"run {run['id']} ({len(run['outputs'])} outputs): {result['url']}"]
            for o in run["outputs"]:
                if o.get("turns"):
                    text += [f"  [{o['id']}] {o['topic']}"] + [f"     {t['speaker']}: {t['text']}" for t in o["turns"]]
                else:
                    text.append(
                        f"  [{o['id']}] {o.get('control_code') or o.get('prompt') or ''} -> {o.get('text', '')}"
                    )
            self._out(opts, result, "\n".join(text))
        except (gen.GenerationError, TrainerError, RatingsError, ImportFailed) as exc:
            raise CommandError(str(exc), returncode=2) from None
