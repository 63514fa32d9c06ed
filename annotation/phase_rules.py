"""The rules a study phase's input is checked by (no writes, no state): the errors :mod:`annotation.phases` raises
and the exit survey's answers checked against its questions. :mod:`annotation.phases` re-exports them."""

from __future__ import annotations

from typing import Any

from argora.errors import FieldError


class PhaseRefused(FieldError):
    """Input a worker or researcher can fix (HTTP 400): ``field`` names the first problem, ``errors`` all of them."""

    def __init__(self, field: str, reason: str, errors: dict[str, str] | None = None):
        super().__init__(field, reason)
        self.errors = dict(errors or {field: reason})

    def as_dict(self) -> dict[str, str]:
        return dict(self.errors)


class PhaseNotNow(Exception):
    """The worker is not at this step (HTTP 409); ``step`` is where they are."""

    status = 409

    def __init__(self, message: str, step: str):
        super().__init__(message)
        self.step = step


def clean_survey_answers(questions: list[dict], answers: Any) -> dict[str, Any]:
    """The answers checked against the questions: ``{name: answer or None}`` -- text as given (stripped), a Likert
    answer as its position on the scale (1 = the first label), a choice as the option's text, a number as a number.
    Raises :class:`PhaseRefused` naming the first bad question, with every problem in ``errors``."""
    if not isinstance(answers, dict):
        raise PhaseRefused("answers", "expected an object keyed by question name")
    errors: dict[str, str] = {}
    names = {q["name"] for q in questions}
    for key in answers:
        if key not in names:
            errors[str(key)] = "not a question of this survey"
    out: dict[str, Any] = {}
    for q in questions:
        name, raw = q["name"], answers.get(q["name"])
        if isinstance(raw, str):
            raw = raw.strip()
        if raw in (None, "", []):
            if q.get("required"):
                errors[name] = "please answer this question"
            out[name] = None
            continue
        try:
            out[name] = _survey_value(q, raw)
        except ValueError as exc:
            errors[name] = str(exc)
    if errors:
        first = next(iter(errors))
        raise PhaseRefused(first, errors[first], errors)
    return out


def _survey_value(q: dict, raw: Any) -> Any:
    kind = q["kind"]
    if kind == "text":
        if not isinstance(raw, str):
            raise ValueError("expected text")
        if len(raw) > q.get("max_length", 5000):
            raise ValueError(f"at most {q.get('max_length', 5000)} characters")
        return raw
    if kind == "likert":
        scale = q["scale"]
        if isinstance(raw, str) and raw in scale:
            return scale.index(raw) + 1
        try:
            value = int(raw)
        except (TypeError, ValueError):
            value = 0
        if isinstance(raw, bool) or not 1 <= value <= len(scale) or str(raw).strip() != str(value):
            raise ValueError(f"choose one point of the scale (1 to {len(scale)})")
        return value
    if kind == "choice":
        if not isinstance(raw, str) or raw not in q["options"]:
            raise ValueError(f"choose one of: {', '.join(q['options'])}")
        return raw
    try:
        value = float(raw) if not isinstance(raw, bool) else None
    except (TypeError, ValueError):
        value = None
    if value is None or value != value or value in (float("inf"), float("-inf")):
        raise ValueError("a number")
    if q.get("integer"):
        if value != int(value):
            raise ValueError("a whole number")
        value = int(value)
    if "min" in q and value < q["min"]:
        raise ValueError(f"at least {q['min']}")
    if "max" in q and value > q["max"]:
        raise ValueError(f"at most {q['max']}")
    return value
