from __future__ import annotations

from memlife.rules.statistics import bootstrap_rate


def test_the_rate_is_pooled_over_checks_and_the_interval_contains_it() -> None:
    estimate = bootstrap_rate([(9, 10)] * 15 + [(5, 10)] * 5)
    assert estimate.rate == 160 / 200
    assert estimate.low is not None and estimate.high is not None
    assert estimate.low < estimate.rate < estimate.high
    assert estimate.pairs == 20


def test_identical_pairs_give_a_degenerate_interval() -> None:
    estimate = bootstrap_rate([(3, 4)] * 12)
    assert estimate.low == estimate.high == estimate.rate == 0.75


def test_more_between_pair_variation_widens_the_interval() -> None:
    steady = bootstrap_rate([(8, 10)] * 20)
    uneven = bootstrap_rate([(10, 10)] * 16 + [(0, 10)] * 4)
    assert steady.rate == uneven.rate == 0.8
    assert (uneven.high - uneven.low) > (steady.high - steady.low)  # type: ignore[operator]


def test_the_same_input_always_reports_the_same_interval() -> None:
    per_pair = [(i % 4, 4) for i in range(30)]
    assert bootstrap_rate(per_pair) == bootstrap_rate(per_pair)


def test_pairs_without_trials_are_left_out_and_nothing_checked_is_not_a_rate() -> None:
    assert bootstrap_rate([(0, 0), (0, 0)]).rate is None
    estimate = bootstrap_rate([(0, 0), (2, 2)])
    assert (estimate.rate, estimate.pairs) == (1.0, 1)
