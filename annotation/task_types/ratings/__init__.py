"""Human evaluation of generated arguments and debates (issue 8, parts 2-5).

* :mod:`.pairwise` -- ``pairwise_preference`` (Arg-CTRL §7.1): two arguments of the same topic and stance, which is
  more persuasive (or equally), and is each fluent; the left/right placement is randomised per assignment and mapped
  back to systems when results are computed.
* :mod:`.likert` -- ``likert_debate`` (debate trees §3, Table 6): a multi-turn debate rated 1-4 on style, content,
  strategy and overall.
* :mod:`.items` -- item builders: JSONL files of a generation run (pairs, debates) and root-to-leaf paths of imported
  :class:`corpus.models.DebateTree` rows; all-or-nothing imports (``file:line: reason``).
* :mod:`.results` -- the figures of the staff results page and the CSV downloads.
"""

PAIRWISE = "pairwise_preference"
LIKERT = "likert_debate"
TASK_TYPES = (PAIRWISE, LIKERT)


class RatingsError(ValueError):
    """A project-level problem a person can act on (unknown project, wrong task type)."""
