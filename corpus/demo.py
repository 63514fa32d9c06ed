"""Demo data of the corpus (``manage.py load_demo`` calls ``load``, before the apps above it): the files in
``argora/demo_data/`` through the importers. Idempotent: content hashes make a second run add nothing."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from .importers import import_file

DEMO_DIR = Path(settings.BASE_DIR) / "argora" / "demo_data"
DEMO_SOURCE = "argora-demo"
# (file, import format, topic for the file or None)
DEMO_FILES = (
    ("arguments.tsv", "ukp-tsv", None),
    ("school-uniforms.kialo.txt", "kialo", "school uniforms"),
    ("facts.jsonl", "facts-jsonl", None),
)


def import_demo_files(stdout=None) -> dict[str, dict]:
    """Import every demo file; returns ``{file name: summary dict}``. Raises ``ImportFailed`` (file:line)."""
    summaries = {}
    for name, fmt, topic in DEMO_FILES:
        summary = import_file(DEMO_DIR / name, fmt, topic=topic, source=DEMO_SOURCE)
        summaries[name] = summary.as_dict()
        if stdout is not None:
            stdout.write(f"  {name} ({fmt}): {summary}")
    return summaries


def load(stdout) -> None:
    stdout.write("Demo corpus:")
    import_demo_files(stdout)
