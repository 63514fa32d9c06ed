"""``manage.py bws``: Django finds commands only here; the command lives in its task type's package."""
from annotation.task_types.bws_similarity.cli import Command  # noqa: F401
