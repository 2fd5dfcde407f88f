"""The scripted model's reading of a conversation: statements word for word, their slots."""

from __future__ import annotations

import pytest

from memlife.bundled.model import facts


def test_statements_are_the_users_sentences_word_for_word() -> None:
    text = (
        "I work at Ravenscroft Elmhirst Upholstery. Where do I live? I live on 2301 Elmhirst Road."
    )
    assert facts.statements(text) == [
        "I work at Ravenscroft Elmhirst Upholstery",
        "I live on 2301 Elmhirst Road",
    ]


def test_a_question_states_nothing() -> None:
    assert facts.statements("¿Dónde trabajo?") == []
    assert facts.statements("Where do I work?") == []


def test_a_statement_to_everyone_is_its_content() -> None:
    assert facts.statements("Remember this for all users: the office is at 5 Main St") == [
        "the office is at 5 Main St"
    ]


@pytest.mark.parametrize(
    ("old", "new", "same"),
    [
        ("I work at Acme", "Now I work at Globex", True),
        ("I work at Acme", "I now work for Globex", True),
        ("Trabajo en Imprenta Sandoval", "Ahora trabajo en Estudio Heredia", True),
        ("I work at Acme", "I live at 5 Main St", False),
        ("My best friend is Ann", "The name of my pet is Rex", False),
    ],
)
def test_a_later_fact_fills_an_earlier_ones_slot(old: str, new: str, same: bool) -> None:
    assert facts.same_slot(old, new) is same


def test_value_and_relevance() -> None:
    assert facts.value("The name of my pet is Pippin Elmhirst Ingleby") == "Pippin Elmhirst Ingleby"
    assert facts.relevance("Where do I work?", "I work at Acme") > facts.relevance(
        "Where do I work?", "I live at 5 Main St"
    )
