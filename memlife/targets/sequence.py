"""Operations that look up before they act: a target file's list of requests, made in
order, each able to use what the earlier ones extracted, and at most one selecting the
records of its answer the rest run for (a memory found by the value it holds, then deleted
by its id). Used only inside activities."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from memlife.rules.operations import PLACEHOLDER, Operation, Select
from memlife.rules.scoring import contains, normalize
from memlife.rules.target import Target
from memlife.targets import http
from memlife.targets.http import TargetBadResponse

# How one request is sent (activities/calls.py: once, or retried in place); the last two
# arguments are the scenario clock's moment and the run.
Send = Callable[[Target, Operation, dict[str, Any], str, str], Awaitable[http.Response]]


@dataclass(frozen=True)
class SequenceResult:
    """The last answer of a sequence and what the sequence as a whole did."""

    response: http.Response  # the last request's answer (its status, fields, trace)
    latency_ms: float  # every request's, added up
    requests: int
    selected: int | None = None  # records the `select` kept (None: the sequence selects none)

    @property
    def refused(self) -> bool:
        return self.response.refused


async def run_sequence(
    target: Target,
    steps: list[Operation],
    variables: dict[str, Any],
    send: Send,
    scenario_now: str = "",
    run: str = "",
) -> SequenceResult:
    """Make the requests in order. A refused answer ends the sequence (there is nothing to
    act on); a TargetError of any request is raised as it is."""
    if not steps:
        raise ValueError("a sequence of no requests")
    latency, requests = 0.0, 0
    variables = dict(variables)
    for index, step in enumerate(steps):
        response = await send(target, step, variables, scenario_now, run)
        latency, requests = latency + response.latency_ms, requests + 1
        if response.refused:
            return SequenceResult(response, latency, requests)
        variables |= response.fields
        if step.select is None:
            continue
        chosen = select_records(step, response, variables)
        rest = steps[index + 1 :]
        last = response
        for record_variables in chosen:
            outcome = await run_sequence(
                target, rest, variables | record_variables, send, scenario_now, run
            )
            latency, requests = latency + outcome.latency_ms, requests + outcome.requests
            last = outcome.response
        return SequenceResult(last, latency, requests, selected=len(chosen))
    return SequenceResult(response, latency, requests)


def select_records(
    step: Operation, response: http.Response, variables: dict[str, Any]
) -> list[dict[str, Any]]:
    """The variables each selected record gives the later requests, in answer order."""
    select: Select = step.select  # type: ignore[assignment]
    where = f"{step.method} {step.path}"
    try:
        records = http.extract(response.data, select.records)
    except KeyError:
        records = []  # JMESPath's null: no records
    if not isinstance(records, list):
        raise TargetBadResponse(
            f"{where}: select.records {select.records!r} is not a list "
            f"of records but {type(records).__name__}"
        )
    wanted = _holding(select.holding, variables)
    chosen: list[dict[str, Any]] = []
    for record in records:
        if wanted is not None:
            try:
                text = _text(http.extract(record, select.content))
            except KeyError:
                continue  # a record without text holds no value
            folded = normalize(text)
            if not any(contains(folded, value) for value in wanted):
                continue
        taken: dict[str, Any] = {}
        for name, pointer in select.extract.items():
            try:
                taken[name] = http.extract(record, pointer)
            except KeyError:
                raise TargetBadResponse(
                    f"{where}: a selected record has no {name!r} at {pointer!r}"
                ) from None
        chosen.append(taken)
    return chosen


def _holding(template: str | None, variables: dict[str, Any]) -> list[str] | None:
    if template is None:
        return None
    whole = PLACEHOLDER.fullmatch(template)
    if whole and isinstance(variables.get(whole.group(1)), list):
        return [str(value) for value in variables[whole.group(1)] if str(value)]
    return [http.render(template, variables)]


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(item) for item in value)
    return "" if value is None else str(value)
