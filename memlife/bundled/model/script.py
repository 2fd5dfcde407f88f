"""The scripted model's rules as data: a chat request as the model sees it (`Chat`), what it
answers (`Answer`), and one `Rule` per kind of prompt a memory stack sends. Each stack's
prompts live in a module of their own (mem0.py, graphiti.py, letta.py), each with `RULES`;
`respond` picks the one rule whose `matches` holds, and an unknown prompt is an error that
names its caller, never a guess.

Pure: no I/O, no clock, no randomness; the same request always gets the same answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


class UnknownPrompt(ValueError):
    """No rule, or more than one, knows this prompt."""


@dataclass(frozen=True)
class Chat:
    """One chat completion request: what the client sent, and who sent it (its User-Agent,
    for the error an unknown prompt gets)."""

    model: str
    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[Mapping[str, Any], ...] = ()
    tool_choice: Any = None
    response_format: Mapping[str, Any] | None = None
    caller: str = "unknown client"

    @classmethod
    def from_request(cls, body: Mapping[str, Any], caller: str = "unknown client") -> Chat:
        return cls(
            model=str(body.get("model", "")),
            messages=tuple(body.get("messages") or ()),
            tools=tuple(body.get("tools") or ()),
            tool_choice=body.get("tool_choice"),
            response_format=body.get("response_format"),
            caller=caller,
        )

    def texts(self, role: str) -> list[str]:
        """The text of each message of `role`, in order (content parts of type text joined)."""
        return [content_text(m.get("content")) for m in self.messages if m.get("role") == role]

    @property
    def system(self) -> str:
        return "\n".join(self.texts("system") + self.texts("developer"))

    @property
    def user(self) -> str:
        """Every user message's text, joined."""
        return "\n".join(self.texts("user"))

    @property
    def last_user(self) -> str:
        found = self.texts("user")
        return found[-1] if found else ""

    @property
    def prompt(self) -> str:
        """The whole prompt's text, system first: what rules match on."""
        return "\n".join(content_text(m.get("content")) for m in self.messages)

    @property
    def schema(self) -> Mapping[str, Any] | None:
        """The JSON schema of a `json_schema` response format, if one was asked for."""
        fmt = self.response_format or {}
        if fmt.get("type") == "json_schema":
            return (fmt.get("json_schema") or {}).get("schema")
        return None

    @property
    def schema_name(self) -> str | None:
        fmt = self.response_format or {}
        if fmt.get("type") == "json_schema":
            return (fmt.get("json_schema") or {}).get("name")
        return None

    @property
    def tool_names(self) -> list[str]:
        return [str((t.get("function") or {}).get("name", t.get("name", ""))) for t in self.tools]


def content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") in ("text", None)
        )
    return str(content)


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Answer:
    """What the model says: text (plain or JSON), tool calls, or both."""

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    # The first token's most likely alternatives with their log probabilities, for a
    # client that asks for `logprobs` (a reranker reading "True"/"False" odds).
    top_logprobs: tuple[tuple[str, float], ...] = ()

    @classmethod
    def json(cls, value: Any) -> Answer:
        return cls(content=json.dumps(value, ensure_ascii=False))

    @classmethod
    def call(cls, name: str, **arguments: Any) -> Answer:
        return cls(tool_calls=(ToolCall(name, arguments),))


@dataclass(frozen=True)
class Rule:
    """One kind of prompt: `kind` names it in the model's record ("mem0.extract-facts")."""

    kind: str
    matches: Callable[[Chat], bool]
    answer: Callable[[Chat], Answer]
    doc: str = field(default="", compare=False)


def respond(chat: Chat, rules: Iterable[Rule]) -> tuple[str, Answer]:
    """(kind, answer) of the one rule that knows `chat`; UnknownPrompt otherwise."""
    found = [rule for rule in rules if rule.matches(chat)]
    if len(found) != 1:
        head = " ".join(chat.prompt.split())[:160]
        what = (
            "no rule knows this prompt"
            if not found
            else "several rules claim this prompt (" + ", ".join(r.kind for r in found) + ")"
        )
        raise UnknownPrompt(
            f"scripted model: {what}; caller {chat.caller}, model "
            f"{chat.model!r}, prompt begins {head!r}"
        )
    return found[0].kind, found[0].answer(chat)
