"""What `propose` returns (a Proposal of Guesses) or raises, and the target file it renders
to: YAML whose comments say where each guess came from and what to confirm."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

Confidence = Literal["high", "medium", "low"]


class ProposalError(Exception):
    """The document cannot be proposed from: `field` says where, the message why."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        super().__init__(reason)


@dataclass(frozen=True)
class Guess:
    """One part of the proposal: what is written (`value`), from where, how sure, and what
    a person must confirm. A `low` guess is written commented out: it would likely fail."""

    role: str
    value: Any
    confidence: Confidence
    source: str
    confirm: tuple[str, ...] = ()

    @property
    def live(self) -> bool:
        return self.confidence != "low"


@dataclass
class Proposal:
    name: str
    base_url: str
    description: str
    source: str
    headers: dict[str, Any] = field(default_factory=dict)
    header_guesses: list[Guess] = field(default_factory=list)
    operations: list[Guess] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # what was looked for and not found
    base_url_confirm: list[str] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        """The target file as data: what the rendered file holds uncommented."""
        data: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "base_url": self.base_url,
        }
        if self.headers:
            data["headers"] = self.headers
        data["operations"] = {g.role: g.value for g in self.operations if g.live}
        return data

    def secrets(self) -> list[str]:
        return [v["env"] for v in self.headers.values() if isinstance(v, dict) and "env" in v]

    def to_confirm(self) -> list[str]:
        items = [f"base_url: {text}" for text in self.base_url_confirm]
        items += [f"{g.role}: {text}" for g in self.header_guesses for text in g.confirm]
        for guess in self.operations:
            if not guess.live:
                items.append(
                    f"{guess.role}: written commented out (a guess too weak to send); "
                    "uncomment and complete it if the service has it"
                )
            items.extend(f"{guess.role}: {text}" for text in guess.confirm)
        return items

    def render(self, file_name: str = "FILE") -> str:
        lines = [
            f"# Proposed by `memlife target init` from {self.source}.",
            "# Every part below is a guess from the OpenAPI document: each says where it came",
            "# from and what a person must confirm. Then check it against the service:",
        ]
        for name in self.secrets():
            lines.append(f"#   export {name}=…")
        lines.append(f"#   memlife target check {file_name}")
        confirm = self.to_confirm()
        if confirm:
            lines += ["#", "# To confirm:"]
            lines += _wrapped(confirm, "#   - ", "#     ")
        if self.missing:
            lines += ["#", "# Not found in the document (add by hand if the service has it):"]
            lines += _wrapped(self.missing, "#   - ", "#     ")
        lines += [
            "# Shared spaces (create_space, space_say, …) and store probes are never proposed:",
            "# docs/target-files.md says how to write them.",
        ]
        lines.append(_dump({"name": self.name}))
        lines.append(_dump({"description": self.description}))
        lines.append(_dump({"base_url": self.base_url}))
        if self.headers:
            lines.append("headers:")
            for guess in self.header_guesses:
                lines += _comments(guess, "  ")
            lines.append(_indent(_dump(self.headers), "  "))
        lines.append("operations:")
        for guess in self.operations:
            lines += _comments(guess, "  ")
            body = _indent(_dump({guess.role: guess.value}), "  ")
            if not guess.live:
                body = "\n".join(
                    "  # " + line[2:] if line.startswith("  ") else "# " + line
                    for line in body.splitlines()
                )
            lines.append(body)
        return "\n".join(lines) + "\n"


def _dump(data: Any) -> str:
    return yaml.safe_dump(
        data, sort_keys=False, default_flow_style=False, allow_unicode=True, width=200
    ).rstrip("\n")


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _wrapped(items: list[str], first: str, rest: str, width: int = 92) -> list[str]:
    out: list[str] = []
    for item in items:
        out += textwrap.wrap(item, width, initial_indent=first, subsequent_indent=rest)
    return out


def _comments(guess: Guess, indent: str) -> list[str]:
    head = f"{guess.role}: guessed from {guess.source} (confidence {guess.confidence})"
    items = [head] + [f"confirm: {text}" for text in guess.confirm]
    out: list[str] = []
    for index, item in enumerate(items):
        out += _wrapped([item], f"{indent}# " + ("" if index == 0 else "  "), f"{indent}#   ")
    return out
