"""Live progress of runs in flight: what `memlife run` shows while it waits and what
`memlife status` lists. Client side: queries running workflows, never touches history."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import datetime
from typing import Any

from memlife.contracts import cohort_workflow_id, pair_workflow_id

# Querying every pair of a very large run each second would load the workers for nothing:
# past this many pairs the progress line shows the suite's counts only.
MAX_PAIRS_QUERIED = 50


async def pair_progress(
    client: Any, scenario: str, run_id: str, pairs: int, cohort_size: int = 0
) -> list[dict[str, Any]]:
    """The `progress` query of each pair lifecycle (pairs that cannot answer are left out);
    in a run of cohorts, one query per cohort answers for all its pairs."""
    if cohort_size:
        return await _cohort_progress(client, scenario, run_id, pairs, cohort_size)
    if not pairs or pairs > MAX_PAIRS_QUERIED:
        return []

    async def one(index: int) -> dict[str, Any] | None:
        handle = client.get_workflow_handle(pair_workflow_id(scenario, run_id, index))
        try:
            return {"pair": index, **await handle.query("progress")}
        except Exception:  # not started yet, or already closed and evicted
            return None

    answers = await asyncio.gather(*(one(index) for index in range(pairs)))
    return [answer for answer in answers if answer is not None]


async def _cohort_progress(
    client: Any, scenario: str, run_id: str, pairs: int, cohort_size: int
) -> list[dict[str, Any]]:
    firsts = list(range(0, pairs, cohort_size))
    if len(firsts) > MAX_PAIRS_QUERIED:
        return []

    async def one(first: int) -> list[dict[str, Any]]:
        handle = client.get_workflow_handle(cohort_workflow_id(scenario, run_id, first))
        try:
            answer = await handle.query("progress")
        except Exception:  # not started yet, or already closed and evicted
            return []
        return [{"pair": int(index), **progress} for index, progress in answer.items()]

    answers = await asyncio.gather(*(one(first) for first in firsts))
    return sorted((p for answer in answers for p in answer), key=lambda p: p["pair"])


def _parse(moment: str) -> datetime:
    return datetime.fromisoformat(moment.replace("Z", "+00:00"))


def humanize(seconds: float) -> str:
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {seconds:02d}s"
    return f"{seconds}s"


def describe_pairs(pairs: list[dict[str, Any]], now: datetime) -> str:
    """`waiting ×17 (update-6h) · inspect ×3 · next wake-up 14:02 UTC (in 5h 59m)`."""
    if not pairs:
        return ""
    phases = Counter(
        "waiting" + (f" ({p['stage']})" if p.get("stage") else "")
        if p.get("wake_at")
        else p.get("kind") or "?"
        for p in pairs
        if p.get("kind") not in ("done", "cancelled")
    )
    parts = [f"{phase} ×{count}" for phase, count in phases.most_common(3)]
    if len(phases) > 3:
        parts.append(f"+{len(phases) - 3} more")
    wakes = [_parse(p["wake_at"]) for p in pairs if p.get("wake_at")]
    if wakes:
        soonest = min(wakes)
        parts.append(
            f"next wake-up {soonest:%H:%M:%S} UTC (in {humanize((soonest - now).total_seconds())})"
        )
    failing = sum(1 for p in pairs if p.get("failures"))
    if failing:
        parts.append(f"{failing} pair(s) failing")
    return " · ".join(parts)


def describe_run_progress(suite: dict[str, Any], pairs: list[dict[str, Any]], now: datetime) -> str:
    text = f"{suite['phase']}: {suite['pairs_done']}/{suite['pairs']} pair lifecycle(s) done"
    detail = describe_pairs(pairs, now)
    return f"{text} · {detail}" if detail else text
