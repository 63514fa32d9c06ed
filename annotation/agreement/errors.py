"""Exceptions of the agreement engine.

Every error a person can act on is an :class:`AgreementError` (a ``ValueError``) with a readable reason; the CLI turns
it into ``exit 2`` with ``file:line: reason`` when it knows where the problem is (:class:`AgreementInputError` carries
``line``).
"""

from __future__ import annotations


class AgreementError(ValueError):
    """The data cannot give the coefficient asked for (too few coders, nothing pairable, bad values...)."""


class AgreementUndefined(AgreementError):
    """The coefficient is mathematically undefined on this data (e.g. 0/0: no variation at all).

    Raised instead of returning NaN, so that a caller never prints an unexplained ``nan``.
    """


class AgreementInputError(AgreementError):
    """Malformed input; ``path``/``line`` say where (1-based line, ``None`` when unknown)."""

    def __init__(self, reason: str, *, path: str | None = None, line: int | None = None):
        self.reason = reason
        self.path = path
        self.line = line
        super().__init__(self.location() + reason)

    def location(self) -> str:
        if self.path is None:
            return f"line {self.line}: " if self.line is not None else ""
        return f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
