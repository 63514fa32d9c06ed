"""Release kind ``spans``: KB-grounded factual spans (+ argument schemes) of span_grounding projects (ArgU §3.1);
the rows and their filters are :mod:`.export`'s."""

from __future__ import annotations

from corpus.releases import register_exporter

from .export import KIND, count_release, export_release, prepare_release, release_card

register_exporter(
    KIND,
    prepare=prepare_release,
    count=count_release,
    card=release_card,
    count_by=("topic", "stance"),
    description="KB-grounded factual spans (+ argument schemes) from span_grounding projects (ArgU §3.1).",
)(export_release)
