"""Model suggestions for span grounding items (the hook ``annotation.task_types.span_grounding.task_type`` calls).

:func:`suggest` uses the active ``argspan`` version of the project (else the global one); without one it returns
an empty list per text, so building items never depends on a model being there.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import registry


def suggest(project, texts: Sequence[str], variables: Sequence[Sequence[dict]] | None = None) -> list[list[dict]]:
    """``[[{"begin", "end", "variable": id | None, "source": "model:<version id>", "confidence"}...] per text]``.

    ``variables[i]`` (optional): the ``[{"id", "text"}]`` offered with text ``i``; spans are grounded to one of them
    or to Others (``None``). Without it every suggestion is ungrounded (``variable: None``).
    """
    texts = list(texts)
    version = registry.active_version("argspan", project)
    if version is None or not texts:
        return [[] for _ in texts]
    model = registry.load_model(version)
    preds = model.predict(texts, variables)
    source = f"model:{version.pk}"
    return [
        [
            {
                "begin": s["begin"],
                "end": s["end"],
                "variable": s.get("variable"),
                "source": source,
                "confidence": s.get("confidence"),
            }
            for s in p["spans"]
        ]
        for p in preds
    ]
