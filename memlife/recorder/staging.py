"""Store reads staged between the inspection that made them and the recording of their step.

An inspection returns its reads to the workflow without their records (the workflow only
counts them) and stages the whole reads here under a key the workflow chose; the step's
recording loads them back to judge and keep them (activities/record.py). A run's staged
reads are dropped once its summary is made.

The recorder's copy is what any worker can load, and what survives a worker that stops
between the two. The worker that inspected also keeps the reads it staged in memory, as
they are, until its own recording takes them (at most KEPT_BYTES of them): most
recordings run where their inspection did, and decoding the reads back from JSON took 4%
of a busy worker's interpreter lock (docs/scale.md, "Cohorts and waves").
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from pydantic import TypeAdapter
from sqlalchemy import delete, select

from memlife.recorder.database import database_url, engine_for, merge_values
from memlife.recorder.tables import StagedReadsRow
from memlife.rules.evidence import StoreRead

_READS = TypeAdapter(list[StoreRead])

# Reads kept here that a recording elsewhere takes from the recorder are never taken here,
# so the oldest go (they are still in the recorder) past KEPT_BYTES of JSON. As models
# they weigh about ten times their JSON; at 300 live pairs on one worker the most
# kept at once was 0.8 MB of JSON (2026-12-04), and a worker beside others whose
# recordings run elsewhere stays full, so the bound is small.
KEPT_BYTES = 2 * 1024 * 1024


class _KeptReads:
    """Reads by (database, key), oldest first, with their run and size as JSON; the
    oldest go once the sizes pass KEPT_BYTES. Staging and recording run in different
    threads of the worker's pools, hence the lock."""

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[str, str], tuple[str, list[StoreRead], int]] = (
            OrderedDict()
        )
        self._bytes = 0
        self._lock = threading.Lock()

    def put(self, key: tuple[str, str], run_id: str, reads: list[StoreRead], size: int) -> None:
        with self._lock:
            self._remove(key)
            self._entries[key] = (run_id, reads, size)
            self._bytes += size
            while self._bytes > KEPT_BYTES:
                self._remove(next(iter(self._entries)))

    def take(self, key: tuple[str, str]) -> list[StoreRead] | None:
        with self._lock:
            entry = self._remove(key)
        return None if entry is None else entry[1]

    def drop_run(self, url: str, run_id: str) -> None:
        with self._lock:
            for key in [
                key for key, (run, _, _) in self._entries.items() if key[0] == url and run == run_id
            ]:
                self._remove(key)

    def _remove(self, key: tuple[str, str]) -> tuple[str, list[StoreRead], int] | None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry[2]
        return entry


_kept = _KeptReads()


def stage_reads(key: str, run_id: str, reads: Sequence[StoreRead]) -> None:
    """Keep `reads` under `key`; staging the same key again (a retried activity) replaces
    them."""
    stage_many_reads([(key, run_id, reads)])


def stage_many_reads(staged: Sequence[tuple[str, str, Sequence[StoreRead]]]) -> None:
    """`stage_reads` for each (key, run id, reads), in one transaction: a cohort's batch
    of inspections (twenty of them at ten pairs) stages them in one write rather than
    twenty, each of which paid a statement's and a commit's work under the worker's
    interpreter lock while the target requests waited for it."""
    url = database_url()
    rows, kept = [], []
    for key, run_id, reads in staged:
        reads = list(reads)
        text = _READS.dump_json(reads).decode()
        rows.append({"id": key, "run_id": run_id, "reads_json": text})
        kept.append(((url, key), run_id, reads, len(text)))
    merge_values({StagedReadsRow: rows})
    for entry in kept:
        _kept.put(*entry)


def staged_reads(keys: Sequence[str]) -> dict[str, list[StoreRead]]:
    """The reads staged under each of `keys` that is there: those this process staged
    from memory (once: a retried recording loads them from the recorder), the others from
    the recorder."""
    url = database_url()
    found = {key: reads for key in keys if (reads := _kept.take((url, key))) is not None}
    missing = [key for key in keys if key not in found]
    if not missing:
        return found
    table = StagedReadsRow.__table__  # type: ignore[attr-defined]
    with engine_for().connect() as db:
        rows = db.execute(
            select(table.c.id, table.c.reads_json).where(table.c.id.in_(missing))
        ).all()
    return found | {key: _READS.validate_json(text) for key, text in rows}


def drop_staged_reads(run_id: str) -> None:
    _kept.drop_run(database_url(), run_id)
    table = StagedReadsRow.__table__  # type: ignore[attr-defined]
    with engine_for().begin() as db:
        db.execute(delete(table).where(table.c.run_id == run_id))
