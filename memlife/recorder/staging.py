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

# (database, key) -> (run, reads, their size as JSON), oldest first. Bounded: reads that a
# recording elsewhere takes from the recorder are never taken here, and the oldest go
# first (they are still in the recorder) once the kept ones pass KEPT_BYTES of JSON. As
# models they weigh about ten times their JSON; at 300 live pairs on one worker the most
# kept at once was 0.8 MB of JSON (2026-12-04), and a worker beside others whose
# recordings run elsewhere stays full, so the bound is small.
KEPT_BYTES = 2 * 1024 * 1024
_kept: OrderedDict[tuple[str, str], tuple[str, list[StoreRead], int]] = OrderedDict()
_kept_bytes = 0
_kept_lock = threading.Lock()


def stage_reads(key: str, run_id: str, reads: Sequence[StoreRead]) -> None:
    """Keep `reads` under `key`; staging the same key again (a retried activity) replaces
    them."""
    global _kept_bytes
    reads = list(reads)
    text = _READS.dump_json(reads).decode()
    merge_values({StagedReadsRow: [{"id": key, "run_id": run_id, "reads_json": text}]})
    with _kept_lock:
        replaced = _kept.pop((database_url(), key), None)
        _kept_bytes -= 0 if replaced is None else replaced[2]
        _kept[(database_url(), key)] = (run_id, reads, len(text))
        _kept_bytes += len(text)
        while _kept_bytes > KEPT_BYTES:
            _kept_bytes -= _kept.popitem(last=False)[1][2]


def staged_reads(keys: Sequence[str]) -> dict[str, list[StoreRead]]:
    """The reads staged under each of `keys` that is there: those this process staged
    from memory (once: a retried recording loads them from the recorder), the others from
    the recorder."""
    global _kept_bytes
    found = {}
    url = database_url()
    with _kept_lock:
        for key in keys:
            kept = _kept.pop((url, key), None)
            if kept is not None:
                found[key] = kept[1]
                _kept_bytes -= kept[2]
    missing = [key for key in keys if key not in found]
    if not missing:
        return found
    table = StagedReadsRow.__table__  # type: ignore[attr-defined]
    with engine_for().connect() as db:
        rows = db.execute(select(table.c.id, table.c.reads_json)
                          .where(table.c.id.in_(missing))).all()
    return found | {key: _READS.validate_json(text) for key, text in rows}


def drop_staged_reads(run_id: str) -> None:
    global _kept_bytes
    url = database_url()
    with _kept_lock:
        for kept_key in [k for k, kept in _kept.items() if k[0] == url and kept[0] == run_id]:
            _kept_bytes -= _kept.pop(kept_key)[2]
    table = StagedReadsRow.__table__  # type: ignore[attr-defined]
    with engine_for().begin() as db:
        db.execute(delete(table).where(table.c.run_id == run_id))
