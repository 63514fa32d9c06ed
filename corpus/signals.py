"""Signals of the corpus, for apps above it (``corpus`` never imports them).

``fact_changed``: sent by :func:`corpus.services.change_fact_status` inside its transaction, after a fact variable's
status or merge target changed, with ``sender=FactVariable, fact=<the variable>``; receivers update what refers to it
(span grounding re-points its normalised spans) in the same transaction.

``fact_uses``: sent by :func:`corpus.services.delete_fact` with ``sender=FactVariable, fact=<the variable>``; each
receiver returns a list of readable uses (``"3 span_grounding items offer it"``). A variable with any use is not
deleted.

``release_published``: sent by :func:`corpus.releases.build_release` inside the transaction that publishes a
release, with ``sender=Release, release=<the release>``; annotation writes a line in the audit log of each project
the release exports.
"""

from django.dispatch import Signal

fact_changed = Signal()
fact_uses = Signal()
release_published = Signal()
