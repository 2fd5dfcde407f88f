"""A workflow history's cost: its size, its longest workflow task, tasks that were retried."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent, WorkflowTaskCompletedEventAttributes

from bench.histories import HistoryCost, history_cost, summarize

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def event(
    event_id: int, kind: EventType.ValueType, at_ms: int, started_event_id: int = 0
) -> HistoryEvent:
    made = HistoryEvent(event_id=event_id, event_type=kind)
    made.event_time.FromDatetime(T0 + timedelta(milliseconds=at_ms))
    if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
        made.workflow_task_completed_event_attributes.CopyFrom(
            WorkflowTaskCompletedEventAttributes(started_event_id=started_event_id)
        )
    return made


def test_tasks_run_from_started_to_the_completion_that_names_them() -> None:
    events = [
        event(1, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 0),
        event(2, EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, 0),
        event(3, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED, 10),
        event(4, EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, 60, started_event_id=3),
        event(5, EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, 100),
        event(6, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED, 100),
        event(7, EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, 10_100),
        event(8, EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, 10_100),
        event(9, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED, 10_200),
        event(10, EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, 11_700, started_event_id=9),
    ]
    cost = history_cost("wf", events)
    assert cost.events == 10
    assert cost.bytes == sum(e.ByteSize() for e in events) > 0
    assert cost.longest_task_ms == pytest.approx(1_500)
    assert (cost.slow_tasks, cost.failed_tasks) == (1, 1)


def test_a_run_reports_its_largest_history_and_its_longest_task() -> None:
    run = summarize(
        HistoryCost("suite", 900, 300_000, 40.0, 0, 0),
        [
            HistoryCost("cohort-0", 1_200, 2_000_000, 700.0, 0, 0),
            HistoryCost("cohort-10", 1_100, 1_900_000, 1_300.0, 2, 1),
        ],
    )
    assert (run.workflows, run.suite_bytes, run.suite_events) == (3, 300_000, 900)
    assert (run.largest_bytes, run.largest_bytes_workflow) == (2_000_000, "cohort-0")
    assert (run.longest_task_ms, run.longest_task_workflow) == (1_300.0, "cohort-10")
    assert (run.most_events, run.slow_tasks, run.failed_tasks) == (1_200, 2, 1)
    with pytest.raises(ValueError, match="no lifecycle workflow histories"):
        summarize(HistoryCost("suite", 1, 1, 0.0, 0, 0), [])


def test_a_suite_that_continued_as_new_reports_its_largest_run() -> None:
    run = summarize(
        [
            HistoryCost("suite", 1_900, 500_000, 40.0, 0, 0),
            HistoryCost("suite", 2_100, 450_000, 1_200.0, 1, 0),
            HistoryCost("suite", 300, 80_000, 10.0, 0, 1),
        ],
        [HistoryCost("cohort-0", 1_200, 2_000_000, 700.0, 0, 0)],
    )
    assert (run.workflows, run.suite_runs) == (2, 3)  # the suite and its one cohort
    assert (run.suite_bytes, run.suite_events) == (500_000, 2_100)
    assert (run.longest_task_ms, run.slow_tasks, run.failed_tasks) == (1_200.0, 1, 1)
