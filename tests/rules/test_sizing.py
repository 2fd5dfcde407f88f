"""How many pairs share a cohort workflow, by the size of the run and of its timeline.
Pure."""

from __future__ import annotations

from pathlib import Path

from memlife.rules.scenario_file import load_scenario
from memlife.rules.sizing import (
    COHORT_HISTORY_BUDGET,
    active_cohorts,
    cohort_history_bytes,
    cohort_size,
    largest_cohort,
)

NIGHTLY = Path(__file__).resolve().parents[2] / "scenarios" / "lifecycle-nightly.yaml"


def test_small_runs_get_a_workflow_per_pair_larger_ones_cohorts_of_twenty() -> None:
    assert [cohort_size(n, 19) for n in (1, 20, 64)] == [0, 0, 0]  # a workflow per pair
    # Any size: the waves, not the cohort size, bound the workflows in flight.
    assert [cohort_size(n, 19) for n in (65, 100, 1000, 10_000, 20_000)] == [20] * 5


def test_a_long_timeline_gets_cohorts_small_enough_for_its_history() -> None:
    assert cohort_size(1000, 200) == largest_cohort(200) == 3
    assert cohort_history_bytes(3, 200) <= COHORT_HISTORY_BUDGET
    assert cohort_history_bytes(4, 200) > COHORT_HISTORY_BUDGET
    assert cohort_size(1000, 10_000) == 1  # never none


def test_the_nightly_counts_its_steps_that_are_not_waits() -> None:
    nightly = load_scenario(NIGHTLY)
    waits = sum(1 for step in nightly.timeline if step.step == "wait")
    assert nightly.acting_steps() == len(nightly.timeline) - waits == 19
    # Measured: 1.5 MB of history for a cohort of ten (BENCHMARKS.md).
    assert 1.4 * 2**20 < cohort_history_bytes(10, 19) < 1.6 * 2**20
    assert largest_cohort(19) == 34


def test_the_window_of_live_pairs_sets_the_cohorts_in_flight() -> None:
    assert active_cohorts(10, 300, 1000) == 30
    assert active_cohorts(10, 300, 7) == 7  # fewer cohorts than room
    assert active_cohorts(50, 20, 200) == 1  # at least one, however small the window
    assert active_cohorts(10, 0, 1000) == 1000  # 0: every cohort at once
