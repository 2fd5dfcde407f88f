"""Store reads staged between the inspection that made them and the recording of their step.

An inspection returns its reads to the workflow without their records (the workflow only
counts them) and stages the whole reads here under a key the workflow chose; the step's
recording loads them back to judge and keep them (activities/record.py). A run's staged
reads are dropped once its summary is made.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import TypeAdapter
from sqlalchemy import delete, select

from memlife.recorder.database import engine_for, merge_values
from memlife.recorder.tables import StagedReadsRow
from memlife.rules.evidence import StoreRead

_READS = TypeAdapter(list[StoreRead])


def stage_reads(key: str, run_id: str, reads: Sequence[StoreRead]) -> None:
    """Keep `reads` under `key`; staging the same key again (a retried activity) replaces
    them."""
    merge_values({StagedReadsRow: [{"id": key, "run_id": run_id,
                                    "reads_json": _READS.dump_json(list(reads)).decode()}]})


def staged_reads(keys: Sequence[str]) -> dict[str, list[StoreRead]]:
    """The reads staged under each of `keys` that is there."""
    if not keys:
        return {}
    table = StagedReadsRow.__table__  # type: ignore[attr-defined]
    with engine_for().connect() as db:
        rows = db.execute(select(table.c.id, table.c.reads_json)
                          .where(table.c.id.in_(list(keys)))).all()
    return {key: _READS.validate_json(text) for key, text in rows}


def drop_staged_reads(run_id: str) -> None:
    table = StagedReadsRow.__table__  # type: ignore[attr-defined]
    with engine_for().begin() as db:
        db.execute(delete(table).where(table.c.run_id == run_id))
