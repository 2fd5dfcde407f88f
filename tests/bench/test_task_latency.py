"""A worker's workflow task latencies, read from its Prometheus histogram."""

from __future__ import annotations

import pytest

from bench.task_latency import task_latency

METRIC = "temporal_workflow_task_execution_latency"


def _buckets(workflow_type: str, counts: dict[str, int]) -> list[str]:
    labels = f'namespace="default",workflow_type="{workflow_type}"'
    return [f'{METRIC}_bucket{{{labels},le="{le}"}} {count}' for le, count in counts.items()]


SCRAPE = (
    "\n".join(
        [
            f"# TYPE {METRIC} histogram",
            *_buckets(
                "CohortLifecycleWorkflow", {"500": 520, "1000": 528, "2000": 530, "+Inf": 530}
            ),
            f'{METRIC}_sum{{workflow_type="CohortLifecycleWorkflow"}} 27922',
            *_buckets("SuiteWorkflow", {"500": 33, "1000": 33, "2000": 33, "+Inf": 33}),
            'temporal_request_latency_bucket{operation="PollWorkflowTaskQueue",le="+Inf"} 9000',
        ]
    )
    + "\n"
)


def test_tasks_over_a_second_and_the_bucket_that_holds_the_longest() -> None:
    tasks = task_latency(SCRAPE)
    assert (tasks.tasks, tasks.over_1s, tasks.longest_at_most_ms) == (563, 2, 2000.0)
    assert tasks.by_workflow_type == {
        "CohortLifecycleWorkflow": {"tasks": 530, "over_1s": 2},
        "SuiteWorkflow": {"tasks": 33, "over_1s": 0},
    }


def test_a_task_past_every_bucket_is_longer_than_the_largest() -> None:
    scrape = SCRAPE.replace('le="+Inf"} 530', 'le="+Inf"} 531')
    tasks = task_latency(scrape)
    assert tasks.longest_at_most_ms == float("inf")
    assert tasks.figures()["longest_at_most_ms"] is None  # JSON has no infinity


@pytest.mark.parametrize(
    ("scrape", "reason"),
    [
        ('temporal_request{operation="x"} 1\n', "no temporal_workflow_task_execution_latency"),
        (SCRAPE.replace('le="1000"', 'le="750"'), "no 1000 ms bucket"),
    ],
)
def test_a_scrape_without_the_histogram_says_why(scrape: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        task_latency(scrape)
