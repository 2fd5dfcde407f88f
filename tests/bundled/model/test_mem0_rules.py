"""Mem0's prompts, built by mem0ai's own prompt functions, answered by the scripted model's
rules (memlife/bundled/model/mem0.py)."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from memlife.bundled.model import mem0
from memlife.bundled.model.script import Chat, UnknownPrompt, respond
from tests.groups import MINILM

# On the worker that imports mem0 for its stack's tests too (tests/groups.py).
pytestmark = MINILM


# mem0 imports openai and much else (a second and a half): imported when a test runs, not in
# every process that collects the suite.
def prompts() -> ModuleType:
    from mem0.configs import prompts

    return prompts


def parse_messages(messages: list[dict[str, str]]) -> Any:
    from mem0.memory.utils import parse_messages

    return parse_messages(messages)


def get_fact_retrieval_messages_legacy(messages: Any) -> tuple[str, str]:
    from mem0.memory.utils import get_fact_retrieval_messages_legacy

    return get_fact_retrieval_messages_legacy(messages)


def _chat(system: str | None, user: str) -> Chat:
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": user}
    ]
    return Chat(
        model="gpt-4o-mini",
        messages=tuple(messages),
        response_format={"type": "json_object"},
        caller="OpenAI/Python test",
    )


def _additive(existing: list[dict[str, str]], said: str) -> tuple[str, dict]:
    user = prompts().generate_additive_extraction_prompt(
        existing_memories=existing,
        last_k_messages=[],
        new_messages=parse_messages(
            [
                {"role": "user", "content": said},
                {"role": "assistant", "content": "Noted, I work at X."},
            ]
        ),
    )
    kind, answer = respond(_chat(prompts().ADDITIVE_EXTRACTION_PROMPT, user), mem0.RULES)
    return kind, json.loads(answer.content or "")


def test_additive_extraction_keeps_the_users_statements_word_for_word() -> None:
    kind, answer = _additive([], "I work at Ingleby Ironside Ironworks. Where do I live?")
    assert kind == "mem0.additive-extraction"
    assert answer == {
        "memory": [
            {"id": "0", "text": "I work at Ingleby Ironside Ironworks", "attributed_to": "user"}
        ]
    }


def test_additive_extraction_adds_a_new_value_beside_the_old_and_links_them() -> None:
    existing = [
        {"id": "0", "text": "I work at Ingleby Ironside Ironworks"},
        {"id": "1", "text": "I live at 2301 Elmhirst Road"},
    ]
    _, answer = _additive(existing, "Now I work at Quartermaine Kimberley Ceramics.")
    assert answer["memory"] == [
        {
            "id": "0",
            "attributed_to": "user",
            "linked_memory_ids": ["0"],
            "text": "Now I work at Quartermaine Kimberley Ceramics",
        }
    ]


def test_additive_extraction_skips_what_is_already_a_memory() -> None:
    _, answer = _additive(
        [{"id": "0", "text": "I work at Ingleby Ironside Ironworks"}],
        "I work at Ingleby Ironside Ironworks.",
    )
    assert answer == {"memory": []}


def test_legacy_fact_extraction_and_update_decision() -> None:
    system, user = get_fact_retrieval_messages_legacy(
        parse_messages([{"role": "user", "content": "I work at Acme. I have a cat called Tom."}])
    )
    kind, answer = respond(_chat(system, user), mem0.RULES)
    assert (kind, json.loads(answer.content or "")) == (
        "mem0.fact-extraction",
        {"facts": ["I work at Acme", "I have a cat called Tom"]},
    )
    update = prompts().get_update_memory_messages(
        [{"id": "0", "text": "I work at Acme"}, {"id": "1", "text": "I like tea"}],
        ["Now I work at Globex", "I like tea", "I have a cat called Tom"],
    )
    kind, answer = respond(_chat(None, update), mem0.RULES)
    assert kind == "mem0.update-decision"
    assert json.loads(answer.content or "")["memory"] == [
        {
            "id": "0",
            "text": "Now I work at Globex",
            "event": "UPDATE",
            "old_memory": "I work at Acme",
        },
        {"id": "1", "text": "I like tea", "event": "NONE"},
        {"id": "2", "text": "I have a cat called Tom", "event": "ADD"},
    ]


def test_update_decision_on_an_empty_memory_adds_everything() -> None:
    update = prompts().get_update_memory_messages([], ["I work at Acme"])
    _, answer = respond(_chat(None, update), mem0.RULES)
    assert json.loads(answer.content or "")["memory"] == [
        {"id": "0", "text": "I work at Acme", "event": "ADD"}
    ]


def test_an_unknown_prompt_names_its_caller() -> None:
    with pytest.raises(
        UnknownPrompt,
        match="no rule knows this prompt; caller OpenAI/Python "
        "test, model 'gpt-4o-mini', prompt begins 'Write a "
        "poem about memory.'",
    ):
        respond(_chat(None, "Write a poem about memory."), mem0.RULES)
