"""Letta's prompts as the Letta server 0.16.8 sent them (request bodies captured from a real
server, `letta_v1_agent` with the archival tools attached, driven through its REST API;
trimmed to what a model reads: tests/fixtures/model/letta/), answered by the scripted
model's rules (memlife/bundled/model/letta.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from memlife.bundled.model import letta
from memlife.bundled.model.script import Answer, Chat, UnknownPrompt, respond
from memlife.bundled.model.serve import RULES as EVERY_RULE

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "model" / "letta"


def _body(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def _respond(body: dict[str, Any]) -> tuple[str, Answer]:
    return respond(
        Chat.from_request(body, caller="AsyncOpenAI/Python letta 0.16.8 fixture"), letta.RULES
    )


def _call(answer: Answer) -> tuple[str, dict[str, Any]]:
    assert answer.content is None and len(answer.tool_calls) == 1
    return answer.tool_calls[0].name, dict(answer.tool_calls[0].arguments)


# fixture -> (kind, the tool call it makes or the reply it gives)
EXPECTED: dict[str, tuple[str, Any]] = {
    "turn-statement": (
        "letta.turn",
        (letta.INSERT, {"content": "I work at Ravenscroft Elmhirst Upholstery"}),
    ),
    "after-insert": ("letta.after-insert", "Noted."),
    "turn-question": ("letta.turn", (letta.SEARCH, {"query": "Where do I work?"})),
    "after-search": ("letta.after-search", "I work at Ravenscroft Elmhirst Upholstery."),
    "after-search-nothing-relevant": ("letta.after-search", "I don't have that information."),
    "turn-two-statements": ("letta.turn", (letta.INSERT, {"content": "I moved"})),
    "after-insert-one-more": (
        "letta.after-insert",
        (letta.INSERT, {"content": "I live on Harbour Road 3 now"}),
    ),
    # Archival memory only adds: the old address is found too, and the later one of the
    # same slot replaces it in the answer.
    "after-search-updated": ("letta.after-search", "I live on Harbour Road 3 now."),
    "turn-mixed-es": ("letta.turn", (letta.INSERT, {"content": "Hola"})),
    "after-insert-then-search-es": (
        "letta.after-insert",
        (letta.SEARCH, {"query": "¿Dónde trabajo?"}),
    ),
    "after-search-es": ("letta.after-search", "Trabajo en Conservas Palacios."),
    "after-search-empty-es": ("letta.after-search", "No tengo esa información."),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_captured_step_gets_its_rule_and_answer(name: str) -> None:
    kind, answer = _respond(_body(name))
    expected_kind, expected = EXPECTED[name]
    assert kind == expected_kind
    if isinstance(expected, str):
        assert answer.content == expected and not answer.tool_calls
    else:
        assert _call(answer) == expected


def test_the_fixtures_are_the_whole_set() -> None:
    names = {path.stem for path in FIXTURES.glob("*.json")}
    assert names == set(EXPECTED) | {"no-archival-tools"}


def test_only_lettas_rules_know_lettas_prompts_among_every_stacks() -> None:
    for name, (kind, _) in EXPECTED.items():
        chat = Chat.from_request(_body(name))
        assert respond(chat, EVERY_RULE)[0] == kind, name


def test_an_agent_without_the_archival_tools_is_not_guessed_at() -> None:
    # Letta 0.16.8's default tools (memory_insert, memory_replace, conversation_search):
    # the policy needs archival memory, so the prompt is refused, naming the caller.
    with pytest.raises(UnknownPrompt, match="no rule knows this prompt; caller AsyncOpenAI"):
        _respond(_body("no-archival-tools"))


def _last_tool_result(body: dict[str, Any], **changes: Any) -> dict[str, Any]:
    edited = copy.deepcopy(body)
    result = json.loads(edited["messages"][-1]["content"])
    result.update(changes)
    edited["messages"][-1]["content"] = json.dumps(result, indent=2)
    return edited


def test_a_failed_tool_is_not_answered_as_if_it_had_worked() -> None:
    with pytest.raises(UnknownPrompt):
        _respond(
            _last_tool_result(
                _body("after-insert"),
                status="Failed",
                message="Error executing function archival_memory_insert",
            )
        )
    with pytest.raises(UnknownPrompt):
        _respond(_last_tool_result(_body("after-search"), status="Failed"))


def test_another_tools_result_is_unknown() -> None:
    body = copy.deepcopy(_body("after-insert"))
    body["messages"][-2]["tool_calls"][0]["function"]["name"] = "conversation_search"
    with pytest.raises(UnknownPrompt):
        _respond(body)


def test_a_search_result_that_is_not_a_list_of_passages_is_unknown() -> None:
    with pytest.raises(UnknownPrompt):
        _respond(_last_tool_result(_body("after-search"), message="No results found."))


def test_the_same_request_gets_the_same_answer() -> None:
    for name in EXPECTED:
        assert _respond(_body(name)) == _respond(_body(name))


def test_best_passages_prefers_the_slot_asked_and_its_latest_value() -> None:
    passages = [
        {"timestamp": "2026-01-01T00:00:00", "content": "I live on Calle Pradera 12"},
        {"timestamp": "2026-01-02T00:00:00", "content": "I work at Acme"},
        {"timestamp": "2026-01-03T00:00:00", "content": "I live on Harbour Road 3"},
    ]
    assert letta.best_passages("Where do I live?", passages) == ["I live on Harbour Road 3"]
    assert letta.best_passages("Where do I work?", passages) == ["I work at Acme"]
    assert letta.best_passages("What is my pet called?", passages) == []
    assert letta.best_passages("Where do I live?", []) == []


def _with_block(body: dict[str, Any], label: str, value: str) -> dict[str, Any]:
    """The request with one more core-memory block in its system prompt, as Letta compiles
    an attached block (letta/schemas/memory.py)."""
    edited = copy.deepcopy(body)
    block = (
        f"<{label}>\n<description>\na memlife shared space\n</description>\n<metadata>\n"
        f"- chars_current={len(value)}\n- chars_limit=100000\n</metadata>\n<value>\n"
        f"{value}\n</value>\n</{label}>\n\n"
    )
    system = edited["messages"][0]["content"]
    edited["messages"][0]["content"] = system.replace(
        "</memory_blocks>", block + "</memory_blocks>", 1
    )
    return edited


def test_an_attached_blocks_statement_answers_as_a_passage_would() -> None:
    # A shared space is a block attached to its members' agents (scenarios/targets/
    # letta.yaml): the agent sees its value in its context, with no archival passage.
    nothing_found = _body("after-search-empty-es")
    assert _respond(nothing_found)[1].content == "No tengo esa información."
    shared = _with_block(nothing_found, "team", "Mi mascota se llama Canelo.")
    assert _respond(shared) == ("letta.after-search", Answer(content="Mi mascota se llama Canelo."))
    assert letta.block_statements(shared["messages"][0]["content"]) == [
        "Mi mascota se llama Canelo"
    ]
    # The agent's own human and persona blocks hold the server's defaults, never a fact.
    assert (
        _respond(_with_block(nothing_found, "human", "Mi mascota se llama Canelo."))[1].content
        == "No tengo esa información."
    )
