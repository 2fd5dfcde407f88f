"""How many pairs share a cohort workflow, by the size of the run. Pure."""

from __future__ import annotations

from memlife.lifecycle import cohort_size


def test_cohort_size_grows_with_the_run_so_workflows_stay_about_a_hundred() -> None:
    assert [cohort_size(n) for n in (1, 20, 64)] == [0, 0, 0]  # a workflow per pair
    assert [cohort_size(n) for n in (65, 100, 1000)] == [10, 10, 10]
    assert [cohort_size(n) for n in (2000, 4999, 10_000, 20_000)] == [20, 50, 50, 50]
