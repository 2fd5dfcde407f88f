"""Deterministic, lexical language handling for the reference target (no LLM).

A statement "Mi color favorito es azul" is split at its first copula/preposition marker
into a key ("color favorito") and a value ("azul"). A question is reduced to its content
words and matched to keys by overlap. Small and predictable on purpose: the reference
target models a memory runtime's *plumbing* (stores, scoping, precedence, deletion), not
language understanding.
"""

from __future__ import annotations

import re

from unidecode import unidecode

_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")

# Words that split a statement into key and value ("... es X", "... en X", "... is X").
MARKERS = frozenset(
    {
        "es",
        "son",
        "en",
        "a",
        "al",
        "llama",
        "llamo",
        "is",
        "are",
        "at",
        "to",
        "for",
        "with",
        "named",
        "called",
    }
)

# Filler and question words that carry no key information.
STOPWORDS = frozenset(
    {
        # Spanish
        "mi",
        "mis",
        "me",
        "yo",
        "el",
        "la",
        "los",
        "las",
        "un",
        "una",
        "unos",
        "unas",
        "de",
        "del",
        "y",
        "o",
        "que",
        "cual",
        "cuales",
        "donde",
        "quien",
        "quienes",
        "como",
        "cuando",
        "cuanto",
        "ahora",
        "ya",
        "tambien",
        "actualmente",
        "hoy",
        "desde",
        "es",
        "son",
        "en",
        "a",
        "al",
        "por",
        "para",
        "favor",
        "dime",
        "sabes",
        "recuerdas",
        "te",
        "dije",
        "lo",
        "le",
        "se",
        "su",
        "sus",
        "tu",
        "tus",
        "con",
        "sobre",
        "cambie",
        "cambio",
        "nuevo",
        "nueva",
        "realidad",
        "bueno",
        "pues",
        "ese",
        "esa",
        "eso",
        "este",
        "esta",
        "esto",
        "estoy",
        "soy",
        # English
        "my",
        "i",
        "im",
        "i'm",
        "the",
        "an",
        "of",
        "and",
        "or",
        "what",
        "which",
        "where",
        "who",
        "whom",
        "how",
        "when",
        "is",
        "are",
        "am",
        "at",
        "to",
        "for",
        "in",
        "on",
        "do",
        "does",
        "did",
        "you",
        "know",
        "remember",
        "tell",
        "now",
        "actually",
        "currently",
        "today",
        "new",
        "please",
        "with",
        "about",
        "that",
        "this",
        "it",
        "its",
        "changed",
    }
)

# A few synonyms so that natural paraphrases of the same key meet.
_SYNONYMS = {
    "alergico": "alergia",
    "alergica": "alergia",
    "alergicos": "alergia",
    "alergicas": "alergia",
    "allergic": "allergy",
    "empleador": "trabajo",
    "empresa": "trabajo",
    "trabajas": "trabajo",
    "employer": "work",
    "company": "work",
    "works": "work",
    "job": "work",
    "colour": "color",
    "favorita": "favorito",
    "direccion": "vivo",
    "domicilio": "vivo",
    "address": "live",
    "studied": "study",
}


def normalize(text: str) -> str:
    return " ".join(unidecode(text).casefold().split())


def words(text: str) -> list[str]:
    return _WORD.findall(normalize(text))


def content_tokens(text: str) -> frozenset[str]:
    return frozenset(_SYNONYMS.get(word, word) for word in words(text) if word not in STOPWORDS)


def is_question(text: str) -> bool:
    stripped = text.strip()
    return stripped.endswith("?") or stripped.startswith("¿")


def detect_language(text: str) -> str:
    lowered = f" {normalize(text)} "
    spanish_signals = ("¿", " mi ", " es ", " en ", " que ", " cual ", " donde ", " trabajo ")
    if "¿" in text or any(signal in lowered for signal in spanish_signals[1:]):
        return "es"
    return "en"


# A statement addressed to every user starts so ("Recuerda esto para todos los usuarios:",
# "Remember this for all users:"); what follows the colon is the statement.
_EVERYONE = ("para todos", "a todos", "for all users", "for everyone", "everyone")


def addressed_to_everyone(text: str) -> str | None:
    """The statement inside a message addressed to every user, or None."""
    head, colon, rest = text.partition(":")
    if colon and rest.strip() and any(marker in normalize(head) for marker in _EVERYONE):
        return rest.strip()
    return None


def split_statement(text: str) -> tuple[frozenset[str], str] | None:
    """Split a statement into (key tokens, value text) at its first marker, or None.

    The value keeps its original spelling (accents, case); trailing punctuation is dropped.
    A statement addressed to everyone is split after its address.
    """
    text = addressed_to_everyone(text) or text
    raw_tokens = text.strip().rstrip(".!").split()
    for index, raw in enumerate(raw_tokens):
        if index == 0:
            continue
        word = normalize(raw).strip(",:;")
        if word in MARKERS:
            key = content_tokens(" ".join(raw_tokens[:index]))
            value = " ".join(raw_tokens[index + 1 :]).strip(" ,;:")
            if key and value:
                return key, value
    return None


def overlap(question: frozenset[str], key: frozenset[str]) -> float:
    """How well a question's tokens cover a key: shared count, ties broken by Jaccard."""
    shared = len(question & key)
    if not shared:
        return 0.0
    return shared + shared / len(question | key)
