"""How many pairs share a cohort workflow, by the size of the run. Pure."""

from __future__ import annotations

from memlife.rules.sizing import active_cohorts, cohort_size


def test_small_runs_get_a_workflow_per_pair_larger_ones_cohorts_of_ten() -> None:
    assert [cohort_size(n) for n in (1, 20, 64)] == [0, 0, 0]  # a workflow per pair
    # Any size: the waves, not the cohort size, bound the workflows in flight.
    assert [cohort_size(n) for n in (65, 100, 1000, 10_000, 20_000)] == [10] * 5


def test_the_window_of_live_pairs_sets_the_cohorts_in_flight() -> None:
    assert active_cohorts(10, 300, 1000) == 30
    assert active_cohorts(10, 300, 7) == 7  # fewer cohorts than room
    assert active_cohorts(50, 20, 200) == 1  # at least one, however small the window
    assert active_cohorts(10, 0, 1000) == 1000  # 0: every cohort at once
