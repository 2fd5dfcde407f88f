"""Paraphrase candidates: answers close in meaning to a fact the partner stated, though they
hold none of its forms (rules/variants.py). A model may say a fact in its own words ("she
works at the Ashdown family's bakery"); no string match can judge that, and a similarity is
no verdict either. Such answers go to the blinded review queue (rules/adjudication.py), never
to a verdict. Pure: the vectors come from a local embedding model (activities/paraphrase.py).

An answer is a candidate when a statement of the partner is at least FLOOR similar to it,
closer than the tenant's own closest statement by MARGIN, and the answer holds a word of
that statement's value (four letters or more) that no value of the tenant's own holds. An
answer that restates the tenant's own fact is nearest its own statement (the templates are
the same); one that abstains holds no word of anyone's value (MiniLM, an English model,
puts a Spanish "No tengo esa información." as near as 0.66 to a Spanish statement, so
similarity alone would queue every abstention).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from memlife.rules.scoring import normalize

FLOOR = 0.55
MARGIN = 0.08


class Statement(NamedTuple):
    """A fact as its owner stated it, and the value it states."""

    text: str
    value: str


def cosine(left: Sequence[float], right: Sequence[float]) -> float:
    """Of unit vectors: their dot product."""
    return sum(a * b for a, b in zip(left, right, strict=True))


def words(text: str) -> set[str]:
    """The words of four letters or more, normalized."""
    return {word for word in _WORD.findall(normalize(text)) if len(word) >= 4}


_WORD = re.compile(r"[a-z0-9]+")


def close_statements(
    answer: Sequence[float],
    answer_text: str,
    own: Sequence[tuple[Statement, Sequence[float]]],
    partner: Sequence[tuple[Statement, Sequence[float]]],
    own_values: Iterable[str] = (),
) -> list[Statement]:
    """The partner's statements the answer may say in other words (closest first): each at
    least FLOOR similar, closer than the tenant's own closest statement by MARGIN, and with
    a word of its value in the answer that none of the tenant's own values has."""
    own_best = max((cosine(answer, vector) for _, vector in own), default=0.0)
    said = words(answer_text) - {w for value in own_values for w in words(value)}
    scored = sorted(
        ((cosine(answer, vector), statement) for statement, vector in partner),
        key=lambda item: item[0],
        reverse=True,
    )
    return [
        statement
        for score, statement in scored
        if score >= FLOOR and score - own_best >= MARGIN and words(statement.value) & said
    ]
