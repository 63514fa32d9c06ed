import annotation.task_types.aspect  # noqa: F401  (registers the "aspect" task type)
