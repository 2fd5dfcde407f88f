"""The recorder's database: one engine per URL per process, tables created on first use,
idempotent upserts in short transactions. SQLite (the default, `.memlife/memlife.db`) runs
in WAL mode with a busy timeout; `MEMLIFE_DB_URL` points the recorder at another database
(e.g. PostgreSQL) instead."""

from __future__ import annotations

import functools
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Table, event
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel, create_engine

from memlife.errors import MemlifeError
from memlife.recorder import tables  # noqa: F401 (registers every table with SQLModel)

DEFAULT_DB_PATH = Path(".memlife") / "memlife.db"

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def database_url() -> str:
    url = os.environ.get("MEMLIFE_DB_URL")
    if url:
        return url
    return _default_url(os.getcwd())


@functools.lru_cache(maxsize=16)
def _default_url(cwd: str) -> str:
    """.memlife/memlife.db under `cwd`, resolved once per directory: every recorded step
    asks, and resolving walks the path (a tenth of a busy worker's recording, by py-spy)."""
    return f"sqlite:///{(Path(cwd) / DEFAULT_DB_PATH).resolve()}"


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
                engine = create_engine(
                    url, connect_args={"timeout": 30, "check_same_thread": False}
                )
                event.listen(engine, "connect", _tune_sqlite)
            else:
                # Every stored time is UTC; a session in another zone would shift naive
                # timestamps on the way in.
                options = (
                    {"connect_args": {"options": "-c timezone=UTC"}}
                    if url.startswith("postgresql")
                    else {}
                )
                engine = create_engine(
                    url, pool_pre_ping=True, pool_size=10, max_overflow=20, **options
                )
            SQLModel.metadata.create_all(engine)
            _check_schema(engine, url)
            _engines[url] = engine
    return engine


def close_engine(url: str) -> None:
    """Dispose of `url`'s engine, if this process made one: a process that is done with a
    database (a test's own) lets its connections and compiled statements go."""
    with _engines_lock:
        engine = _engines.pop(url, None)
        if engine is not None:
            _group_commits.pop(engine, None)
    if engine is not None:
        engine.dispose()


def _check_schema(engine: Engine, url: str) -> None:
    """create_all adds missing tables, never missing columns: refuse an older database
    with a clear message rather than failing later in the middle of a run."""
    from sqlalchemy import inspect

    inspector = inspect(engine)
    for table in SQLModel.metadata.sorted_tables:
        have = {column["name"] for column in inspector.get_columns(table.name)}
        missing = [column.name for column in table.columns if column.name not in have]
        if missing:
            raise MemlifeError(
                f"recorder {url}: written by an older memlife (table "
                f"{table.name} lacks {', '.join(missing)}); move it aside or point "
                "MEMLIFE_DB_URL at a new database"
            )


@contextmanager
def session(url: str | None = None) -> Iterator[Session]:
    with Session(engine_for(url)) as db:
        yield db
        db.commit()


def dialect_insert(engine: Engine) -> Any:
    """The engine's dialect's INSERT, the one with ON CONFLICT (PostgreSQL or SQLite)."""
    return _insert(engine.dialect.name)


def _insert(dialect: str) -> Any:
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert


@functools.lru_cache(maxsize=128)
def _upsert(dialect: str, table: Table) -> Any:
    """INSERT ... ON CONFLICT (primary key) DO UPDATE of every other column, one statement
    executed for many rows: compiled once (and cached by SQLAlchemy), where a multi-VALUES
    insert is compiled afresh for every batch (a fifth of a busy worker's CPU, measured with
    py-spy). Built once per table: building it (`excluded`'s columns) cost a twelfth of
    every write."""
    keys = _primary_key(table)
    statement = _insert(dialect)(table)
    updates = {
        column.name: statement.excluded[column.name]
        for column in table.columns
        if column.name not in keys
    }
    return statement.on_conflict_do_update(index_elements=keys, set_=updates)


def merge_all(rows: list[SQLModel], url: str | None = None) -> None:
    """Idempotent upsert of a batch in one short transaction.

    A real INSERT ... ON CONFLICT DO UPDATE, not select-then-insert: two attempts of one
    activity may overlap (a retry racing a slow first attempt) and must both succeed.
    """
    by_model: dict[type[SQLModel], list[dict[str, Any]]] = {}
    for row in rows:
        table = type(row).__table__  # type: ignore[attr-defined]
        by_model.setdefault(type(row), []).append(
            {column.name: getattr(row, column.name) for column in table.columns}
        )
    merge_values(by_model, url)


def merge_values(
    by_model: dict[type[SQLModel], list[dict[str, Any]]], url: str | None = None
) -> None:
    """`merge_all` for rows given as plain dicts (every column named), per table model:
    what a hot path writes, without building model instances it would only take apart.
    Returns once the rows are committed; writes that threads of this process make at the
    same time share one transaction (_GroupCommit)."""
    engine = engine_for(url)
    by_table = {
        model.__table__: values  # type: ignore[attr-defined]
        for model, values in by_model.items()
        if values
    }
    if by_table:
        _group_commit(engine).write(by_table)


@dataclass
class _Write:
    rows: dict[Table, list[dict[str, Any]]]
    finished: bool = False
    error: BaseException | None = None


class _GroupCommit:
    """Writes to one database from many threads (a worker's activities), committed
    together: a write that arrives while another thread commits waits, and the first of
    the waiting threads then commits every write queued by then in one transaction, each
    table's rows in one executemany. Every write still returns only once its rows are
    committed. At 20 pairs a nightly's recording made one short transaction per step, each
    with a statement per table, and its threads queued on SQLite's write lock."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._turn = threading.Condition()
        self._queued: list[_Write] = []
        self._committing = False

    def write(self, rows: dict[Table, list[dict[str, Any]]]) -> None:
        mine = _Write(rows)
        with self._turn:
            self._queued.append(mine)
            while self._committing and not mine.finished:
                self._turn.wait()
            if not mine.finished:
                self._committing = True
                batch, self._queued = self._queued, []
        if not mine.finished:
            try:
                self._commit(batch)
            finally:
                # Interrupted (an activity cancelled by a stopping worker): whether the
                # transaction committed is unknown, so each write fails, and is retried.
                for write in batch:
                    if not write.finished:
                        write.error = write.error or RuntimeError(
                            "recorder: the thread committing this write was interrupted"
                        )
                        write.finished = True
                with self._turn:
                    self._committing = False
                    self._turn.notify_all()
        if mine.error is not None:
            raise mine.error

    def _commit(self, batch: list[_Write]) -> None:
        try:
            self._execute([write.rows for write in batch])
        except Exception as error:
            if len(batch) == 1:
                batch[0].error = error
            else:  # each alone: a write that cannot be stored fails itself, not the others
                for write in batch:
                    try:
                        self._execute([write.rows])
                    except Exception as error:
                        write.error = error
        for write in batch:
            write.finished = True

    def _execute(self, writes: list[dict[Table, list[dict[str, Any]]]]) -> None:
        by_table: dict[Table, dict[tuple[Any, ...], dict[str, Any]]] = {}
        for rows in writes:
            for table, values in rows.items():
                keys = _primary_key(table)
                # One row per key, the last written: what the writes one after another
                # would leave (and PostgreSQL refuses a key twice in one upsert).
                kept = by_table.setdefault(table, {})
                for value in values:
                    kept[tuple(value[key] for key in keys)] = value
        with self._engine.begin() as connection:
            for table, kept in by_table.items():
                upsert = _upsert(self._engine.dialect.name, table)
                values = list(kept.values())
                for start in range(0, len(values), 2000):
                    connection.execute(upsert, values[start : start + 2000])


_group_commits: dict[Engine, _GroupCommit] = {}


def _group_commit(engine: Engine) -> _GroupCommit:
    with _engines_lock:
        found = _group_commits.get(engine)
        if found is None:
            found = _group_commits[engine] = _GroupCommit(engine)
        return found


@functools.lru_cache(maxsize=128)
def _primary_key(table: Table) -> tuple[str, ...]:
    return tuple(column.name for column in table.primary_key.columns)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
