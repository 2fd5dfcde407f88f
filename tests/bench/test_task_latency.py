"""A worker's workflow task latencies, read from its Prometheus histogram."""

from __future__ import annotations

import pytest

from bench.task_latency import task_latency

SCRAPE = """\
# HELP temporal_workflow_task_execution_latency Histogram of workflow task execution
# TYPE temporal_workflow_task_execution_latency histogram
temporal_workflow_task_execution_latency_bucket{namespace="default",workflow_type="CohortLifecycleWorkflow",le="500"} 520
temporal_workflow_task_execution_latency_bucket{namespace="default",workflow_type="CohortLifecycleWorkflow",le="1000"} 528
temporal_workflow_task_execution_latency_bucket{namespace="default",workflow_type="CohortLifecycleWorkflow",le="2000"} 530
temporal_workflow_task_execution_latency_bucket{namespace="default",workflow_type="CohortLifecycleWorkflow",le="+Inf"} 530
temporal_workflow_task_execution_latency_sum{namespace="default",workflow_type="CohortLifecycleWorkflow"} 27922
temporal_workflow_task_execution_latency_bucket{namespace="default",workflow_type="SuiteWorkflow",le="500"} 33
temporal_workflow_task_execution_latency_bucket{namespace="default",workflow_type="SuiteWorkflow",le="1000"} 33
temporal_workflow_task_execution_latency_bucket{namespace="default",workflow_type="SuiteWorkflow",le="2000"} 33
temporal_workflow_task_execution_latency_bucket{namespace="default",workflow_type="SuiteWorkflow",le="+Inf"} 33
temporal_request_latency_bucket{operation="PollWorkflowTaskQueue",le="+Inf"} 9000
"""


def test_tasks_over_a_second_and_the_bucket_that_holds_the_longest() -> None:
    tasks = task_latency(SCRAPE)
    assert (tasks.tasks, tasks.over_1s, tasks.longest_at_most_ms) == (563, 2, 2000.0)
    assert tasks.by_workflow_type == {"CohortLifecycleWorkflow": 530, "SuiteWorkflow": 33}


def test_a_task_past_every_bucket_is_longer_than_the_largest() -> None:
    scrape = SCRAPE.replace('le="+Inf"} 530', 'le="+Inf"} 531')
    tasks = task_latency(scrape)
    assert tasks.longest_at_most_ms == float("inf")
    assert tasks.figures()["longest_at_most_ms"] is None  # JSON has no infinity


@pytest.mark.parametrize(("scrape", "reason"), [
    ("temporal_request{operation=\"x\"} 1\n", "no temporal_workflow_task_execution_latency"),
    (SCRAPE.replace('le="1000"', 'le="750"'), "no 1000 ms bucket"),
])
def test_a_scrape_without_the_histogram_says_why(scrape: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        task_latency(scrape)
