"""Slots that another app fills with what annotation needs from trained models, so that annotation never imports it.

``ml`` fills them when its app is ready (:meth:`ml.apps.MlConfig.ready`); without ``ml`` (or before it is ready) a
slot is empty and annotation falls back to what it has itself (the baseline ranker, no span suggestions) or says
clearly that an encoder is needed. A slot holds a callable or the dotted path of one, imported on first use (so
filling a slot costs nothing at start-up, and replacing the function in its module replaces the provider).

==================  ====================================================================================
slot                called as
==================  ====================================================================================
``ranker``          ``ranker(project) -> Ranker | None``: the active trained aspect ranker (``name``, ``score``)
``span_suggester``  ``span_suggester(project, texts, variables) -> [[{"begin", "end", "variable", ...}], ...]``
``encode``          ``encode(texts, name_or_path=None) -> array (n x d)``: sentence embeddings
``default_encoder`` ``default_encoder() -> str``: the name or path ``encode`` uses by default
``pair_encoder``    ``pair_encoder(project) -> (model with .encode, label) | None``: the active bi-encoder
``completion_return`` ``completion_return(project, worker, outcome) -> {"url", "code"} | None``: where a worker
                    who finished (``outcome="completed"``) or was screened out (``"screened_out"``) goes back to
                    their recruitment platform, and the code that platform expects (shown on the page too);
                    Prolific's app fills it; ``None``: the worker stays here with Argora's own code
``model_answerer``  ``model_answerer(annotator, items) -> [answer]``: one answer dict per item of a model
                    annotator (:mod:`annotation.model_annotators` says what an answer holds); ml fills it
``model_catalogue``  ``model_catalogue(project) -> [{"kind", "version", "label"}]``: the ready registry models
                    that can answer the project's task type (a new model annotator picks one)
``item_confidence`` ``item_confidence(project, item_ids) -> {item_id: p} | None``: the active model's confidence
                    in its answer to each item (0..1; the ``uncertainty`` item order asks it); ``None`` or an
                    empty dict: no model can answer the project's task type (the order falls back to random)
``retrain_status``  ``retrain_status(project) -> dict``: the retrain loop's settings, budget and latest attempts
                    (what the studio's project and retraining pages show; :func:`ml.loop.retrain_status`)
``retrain_settings_update`` ``retrain_settings_update(project, values, user=...) -> dict``: set ``retrain_every``
                    and the budget (raises ``argora.errors.FieldError`` naming the key; audit-logged)
==================  ====================================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils.module_loading import import_string


class ProviderMissing(LookupError):
    """A slot nobody filled was called."""


class Slot:
    def __init__(self, name: str, needs: str):
        self.name = name
        self.needs = needs  # what to install or configure when the slot is empty (for the error message)
        self.provider: Callable | str | None = None

    def fill(self, provider: Callable | str) -> None:
        self.provider = provider

    @property
    def filled(self) -> bool:
        return self.provider is not None

    def __call__(self, *args, **kwargs) -> Any:
        if self.provider is None:
            raise ProviderMissing(f"no {self.name} provider: {self.needs}")
        fn = import_string(self.provider) if isinstance(self.provider, str) else self.provider
        return fn(*args, **kwargs)

    def get(self, *args, **kwargs) -> Any:
        """The provider's answer, or ``None`` when the slot is empty."""
        return self(*args, **kwargs) if self.filled else None

    def __repr__(self) -> str:
        return f"<Slot {self.name}: {self.provider!r}>"


ranker = Slot("ranker", "trained rankers come from the ml app")
span_suggester = Slot("span_suggester", "span suggestions come from the ml app")
encode = Slot("encode", "sentence embeddings need the ml app (INSTALLED_APPS) and its encoder")
default_encoder = Slot("default_encoder", "sentence embeddings need the ml app (INSTALLED_APPS) and its encoder")
pair_encoder = Slot("pair_encoder", "trained bi-encoders come from the ml app")
completion_return = Slot("completion_return", "platform redirects come from a recruitment app (prolific)")
model_answerer = Slot("model_answerer", "model annotators need the ml app (INSTALLED_APPS)")
model_catalogue = Slot("model_catalogue", "registry models come from the ml app")
model_prompt = Slot("model_prompt", "task-type prompts for LLM annotators come from the ml app")
item_confidence = Slot("item_confidence", "model confidence for the uncertainty item order comes from the ml app")
retrain_status = Slot("retrain_status", "model retraining comes from the ml app")
retrain_settings_update = Slot("retrain_settings_update", "model retraining comes from the ml app")


# The pages a recruitment app adds to every project's page list (annotation.studio.links): its staff panel,
# ``{"id", "text", "url_name"}`` with a URL name that takes the project's slug. Filled in the apps' ready().
platform_pages: list[dict] = []


def add_platform_page(page_id: str, text: str, url_name: str) -> None:
    """Register a recruitment platform's per-project page (once per id)."""
    if not any(p["id"] == page_id for p in platform_pages):
        platform_pages.append({"id": page_id, "text": text, "url_name": url_name})
