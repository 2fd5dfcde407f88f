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
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

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
        raise ValueError(f"{pointer!r} is neither a JSON pointer (write e.g. '/reply' or "
                         f"'/data/id') nor a JMESPath expression ({reason})") from None
    return pointer


class Operation(Strict):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    path: UrlText = Field(pattern=r"^/")
    query: dict[str, UrlText] = Field(default_factory=dict)
    body: Any = Field(default=None, alias="json")
    headers: Headers = Field(default_factory=dict)
    extract: dict[str, str] = Field(default_factory=dict)
    success: list[int] = Field(default_factory=lambda: [200, 201, 202, 204], min_length=1)

    @field_validator("extract")
    @classmethod
    def _pointers(cls, value: dict[str, str]) -> dict[str, str]:
        for pointer in value.values():
            check_pointer(pointer)
        return value

    @field_validator("success")
    @classmethod
    def _statuses(cls, value: list[int]) -> list[int]:
        for status in value:
            if not 100 <= status <= 599:
                raise ValueError(f"{status} is not an HTTP status")
        return value


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
    return names
