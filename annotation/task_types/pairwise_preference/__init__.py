"""The ``pairwise_preference`` task type (see :mod:`.task_type`)."""
