"""The ceiling: what the Temporal dev server on this machine sustains with activities that
do nothing, scheduled the way a lifecycle schedules them (many workflows, one at a time)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy


@activity.defn(name="bench.noop")
async def noop() -> None:
    return None


@workflow.defn(name="BenchNoopWorkflow")
class NoopWorkflow:
    @workflow.run
    async def run(self, activities: int) -> int:
        for _ in range(activities):
            await workflow.execute_activity(
                noop,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=RetryPolicy(maximum_attempts=3),
            )
        return activities
