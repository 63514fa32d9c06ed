"""Where ``sentence_label`` items come from (the studio, ``/studio/``): corpus sentences, from an uploaded corpus file
(UKP TSV, JSONL arguments, a Kialo discussion export) or a selection of the corpus; the gold share's items take their
expected label from the corpus stance (:mod:`annotation.studio.sentences`)."""

from __future__ import annotations

from annotation.studio import sentences

SOURCES = sentences.SOURCES
preview = sentences.preview
write = sentences.write


def summary(payload: dict) -> str:
    return str(payload.get("text", ""))
