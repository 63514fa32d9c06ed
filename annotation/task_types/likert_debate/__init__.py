"""The ``likert_debate`` task type (see :mod:`.task_type`)."""
