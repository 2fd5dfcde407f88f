"""How long a worker's workflow tasks took, from the SDK's own histogram
(`temporal_workflow_task_execution_latency`, served by `worker.py --metrics`): the time from
the task's arrival at the worker to its completion, local activities included.

The histogram's buckets (memlife/log.py: TASK_LATENCY_BUCKETS_MS) bound each task: the
longest task is reported as "at most" the smallest bucket that holds every task. The
time-skipping server stamps history events with its own clock, so this is the one measure
that holds in `skip` mode too.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any

import httpx

from memlife.log import TASK_LATENCY_METRIC as METRIC

_BUCKET = re.compile(METRIC + r"_bucket\{(?P<labels>[^}]*)\} (?P<count>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class TaskLatency:
    tasks: int
    over_1s: int
    longest_at_most_ms: float  # inf: longer than the largest bucket
    # Per workflow type: its tasks, and those over a second.
    by_workflow_type: dict[str, dict[str, int]]

    def figures(self) -> dict[str, Any]:
        figures = asdict(self)
        if math.isinf(self.longest_at_most_ms):
            figures["longest_at_most_ms"] = None  # JSON has no infinity
        return figures


def task_latency(exposition: str) -> TaskLatency:
    """The workflow task histogram of one scrape (Prometheus text format), every workflow
    type and task queue summed."""
    buckets: dict[float, int] = {}
    by_type: dict[str, dict[str, int]] = {}
    for line in exposition.splitlines():
        match = _BUCKET.match(line)
        if match is None:
            continue
        labels = dict(_LABEL.findall(match["labels"]))
        bound = math.inf if labels["le"] == "+Inf" else float(labels["le"])
        count = int(float(match["count"]))
        buckets[bound] = buckets.get(bound, 0) + count
        kind = by_type.setdefault(labels.get("workflow_type", ""), {"tasks": 0, "over_1s": 0})
        if math.isinf(bound):
            kind["tasks"] += count
            kind["over_1s"] += count
        elif bound == 1_000.0:
            kind["over_1s"] -= count
    if not buckets:
        raise ValueError(f"the worker's metrics have no {METRIC}: did any workflow task run?")
    total = buckets[math.inf]
    within_1s = buckets.get(1_000.0)
    if within_1s is None:
        raise ValueError(
            f"{METRIC} has no 1000 ms bucket: the worker was not started with "
            "memlife's buckets (memlife/log.py)"
        )
    longest = min(bound for bound, count in buckets.items() if count == total)
    return TaskLatency(total, total - within_1s, longest, dict(sorted(by_type.items())))


async def scrape(address: str) -> TaskLatency:
    """Read a worker's metrics (`worker.py --metrics ADDRESS`)."""
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.get(f"http://{address}/metrics")
        response.raise_for_status()
    return task_latency(response.text)
