"""What the workflows' queries answer."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from memlife.contracts.requests import PairResult
from memlife.rules.models import Frozen

# -- what the workflows' queries answer ---------------------------------------------------
# Read by `memlife status`, the run's live progress line (memlife/stack/progress.py) and
# the tests; a client that asks without a result type gets the same fields as a dict.


class PairProgress(Frozen):
    """Where one pair's lifecycle is (the pair's or its cohort's `progress` query)."""

    step: int = -1  # the timeline step under way; -1 before the first
    steps: int = 0
    kind: str = "starting"  # that step's kind, then done or cancelled
    stage: str = ""
    cases: int = 0
    cases_passed: int = 0
    failures: int = 0
    inconclusive: int = 0
    wake_at: str | None = None  # when the wait under way ends (ISO-8601)
    cancelled: str | None = None  # why, when an operator cancelled it


class PairVerdicts(Frozen):
    """A pair's tallies so far and its failed or inconclusive checks (the first 200)."""

    verdict: str = "running"  # running, then fail | inconclusive | cancelled | pass
    cases: int = 0
    cases_passed: int = 0
    failures: int = 0
    inconclusive: int = 0
    problems: list[dict[str, Any]] = Field(default_factory=list)


class RunProgress(Frozen):
    """Where a run is (the suite's `progress` query)."""

    phase: str = "starting"  # starting, lifecycles, finishing, then the verdict
    pairs: int = 0
    pairs_done: int = 0
    cohort_size: int = 0
    run_id: str | None = None
    cancelled: str | None = None


class RunVerdicts(Frozen):
    """A run's tallies so far (the suite's `verdicts` query)."""

    verdict: str
    pairs_failing: list[int]
    pairs_broken: list[int]
    cases: int
    cases_passed: int
    failures: int
    inconclusive: int
    # Per pair this Temporal run saw finish (earlier runs of a continued suite: counts only).
    pairs: dict[str, PairResult]


class DeletionCheckProgress(Frozen):
    """Where an ad hoc deletion check is (its `progress` query)."""

    phase: str = "starting"  # starting, then the receipt's verdict so far
    rounds: int = 0
    stores: dict[str, str] = Field(default_factory=dict)  # store -> its status
    wake_at: str | None = None
