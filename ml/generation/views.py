"""Expert pages of argument generation (the Researcher role; mounted under ``/ml/`` by ``ml/generation/urls.py``)::

    /ml/generation/                      generate: model version, mode, inputs (one a line), decoding -> a queued run
                                         (the page goes to the run page at once); "Train a generator" from a release;
                                         the user's latest runs
    /ml/generation/train/                POST: queue ml.tasks.train on a release (-> the job page)
    /ml/generation/runs/<id>/            one run: outputs as the worker writes them (the page polls
                                         /api/generate/runs/<id>/), progress bar, state and job; once done its
                                         evaluation and the buttons "Evaluate" and "Send to human evaluation"
                                         (pairwise or Likert items via annotation.task_types.ratings)
    /ml/generation/runs/<id>/evaluate/   POST: compute and store the run's metrics
    /ml/generation/runs/<id>/ratings/    POST (project = optional slug): create the rating items
    /ml/generation/evaluation/           every evaluated run of the user side by side (key metrics per mode)

A run is shown to its creator and superusers only (others: 404). The work is in :mod:`ml.generation.runs`,
:mod:`ml.generation.generate` and :mod:`ml.generation.evaluate`; these views parse and render.
"""

from __future__ import annotations

import re

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.task_types.ratings import RatingsError
from corpus.importers.base import ImportFailed
from ml.models import ModelVersion
from ml.views import staff_required

from . import evaluate as ev
from . import generate as gen
from . import runs

DECODING_FIELDS = {
    "max_new_tokens": int,
    "theta": float,
    "temperature": float,
    "top_k": int,
    "n": int,
    "num_beams": int,
    "no_repeat_ngram_size": int,
    "seed": int,
}
OPTION_FIELDS = {"turns": int, "context_turns": int, "max_aspects": int, "argu": str}


def _versions():
    return list(
        ModelVersion.objects.filter(kind__in=("generator", "seq2seq"), status="ready")
        .select_related("project")
        .order_by("kind", "-id")[:100]
    )


def parse_form(data) -> tuple[dict, dict, dict]:
    """(decoding, options, errors) from POSTed fields (empty fields keep the defaults)."""
    decoding, options, errors = {}, {}, {}
    for fields, target in ((DECODING_FIELDS, decoding), (OPTION_FIELDS, options)):
        for name, cast in fields.items():
            raw = (data.get(name) or "").strip()
            if not raw:
                continue
            try:
                target[name] = cast(raw)
            except ValueError:
                errors[name] = f"{name}: {raw!r} is not a {cast.__name__}"
    return decoding, options, errors


def _form_field(message: str, form: dict) -> str:
    """The form field a GenerationError names (``"decoding.theta: ..."`` -> ``theta``), else ``inputs``."""
    match = re.match(r"^(decoding|options)\.([a-z_]+):", message)
    if match and match.group(2) in form:
        return match.group(2)
    field = re.split(r"[.\[: ]", message, maxsplit=1)[0]
    return field if field in form else "inputs"


TRAIN_FIELDS = ("release", "kind", "size", "max_steps", "strategy")


def _page_context(request, **extra) -> dict:
    context = {
        "versions": _versions(),
        "modes": gen.MODES,
        "formats": gen.LINE_FORMATS,
        "runs": runs.runs_for(request.user, 20),
        "form": {"mode": "arguments", "inputs": "", "model_version": ""},
        "errors": {},
        "releases": list(runs.training_releases(request.user)[:100]),
        "sizes": list(runs.SIZES),
        "strategies": runs.DEBATE_STRATEGIES,
        "release_kinds": runs.RELEASE_KINDS,
        "train": dict(runs.TRAIN_DEFAULTS, release="", kind="generator"),
        "train_errors": {},
    }
    context.update(extra)
    return context


@staff_required(researchers=True)
def generate_page(request):
    if request.method != "POST":
        return render(request, "ml/generation/generate.html", _page_context(request))
    form = {
        k: request.POST.get(k, "")
        for k in ("mode", "inputs", "model_version", "name", *DECODING_FIELDS, *OPTION_FIELDS)
    }
    decoding, options, errors = parse_form(request.POST)
    mode = form["mode"]
    inputs = []
    if not errors:
        try:
            inputs = gen.parse_lines(mode, form["inputs"])
        except gen.GenerationError as exc:
            errors["inputs"] = str(exc)
    if not errors:
        try:
            run = runs.start_run(
                mode,
                inputs,
                user=request.user,
                version=form["model_version"] or None,
                decoding=decoding,
                options=options,
                name=form.get("name", ""),
            )
        except gen.GenerationError as exc:
            errors[_form_field(str(exc), form)] = str(exc)
        except runs.QueueUnavailable as exc:
            errors["queue"] = str(exc)
        else:
            messages.success(request, f"Run {run['id']} queued: {run['n_inputs']} input(s).")
            return redirect(reverse("ml:generation-run", args=[run["id"]]))
    return render(
        request,
        "ml/generation/generate.html",
        _page_context(request, form=form, errors=errors),
        status=503 if "queue" in errors else 400,
    )


@staff_required(researchers=True)
@require_POST
def train_page(request):
    """The "Train a generator" form: a release of a generation corpus kind, the kind, the size and steps."""
    form = {k: (request.POST.get(k) or "").strip() for k in TRAIN_FIELDS}
    errors = {}
    release = None
    if not form["release"].isdigit():
        errors["release"] = "release: choose a published aspect-docs, debate-paths or argu-inputs release"
    else:
        release = runs.training_releases(request.user).filter(pk=int(form["release"])).first()
        if release is None:
            errors["release"] = f"release: no release {form['release']} you may read of a generation corpus kind"
    if form["kind"] not in ("generator", "seq2seq"):
        errors["kind"] = "kind: generator or seq2seq"
    try:
        max_steps = int(form["max_steps"] or runs.TRAIN_DEFAULTS["max_steps"])
    except ValueError:
        errors["max_steps"] = f"max_steps: {form['max_steps']!r} is not a whole number"
    if not errors:
        try:
            task_id = runs.start_training(
                request.user,
                release=release,
                kind=form["kind"],
                size=form["size"] or runs.TRAIN_DEFAULTS["size"],
                max_steps=max_steps,
                strategy=form["strategy"] or runs.TRAIN_DEFAULTS["strategy"],
            )
        except gen.GenerationError as exc:
            field = str(exc).split(":", 1)[0]
            errors[field if field in TRAIN_FIELDS else "release"] = str(exc)
        else:
            messages.success(request, f"Training a {form['kind']} on {release} (activated when ready).")
            return redirect(reverse("job-detail", args=[task_id]))
    return render(
        request, "ml/generation/generate.html", _page_context(request, train=form, train_errors=errors), status=400
    )


def _run_or_404(request, run_id):
    try:
        run = gen.get_run(run_id)
    except gen.GenerationError:
        raise Http404("no such generation run") from None
    if not runs.visible(request.user, run):
        raise Http404("no such generation run")
    return run


@staff_required(researchers=True)
def run_page(request, run_id: str):
    run = _run_or_404(request, run_id)
    metrics = run.get("metrics") or {}
    present = metrics.get("aspect_present") or []
    with_aspect = [o for o in run["outputs"] if (o.get("text") or "").strip() and o.get("aspect")]
    marks = {id(o): p for o, p in zip(with_aspect, present)}
    rows = [{"o": o, "aspect_present": marks.get(id(o))} for o in run["outputs"]]
    summary = [
        (k, LABELS.get(k, k.replace("_", " ")), _num(v, k))
        for k, v in metrics.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in ("training_arguments",)
    ]
    state = runs.public(run)
    return render(
        request,
        "ml/generation/run.html",
        {
            "run": run,
            "rows": rows,
            "metrics": metrics,
            "summary": summary,
            "state": state,
            "finished": run["status"] in runs.FINISHED,
            "done": run["status"] == runs.DONE,
            "novelty": (metrics.get("novelty") or {}),
            "reference": metrics.get("reference"),
            "retrieval": metrics.get("retrieval"),
            "ratings": run.get("ratings") or {},
            "rateable": run["mode"] == "debate"
            or bool(run.get("references_rows"))
            or any(o.get("reference") and o.get("stance") for o in run["outputs"]),
        },
    )


@staff_required(researchers=True)
@require_POST
def run_evaluate(request, run_id: str):
    run = _run_or_404(request, run_id)
    if run["status"] != runs.DONE:
        messages.error(request, f"Run {run_id} is {run['status']}: evaluate it once it is done.")
        return redirect(reverse("ml:generation-run", args=[run_id]))
    try:
        ev.evaluate_run(run_id)
    except (gen.GenerationError, ValueError) as exc:
        messages.error(request, f"Evaluation failed: {exc}")
    else:
        messages.success(request, "Evaluation stored.")
    return redirect(reverse("ml:generation-run", args=[run_id]))


@staff_required(researchers=True)
@require_POST
def run_ratings(request, run_id: str):
    run = _run_or_404(request, run_id)
    if run["status"] != runs.DONE:
        messages.error(request, f"Run {run_id} is {run['status']}: send it once it is done.")
        return redirect(reverse("ml:generation-run", args=[run_id]))
    try:
        outcome = ev.send_to_ratings(run_id, project_slug=(request.POST.get("project") or "").strip() or None)
    except (gen.GenerationError, RatingsError, ImportFailed) as exc:
        messages.error(request, f"Not sent: {exc}")
    else:
        messages.success(
            request,
            f"{outcome['created']} {outcome['task_type']} items in project "
            f"{outcome['project']} ({outcome['skipped']} already there, "
            f"{outcome['hits']} new HITs).",
        )
    return redirect(reverse("ml:generation-run", args=[run_id]))


LABELS = {
    "n_outputs": "outputs",
    "empty": "empty outputs",
    "mean_words": "mean words per output",
    "distinct_1": "distinct-1",
    "distinct_2": "distinct-2",
    "aspect_presence": "aspect presence",
    "fact_faithfulness": "fact faithfulness (cosine)",
    "bleu": "BLEU",
    "rouge_l": "ROUGE-L",
    "meteor": "METEOR",
    "n_references": "outputs with a reference",
    "debates": "debates",
    "mean_turns": "turns per debate",
    "mean_words_per_turn": "words per turn",
    "dev_perplexity": "dev perplexity",
    "ref_meteor": "METEOR vs. references",
    "ref_rouge_l": "ROUGE-L vs. references",
    "retrieval_meteor": "retrieval METEOR",
    "retrieval_rouge_l": "retrieval ROUGE-L",
    "novelty_cosine": "nearest training cosine",
    "novelty_overlap": "overlap with nearest training",
}


COUNTS = {"n_outputs", "empty", "n_references", "debates"}


def _num(value, key: str = "") -> str:
    """Counts as integers, perplexities with 2 decimals, scores with 4."""
    if key in COUNTS or isinstance(value, int):
        return str(int(value))
    return f"{value:.2f}" if "perplexity" in key else f"{value:.4f}"


KEY_METRICS = (
    "aspect_presence",
    "fact_faithfulness",
    "bleu",
    "rouge_l",
    "meteor",
    "mean_words",
    "distinct_2",
    "mean_turns",
)


@staff_required(researchers=True)
def evaluation_page(request):
    rows = []
    for meta in runs.runs_for(request.user, 200):
        if not meta.get("evaluated"):
            continue
        try:
            metrics = gen.get_run(meta["id"]).get("metrics") or {}
        except gen.GenerationError:
            continue
        ref = metrics.get("reference") or {}
        ret = metrics.get("retrieval") or {}
        nov = metrics.get("novelty") or {}
        values = {k: metrics.get(k) for k in KEY_METRICS}
        ref = ref if ref.get("scored") else {}  # no output had a reference of its code: nothing to show
        ret = ret if ret.get("scored") else {}
        values.update(
            {
                "ref_meteor": ref.get("meteor"),
                "ref_rouge_l": ref.get("rouge_l"),
                "retrieval_meteor": ret.get("meteor"),
                "retrieval_rouge_l": ret.get("rouge_l"),
                "novelty_cosine": nov.get("mean_cosine"),
                "novelty_overlap": nov.get("mean_overlap"),
                "dev_perplexity": (metrics.get("model_dev") or {}).get("perplexity"),
            }
        )
        rows.append({"meta": meta, "values": values})
    columns = [
        "dev_perplexity",
        "aspect_presence",
        "ref_meteor",
        "ref_rouge_l",
        "retrieval_meteor",
        "retrieval_rouge_l",
        "novelty_cosine",
        "novelty_overlap",
        "fact_faithfulness",
        "bleu",
        "rouge_l",
        "meteor",
        "mean_words",
        "distinct_2",
        "mean_turns",
    ]
    columns = [c for c in columns if any(r["values"].get(c) is not None for r in rows)]
    for r in rows:
        r["cells"] = [None if r["values"].get(c) is None else _num(r["values"][c], c) for c in columns]
    return render(
        request, "ml/generation/evaluation.html", {"rows": rows, "columns": [(c, LABELS.get(c, c)) for c in columns]}
    )
