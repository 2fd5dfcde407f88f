"""The scripted model's embeddings are MiniLM's (read offline), fitted to any dimension."""

from __future__ import annotations

import math

import pytest

from memlife import embeddings
from tests.groups import MINILM


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (
        math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    )


@pytest.mark.slow
@MINILM
def test_minilm_ranks_meaning_and_padding_keeps_similarity() -> None:
    work, employer, pet = embeddings.shared().embed(
        ["I work at Ingleby Ironside Ironworks", "Who is my employer?", "My cat is called Tom"]
    )
    assert len(work) == embeddings.NATIVE
    assert _cosine(work, employer) > _cosine(pet, employer)
    wide = [embeddings.fit(v, 1536) for v in (work, employer)]
    assert _cosine(*wide) == pytest.approx(_cosine(work, employer), abs=1e-9)


def test_fit_cuts_and_normalizes_below_the_native_size() -> None:
    assert embeddings.fit([3.0, 4.0, 12.0], 2) == pytest.approx([0.6, 0.8])
    assert embeddings.fit([1.0], 3) == [1.0, 0.0, 0.0]
    assert embeddings.dimensions_for("text-embedding-3-large", None) == 3072
    with pytest.raises(ValueError, match="dimensions: must be a positive integer"):
        embeddings.dimensions_for("x", 0)
