"""Best-Worst Scaling argument similarity (AugSBERT sec. 4.1): plain functions over plain data.

* :mod:`.sampling` -- all pairs of a topic's arguments, scored by a distant-supervision scorer (cosine of the
  registry's active augsbert / biencoder by default, else the packaged MiniLM), binned into top 1% / top 2-50% /
  rest and drawn 50% / 25% / 25%, seeded;
* :mod:`.design` -- 4-tuples of pairs (Kiritchenko & Mohammad 2016: 2N tuples, every pair in the same number of
  tuples +-1, no pair twice in a tuple);
* :mod:`.scoring` -- counting scores (#best - #worst) / #appearances mapped to [0, 1], with their counts;
* :mod:`.reliability` -- split-half reliability (random halves of each tuple's annotators, Spearman between the
  halves' scores, mean over 25 seeded repetitions) per topic and overall, vectorised, plus a loop reference;
* :mod:`.export` -- JSONL rows, the cross-topic / in-topic splits and the files of ``manage.py bws export``;
* :mod:`.project` -- the same for a ``bws_similarity`` project in the database (sample, build, report, stored
  scores, export).
"""
