"""Validating a parsed YAML document against a pydantic model, then against the rules only
the whole document can check; every problem becomes `file: field.path: reason`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from memlife.errors import InputError, Problem

Model = TypeVar("Model", bound=BaseModel)

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
