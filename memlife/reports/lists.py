"""A run's long lists (its tenants, every step of every pair, every case) as a report reads
them: from the artifact it was given, or streamed from the recorder as they are written
(recorder/streams.py implements `Lists` there). And what the HTML page draws of them past
a size: every pair with a finding, the first others up to a limit, and one lane that sums
every pair step by step. Pure."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any, Protocol

from memlife.recorder.artifact import Artifact

# The pairs a page draws one by one, and lists the tenants of.
MAX_DRAWN_PAIRS = 200


class Lists(Protocol):
    """Each call reads its list afresh, in the artifact's order, as dicts."""

    def tenants(self) -> Iterable[dict[str, Any]]: ...

    def timeline(self, pairs: Collection[int] | None = None) -> Iterable[dict[str, Any]]: ...

    def cases(self) -> Iterable[dict[str, Any]]: ...


class ArtifactLists:
    """The lists of an artifact held whole (a file `memlife run --out` wrote)."""

    def __init__(self, artifact: Artifact) -> None:
        self.artifact = artifact

    def tenants(self) -> Iterator[dict[str, Any]]:
        return (t.model_dump(mode="json") for t in self.artifact.tenants)

    def timeline(self, pairs: Collection[int] | None = None) -> Iterator[dict[str, Any]]:
        return (
            s.model_dump(mode="json")
            for s in self.artifact.timeline
            if pairs is None or s.pair in pairs
        )

    def cases(self) -> Iterator[dict[str, Any]]:
        return (c.model_dump(mode="json") for c in self.artifact.cases)


def drawn_pairs(
    pairs: Iterable[int], with_findings: Collection[int], limit: int = MAX_DRAWN_PAIRS
) -> list[int]:
    """The pairs a page draws one by one: those with a finding first (the first `limit`),
    then the first others, `limit` in all, in pair order."""
    every = sorted(set(pairs))
    flagged = [pair for pair in every if pair in with_findings][:limit]
    chosen = set(flagged)
    others = [pair for pair in every if pair not in chosen][: limit - len(flagged)]
    return sorted(chosen.union(others))


def every_pair_lane(timeline: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One step per step of the scenario over every pair (`pair` -1), its outcomes summed.
    Pairs start at different times (a large run goes in waves), so each step is placed by
    its offset from its own pair's first step: the lane spans, from the earliest start of
    all, the earliest and the latest any pair took to reach that step and finish it."""
    lane: dict[int, dict[str, Any]] = {}
    spans: dict[int, list[timedelta | None]] = {}
    origin: datetime | None = None  # the current pair's first start (steps come by pair)
    first: datetime | None = None  # the earliest start of all
    pair: int | None = None
    for step in timeline:
        started, finished = _moment(step["scenario_started"]), _moment(step["scenario_finished"])
        if step["pair"] != pair:
            pair, origin = step["pair"], started
        if started is not None and (origin is None or started < origin):
            origin = started
        if origin is not None and (first is None or origin < first):
            first = origin
        summed = lane.setdefault(step["step"], {**step, "pair": -1, "outcomes": {}})
        for outcome, count in step["outcomes"].items():
            summed["outcomes"][outcome] = summed["outcomes"].get(outcome, 0) + count
        span = spans.setdefault(step["step"], [None, None])
        if origin is not None and started is not None:
            offset = started - origin
            span[0] = offset if span[0] is None else min(span[0], offset)
        if origin is not None and finished is not None:
            offset = finished - origin
            span[1] = offset if span[1] is None else max(span[1], offset)
    for index, (start, end) in spans.items():
        lane[index]["scenario_started"] = _text(first, start)
        lane[index]["scenario_finished"] = _text(first, end)
    return [lane[index] for index in sorted(lane)]


def _text(first: datetime | None, offset: timedelta | None) -> str | None:
    if first is None or offset is None:
        return None
    return (first + offset).isoformat().replace("+00:00", "Z")


def _moment(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
