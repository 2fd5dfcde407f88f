"""How a run is cut into workflows: one per pair for small runs, cohorts of pairs above,
and how many pairs are live at once. Pure."""

from __future__ import annotations

# Runs of more pairs than this go in cohorts of AUTO_COHORT pairs per workflow.
AUTO_COHORT = 10
AUTO_COHORT_ABOVE = 64


def cohort_size(pairs: int) -> int:
    """A workflow per pair keeps small runs easy to read pair by pair in the Web UI; above
    that, cohorts batch every step's calls (workflows/cohort.py). Measured on the nightly:
    cohorts of 10 ran 100 pairs faster than cohorts of 50 (smaller batches pipeline, as
    long as there are enough cohorts in flight), and at 10,000 pairs with 300 live pairs,
    six cohorts of 50 ran at 110 requests/s where thirty of 10 ran 1,000 pairs at 270. Run
    size no longer matters: the waves (max_active_pairs) bound the workflows in flight."""
    return 0 if pairs <= AUTO_COHORT_ABOVE else AUTO_COHORT


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
