"""Inter-annotator agreement from CSV files or a project.

    manage.py agreement alpha --file M.csv --level nominal|ordinal|interval|ratio [--bootstrap 1000 --seed 0] [--json]
    manage.py agreement alpha-u --spans S.csv --lengths L.csv [--coders a,b,c] [--json]
    manage.py agreement kappa --file M.csv [--json]
    manage.py agreement project <project-slug> [--json]
    manage.py agreement alt-test --humans H.json --models M.json [--scoring accuracy|neg_rmse] [--epsilon 0.2]
                                 [--alpha 0.05] [--min-instances 30] [--json]

M.csv: header ``coder,<unit ids...>``, one row per coder, empty cell = missing. S.csv: ``coder,item,begin,length,
category``; L.csv: ``item,length`` (the continuum = the items in L.csv order). ``--json`` prints one JSON object
(keys ``alpha`` / ``alpha_u`` / ``kappa``, ``percent_agreement``, ``n_units``, ``n_coders``, ``per_category``,
``ci``...); otherwise a table. Bad input exits 2 with ``file:line: reason``.

alt-test (:mod:`annotation.agreement.alttest`): H.json is ``{annotator: {instance: label}}``, M.json either
``{model: {instance: label}}`` or one model's ``{instance: label}`` (named after the file) -- the shapes of the
reference repository nitaytech/AltTest. ``--json`` prints ``{"models": {name: {"winning_rate",
"advantage_probability", "passed", "per_annotator", "problems", ...}}, "scoring", "epsilon", "alpha"}``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.agreement import LEVELS, AgreementError, alpha_report, kappa_report
from annotation.agreement.alttest import (
    DEFAULT_ALPHA,
    DEFAULT_EPSILON,
    MIN_INSTANCES,
    SCORINGS,
    alt_test,
)
from annotation.agreement.errors import AgreementInputError
from annotation.agreement.io import read_matrix_csv, unitized_alpha_from_csv
from annotation.agreement.table import project_table


def _fmt(v) -> str:
    if isinstance(v, float):
        return "n/a" if math.isnan(v) else f"{v:.4f}"
    if v is None:
        return "n/a"
    return str(v)


def _fmt2(v) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def _input_error(path, reason) -> CommandError:
    return CommandError(str(AgreementInputError(reason, path=path)), returncode=2)


def _read_json(path: str):
    try:
        with open(path, encoding="utf-8-sig") as fh:
            return json.load(fh)
    except OSError as exc:
        raise _input_error(path, f"cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise _input_error(path, "not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise CommandError(
            str(AgreementInputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno)), returncode=2
        ) from None


class Command(BaseCommand):
    help = (
        "Agreement coefficients (Krippendorff's alpha, alpha_u, Cohen's/Fleiss' kappa) from CSV files or a "
        "project; the alt-test of model annotators from JSON files."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="subcommand", required=True, metavar="{alpha,alpha-u,kappa,project,alt-test}")
        a = sub.add_parser("alpha", help="Krippendorff's alpha of a coders x units matrix")
        a.add_argument("--file", required=True, help="CSV: coder,<unit ids...>; empty cell = missing")
        a.add_argument("--level", default="nominal", choices=LEVELS)
        a.add_argument(
            "--bootstrap",
            type=int,
            default=0,
            metavar="N",
            help="percentile CI from N bootstrap resamples of the units (0 = none)",
        )
        a.add_argument("--confidence", type=float, default=0.95)
        a.add_argument("--seed", type=int, default=0)
        a.add_argument("--json", action="store_true")
        u = sub.add_parser("alpha-u", help="Krippendorff's unitized alpha of span annotations")
        u.add_argument("--spans", required=True, help="CSV: coder,item,begin,length,category")
        u.add_argument("--lengths", required=True, help="CSV: item,length (continuum order)")
        u.add_argument(
            "--coders", default=None, help="comma-separated list of all coders (include coders who marked nothing)"
        )
        u.add_argument("--json", action="store_true")
        k = sub.add_parser("kappa", help="Cohen's kappa (pairwise mean for >2 coders), percent agreement")
        k.add_argument("--file", required=True, help="CSV: coder,<unit ids...>; empty cell = missing")
        k.add_argument("--json", action="store_true")
        p = sub.add_parser("project", help="per-project agreement table")
        p.add_argument("project", help="project slug")
        p.add_argument("--json", action="store_true")
        t = sub.add_parser("alt-test", help="alternative annotator test: may a model replace a human annotator?")
        t.add_argument("--humans", required=True, help="JSON: {annotator: {instance: label}}")
        t.add_argument(
            "--models", required=True, help="JSON: {model: {instance: label}}, or one model's {instance: label}"
        )
        t.add_argument("--scoring", default="accuracy", choices=sorted(SCORINGS))
        t.add_argument(
            "--epsilon",
            type=float,
            default=DEFAULT_EPSILON,
            help="cost-benefit margin (0.2 experts, 0.15 skilled annotators, 0.1 crowd workers)",
        )
        t.add_argument("--alpha", type=float, default=DEFAULT_ALPHA, help="FDR level (Benjamini-Yekutieli)")
        t.add_argument(
            "--min-instances", type=int, default=MIN_INSTANCES, help="shared instances a human needs to be tested"
        )
        t.add_argument("--json", action="store_true")

    def handle(self, *args, **o):
        if o["subcommand"] == "alt-test":
            return self._alt_test(o)
        try:
            result, title = getattr(self, "_" + o["subcommand"].replace("-", "_"))(o)
        except AgreementError as exc:
            raise CommandError(str(exc), returncode=2) from None
        if o["json"]:
            self.stdout.write(json.dumps(result, default=str, allow_nan=False))
        else:
            self._table(title, result)

    def _alpha(self, o):
        table = read_matrix_csv(o["file"], o["level"])
        try:
            res = alpha_report(
                table.matrix, o["level"], bootstrap=o["bootstrap"], seed=o["seed"], confidence=o["confidence"]
            )
        except AgreementError as exc:
            raise CommandError(f"{o['file']}: {exc}", returncode=2) from None
        return res.as_dict(), f"Krippendorff's alpha ({o['level']})"

    def _alpha_u(self, o):
        coders = [c.strip() for c in o["coders"].split(",") if c.strip()] if o["coders"] else None
        try:
            res = unitized_alpha_from_csv(o["spans"], o["lengths"], coders=coders)
        except AgreementError as exc:
            msg = str(exc)
            if not msg.startswith((o["spans"], o["lengths"])):
                msg = f"{o['spans']}: {msg}"
            raise CommandError(msg, returncode=2) from None
        return res.as_dict(), "Krippendorff's unitized alpha (alpha_u)"

    def _kappa(self, o):
        table = read_matrix_csv(o["file"], "nominal")
        try:
            res = kappa_report(table.data, coders=table.coders)
        except AgreementError as exc:
            raise CommandError(f"{o['file']}: {exc}", returncode=2) from None
        return res, "Cohen's kappa" if len(table.coders) == 2 else "Cohen's kappa, mean over coder pairs"

    def _project(self, o):
        try:
            res = project_table(o["project"])
        except LookupError as exc:
            raise CommandError(f"project {o['project']!r}: {exc}", returncode=2) from None
        return res, f"Agreement of project {o['project']}"

    def _alt_test(self, o):
        humans = _read_json(o["humans"])
        if not isinstance(humans, dict) or not humans:
            raise _input_error(o["humans"], "expected a JSON object {annotator: {instance: label}}")
        for h, anns in humans.items():
            if not isinstance(anns, dict):
                raise _input_error(o["humans"], f"annotator {h!r}: expected an object {{instance: label}}")
        models = _read_json(o["models"])
        if not isinstance(models, dict) or not models:
            raise _input_error(o["models"], "expected a JSON object {model: {instance: label}} or {instance: label}")
        nested = [isinstance(v, dict) for v in models.values()]
        if all(nested):
            pass
        elif not any(nested):
            models = {Path(o["models"]).stem: models}
        else:
            raise _input_error(o["models"], "mixes models ({model: {instance: label}}) and labels ({instance: label})")
        out = {}
        try:
            for name, labels in models.items():
                out[name] = alt_test(
                    humans,
                    labels,
                    scoring=o["scoring"],
                    epsilon=o["epsilon"],
                    alpha=o["alpha"],
                    min_instances=o["min_instances"],
                ).as_dict()
        except ValueError as exc:  # AltTestInputError: field: reason
            raise CommandError(str(exc), returncode=2) from None
        result = {"models": out, "scoring": o["scoring"], "epsilon": o["epsilon"], "alpha": o["alpha"]}
        if o["json"]:
            self.stdout.write(json.dumps(result, default=str, allow_nan=False))
            return
        w = self.stdout.write
        w(f"Alt-test ({o['scoring']}, epsilon={o['epsilon']}, alpha={o['alpha']}): {len(humans)} human annotators")
        width = max(10, *(len(str(n)) for n in out))
        w(f"  {'model':<{width}}  {'verdict':<8} {'winning rate':>12} {'advantage p':>12} {'humans tested':>14}")
        for name, r in out.items():
            verdict = "n/a" if r["passed"] is None else ("PASSED" if r["passed"] else "FAILED")
            w(
                f"  {name:<{width}}  {verdict:<8} {_fmt2(r['winning_rate']):>12} "
                f"{_fmt2(r['advantage_probability']):>12} {r['n_tested']:>8} of {r['n_humans']:<3}"
            )
        for name, r in out.items():
            for p in r["problems"]:
                w(f"  {name}: no verdict: {p}")
            for n in r["notes"]:
                w(f"  {name}: {n}")

    def _table(self, title, result):
        w = self.stdout.write
        w(title)
        scalars = {k: v for k, v in result.items() if not isinstance(v, (dict, list))}
        width = max((len(k) for k in scalars), default=10)
        for k, v in scalars.items():
            w(f"  {k:<{width}}  {_fmt(v)}")
        ci = result.get("ci")
        if isinstance(ci, dict):
            w(
                f"  {'ci':<{width}}  [{_fmt(ci['low'])}, {_fmt(ci['high'])}] ({ci['confidence']:.0%}, "
                f"{ci['n_boot']} resamples)"
            )
        per = result.get("per_category")
        if isinstance(per, dict) and per:
            w("")
            w(f"  {'category':<20} {'alpha_u':>8} {'D_o':>10} {'D_e':>10} {'spans':>7}")
            for cat, row in per.items():
                if isinstance(row, dict):
                    w(
                        f"  {cat:<20} {_fmt(row.get('alpha_u')):>8} {_fmt(row.get('observed_disagreement')):>10} "
                        f"{_fmt(row.get('expected_disagreement')):>10} {row.get('n_spans', ''):>7}"
                    )
                else:
                    w(f"  {cat:<20} {_fmt(row):>8}")
        pairs = result.get("pairs")
        if isinstance(pairs, list) and pairs:
            w("")
            w(f"  {'coder a':<15} {'coder b':<15} {'kappa':>8} {'agree':>8} {'units':>6}")
            for p in pairs:
                w(
                    f"  {p['a']!s:<15} {p['b']!s:<15} {_fmt(p.get('kappa')):>8} "
                    f"{_fmt(p.get('percent_agreement')):>8} {p.get('n_units', ''):>6}"
                )
        for k, v in result.items():
            if isinstance(v, (dict, list)) and k not in ("ci", "per_category", "pairs"):
                w(f"  {k}: {json.dumps(v, default=str)}")
