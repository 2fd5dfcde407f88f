"""The requests a target file describes: one HTTP operation (method, path, query, JSON body,
headers, what to extract from the answer), its `{name}` placeholders, and secrets named by
environment variable. Pure. The whole target file is target.py."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

# jmespath is imported here, not where a pointer is checked: a Target is validated inside
# workflows too, and the sandbox warns about modules imported after the workflow loaded.
import jmespath
from jmespath.exceptions import JMESPathError
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from memlife.rules.headers import HeaderName, UrlText, safe_header_values

PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class EnvRef(Strict):
    """A value read from an environment variable inside an activity."""

    env: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    prefix: str = ""


HeaderValue = str | EnvRef
Headers = Annotated[dict[HeaderName, HeaderValue], AfterValidator(safe_header_values)]


def check_pointer(pointer: str) -> str:
    """A JSON pointer (`/reply`, `/data/0/id`) or a JMESPath expression (`data[0].id`)."""
    if pointer == "" or pointer.startswith("/"):
        return pointer
    try:
        jmespath.compile(pointer)
    except JMESPathError as error:
        reason = str(error).splitlines()[0]
        raise ValueError(
            f"{pointer!r} is neither a JSON pointer (write e.g. '/reply' or "
            f"'/data/id') nor a JMESPath expression ({reason})"
        ) from None
    return pointer


def _statuses(value: list[int]) -> list[int]:
    for status in value:
        if not 100 <= status <= 599:
            raise ValueError(f"{status} is not an HTTP status")
    return value


def _pointers(value: dict[str, str]) -> dict[str, str]:
    for pointer in value.values():
        check_pointer(pointer)
    return value


Statuses = Annotated[list[int], AfterValidator(_statuses)]
Extracts = Annotated[dict[str, str], AfterValidator(_pointers)]


class Select(Strict):
    """The records of an answer a sequence goes on with: those whose text holds a value
    (memlife's matching: accents, case and white space aside). Each later request of the
    sequence runs once per selected record, with what `extract` took from it."""

    records: str = ""  # where the list of records is ("" : the whole answer)
    content: str = "/content"  # where a record's text is
    holding: str | None = None  # a template; a lone list placeholder keeps records holding any
    extract: Extracts = Field(default_factory=dict)

    @field_validator("records", "content")
    @classmethod
    def _pointer(cls, value: str) -> str:
        return check_pointer(value)


class Operation(Strict):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    path: UrlText = Field(pattern=r"^/")
    query: dict[str, UrlText] = Field(default_factory=dict)
    body: Any = Field(default=None, alias="json")
    headers: Headers = Field(default_factory=dict)
    extract: Extracts = Field(default_factory=dict)
    success: Statuses = Field(default_factory=lambda: [200, 201, 202, 204], min_length=1)
    # Statuses that mean the service refuses, or has nothing for this caller (a non-member's
    # 403, a deleted user's 404): an answer that holds nothing, never an error.
    refused: Statuses = Field(default_factory=list)
    # In a sequence: the records of this answer the later requests run for.
    select: Select | None = None
    # For an answering operation (say, ask, space_say, space_ask): how this one answers,
    # when not as the target file's `answers` says.
    answers: Literal["assistant", "retrieval"] | None = None

    @model_validator(mode="after")
    def _refused_is_not_success(self) -> Operation:
        both = sorted(set(self.success) & set(self.refused))
        if both:
            raise ValueError(
                f"status {', '.join(map(str, both))} is both a success and a "
                "refusal; list it under one of `success` and `refused`"
            )
        return self


class DeleteOperation(Operation):
    """Tenant deletion. If the response carries a `status` among `done_values`, deletion is
    confirmed at once; otherwise `deletion_status` is polled (or, without one, a 2xx is
    taken as synchronous completion)."""

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "DELETE"
    done_values: list[str] = Field(default_factory=lambda: ["completed"], min_length=1)
    failed_values: list[str] = Field(default_factory=lambda: ["failed", "error"])


class DeletionStatusOperation(DeleteOperation):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "GET"


def template_variables(operation: Operation) -> set[str]:
    names: set[str] = set(PLACEHOLDER.findall(operation.path))
    for value in operation.query.values():
        names.update(PLACEHOLDER.findall(value))

    def walk(node: Any) -> None:
        if isinstance(node, str):
            names.update(PLACEHOLDER.findall(node))
        elif isinstance(node, dict):
            for item in node.values():
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(operation.body)
    if operation.select is not None and operation.select.holding is not None:
        names.update(PLACEHOLDER.findall(operation.select.holding))
    return names


def sequence_problems(steps: list[Operation], given: frozenset[str]) -> list[tuple[int, str]]:
    """What is wrong with a sequence of requests: (index, reason). Each request may use the
    variables given and those the requests before it extracted; at most one selects."""
    problems: list[tuple[int, str]] = []
    known = set(given)
    selecting = [index for index, step in enumerate(steps) if step.select is not None]
    for index in selecting[1:]:
        problems.append(
            (
                index,
                "only one request of a sequence may `select`: every request "
                "after it already runs once per selected record",
            )
        )
    for index, step in enumerate(steps):
        for variable in sorted(template_variables(step) - known):
            problems.append(
                (
                    index,
                    f"unknown placeholder {{{variable}}}; here it may use: "
                    + ", ".join(f"{{{v}}}" for v in sorted(known)),
                )
            )
        known.update(step.extract)
        if step.select is not None:
            known.update(step.select.extract)
    return problems
