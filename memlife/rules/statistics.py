"""Interval estimates over pairs. Pure.

Pairs are the independent units of a run (each has its own tenants and values); checks
within a pair are not independent. So rates are pooled over checks but resampled by pair:
the percentile bootstrap draws pairs with replacement.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

DEFAULT_RESAMPLES = 2000


@dataclass(frozen=True)
class RateEstimate:
    successes: int
    trials: int
    rate: float | None  # None when nothing was checked
    low: float | None
    high: float | None
    pairs: int

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "successes": self.successes,
            "trials": self.trials,
            "rate": self.rate,
            "ci95_low": self.low,
            "ci95_high": self.high,
            "pairs": self.pairs,
        }


def bootstrap_rate(
    per_pair: list[tuple[int, int]],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: str = "memlife",
    confidence: float = 0.95,
) -> RateEstimate:
    """Pooled rate of (successes, trials) per pair with a percentile bootstrap interval.

    Pairs without trials are left out. One pair gives a point estimate with a degenerate
    interval (its own rate): there is no between-pair variation to resample.
    """
    units = [(s, t) for s, t in per_pair if t > 0]
    successes = sum(s for s, _ in units)
    trials = sum(t for _, t in units)
    if not units:
        return RateEstimate(0, 0, None, None, None, 0)
    rate = successes / trials
    rng = random.Random(seed)  # a fixed seed: the same run always reports the same interval
    count = len(units)
    # Bound the work on very large runs (10k pairs): fewer resamples, still >= 500.
    resamples = max(min(resamples, 4_000_000 // count), min(resamples, 500))
    wins = [s for s, _ in units]
    tries = [t for _, t in units]
    positions = range(count)
    estimates = []
    for _ in range(resamples):
        drawn = rng.choices(positions, k=count)
        estimates.append(sum(map(wins.__getitem__, drawn)) / sum(map(tries.__getitem__, drawn)))
    estimates.sort()
    tail = (1 - confidence) / 2
    low = estimates[int(tail * (resamples - 1))]
    high = estimates[int(round((1 - tail) * (resamples - 1)))]
    return RateEstimate(successes, trials, rate, low, high, count)
