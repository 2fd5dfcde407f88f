"""The recorded trail: runs, tenants, steps, observations and verdicts (SQLModel).

Every row has a deterministic primary key derived from (run, pair, step, ...), and every
write is a merge, so an activity retry rewrites the same rows instead of adding new ones.
SQLite runs in WAL mode with a busy timeout and short transactions; `MEMLIFE_DB_URL`
points the recorder at another database (e.g. PostgreSQL) instead.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import event, func
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, create_engine, select

DEFAULT_DB_PATH = Path(".memlife") / "memlife.db"


class RunRow(SQLModel, table=True):
    __tablename__ = "runs"
    id: str = Field(primary_key=True)
    scenario: str = Field(index=True)
    scenario_sha256: str
    target_name: str
    target_base_url: str
    clock: str
    meta_json: str
    status: str = "running"
    started_at: datetime
    finished_at: datetime | None = None
    summary_json: str | None = None


class TenantRow(SQLModel, table=True):
    __tablename__ = "tenants"
    id: str = Field(primary_key=True)
    run_id: str = Field(index=True)
    pair_index: int
    role: str
    alias: str
    phone: str
    language: str
    user_id: str | None = None


class StepRow(SQLModel, table=True):
    __tablename__ = "steps"
    id: str = Field(primary_key=True)
    run_id: str = Field(index=True)
    pair_index: int
    step_index: int
    kind: str
    label: str = ""
    scenario_started: datetime
    scenario_finished: datetime
    wall_started: datetime
    wall_finished: datetime


class ObservationRow(SQLModel, table=True):
    __tablename__ = "observations"
    id: str = Field(primary_key=True)
    run_id: str = Field(index=True)
    pair_index: int
    step_index: int
    seq: int
    role: str
    tenant_alias: str
    kind: str
    domain: str | None = None
    case_id: str | None = None
    request: str
    reply: str | None = None
    context: str | None = None
    status: str
    http_status: int | None = None
    error: str | None = None
    latency_ms: float | None = None
    scenario_time: datetime
    wall_time: datetime


class ObservationMetricRow(SQLModel, table=True):
    """Numbers a target reports about one turn: a Server-Timing stage (`stage:retrieval`,
    ms), its cost (`cost`) or token count (`tokens`). A table of its own, so recorder
    databases written before it existed gain it without a migration."""

    __tablename__ = "observation_metrics"
    id: str = Field(primary_key=True)
    run_id: str = Field(index=True)
    observation_id: str
    pair_index: int
    step_index: int
    seq: int
    name: str
    value: float


class AdjudicationRow(SQLModel, table=True):
    """A reviewer's decision on a reply exact matching failed, and what it means for each
    check (exact outcome beside adjudicated outcome)."""

    __tablename__ = "adjudications"
    id: str = Field(primary_key=True)  # the item's ticket
    run_id: str = Field(index=True)
    pair_index: int
    step_index: int
    stage: str
    case_id: str
    tenant_alias: str
    kind: str
    reviewer: str
    decided_at: datetime
    asserted_json: str  # the candidate values the reviewer says the reply states
    abstains: bool
    note: str = ""
    exact_json: str
    checks_json: str


class ErasureReceiptRow(SQLModel, table=True):
    """The erasure receipt of a deletion check, kept beyond Temporal's retention period:
    what an operator attaches to a right-to-erasure request. Values only as labels."""

    __tablename__ = "erasure_receipts"
    id: str = Field(primary_key=True)  # the check id
    tenant: str = Field(index=True)
    target_name: str
    verdict: str
    started_at: datetime
    finished_at: datetime | None = None
    receipt_json: str


class VerdictRow(SQLModel, table=True):
    __tablename__ = "verdicts"
    id: str = Field(primary_key=True)
    run_id: str = Field(index=True)
    pair_index: int
    step_index: int
    stage: str = ""
    case_id: str
    role: str
    tenant_alias: str
    domain: str
    store: str = "response"
    outcome: str
    passed: bool
    latency_ms: float | None = None
    checks_json: str
    findings_json: str


class RunPairRow(SQLModel, table=True):
    """A run's materialized pairs, for cohorts to load (their values are in run_values)."""

    __tablename__ = "run_pairs"
    id: str = Field(primary_key=True)
    run_id: str = Field(index=True)
    pair_index: int
    pair_json: str


class RunValueRow(SQLModel, table=True):
    """Every fact value of a run and who owns it: a reply holding a value of a tenant
    outside the probed pair is a leak too."""

    __tablename__ = "run_values"
    id: str = Field(primary_key=True)
    run_id: str = Field(index=True)
    pair_index: int
    role: str
    alias: str
    domain: str
    text: str


_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def database_url() -> str:
    url = os.environ.get("MEMLIFE_DB_URL")
    if url:
        return url
    return f"sqlite:///{DEFAULT_DB_PATH.resolve()}"


def _tune_sqlite(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def engine_for(url: str | None = None) -> Engine:
    """One engine per database URL per process, tables created on first use."""
    url = url or database_url()
    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            if url.startswith("sqlite:///"):
                Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
                engine = create_engine(url, connect_args={"timeout": 30,
                                                          "check_same_thread": False})
                event.listen(engine, "connect", _tune_sqlite)
            else:
                # Every stored time is UTC; a session in another zone would shift naive
                # timestamps on the way in.
                options = {"connect_args": {"options": "-c timezone=UTC"}} if url.startswith(
                    "postgresql") else {}
                engine = create_engine(url, pool_pre_ping=True, pool_size=10,
                                       max_overflow=20, **options)
            SQLModel.metadata.create_all(engine)
            _check_schema(engine, url)
            _engines[url] = engine
    return engine


def _check_schema(engine: Engine, url: str) -> None:
    """create_all adds missing tables, never missing columns: refuse an older database
    with a clear message rather than failing later in the middle of a run."""
    from sqlalchemy import inspect

    from memlife.errors import MemlifeError

    inspector = inspect(engine)
    for table in SQLModel.metadata.sorted_tables:
        have = {column["name"] for column in inspector.get_columns(table.name)}
        missing = [column.name for column in table.columns if column.name not in have]
        if missing:
            raise MemlifeError(
                f"the recorder database {url} was written by an older memlife (table "
                f"{table.name} lacks {', '.join(missing)}); move it aside or point "
                "MEMLIFE_DB_URL at a new database"
            )


@contextmanager
def session(url: str | None = None) -> Iterator[Session]:
    with Session(engine_for(url)) as db:
        yield db
        db.commit()


def merge_all(rows: list[SQLModel], url: str | None = None) -> None:
    """Idempotent upsert of a batch in one short transaction.

    A real INSERT ... ON CONFLICT DO UPDATE, not select-then-insert: two attempts of one
    activity may overlap (a retry racing a slow first attempt) and must both succeed.
    """
    by_model: dict[type[SQLModel], list[dict[str, Any]]] = {}
    for row in rows:
        table = type(row).__table__  # type: ignore[attr-defined]
        by_model.setdefault(type(row), []).append(
            {column.name: getattr(row, column.name) for column in table.columns})
    merge_values(by_model, url)


def merge_values(by_model: dict[type[SQLModel], list[dict[str, Any]]],
                 url: str | None = None) -> None:
    """`merge_all` for rows given as plain dicts (every column named), per table model:
    what a hot path writes, without building model instances it would only take apart."""
    engine = engine_for(url)
    by_table = {model.__table__: values  # type: ignore[attr-defined]
                for model, values in by_model.items() if values}
    if engine.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    with engine.begin() as connection:
        for table, values in by_table.items():
            keys = [column.name for column in table.primary_key.columns]
            statement = insert(table)
            updates = {column.name: statement.excluded[column.name]
                       for column in table.columns if column.name not in keys}
            # One statement executed for many rows: compiled once (and cached), where a
            # multi-VALUES insert is compiled afresh for every batch (a fifth of a busy
            # worker's CPU, measured with py-spy).
            upsert = statement.on_conflict_do_update(index_elements=keys, set_=updates)
            for start in range(0, len(values), 2000):
                connection.execute(upsert, values[start:start + 2000])


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def load_run(run_id: str, url: str | None = None) -> dict[str, list[Any]] | None:
    """Every row of one run, for the artifact builder."""
    with session(url) as db:
        run = db.get(RunRow, run_id)
        if run is None:
            return None
        by_run = {
            "tenants": TenantRow, "steps": StepRow, "observations": ObservationRow,
            "verdicts": VerdictRow, "values": RunValueRow, "metrics": ObservationMetricRow,
            "adjudications": AdjudicationRow,
        }
        found: dict[str, list[Any]] = {"run": [run]}
        for name, model in by_run.items():
            rows = db.exec(select(model).where(model.run_id == run_id)).all()
            found[name] = list(rows)
        for rows in found.values():
            for row in rows:
                db.expunge(row)
        return found


def run_builder(run_id: str, url: str | None = None, *, summary_only: bool = False
                ) -> tuple[Any, int] | None:
    """An `ArtifactBuilder` fed with a run's rows streamed from the database, a few
    thousand at a time, and the run's number of pairs: the summary (and the digest) of a
    run of any size in bounded memory. `summary_only` skips what the summary does not
    need: Server-Timing stages, costs, and the findings themselves (they are counted)."""
    from memlife.artifact import ArtifactBuilder

    chunk = 5000
    engine = engine_for(url)
    with Session(engine) as db:
        run = db.get(RunRow, run_id)
        if run is None:
            return None
        db.expunge(run)
    with engine.connect() as connection:
        labels = {(pair, step): label for pair, step, label in connection.execute(
            select(StepRow.pair_index, StepRow.step_index, StepRow.label)
            .where(StepRow.run_id == run_id))}
        pair_indexes = list(connection.execute(
            select(TenantRow.pair_index).where(TenantRow.run_id == run_id).distinct()
        ).scalars())
        builder = ArtifactBuilder(run, labels, keep_entries=False,
                                  keep_findings=not summary_only)
        verdicts = connection.execution_options(yield_per=chunk).execute(
            select(VerdictRow.pair_index, VerdictRow.step_index, VerdictRow.case_id,
                   VerdictRow.stage, VerdictRow.tenant_alias, VerdictRow.domain,
                   VerdictRow.store, VerdictRow.outcome, VerdictRow.passed,
                   VerdictRow.latency_ms, VerdictRow.checks_json, VerdictRow.findings_json)
            .where(VerdictRow.run_id == run_id)
            .order_by(VerdictRow.pair_index, VerdictRow.step_index, VerdictRow.case_id))
        for verdict in verdicts:
            builder.add_verdict(verdict)
        builder.target_errors = connection.execute(
            select(func.count()).select_from(ObservationRow)
            .where(ObservationRow.run_id == run_id, ObservationRow.status != "ok")
        ).scalar_one()
        probes = connection.execution_options(yield_per=chunk).execute(
            select(ObservationRow.pair_index, ObservationRow.step_index, ObservationRow.seq,
                   ObservationRow.latency_ms)
            .where(ObservationRow.run_id == run_id, ObservationRow.kind == "probe",
                   ObservationRow.status == "ok", ObservationRow.latency_ms.is_not(None))
            .order_by(ObservationRow.pair_index, ObservationRow.step_index,
                      ObservationRow.seq))
        if summary_only:
            for *_, latency in probes:
                builder.add_probe(latency, {})
            return builder, len(pair_indexes)
        # Metrics in the same (integer) order as the probes, merged as both streams go by.
        metrics = iter(connection.execution_options(yield_per=chunk).execute(
            select(ObservationMetricRow.pair_index, ObservationMetricRow.step_index,
                   ObservationMetricRow.seq, ObservationMetricRow.name,
                   ObservationMetricRow.value)
            .where(ObservationMetricRow.run_id == run_id)
            .order_by(ObservationMetricRow.pair_index, ObservationMetricRow.step_index,
                      ObservationMetricRow.seq)))
        builder.cost_by_pair = dict.fromkeys(pair_indexes, 0.0)
        pending = next(metrics, None)
        for pair, step, seq, latency in probes:
            found: dict[str, float] = {}
            while pending is not None and tuple(pending[:3]) <= (pair, step, seq):
                if tuple(pending[:3]) == (pair, step, seq):
                    found[pending.name] = pending.value
                if pending.name == "cost":
                    builder.add_cost(pending.pair_index, pending.value)
                pending = next(metrics, None)
            builder.add_probe(latency, found)
        while pending is not None:
            if pending.name == "cost":
                builder.add_cost(pending.pair_index, pending.value)
            pending = next(metrics, None)
    return builder, len(pair_indexes)


def run_digest(run_id: str, url: str | None = None) -> dict[str, Any] | None:
    """The run's digest (`ArtifactBuilder.digest`), computed streaming."""
    built = run_builder(run_id, url)
    if built is None:
        return None
    builder, pairs = built
    return builder.digest(pairs)


def run_value_tuples(run_id: str, url: str | None = None
                     ) -> Iterator[tuple[int, str, str, str]]:
    """(pair, domain, alias, text) of every value of a run, streamed."""
    engine = engine_for(url)
    with engine.connect() as connection:
        rows = connection.execution_options(yield_per=5000).execute(
            select(RunValueRow.pair_index, RunValueRow.domain, RunValueRow.alias,
                   RunValueRow.text).where(RunValueRow.run_id == run_id))
        yield from (tuple(row) for row in rows)
