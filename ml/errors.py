"""The errors of the ML side's training code: what the trainer registry, the row readers and the trainers refuse.

Their own module so that a data reader (:mod:`ml.data`, a trainer's ``rows_from_file``) can raise them without
importing the registry, and the registry, the loop and the commands catch the same classes.
"""

from __future__ import annotations

from argora.errors import FileLineError


class TrainerError(ValueError):
    """A request the trainer registry refuses (unknown kind, missing metric, no data...)."""


class TrainerFileError(FileLineError, TrainerError):
    """A data file a trainer cannot read (``file:line: reason``)."""
