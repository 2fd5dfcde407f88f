"""Letta's agent, answered by rule: the prompts of the Letta server 0.16.8 (PyPI `letta`,
letta-ai/letta tag 0.16.8) for its default agent type, `letta_v1_agent`
(letta/agents/letta_agent_v3.py), as captured from a real server (tests/fixtures/model/
letta/).

How Letta 0.16.8 drives a model, per user message: one chat completion per step, not
streamed, `tool_choice: "auto"`, `parallel_tool_calls: false`, the whole context every time
(the system prompt with the agent's core-memory blocks between `<memory_blocks>` and
`<memory_metadata>`, then the recall history, then this turn). A step whose answer calls a
tool is followed by another step with the tool's result appended (`role: tool`, a JSON
`{"status", "message", "time"}`); a step whose answer calls no tool ends the turn, its text
being the agent's reply (`assistant_message`). There is no `send_message` tool and no
`request_heartbeat` in this agent type.

The policy (one rule per step kind; every kind needs the two archival tools among the
agent's tools: Letta 0.16.8 lists them as deprecated and leaves them out of a new agent's
defaults, so the target file names them when it creates the agent):

- `letta.turn` — the turn's first step (the last message is the user's): store the first
  statement of the message in archival memory (`archival_memory_insert`, the fact word for
  word: facts.statements), or, for a message that states nothing, search archival memory
  for its question (`archival_memory_search`).
- `letta.after-insert` — after a successful insert: store the next statement, then search
  for the message's question if it asks one, else reply "Noted.".
- `letta.after-search` — after a search: reply with the passages found that best answer the
  question (facts.relevance), less those a later passage of the same slot replaced (a later
  "I live on …" updates an earlier one, as the model decides for Mem0); with none, abstain.
  The statements of the core-memory blocks in the system prompt count as found too (a
  shared space is a block attached to its members' agents: scenarios/targets/letta.yaml),
  except the agent's own `human` and `persona` blocks, which this policy never writes.

A step that fits none of these (another tool's result, a failed tool, a prompt without the
archival tools, a summarizer's request) is an unknown prompt: the scripted model refuses it
rather than guess.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from memlife.bundled.model import facts
from memlife.bundled.model.script import Answer, Chat, Rule, content_text
from memlife.bundled.reference.language import detect_language

INSERT = "archival_memory_insert"
SEARCH = "archival_memory_search"
# Letta's system prompt (letta/prompts/system_prompts/letta_v1.py, then the agent's memory
# and its metadata: letta/services/helpers/agent_manager_helper.py) always holds these
# tags, with core-memory blocks or none; no other stack memlife runs sends them.
_MARKERS = ("<base_instructions>", "<memory_metadata>")
NOTED = {"en": "Noted.", "es": "Anotado."}
# The reference target's abstention (memlife/bundled/reference/retrieval.py), in words.
ABSTAIN = {"en": "I don't have that information.", "es": "No tengo esa información."}


def _is_agent(chat: Chat) -> bool:
    names = set(chat.tool_names)
    return all(marker in chat.system for marker in _MARKERS) and {INSERT, SEARCH} <= names


def _turn(chat: Chat) -> tuple[str, list[Mapping[str, Any]]] | None:
    """(the user's message, the messages after it) of the turn in progress; None when the
    prompt holds no user message."""
    for index in range(len(chat.messages) - 1, -1, -1):
        if chat.messages[index].get("role") == "user":
            return (
                content_text(chat.messages[index].get("content")),
                list(chat.messages[index + 1 :]),
            )
    return None


def _calls(messages: list[Mapping[str, Any]]) -> dict[str, tuple[str, dict[str, Any]]]:
    """The tool calls of these messages by id: (tool name, arguments)."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except json.JSONDecodeError:
                arguments = {}
            found[str(call.get("id"))] = (str(function.get("name")), arguments)
    return found


def _tool_result(message: Mapping[str, Any]) -> tuple[str, str] | None:
    """(status, message) of a Letta tool result (letta/utils.py package_function_response:
    a JSON object with `status` "OK" or "Failed", `message` and `time`)."""
    try:
        result = json.loads(content_text(message.get("content")))
    except json.JSONDecodeError:
        return None
    if not isinstance(result, dict) or "status" not in result:
        return None
    return str(result["status"]), str(result.get("message", ""))


def _last_tool(chat: Chat) -> tuple[str, str, str] | None:
    """(tool name, status, message) when the last message is the result of a tool this turn
    called; None otherwise."""
    turn = _turn(chat)
    if turn is None or not turn[1] or turn[1][-1].get("role") != "tool":
        return None
    last = turn[1][-1]
    called = _calls(turn[1]).get(str(last.get("tool_call_id")))
    result = _tool_result(last)
    if called is None or result is None:
        return None
    return called[0], result[0], result[1]


def _questions(message: str) -> str:
    return " ".join(s for s in facts.sentences(message) if facts.is_question(s))


def _plan(chat: Chat) -> Answer:
    """The next step of the turn: insert what is not yet stored, then search, then reply."""
    turn = _turn(chat)
    assert turn is not None  # every rule matches a prompt with a user message
    message, after = turn
    stored = [
        arguments.get("content") for name, arguments in _calls(after).values() if name == INSERT
    ]
    for fact in facts.statements(message):
        if fact not in stored:
            return Answer.call(INSERT, content=fact)
    question = _questions(message)
    if question:
        return Answer.call(SEARCH, query=question)
    return Answer(content=NOTED[detect_language(message)])


def _passages(found: str) -> list[dict[str, Any]]:
    """The passages of an archival search's result: Letta returns the Python repr of a list
    of {id, timestamp, content, tags} (letta/services/tool_executor/
    core_tool_executor.py archival_memory_search, str() of the list)."""
    value = ast.literal_eval(found)
    if not isinstance(value, list) or not all(isinstance(p, dict) for p in value):
        raise ValueError("not a list of passages")
    return value


def _searched(chat: Chat) -> list[dict[str, Any]] | None:
    last = _last_tool(chat)
    if last is None or last[0] != SEARCH or last[1] != "OK":
        return None
    try:
        return _passages(last[2])
    except (ValueError, SyntaxError):
        return None


# One block of the system prompt's <memory_blocks> (letta/schemas/memory.py compile): its
# label as the tag, then its description, metadata and value.
_BLOCK = re.compile(
    r"<(?P<label>[\w-]+)>\s*<description>.*?</description>\s*<metadata>.*?"
    r"</metadata>\s*<value>\n?(?P<value>.*?)\n?</value>\s*</(?P=label)>",
    re.DOTALL,
)
_AGENT_OWN_BLOCKS = {"human", "persona"}


def block_statements(system: str) -> list[str]:
    """The statements held in the core-memory blocks attached to the agent (its own human
    and persona blocks aside)."""
    start, end = system.find("<memory_blocks>"), system.find("</memory_blocks>")
    if start < 0 or end < start:
        return []
    return [
        fact
        for block in _BLOCK.finditer(system, start, end)
        if block["label"] not in _AGENT_OWN_BLOCKS
        for fact in facts.statements(block["value"])
    ]


def best_passages(question: str, passages: list[dict[str, Any]]) -> list[str]:
    """The passages that best answer the question, oldest first, without those a later
    passage of the same slot replaced."""
    scored = [(facts.relevance(question, str(p.get("content", ""))), p) for p in passages]
    best = max((score for score, _ in scored), default=0.0)
    if best <= 0:
        return []
    top = sorted(
        (p for score, p in scored if score == best), key=lambda p: str(p.get("timestamp", ""))
    )
    current = [
        p
        for index, p in enumerate(top)
        if not any(
            facts.same_slot(str(p["content"]), str(later["content"])) for later in top[index + 1 :]
        )
    ]
    return [str(p["content"]) for p in current]


def _answer(chat: Chat) -> Answer:
    turn = _turn(chat)
    passages = _searched(chat)
    assert turn is not None and passages is not None  # the rule matched
    language = detect_language(turn[0])
    # A block's statements are what the agent sees now: oldest, so a later passage of the
    # same slot replaces them.
    blocks = [{"content": fact, "timestamp": ""} for fact in block_statements(chat.system)]
    found = best_passages(_questions(turn[0]), blocks + passages)
    if not found:
        return Answer(content=ABSTAIN[language])
    return Answer(content=" ".join(f"{text.rstrip('.')}." for text in found))


def _starts_turn(chat: Chat) -> bool:
    turn = _turn(chat)
    return _is_agent(chat) and turn is not None and not turn[1] and bool(turn[0].strip())


def _after_insert(chat: Chat) -> bool:
    last = _last_tool(chat)
    return _is_agent(chat) and last is not None and last[0] == INSERT and last[1] == "OK"


def _after_search(chat: Chat) -> bool:
    return _is_agent(chat) and _searched(chat) is not None


RULES: tuple[Rule, ...] = (
    Rule(
        "letta.turn",
        _starts_turn,
        _plan,
        doc="a user message: archive its first statement, or search for its question",
    ),
    Rule(
        "letta.after-insert",
        _after_insert,
        _plan,
        doc="a statement archived: archive the next, search for the question, or say so",
    ),
    Rule(
        "letta.after-search",
        _after_search,
        _answer,
        doc="archival passages found: answer with the best, or abstain",
    ),
)
