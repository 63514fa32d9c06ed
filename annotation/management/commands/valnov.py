"""``manage.py valnov``: Django finds commands only here; the command lives in its task type's package."""
from annotation.task_types.validity_novelty.cli import Command  # noqa: F401
