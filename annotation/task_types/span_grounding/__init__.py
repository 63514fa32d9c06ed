"""KB-grounded factual spans and argument schemes (ArgU §3.1-3.2.4): the ``span_grounding`` task type's helpers.

- :mod:`.schemes`: the argument-scheme label set (Walton-based, BASN) and multi-label scheme aggregation;
- :mod:`.metrics`: span detection F1 over tokens and span grounding (label) accuracy (ArgU Figure 7), span-level
  F1 at partial / full / exact overlap (§3.2.2, shared with the ArgSpan trainers);
- :mod:`.aggregation`: token-majority aggregation of span responses;
- :mod:`.kb`: KB (fact variable) export / import;
- :mod:`.normalisation`: direct (cosine >= 0.85) and indirect (community detection) mapping of Others spans and
  proposed variables; the per-span result is stored in :class:`.models.SpanNormalisation`;
- :mod:`.review`: the expert actions on proposed variables (accept / merge / reject; they re-point the spans) and
  the staff review page;
- :mod:`.suggestions`: what annotators did with suggested spans (accepted / rejected / undecided, acceptance rate);
- :mod:`.export`: JSONL rows (normalised variable ids, §3.2.4 filters) and the ``spans`` release kind.
"""

NAME = "span_grounding"  # the task type (task_type.py registers it under this name)
