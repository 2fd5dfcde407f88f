"""Every value of a run, indexed once per worker process: a reply holding a value of a
tenant outside the probed pair is a leak too, and at ten thousand pairs the values are
looked up by index, not scanned (rules/scoring.py: ValueIndex)."""

from __future__ import annotations

import sys
import threading

from memlife.recorder.database import database_url
from memlife.recorder.queries import run_value_tuples
from memlife.rules.scoring import ValueIndex
from memlife.rules.verdicts import ForbiddenValue

# Keyed by database too: one process may record to several (tests, or a URL change).
_values_lock = threading.Lock()
_index_build_lock = threading.Lock()
# (pair, domain, alias, text) per value: tuples of shared strings, not models — a run of
# 10,000 pairs has half a million values, indexed once per worker process.
_ValueOwner = tuple[int, str, str, str]
_foreign_cache: dict[tuple[str, str], ValueIndex[_ValueOwner]] = {}


def _run_value_index(run_id: str) -> ValueIndex[_ValueOwner]:
    """Every value of the run, indexed once per worker process (it never changes), read
    from the recorder a few thousand rows at a time."""
    key = (database_url(), run_id)
    with _values_lock:
        index = _foreign_cache.get(key)
    if index is not None:
        return index
    # One thread builds it; the others (a cohort's steps arrive together) wait for it, not
    # build their own: forty concurrent builds took the worker to 2 GB.
    with _index_build_lock:
        with _values_lock:
            index = _foreign_cache.get(key)
        if index is None:
            index = ValueIndex(
                (text, (pair, sys.intern(domain), sys.intern(alias), text))
                for pair, domain, alias, text in run_value_tuples(run_id))
            with _values_lock:
                if len(_foreign_cache) > 16:
                    _foreign_cache.clear()
                _foreign_cache[key] = index
    return index


class ForeignValues(ValueIndex[ForbiddenValue]):
    """The run's values of every other pair, as judge_probe looks them up."""

    def __init__(self, run_id: str, pair_index: int) -> None:  # noqa: D107
        self._all = _run_value_index(run_id)
        self._pair_index = pair_index
        self.size = self._all.size

    def found_in(self, haystack_normalized: str) -> list[ForbiddenValue]:
        return [ForbiddenValue(text=text, origin="foreign", domain=domain,
                               owner=f"{alias} (pair {pair})")
                for pair, domain, alias, text in self._all.found_in(haystack_normalized)
                if pair != self._pair_index]


def foreign_values(run_id: str, pair_index: int) -> ForeignValues:
    return ForeignValues(run_id, pair_index)


def forget_run_values(run_id: str) -> None:
    """Drop a finished run's index from this process."""
    with _values_lock:
        _foreign_cache.pop((database_url(), run_id), None)
