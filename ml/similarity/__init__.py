"""Argument similarity models on BWS scores and Augmented SBERT (AugSBERT, Thakur et al., §3 and §5).

* :mod:`.data` -- pair rows ``{topic, argument1, argument2, score}`` from the BWS JSONL export, a ``bws`` release
  folder (``train/dev/test.jsonl``) or a ``bws_similarity`` project; in-topic / cross-topic splits.
* :mod:`.sampling` -- the silver pair sampling strategies: random, KDE, BM25, semantic search, BM25 + semantic
  search (top ``k``, default 3).
* :mod:`.models` -- training a cross-encoder (sigmoid output in [0, 1]) and a bi-encoder (SBERT, cosine) with
  sentence-transformers' ``CrossEncoderTrainer`` / ``SentenceTransformerTrainer``, with seed optimisation
  (:func:`ml.seeds.seed_optimise_runs`: 20 % probes, the best seed trained to the end).
* :mod:`.augsbert` -- the pipeline: cross-encoder on gold -> silver pairs labelled by it -> bi-encoder on gold +
  silver; domain adaptation (a cross-encoder of another project / topic set labels the target's pairs).
* :mod:`.evaluation` -- Table 5: Spearman x 100 on the test split (in-topic and cross-topic), the Jaccard
  baseline alongside, mean and standard deviation over seeds; results read back from the registry.

Trainer kinds (``ml/trainers/``): ``crossencoder``, ``biencoder``, ``augsbert``.
"""
