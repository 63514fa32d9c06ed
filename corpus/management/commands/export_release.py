"""Build and publish a versioned, immutable dataset release.

    manage.py export_release --name ukp-sentences --version 1.0 --split cross-topic
    manage.py export_release --name ukp-sentences --version 1.1 --split in-topic --seed 13 --sizes 3532,500,1000
    manage.py export_release --name aspects --version 1.0 --kind aspects --config release.json
    manage.py export_release --name pilot --version 1.0 --kind annotations --config release.json \
        --license CC-BY-4.0 --citation "$(cat CITATION.bib)" --description "Stance labels of the pilot."

Prints the release folder and one ``sha256  file`` line per file. A refused re-publish of an existing
name+version, or a bad configuration, exits with status 2 and the reason.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from argora.progress import cli_progress
from corpus.releases import APP_F_IN_TOPIC_SIZES, build_release, release_path


class Command(BaseCommand):
    help = "Build and publish a versioned, immutable dataset release (JSONL files + README.md card)."

    def create_parser(self, prog_name, subcommand, **kwargs):
        # --version is the release version here, not Django's "show the version" flag.
        kwargs.setdefault("conflict_handler", "resolve")
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True, help="release name (letters, digits, . _ -)")
        parser.add_argument("--version", dest="release_version", required=True, help="release version, e.g. 1.0")
        parser.add_argument("--kind", default="sentences", help="exporter to use (default: sentences)")
        source = parser.add_mutually_exclusive_group()
        source.add_argument("--config", help="JSON file with the exporter configuration")
        source.add_argument("--topics", help='comma-separated topic names, e.g. "nuclear energy,abortion"')
        parser.add_argument(
            "--split", choices=["none", "cross-topic", "in-topic"], help="split mode (default: the config's, else none)"
        )
        parser.add_argument("--seed", type=int, default=13, help="random seed of the in-topic split (default 13)")
        parser.add_argument(
            "--sizes",
            help="in-topic sizes train,dev,test, e.g. %s" % ",".join(str(v) for v in APP_F_IN_TOPIC_SIZES.values()),
        )
        parser.add_argument("--creator", help="username recorded as the release's creator")
        parser.add_argument(
            "--include-non-arguments", action="store_true", help="also export sentences with stance none"
        )
        parser.add_argument("--license", help="the dataset card's licence, e.g. CC-BY-4.0")
        parser.add_argument(
            "--citation", help="how to cite the dataset (BibTeX or text; README.md shows it as a block)"
        )
        parser.add_argument("--description", help="a paragraph describing the dataset, near the top of README.md")

    def handle(self, *args, **opts):
        config = self._config(opts)
        creator = None
        if opts["creator"]:
            creator = get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: opts["creator"]}).first()
            if creator is None:
                raise CommandError(f"--creator: no user named {opts['creator']!r}", returncode=2)
        try:
            with cli_progress(f"release {opts['name']} {opts['release_version']}") as progress:
                card = {key: opts[key] for key in ("license", "citation", "description") if opts[key] is not None}
                release = build_release(
                    opts["name"],
                    opts["release_version"],
                    kind=opts["kind"],
                    config=config,
                    creator=creator,
                    card=card,
                    progress=progress,
                )
        except ValueError as exc:  # ReleaseExists, bad names, bad config: the person can act on these
            raise CommandError(str(exc), returncode=2) from exc
        self.stdout.write(f"published {release.name} {release.version}: {release_path(release)}")
        for f in release.files.all():
            self.stdout.write(f"{f.sha256}  {f.name}  ({f.rows} rows, {f.size} bytes)")

    def _config(self, opts) -> dict:
        config: dict = {}
        if opts["config"]:
            path = Path(opts["config"])
            try:
                config = json.loads(path.read_text(encoding="utf-8"))
            except OSError as exc:
                raise CommandError(f"{path}: cannot read: {exc.strerror}", returncode=2) from exc
            except json.JSONDecodeError as exc:
                raise CommandError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}", returncode=2) from exc
            if not isinstance(config, dict):
                raise CommandError(f"{path}:1: expected a JSON object", returncode=2)
        if opts["topics"]:
            config["topics"] = [t.strip() for t in opts["topics"].split(",") if t.strip()]
        if opts["include_non_arguments"]:
            config["include_non_arguments"] = True
        mode = opts["split"]
        if mode == "none" or mode == "cross-topic":
            if (config.get("split") or {}).get("mode") != mode:
                config["split"] = {"mode": mode}
        elif mode == "in-topic":
            split = {"mode": "in-topic", "seed": opts["seed"]}
            if opts["sizes"]:
                try:
                    train, dev, test = (int(v) for v in opts["sizes"].split(","))
                except ValueError:
                    raise CommandError(
                        f"--sizes: expected three whole numbers train,dev,test, got {opts['sizes']!r}", returncode=2
                    ) from None
                split["sizes"] = {"train": train, "dev": dev, "test": test}
            elif isinstance(config.get("split"), dict) and "sizes" in config["split"]:
                split["sizes"] = config["split"]["sizes"]
            else:
                raise CommandError(
                    "--split in-topic needs --sizes train,dev,test (e.g. 3532,500,1000, "
                    "Arg-CTRL App. F) or sizes in --config",
                    returncode=2,
                )
            config["split"] = split
        return config
