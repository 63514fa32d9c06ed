"""The study studio: Researchers set up, run and watch a study from the browser (see :mod:`.views`)."""
