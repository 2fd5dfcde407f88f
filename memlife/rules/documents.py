"""Input documents (scenario, target and matrix files, and so what a schedule is made
from): one safe YAML loader, then validation against a pydantic model and the rules only
the whole document can check. Every problem becomes one `file: field.path: reason` line.

The loader refuses, each with its line: anything but a regular file (a pipe would hang
it), a file over MAX_FILE_BYTES (read no further), nesting deeper than MAX_DEPTH, a
document whose aliases expand past MAX_NODES nodes (a "billion laughs"), explicit YAML
tags (`!!python/object`, `!!binary`, `!!set`: nothing a memlife file needs, and the first
constructs objects) and duplicate keys (PyYAML silently keeps the last)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from memlife.errors import InputError, Problem

Model = TypeVar("Model", bound=BaseModel)


MAX_FILE_BYTES = 8 * 1024 * 1024  # a 10,000-pair scenario with listed pairs is ~2 MB
MAX_DEPTH = 64  # memlife's deepest file needs about ten levels
MAX_NODES = 1_000_000  # nodes after aliases are expanded


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that also refuses what a memlife file never needs (see the module)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}  # node id -> its size with aliases expanded

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            return super().compose_node(parent, index)
        tag = getattr(event, "tag", None)
        if tag not in (None, "!"):
            raise yaml.composer.ComposerError(
                None,
                None,
                f"the YAML tag {tag!r} is not allowed (memlife files are plain "
                "mappings, lists and scalars)",
                event.start_mark,
            )
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None,
                None,
                f"nested deeper than {MAX_DEPTH} levels (no memlife file needs more than a few)",
                event.start_mark,
            )
        node = super().compose_node(parent, index)
        self._depth -= 1
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        else:
            children = []
        size = 1 + sum(self._sizes.get(id(child), 1) for child in children)
        if size > MAX_NODES:
            raise yaml.composer.ComposerError(
                None,
                None,
                f"its aliases expand to more than {MAX_NODES:,} values",
                event.start_mark,
            )
        self._sizes[id(node)] = size
        return node


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        mark = key_node.start_mark
        try:
            duplicate = key in seen
        except TypeError:  # a list or mapping as a key (`? [a]: b`): no memlife field is one
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"a key must be plain text, not a {type(key).__name__} (line {mark.line + 1})",
                mark,
            ) from None
        if duplicate:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (line {mark.line + 1})", mark
            )
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_capped(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """At most `limit` bytes of a regular file, or an InputError: read no further than the
    cap, so that a huge file costs nothing, and never open a pipe or a device."""
    name = str(path)
    try:
        # Opening a pipe would wait for a writer; a device never ends: regular files only.
        if Path(path).exists() and not Path(path).is_dir() and not Path(path).is_file():
            raise InputError(
                [
                    Problem(
                        name,
                        "",
                        "not a regular file (a pipe, socket or device); give memlife a file",
                    )
                ]
            )
        with open(path, "rb") as stream:
            data = stream.read(limit + 1)
    except FileNotFoundError:
        raise InputError([Problem(name, "", "file not found")]) from None
    except IsADirectoryError:
        raise InputError([Problem(name, "", "is a directory, expected a file")]) from None
    except OSError as exc:
        raise InputError([Problem(name, "", f"cannot read: {exc.strerror}")]) from None
    if len(data) > limit:
        raise InputError(
            [
                Problem(
                    name,
                    "",
                    f"larger than {limit // (1024 * 1024)} MiB, the most a memlife file may be",
                )
            ]
        )
    return data


def load_yaml_file(path: str | Path) -> Any:
    """Read and parse one YAML document, turning every failure into an InputError."""
    name = str(path)
    try:
        text = read_capped(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError([Problem(name, "", f"not UTF-8 text ({exc.reason})")]) from None
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except RecursionError:  # PyYAML composes nested collections recursively
        raise InputError(
            [
                Problem(
                    name,
                    "",
                    "invalid YAML: nested too deeply (no memlife "
                    "file needs more than a few levels)",
                )
            ]
        ) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow
        reason = (
            f"invalid YAML: character #x{exc.character:04x} is not allowed ({exc.reason})"
            if isinstance(exc.character, int)
            else f"invalid YAML: {exc.reason}"
        )
        raise InputError([Problem(name, f"character {exc.position + 1}", reason)]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        reason = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
        raise InputError([Problem(name, where, reason)]) from None


# Scenario step kinds: pydantic puts the discriminator's value into an error's location
# (timeline.3.probe.kind); the path a person reads leaves it out (timeline.3.kind).
STEP_KINDS = (
    "write",
    "update",
    "wait",
    "probe",
    "delete",
    "await-deletion",
    "inspect",
    "register",
    "maintain",
    "space",
)


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _path_part(part: object) -> str:
    """Field names as written; an odd key (spaces, dots, control characters) quoted."""
    text = str(part)
    return text if _PLAIN_KEY.fullmatch(text) else json.dumps(text, ensure_ascii=False)


def pydantic_problems(error: ValidationError, file: str) -> list[Problem]:
    problems = []
    for item in error.errors(include_url=False):
        loc = list(item["loc"])
        kept = []
        for position, part in enumerate(loc):
            if isinstance(part, str) and "[" in part:
                continue  # a union member's tag such as 'function-before[...]'
            if (
                part in STEP_KINDS
                and position >= 2
                and loc[position - 2] == "timeline"
                and isinstance(loc[position - 1], int)
            ):
                continue
            kept.append(_path_part(part))
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown field"
        elif item["type"] == "union_tag_invalid":
            message = f"unknown step kind; expected one of: {', '.join(STEP_KINDS)}"
        elif message.startswith("Value error, "):
            message = message.removeprefix("Value error, ")
        problems.append(Problem(file, ".".join(kept), message))
    return problems


def parse_document(
    model: type[Model], data: Any, file: str, semantic: Callable[[Model, str], list[Problem]]
) -> Model:
    """The model, or an InputError naming every problem (shape first, then meaning)."""
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        raise InputError([Problem(file, "", f"expected a mapping at the top level, got {kind}")])
    try:
        document = model.model_validate(data)
    except ValidationError as exc:
        raise InputError(pydantic_problems(exc, file)) from None
    problems = semantic(document, file)
    if problems:
        raise InputError(problems)
    return document
