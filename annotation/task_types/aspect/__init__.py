"""Aspect annotation with ranked candidates (Arg-CTRL, Schiller et al. 2021, §3.1-3.2, App. A and App. F).

- :mod:`.candidates`: tokens with character offsets, the 1-4-gram aspect candidates and the App. A filters;
- :mod:`.rankers`: the ranker interface, a documented baseline and ``get_active_ranker(project)``;
- :mod:`.labels`: §3.1 Step 2a n-gram scores and the JSONL rows a ranker trainer reads;
- :mod:`.aggregation`: threshold voting over crowd responses, "no aspect", adjudication / gold overrides;
- :mod:`.appf`: App. F JSONL import / export and the fixed splits;
- :mod:`.unitized`: per-annotator spans in the shape the agreement engine's alpha_u takes.

The task type itself lives in :mod:`annotation.task_types.aspect.task_type`.
"""
