"""Artifact files (what `memlife run --out` writes) read as a stream: a JSON document's
top-level fields given to a visitor one at a time, each list an entry at a time
(`visit_fields`), and a run's artifact file read back as a run from the recorder is
(`read_run_file`): its digest held, its probes' latencies beside it, and its tenants,
timeline and cases read from the file afresh each time a report asks (`FileLists`). So a
report of a 10,000-pair run's 2.7 GB artifact holds what the report draws, not the file.
"""

from __future__ import annotations

from array import array
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from memlife.errors import InputError, Problem
from memlife.recorder.artifact import (
    Artifact,
    CaseEntry,
    ObservationEntry,
    TenantEntry,
    TimelineStep,
    as_written,
)

# The long lists a report reads from the file when it needs them, not held; the others
# (each pair's tallies, the reviewers' decisions) are held with the digest, as
# recorder.report_artifact holds them.
STREAMED: dict[str, type[BaseModel]] = {
    "tenants": TenantEntry,
    "timeline": TimelineStep,
    "cases": CaseEntry,
    "observations": ObservationEntry,
}

_OPENS, _CLOSES = ("start_map", "start_array"), ("end_map", "end_array")


class FieldVisitor(Protocol):
    """What `visit_fields` gives a document's top-level fields to."""

    def field(self, name: str, value: Any) -> None:
        """A field that is not a list, whole."""

    def begin(self, name: str) -> None:
        """A list field starts; its entries follow."""

    def entry(self, name: str, value: Any) -> None:
        """One entry of the list field `name`."""

    def end(self, name: str) -> None:
        """The list field `name` has ended."""


class NotAnObject(ValueError):
    """The JSON document is not an object."""


def visit_fields(events: Iterable[tuple[str, Any]], visitor: FieldVisitor) -> None:
    """Give a parsed JSON object's events (ijson's `basic_parse`: no prefixes, whose cost
    grows with the depth) to the visitor as its top-level fields, each list an entry at a
    time: nothing bigger than one entry (or one field that is not a list) is built.
    Raises NotAnObject where the document is not an object."""
    events = iter(events)
    event, _ = next(events)
    if event != "start_map":
        raise NotAnObject("not a JSON object")
    for event, name in events:
        if event == "end_map":
            return
        event, value = next(events)
        if event != "start_array":
            visitor.field(name, _built(event, value, events))
            continue
        visitor.begin(name)
        for event, value in events:
            if event == "end_array":
                break
            visitor.entry(name, _built(event, value, events))
        visitor.end(name)


def _built(event: str, value: Any, events: Iterator[tuple[str, Any]]) -> Any:
    """The value that starts with this event, built from the events that follow."""
    import ijson

    if event not in _OPENS:
        return value
    builder, depth = ijson.ObjectBuilder(), 1
    builder.event(event, value)
    for event, value in events:
        builder.event(event, value)
        depth += (event in _OPENS) - (event in _CLOSES)
        if depth == 0:
            return builder.value
    raise ValueError("the document ends inside a value")


class FileLists:
    """A run artifact file's tenants, timeline and cases, each call a fresh read of the file
    (what a report needs of reports/lists.py's `Lists`), each entry as its model writes it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _entries(self, name: str) -> Iterator[dict[str, Any]]:
        import ijson

        with open(self.path, "rb") as stream:
            yield from as_written(
                STREAMED[name], ijson.items(stream, f"{name}.item", use_float=True)
            )

    def tenants(self) -> Iterator[dict[str, Any]]:
        return self._entries("tenants")

    def timeline(self, pairs: Collection[int] | None = None) -> Iterator[dict[str, Any]]:
        return (
            step for step in self._entries("timeline") if pairs is None or step["pair"] in pairs
        )

    def cases(self) -> Iterator[dict[str, Any]]:
        return self._entries("cases")


class NotARunArtifact(ValueError):
    """The file is JSON, but not one run's artifact (an experiment's document, say)."""


class _RunFileReader:
    """Checks every entry of a run artifact file against its model as it passes, and keeps
    the digest's fields and the answered probes' latencies."""

    def __init__(self, file: str, invariants: Collection[str] | None) -> None:
        self.file, self.invariants = file, invariants
        self.digest: dict[str, Any] = {}
        self.samples: array[float] = array("d")
        self.problems: list[Problem] = []
        self._index = 0

    def field(self, name: str, value: Any) -> None:
        self.digest[name] = value

    def begin(self, name: str) -> None:
        if name == "runs":  # an experiment's document: every run's artifact inside
            raise NotARunArtifact("an experiment's document")
        self._index = 0
        if name not in STREAMED:
            self.digest[name] = []

    def entry(self, name: str, value: Any) -> None:
        model = STREAMED.get(name)
        index, self._index = self._index, self._index + 1
        if model is None:
            if (
                name == "pairs"
                and self.invariants is not None
                and isinstance(value, dict)
                and isinstance(value.get("by_invariant"), dict)
            ):
                value["by_invariant"] = {
                    k: v for k, v in value["by_invariant"].items() if k in self.invariants
                }
            self.digest[name].append(value)
            return
        try:
            checked = model.model_validate(value)
        except ValidationError as error:
            if len(self.problems) < 20:  # enough to act on, not a screenful per entry
                from memlife.rules.documents import pydantic_problems

                self.problems += [
                    Problem(
                        self.file,
                        f"{name}.{index}" + (f".{problem.path}" if problem.path else ""),
                        problem.reason,
                    )
                    for problem in pydantic_problems(error, self.file)
                ]
            return
        if (
            isinstance(checked, ObservationEntry)
            and checked.kind == "probe"
            and checked.status == "ok"
            and checked.latency_ms is not None
        ):
            self.samples.append(checked.latency_ms)

    def end(self, name: str) -> None:
        pass


def read_run_file(
    path: Path,
    invariants: Collection[str] | None = None,
) -> tuple[Artifact, array[float], FileLists]:
    """A run artifact file as a report reads a run: its digest (every field but the long
    lists: each pair's tallies, of `invariants` only when given, and the reviewers'
    decisions held), the answered probes' latencies, and its lists to read as the report
    is written. Every entry is checked
    against its model on the way; raises InputError naming the entries that do not fit,
    NotARunArtifact where the file is JSON but not a run's artifact, ValueError (or
    ijson's JSONError) where it is not JSON."""
    import ijson

    from memlife.rules.documents import pydantic_problems

    reader = _RunFileReader(str(path), invariants)
    with open(path, "rb") as stream:
        try:
            visit_fields(ijson.basic_parse(stream, use_float=True), reader)
        except NotAnObject as error:
            raise NotARunArtifact(str(error)) from None
    if not {"meta", "summary"} <= set(reader.digest):
        raise NotARunArtifact("no meta/summary")
    reader.digest.pop("signature", None)  # for `memlife verify`; the report is of the run
    try:
        artifact = Artifact.model_validate(reader.digest)
    except ValidationError as error:
        reader.problems = pydantic_problems(error, str(path)) + reader.problems
    if reader.problems:
        raise InputError(reader.problems)
    return artifact, reader.samples, FileLists(path)
