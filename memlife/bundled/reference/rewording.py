"""The reworded-leak fault's writer: what a model between a store and an answer does to a
fact's value when it says it in its own style. Spanish and English, the shapes of the
nightlies' values (addresses, schools, names, companies). Deterministic.

Written apart from memlife's own matching (memlife/rules/variants.py) on purpose: this is
the model's side, in the notations a model writes (`C/ Arriaga, nº 1.234`, `1,234 Ashdown
Ln.`, `Arriaga Quispe, Inés`), not the canonical text memlife compares.
"""

from __future__ import annotations

import re

_UPPER = "A-ZÁÉÍÓÚÑÜ"
_WORD = rf"[{_UPPER}][a-záéíóúñü]+"

_STREETS_ES = {
    "calle": "C/",
    "avenida": "Avda.",
    "paseo": "P.º",
    "plaza": "Pza.",
    "travesía": "Trav.",
    "camino": "Cno.",
    "ronda": "Rda.",
}
_STREETS_EN = {
    "Lane": "Ln.",
    "Road": "Rd.",
    "Avenue": "Ave.",
    "Court": "Ct.",
    "Crescent": "Cres.",
    "Terrace": "Terr.",
    "Mews": "Mews",
    "Row": "Row",
}

_ADDRESS_ES = re.compile(rf"\b({'|'.join(_STREETS_ES)}) ({_WORD}) (\d{{3,4}})\b")
_ADDRESS_EN = re.compile(rf"\b(\d{{3,4}}) ({_WORD}) ({'|'.join(_STREETS_EN)})\b")
_SCHOOL_ES = re.compile(rf"\bColegio (San|Santa) ({_WORD}) ({_WORD}) (\d+)\b")
_SCHOOL_EN = re.compile(rf"\bSaint ({_WORD}) ({_WORD}) School (\d+)\b")
# Three capitalized words and no fourth: a person's or a pet's name, or a company's.
_NAME = re.compile(rf"(?<![\w.])({_WORD}) ({_WORD}) ({_WORD})(?![\w .,º]*\d)(?! {_WORD})")


def _thousands(number: str, separator: str) -> str:
    return f"{int(number):,}".replace(",", separator)


def reword(text: str) -> str:
    """The text with each value written the way this model writes it."""
    text = _ADDRESS_ES.sub(
        lambda m: f"{_STREETS_ES[m[1]]} {m[2]}, nº {_thousands(m[3], '.')}", text
    )
    text = _ADDRESS_EN.sub(lambda m: f"{_thousands(m[1], ',')}, {m[2]} {_STREETS_EN[m[3]]}", text)
    text = _SCHOOL_ES.sub(
        lambda m: f"Col. {'S.' if m[1] == 'San' else 'Sta.'} {m[2]} {m[3]}, nº {m[4]}", text
    )
    text = _SCHOOL_EN.sub(lambda m: f"St. {m[1]} {m[2]} School No. {m[3]}", text)
    return _NAME.sub(lambda m: f"{m[2]}-{m[3]}, {m[1]}", text)
