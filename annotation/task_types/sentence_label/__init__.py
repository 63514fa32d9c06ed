"""The ``sentence_label`` task type (see :mod:`.task_type`)."""
