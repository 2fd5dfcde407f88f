"""How a run is cut into workflows: one per pair for small runs, cohorts of pairs above,
and how many pairs are live at once. Pure."""

from __future__ import annotations

# Runs of more pairs than this go in cohorts of AUTO_COHORT pairs per workflow.
AUTO_COHORT = 20
AUTO_COHORT_ABOVE = 64


# A cohort's history grows with its pairs: every step's calls and results for each of its
# pairs pass through it. Measured on the nightly (BENCHMARKS.md, "What each run cost
# Temporal"): 1.5 MB for 10 pairs over its 19 steps that are not waits, about 8 KB per pair
# per step once compressed (stack/codec.py).
HISTORY_BYTES_PER_PAIR_STEP = 8_100
# Temporal warns past 10 MB of one workflow's history and fails the workflow at 50 MB. Half
# the warning leaves room for scenarios whose steps carry more than the nightly's do.
COHORT_HISTORY_BUDGET = 5 * 2**20


def cohort_size(pairs: int, steps: int) -> int:
    """A workflow per pair keeps small runs easy to read pair by pair in the Web UI; above
    that, cohorts batch every step's calls (workflows/cohort.py). Measured on the nightly
    (docs/scale.md): cohorts of 20 ran 100 and 1,000 pairs 3 to 6% faster than cohorts of
    10 (fewer round trips through Temporal per request), and 10,000 pairs with no
    workflow task over 0.5 s; cohorts of 50 were slower (too few cohorts in flight to keep
    the target busy while each goes through Temporal). Run size no longer matters: the
    waves (max_active_pairs) bound the workflows in flight.
    A scenario of many `steps` (those that are not waits) gets smaller cohorts, so that
    each history stays within the budget."""
    if pairs <= AUTO_COHORT_ABOVE:
        return 0
    return min(AUTO_COHORT, largest_cohort(steps))


def largest_cohort(steps: int) -> int:
    """The most pairs a cohort of a scenario with `steps` steps that are not waits may
    hold with its history within COHORT_HISTORY_BUDGET; at least one."""
    return max(1, COHORT_HISTORY_BUDGET // (HISTORY_BYTES_PER_PAIR_STEP * max(1, steps)))


def cohort_history_bytes(pairs: int, steps: int) -> int:
    """About how large a cohort's history grows: `pairs` pairs, `steps` steps not waits."""
    return pairs * steps * HISTORY_BYTES_PER_PAIR_STEP


# A worker holds every live pair, roughly its workflow history so far: measured on the
# nightly, 2,000 live pairs took the worker to 1.2 GB and 500 to 610 MB (about 0.7 MB
# each over a 240 MB base). More pairs in flight than this add memory, not throughput: the
# target is the bound, and 100 pairs already keep it busy.
DEFAULT_MAX_ACTIVE_PAIRS = 300


def active_cohorts(cohort_size: int, max_active_pairs: int, cohorts: int) -> int:
    """How many cohorts run at once: as many as `max_active_pairs` allows, at least one."""
    if not max_active_pairs or not cohort_size:
        return cohorts
    return max(1, min(cohorts, max_active_pairs // cohort_size))


# The suite's history grows by about eight events per cohort it runs (started, completed,
# the workflow tasks between): 8,500 events at 10,000 pairs, near Temporal's warning at
# 10,240, and every event is replayed when a worker rebuilds the suite. Past this many it
# stops starting cohorts, lets those in flight end and continues as new (workflows/suite.py):
# about 230 cohorts of a run per Temporal run of its suite.
SUITE_CONTINUE_AT_EVENTS = 2_000

# One workflow per pair (`--cohort 0`) has neither waves nor continue-as-new: the suite
# starts every pair at once, holds them all in the worker, and its history keeps each
# pair's input (about 15 KB: its pairs, scenario and target) and about eight events. Past
# this many pairs that passes SUITE_CONTINUE_AT_EVENTS and DEFAULT_MAX_ACTIVE_PAIRS.
PAIR_WORKFLOWS_AT_MOST = 250
