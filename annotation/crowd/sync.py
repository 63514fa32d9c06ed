"""The result of a crowd platform's sync: one shape for the panels, the commands and the periodic task's log.

The fields every platform fills are here; a platform adds its own (MTurk its HITs, Prolific its submissions) by
subclassing, and :meth:`SyncReport.lines` puts the shared ones in one wording."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class SyncReport:
    approved: int = 0
    rejected: int = 0
    bonuses_paid: int = 0
    excluded: list = field(default_factory=list)  # Argora work the platform does not know, given back
    errors: list = field(default_factory=list)
    wage_warning: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    def platform_lines(self) -> list[str]:
        """The platform's own lines (what it listed, what it did beyond the shared counts)."""
        return []

    def lines(self) -> list[str]:
        return [
            *self.platform_lines(),
            *(f"ERROR: {e}" for e in self.errors),
            *([f"WARNING: {self.wage_warning}"] if self.wage_warning else []),
        ]
