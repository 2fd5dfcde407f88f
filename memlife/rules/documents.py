"""Input documents (scenario, target and matrix files): strict YAML loading, then
validation against a pydantic model and the rules only the whole document can check.
Every problem becomes one `file: field.path: reason` line; duplicate keys are errors and
carry their line."""

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


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys (PyYAML silently keeps the last)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:  # unhashable key: let the base constructor report it
            duplicate = False
        if duplicate:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (line {mark.line + 1})", mark
            )
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping
)


def load_yaml_file(path: str | Path) -> Any:
    """Read and parse one YAML document, turning every failure into an InputError."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError([Problem(name, "", "file not found")]) from None
    except IsADirectoryError:
        raise InputError([Problem(name, "", "is a directory, expected a YAML file")]) from None
    except UnicodeDecodeError as exc:
        raise InputError([Problem(name, "", f"not UTF-8 text ({exc.reason})")]) from None
    except OSError as exc:
        raise InputError([Problem(name, "", f"cannot read: {exc.strerror}")]) from None
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except RecursionError:  # PyYAML composes nested collections recursively
        raise InputError([Problem(name, "", "invalid YAML: nested too deeply (no memlife "
                                  "file needs more than a few levels)")]) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow
        reason = f"invalid YAML: character #x{exc.character:04x} is not allowed ({exc.reason})" \
            if isinstance(exc.character, int) else f"invalid YAML: {exc.reason}"
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
STEP_KINDS = ("write", "update", "wait", "probe", "delete", "await-deletion", "inspect",
              "register")


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
            if (part in STEP_KINDS and position >= 2 and loc[position - 2] == "timeline"
                    and isinstance(loc[position - 1], int)):
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


def parse_document(model: type[Model], data: Any, file: str,
                   semantic: Callable[[Model, str], list[Problem]]) -> Model:
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
