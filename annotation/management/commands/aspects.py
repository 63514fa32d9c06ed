"""``manage.py aspects``: Django finds commands only here; the command lives in its task type's package."""
from annotation.task_types.aspect.cli import Command  # noqa: F401
