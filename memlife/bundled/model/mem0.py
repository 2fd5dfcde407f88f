"""Mem0's prompts (mem0ai 2.2.1, `mem0/configs/prompts.py` and `mem0/memory/main.py`),
answered by rule:

- `mem0.additive-extraction` — Mem0 2.x's one LLM call per `Memory.add(infer=True)`
  (`ADDITIVE_EXTRACTION_PROMPT`, user prompt from `generate_additive_extraction_prompt`,
  JSON mode): each statement of the user's new messages, word for word, as a memory
  attributed to the user; one already among the existing or recently extracted memories
  (same text, after normalization) is skipped, as the prompt asks; a memory that fills the
  slot of an existing one links to it (`linked_memory_ids`). Mem0 2.x only adds: whatever
  the old memory said stays.
- `mem0.fact-extraction` — Mem0 1.x's first call (`FACT_RETRIEVAL_PROMPT`,
  `USER_MEMORY_EXTRACTION_PROMPT`; user prompt "Input:\\n…"): `{"facts": [statements]}`.
- `mem0.update-decision` — Mem0 1.x's second call (`DEFAULT_UPDATE_MEMORY_PROMPT` through
  `get_update_memory_messages`): a new fact equal to an old memory is NONE, one that fills
  an old memory's slot is UPDATE of that memory, any other is ADD.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from memlife.bundled.model import facts
from memlife.bundled.model.script import Answer, Chat, Rule
from memlife.bundled.reference.language import normalize

_ADDITIVE = "Your sole operation is ADD"
_ORGANIZER = "You are a Personal Information Organizer"
_MANAGER = "You are a smart memory manager which controls the memory of a system."


def _section(prompt: str, title: str) -> str:
    """The body of a `## Title` section of Mem0's user prompt."""
    match = re.search(
        rf"^## {re.escape(title)}\n(.*?)(?=^## |^# Output:|\Z)", prompt, re.MULTILINE | re.DOTALL
    )
    return match.group(1).strip() if match else ""


def _json_list(text: str) -> list[Any]:
    try:
        found = json.loads(text) if text else []
    except json.JSONDecodeError:
        found = ast.literal_eval(text)
    return found if isinstance(found, list) else []


def _user_lines(conversation: str) -> list[str]:
    """The user's messages of Mem0's `parse_messages` text ("user: …" lines)."""
    return [
        line.partition(":")[2].strip()
        for line in conversation.splitlines()
        if line.startswith("user:")
    ]


def _additive(chat: Chat) -> Answer:
    prompt = chat.last_user
    new = _user_lines(_section(prompt, "New Messages"))
    existing = _json_list(_section(prompt, "Existing Memories"))
    recent = _json_list(_section(prompt, "Recently Extracted Memories"))
    known = {normalize(str(m.get("text", ""))) for m in existing + recent if isinstance(m, dict)}
    memories: list[dict[str, Any]] = []
    for message in new:
        for fact in facts.statements(message):
            if normalize(fact) in known:
                continue
            known.add(normalize(fact))
            memory: dict[str, Any] = {
                "id": str(len(memories)),
                "text": fact,
                "attributed_to": "user",
            }
            linked = [
                str(m["id"])
                for m in existing
                if isinstance(m, dict) and facts.same_slot(str(m.get("text", "")), fact)
            ]
            if linked:
                memory["linked_memory_ids"] = linked
            memories.append(memory)
    return Answer.json({"memory": memories})


def _fact_extraction(chat: Chat) -> Answer:
    conversation = chat.last_user.partition("Input:")[2]
    found = [
        fact for message in _user_lines(conversation.strip()) for fact in facts.statements(message)
    ]
    return Answer.json({"facts": found})


def _fenced(prompt: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```(.*?)```", prompt, re.DOTALL)]


def _update_decision(chat: Chat) -> Answer:
    prompt = chat.prompt
    blocks = _fenced(prompt)
    has_memory = "Current memory is empty." not in prompt
    old = _json_list(blocks[0]) if has_memory and blocks else []
    new = _json_list(blocks[-1]) if blocks else []
    events: dict[str, dict[str, Any]] = {
        str(m["id"]): {"id": str(m["id"]), "text": m["text"], "event": "NONE"}
        for m in old
        if isinstance(m, dict) and "id" in m
    }
    next_id = len(events)
    for fact in (str(item) for item in new):
        same = [m for m in events.values() if normalize(m["text"]) == normalize(fact)]
        if same:
            continue
        slot = [m for m in events.values() if facts.same_slot(m["text"], fact)]
        if slot:
            target = slot[0]
            events[target["id"]] = {
                "id": target["id"],
                "text": fact,
                "event": "UPDATE",
                "old_memory": target.get("old_memory", target["text"]),
            }
            continue
        while str(next_id) in events:
            next_id += 1
        events[str(next_id)] = {"id": str(next_id), "text": fact, "event": "ADD"}
    return Answer.json({"memory": list(events.values())})


RULES: tuple[Rule, ...] = (
    Rule("mem0.additive-extraction", lambda chat: _ADDITIVE in chat.system, _additive),
    Rule(
        "mem0.fact-extraction",
        lambda chat: chat.system.lstrip().startswith(_ORGANIZER),
        _fact_extraction,
    ),
    Rule("mem0.update-decision", lambda chat: _MANAGER in chat.prompt, _update_decision),
)
