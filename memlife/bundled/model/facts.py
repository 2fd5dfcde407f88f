"""What the scripted model understands of a conversation, by rule (no model, no guess):

- a *statement* is a sentence of the user's that is not a question; its fact is the
  sentence itself, word for word ("I work at Acme." → "I work at Acme");
- a fact's *slot* is what it is about: the content words before its first marker word
  ("I work at Acme" → {work}); two facts with the same slot hold the same kind of value,
  so the later one updates the earlier;
- a fact's *value* is what follows that marker ("Acme").

The marker words and stop words are the reference target's (memlife/bundled/reference/
language.py), with "on" and "in" added: a street is lived *on*.
"""

from __future__ import annotations

import re

from memlife.bundled.reference import language

MARKERS = language.MARKERS | {"on", "in"}
# A sentence ends at . ! or ? followed by white space (a value's inner dots, "St. James",
# stay put when no capital follows... kept simple: split only before a capital or ¿/¡).
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[¿¡A-ZÁÉÍÓÚÑ0-9])")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def is_question(sentence: str) -> bool:
    return language.is_question(sentence)


def fact_of(sentence: str) -> str:
    """The fact a statement states: the sentence without its closing punctuation."""
    return sentence.strip().rstrip(".!").strip()


def statements(text: str) -> list[str]:
    """The facts of the statements in `text`, word for word, in order."""
    found = []
    for sentence in sentences(text):
        if not is_question(sentence):
            fact = fact_of(language.addressed_to_everyone(sentence) or sentence)
            if fact:
                found.append(fact)
    return found


def split(fact: str) -> tuple[frozenset[str], str] | None:
    """(slot, value) of a fact at its first marker word, or None when it has none."""
    raw = fact_of(fact).split()
    for index, word in enumerate(raw):
        if index and language.normalize(word).strip(",:;") in MARKERS:
            slot = language.content_tokens(" ".join(raw[:index]))
            value = " ".join(raw[index + 1 :]).strip(" ,;:")
            if slot and value:
                return slot, value
    return None


def slot(fact: str) -> frozenset[str] | None:
    parts = split(fact)
    return parts[0] if parts else None


def value(fact: str) -> str | None:
    parts = split(fact)
    return parts[1] if parts else None


def same_slot(a: str, b: str) -> bool:
    """Whether `b` fills the slot `a` holds (so `b`, being later, updates `a`)."""
    left, right = slot(a), slot(b)
    return left is not None and left == right


def question_tokens(question: str) -> frozenset[str]:
    return language.content_tokens(question)


def relevance(question: str, fact: str) -> float:
    """How well a fact answers a question: the overlap of the question's content words with
    the fact's slot (or, for a fact without one, with all its words)."""
    key = slot(fact) or language.content_tokens(fact)
    return language.overlap(question_tokens(question), key)
