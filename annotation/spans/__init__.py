"""KB-grounded factual spans and argument schemes (ArgU §3.1-3.2.4): the ``span_grounding`` task type's helpers.

- :mod:`.schemes`: the argument-scheme label set (Walton-based, BASN) and multi-label scheme aggregation;
- :mod:`.metrics`: span detection F1 over tokens and span grounding (label) accuracy (ArgU Figure 7);
- :mod:`.aggregation`: token-majority aggregation of span responses;
- :mod:`.kb`: KB (fact variable) export / import;
- :mod:`.normalisation`: direct (cosine >= 0.85) and indirect (community detection) mapping of proposed variables;
- :mod:`.review`: the expert actions on proposed variables (accept / merge / reject) and the staff review page;
- :mod:`.export`: JSONL rows and the ``spans`` release kind.
"""
