"""Argument generation: training corpora, generators, generation runs and their evaluation (issue 12).

Modules:

* :mod:`.corpora`, :mod:`.exporters` -- the training corpora (below) and their release kinds;
* :mod:`.train` -- the trainer kinds ``generator`` (Arg-CTRL causal LM with control codes) and ``seq2seq`` (ArgU
  Mono / Dual, debate responses), registered in :mod:`ml.trainers.generator`;
* :mod:`.generate` -- loaded generators (penalised sampling, beam search with trigram blocking, counter-arguments,
  multi-turn debates) and generation runs stored atomically under ``ARTIFACT_ROOT/generation/runs/``;
* :mod:`.runs`, :mod:`.tasks` -- generation on workers (issue 37): a request is checked, stored as a ``queued``
  run and sent as ``ml.tasks.generate`` (``gpu`` queue); the worker writes each input's outputs into the run as it
  goes (``running`` -> ``done`` / ``failed``); a run is its creator's (and superusers'); ``start_training`` queues
  ``ml.tasks.train`` on a generation-corpus release (the generation page's "Train a generator" form);
* :mod:`.evaluate` -- a run's metrics (from :mod:`.metrics`) and ``send_to_ratings`` (pairwise / Likert items);
* :mod:`.api`, :mod:`.views` -- ``/api/generate/`` (202 with the run id at once; ``runs/<id>/`` its state and the
  outputs so far) and the Researcher pages ``/ml/generation/...`` (the run page streams the outputs);
  ``manage.py generate run|evaluate|ratings|list|demo`` is the CLI (it generates in the command's own process).

The corpora and metrics modules are plain functions over plain rows, importable without touching the database
except where a function says so.

Corpora (:mod:`ml.generation.corpora`; rules in its docstring)
---------------------------------------------------------------
Aspect control (Arg-CTRL §4)::

    rows = gold_aspect_rows(["aspects-ukp"])                 # or any iterable of
    #      {"topic", "stance", "sentence", "aspects": [str]}  (silver tagger output; App. F rows also accepted)
    docs = build_aspect_documents(rows, min_args=15, max_args=1500, max_per_topic_stance=100_000, seed=13,
                                  source="gold")             # -> AspectDocs(documents, stats)
    doc = docs.documents[0]      # AspectDocument(topic, stance, aspect, stem, arguments, aspects, source)
    doc.control_code             # "nuclear energy CON waste"
    doc.as_row()                 # the JSONL row
    chunk_document(doc, tokenizer, block_size=256)   # [control-code ids + 256 document ids, ...]
    control_code(topic, stance, aspect); aspect_stem(aspect)

Debate paths (debate-trees §2.2, Table 2)::

    debate_pairs(nodes, "supportive" | "contradicting" | "complex" | "multi-turn", anchor="root")
        # nodes: [Node(path, parent, stance, text)] of one tree -> DebatePair(strategy, prompt, response)
        #   pair.key -> ((prompt node paths), (response node paths)); pair.prompt_text(); pair.response_text()
    tree_nodes(tree)             # Node list of an imported corpus.DebateTree
    debate_path_rows(trees=None, strategies=STRATEGIES, seed=13, fractions={"train": .9, "dev": .05,
                     "test": .05}, splits=None, anchor="root")  # JSONL rows, split by debate
    assign_splits(keys, seed=13, fractions=None)  # {key: split}

ArgU inputs (ArgU §4.1)::

    argu_input(span_row, seed=13, max_variables=4)
        # -> {"encoder_input": "<topic> <VAR_0> v <VAR_1> w", "variables", "stance_code", "scheme_code",
        #     "argument", "template", "mono_target", "dual_target", ...}
    argu_inputs(rows, seed=13, skipped=Counter())  # skips unusable rows, counting the reasons
    span_rows(["spans-project"], filters=True)     # span-grounding export rows (ArgU §3.2.4 filters)
    special_tokens()                               # ArgU Table 6 tokens to add to a tokenizer

Files: ``read_jsonl``, ``aspect_rows_from_file``, ``write_jsonl``; errors a person can act on are
:class:`~ml.generation.corpora.RowError` ("FILE:LINE: reason").

Metrics (:mod:`ml.generation.metrics`; definitions in its docstring)
---------------------------------------------------------------------
::

    meteor(hyp, refs, synonyms=False)      rouge_l(hyp, refs)      bleu(hyps, refs_per_hyp)   sentence_bleu
    reference_scores(generated_rows, reference_rows)   # Arg-CTRL Table 5: {"meteor", "rouge_l", "scored", ...}
    retrieval_baseline(codes, training_rows, mode="nearest" | "all" | "oracle", encode=None)
    aspect_present(text, aspect, synonyms=None)        aspect_presence_rate(rows)
    novelty(generated, training, encode=None)          # nearest by cosine, edit distance, LCS overlap
    levenshtein(a, b)   longest_common_substring(a, b)   overlap(generated, training)
    fact_faithfulness(variables, output, encode=None)  mean_fact_faithfulness([(variables, output)])
    perplexity(causal_lm, tokenizer, texts, contexts=None, batch_size=8)

Release kinds (:mod:`ml.generation.exporters`): ``aspect-docs``, ``debate-paths``, ``argu-inputs``.
CLI: ``manage.py gencorpus aspect-docs|debate-paths|argu-inputs ... --out FILE [--json]``.
"""
