"""``manage.py spans``: Django finds commands only here; the command lives in its task type's package."""
from annotation.task_types.span_grounding.cli import Command  # noqa: F401
