import annotation.task_types.aspect.task_type  # noqa: F401  (registers the "aspect" task type)
