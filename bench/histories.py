"""What a run's workflows cost Temporal: each history's size and its longest workflow task.

Read from the histories themselves once the run has ended: a workflow task lasts from its
WorkflowTaskStarted event to the WorkflowTaskCompleted that names it, which covers the
worker's whole turn, local activities included (what the server's workflow task timeout,
10 s by default, is measured against). Tasks that timed out or failed are counted too: each
is a task the worker had to replay.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHistory

# Temporal's default history warnings (the server's limits are 50 MB and 51,200 events).
HISTORY_WARN_BYTES = 10 * 1024 * 1024
HISTORY_WARN_EVENTS = 10_240
# The goal of a workflow task at any size (issue: no task over 1 s at 10,000 pairs).
SLOW_TASK_MS = 1_000.0


@dataclass(frozen=True)
class HistoryCost:
    workflow_id: str
    events: int
    bytes: int
    longest_task_ms: float
    slow_tasks: int  # workflow tasks over SLOW_TASK_MS
    failed_tasks: int  # workflow tasks that timed out or failed


def history_cost(workflow_id: str, events: Iterable[HistoryEvent]) -> HistoryCost:
    started: dict[int, float] = {}  # WorkflowTaskStarted event id -> its time, in ms
    count = size = slow = failed = 0
    longest = 0.0
    for event in events:
        count += 1
        size += event.ByteSize()
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            started[event.event_id] = event.event_time.ToMilliseconds()
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            began = started.pop(
                event.workflow_task_completed_event_attributes.started_event_id, None
            )
            if began is not None:
                took = event.event_time.ToMilliseconds() - began
                longest = max(longest, took)
                slow += took > SLOW_TASK_MS
        elif kind in (
            EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
            EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
        ):
            failed += 1
    return HistoryCost(workflow_id, count, size, longest, slow, failed)


@dataclass(frozen=True)
class RunHistories:
    """Every workflow of one run, summed up: the figures a scale row reports. The suite's
    history grows with the number of cohorts until it continues as new (its largest
    Temporal run is reported), a lifecycle workflow's with its pairs and steps."""

    workflows: int
    suite_bytes: int  # of the suite's largest Temporal run
    suite_events: int
    largest_bytes: int  # of the lifecycle workflows (cohorts or pairs)
    largest_bytes_workflow: str
    most_events: int  # of the lifecycle workflows
    longest_task_ms: float
    longest_task_workflow: str
    slow_tasks: int
    failed_tasks: int
    suite_runs: int = 1  # Temporal runs of the suite: 1 + the times it continued as new

    def figures(self) -> dict[str, Any]:
        return asdict(self)


def summarize(
    suite: HistoryCost | Sequence[HistoryCost], lifecycles: Sequence[HistoryCost]
) -> RunHistories:
    """`suite`: its one history, or one per Temporal run when it continued as new."""
    if not lifecycles:
        raise ValueError("no lifecycle workflow histories to summarize")
    suites = [suite] if isinstance(suite, HistoryCost) else list(suite)
    everything = [*suites, *lifecycles]
    largest = max(lifecycles, key=lambda cost: cost.bytes)
    slowest = max(everything, key=lambda cost: cost.longest_task_ms)
    return RunHistories(
        workflows=len(everything) - len(suites) + 1,
        suite_bytes=max(cost.bytes for cost in suites),
        suite_events=max(cost.events for cost in suites),
        suite_runs=len(suites),
        largest_bytes=largest.bytes,
        largest_bytes_workflow=largest.workflow_id,
        most_events=max(cost.events for cost in lifecycles),
        longest_task_ms=slowest.longest_task_ms,
        longest_task_workflow=slowest.workflow_id,
        slow_tasks=sum(cost.slow_tasks for cost in everything),
        failed_tasks=sum(cost.failed_tasks for cost in everything),
    )


async def temporal_runs(client: Client, workflow_id: str) -> list[WorkflowHistory]:
    """The history of every Temporal run of a workflow that continued as new, first to
    last: each run's first event names the run it continues."""
    histories = [await client.get_workflow_handle(workflow_id).fetch_history()]
    while (
        previous := histories[0]
        .events[0]
        .workflow_execution_started_event_attributes.continued_execution_run_id
    ):
        histories.insert(
            0, await client.get_workflow_handle(workflow_id, run_id=previous).fetch_history()
        )
    return histories


async def run_histories(
    client: Client, suite_id: str, lifecycle_ids: Sequence[str]
) -> RunHistories:
    """Read each workflow's history from the server, every Temporal run of the suite's,
    and sum them up."""

    async def cost(workflow_id: str) -> HistoryCost:
        history = await client.get_workflow_handle(workflow_id).fetch_history()
        return history_cost(workflow_id, history.events)

    suites = [
        history_cost(suite_id, history.events) for history in await temporal_runs(client, suite_id)
    ]
    return summarize(suites, [await cost(i) for i in lifecycle_ids])
