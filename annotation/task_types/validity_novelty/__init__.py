"""Validity / novelty of conclusions (ValNov, Heinisch et al. 2022; the ArgMining 2022 shared task data).

* :mod:`.aggregation` -- per-dimension majority of yes / no / don't-know votes, ties, confidence words;
* :mod:`.weights` -- the instance weight (1 = no agreement ... 5 = full agreement on both dimensions);
* :mod:`.csvio` -- the shared-task CSV layout and JSONL: strict, all-or-nothing reading, exact writing;
* :mod:`.results` -- project import / export and the staff results page's figures.

The task type itself is :mod:`annotation.task_types.validity_novelty.task_type`; the CLI is ``manage.py valnov``.
"""

TASK_TYPE = "validity_novelty"
