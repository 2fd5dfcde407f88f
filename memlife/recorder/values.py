"""Every value of a run, indexed once per worker process: a reply holding a value of a
tenant outside the probed pair is a leak too, and at ten thousand pairs the values are
looked up by index, not scanned (rules/scoring.py: ValueIndex). Against a long-lived
target, the values other runs claimed there (recorder/claims.py) are foreign too, each
attributed to its run and tenant."""

from __future__ import annotations

import json
import sys
import threading
import time

from memlife.contracts import shared_target
from memlife.recorder.claims import claims_generation, claims_of_others
from memlife.recorder.database import database_url, session
from memlife.recorder.queries import run_value_tuples
from memlife.recorder.tables import RunRow
from memlife.rules.scoring import ValueIndex
from memlife.rules.variants import FormIndex, canonical
from memlife.rules.verdicts import ForbiddenValue

# Keyed by database too: one process may record to several (tests, or a URL change).
_values_lock = threading.Lock()
_index_build_lock = threading.Lock()
# (pair, domain, alias, text) per value: tuples of shared strings, not models — a run of
# 10,000 pairs has half a million values, indexed once per worker process.
_ValueOwner = tuple[int, str, str, str]
# Each run's values as written, their other forms (rules/variants.py, by canonical text),
# and the values more than one pair states (a control twin's: rules/pairs.py) with the
# pairs that state them.
_RunIndexes = tuple[ValueIndex[_ValueOwner], FormIndex[_ValueOwner], dict[str, set[int]]]
_foreign_cache: dict[tuple[str, str], _RunIndexes] = {}


def _run_value_index(run_id: str) -> _RunIndexes:
    """Every value of the run, as written and in its other forms, indexed once per worker
    process (it never changes), read from the recorder a few thousand rows at a time."""
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
            owners = [
                (pair, sys.intern(domain), sys.intern(alias), text)
                for pair, domain, alias, text in run_value_tuples(run_id)
            ]
            pairs_of: dict[str, set[int]] = {}
            for owner in owners:
                pairs_of.setdefault(owner[3], set()).add(owner[0])
            index = (
                ValueIndex((owner[3], owner) for owner in owners),
                FormIndex((owner[3], owner) for owner in owners),
                {text: pairs for text, pairs in pairs_of.items() if len(pairs) > 1},
            )
            with _values_lock:
                if len(_foreign_cache) > 16:
                    _foreign_cache.clear()
                _foreign_cache[key] = index
    return index


# (text, run, owner, domain) per value other runs claimed against a shared target.
_OtherRun = tuple[str, str, str, str]
# A run's shared target (None: a fresh target of its own), and the other runs' live values
# there with the claims' generation they were built at (bumped whenever a value is claimed
# or retired: a count could stay the same while the claims change) and when it was last
# checked.
_shared_targets: dict[tuple[str, str], str | None] = {}
# Other runs' values as written, and their other forms.
_OtherRuns = tuple[ValueIndex[_OtherRun], FormIndex[_OtherRun]]
_other_runs: dict[tuple[str, str, str], tuple[int, float, _OtherRuns]] = {}
_RECHECK_SECONDS = 5.0  # a run started since may have claimed values: look again this often


def run_shared_target(run_id: str) -> str | None:
    """The run's target when other runs may share it (contracts.shared_target), as recorded
    when the run started; None for a fresh target or an unknown run."""
    key = (database_url(), run_id)
    if key not in _shared_targets:
        with session() as db:
            run = db.get(RunRow, run_id)
            if run is None:
                return None
            _shared_targets[key] = shared_target(
                json.loads(run.meta_json).get("target_identity") or {}, run.target_base_url
            )
    return _shared_targets[key]


def _other_runs_index(run_id: str) -> _OtherRuns | None:
    """Values other runs claim against this run's target (live claims only: as many as
    the target's tenants who may hold them, recorder/claims.py), rebuilt when they change
    (checked at most every few seconds)."""
    target = run_shared_target(run_id)
    if target is None:
        return None
    key = (database_url(), target, run_id)
    with _values_lock:
        cached = _other_runs.get(key)
    now = time.monotonic()
    if cached is not None and now - cached[1] < _RECHECK_SECONDS:
        return cached[2]
    count = claims_generation(target)
    if cached is not None and cached[0] == count:
        index = cached[2]
    else:
        claims = [
            (text, run, sys.intern(owner), sys.intern(domain))
            for text, run, owner, domain in claims_of_others(target, run_id)
        ]
        index = (
            ValueIndex((claim[0], claim) for claim in claims),
            FormIndex((claim[0], claim) for claim in claims),
        )
    with _values_lock:
        if len(_other_runs) > 16:
            _other_runs.clear()
        _other_runs[key] = (count, now, index)
    return index


class ForeignValues(ValueIndex[ForbiddenValue]):
    """The run's values of every other pair (and, against a long-lived target, every
    other run's), as judge_probe looks them up."""

    def __init__(self, run_id: str, pair_index: int) -> None:  # noqa: D107
        self._all, self._forms, self._shared = _run_value_index(run_id)
        self._pair_index = pair_index
        self._other_runs = _other_runs_index(run_id)
        self.size = self._all.size + (self._other_runs[0].size if self._other_runs else 0)

    def found_in(self, haystack_normalized: str) -> list[ForbiddenValue]:
        """The values the text holds as written, and those it may hold in another form
        (judging.py looks for those between word boundaries and where nothing else
        explains the text)."""
        owners = {
            owner[3]: owner
            for owner in (
                *self._forms.candidates(canonical(haystack_normalized)),
                *self._all.found_in(haystack_normalized),
            )
        }
        found = [
            ForbiddenValue(
                text=text, origin="foreign", domain=domain, owner=f"{alias} (pair {pair})"
            )
            for pair, domain, alias, text in owners.values()
            if pair != self._pair_index and self._pair_index not in self._shared.get(text, ())
        ]  # its own too
        if self._other_runs is not None:
            written, reworded = self._other_runs
            claims = {
                claim[0]: claim
                for claim in (
                    *reworded.candidates(canonical(haystack_normalized)),
                    *written.found_in(haystack_normalized),
                )
            }
            found.extend(
                ForbiddenValue(
                    text=text, origin="foreign", domain=domain, owner=f"{owner} of run {run}"
                )
                for text, run, owner, domain in claims.values()
            )
        return found


def foreign_values(run_id: str, pair_index: int) -> ForeignValues:
    return ForeignValues(run_id, pair_index)


def forget_run_values(run_id: str) -> None:
    """Drop a finished run's indexes from this process."""
    url = database_url()
    with _values_lock:
        _foreign_cache.pop((url, run_id), None)
        target = _shared_targets.pop((url, run_id), None)
        _other_runs.pop((url, target or "", run_id), None)
