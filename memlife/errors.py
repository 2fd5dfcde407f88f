"""Errors a person can act on. Each renders as one line, always shaped the same way: where
(a file, `command line`, or a service), what (a field or an option, when there is one),
and why, separated by colons. The CLI prints them as they are and exits 2."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Problem:
    """One problem in an input file: `file: field.path: reason`."""

    file: str
    path: str
    reason: str

    def __str__(self) -> str:
        reason = re.sub(r"\s*[\r\n\t]+\s*", " ", self.reason)  # one line, always
        # A key is the file's own text: a control character in it is shown escaped.
        path = _CONTROL.sub(lambda match: repr(match.group())[1:-1], self.path)
        return f"{self.file}: {path}: {reason}" if path else f"{self.file}: {reason}"


class MemlifeError(Exception):
    """Base of the errors memlife reports without a traceback. Its message is the whole
    line: `where: what: why` (see Problem)."""


class InputError(MemlifeError):
    """One or more problems in a scenario or target file."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class UnreachableError(MemlifeError):
    """A service memlife needs could not be reached; the message says how to fix it."""


def collect(problems: list[Problem], load: Callable[..., T], *args: Any) -> T | None:
    """`load(*args)`, or None with its problems added to `problems`: every problem of every
    input is reported at once, not only the first file's."""
    try:
        return load(*args)
    except InputError as error:
        problems.extend(error.problems)
        return None
