"""Read-only SQL store probes: one parameterized SELECT, in a read-only transaction.

The database URL is read from the environment variable the target file names, here on the
worker; it is never logged, recorded or put in an error message. SQLite connections are
opened with `query_only`; PostgreSQL transactions are `READ ONLY`. Rows come back as
JSON-ready dicts, for the same record pointers as HTTP probes.
"""

from __future__ import annotations

import threading
import time
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import SQLAlchemyError

from memlife.targets.http import TargetError, required_env


class SqlProbeError(TargetError):
    """The query could not be run; the read is an error (inconclusive), never empty."""


_engines: dict[str, Engine] = {}
_lock = threading.Lock()


def _engine(url_env: str) -> Engine:
    url = required_env(url_env, "a SQL probe's database URL")
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            try:
                engine = (
                    create_engine(url, pool_pre_ping=True, pool_size=2, max_overflow=2)
                    if not url.startswith("sqlite")
                    else create_engine(url)
                )
            except ImportError as error:  # the database's driver is not installed
                hint = (
                    " (PostgreSQL: install memlife[postgres], or run through "
                    "./scripts/memlife, which installs it when a probe needs it)"
                    if url.startswith("postgres")
                    else ""
                )
                raise SqlProbeError(
                    f"the {url_env} database's driver is missing: {error.name or error}{hint}"
                ) from None
            except (SQLAlchemyError, ValueError) as error:  # not a database URL
                raise SqlProbeError(
                    f"{url_env} is not a usable database URL ({type(error).__name__})"
                ) from None
            if engine.dialect.name == "sqlite":
                event.listen(engine, "connect", _sqlite_read_only)
            _engines[url] = engine
        return engine


def _sqlite_read_only(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA query_only = ON")
    cursor.close()


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes | memoryview):
        # Text inside binary formats (msgpack, pickle) is UTF-8 between other bytes: kept
        # readable, so a value stored there is found (base64 would hide it: fail-open).
        return bytes(value).decode("utf-8", errors="replace")
    return value


def read_rows(
    url_env: str, query: str, parameters: dict[str, Any], max_rows: int
) -> tuple[list[dict[str, Any]], int, float]:
    """(the first max_rows rows, how many rows there were, latency in ms). Blocking: run
    it in a thread."""
    engine = _engine(url_env)
    started = time.perf_counter()
    try:
        with engine.connect() as connection:
            if engine.dialect.name == "postgresql":
                connection.execute(text("SET TRANSACTION READ ONLY"))
            result = connection.execute(text(query), parameters)
            rows = []
            total = 0
            for row in result.mappings():
                total += 1
                if total <= max_rows:
                    rows.append({key: _jsonable(value) for key, value in row.items()})
            connection.rollback()  # nothing to keep: a probe changes nothing
    except SQLAlchemyError as error:
        # The first line only: SQLAlchemy appends the statement and its parameters.
        reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
        raise SqlProbeError(f"{type(error).__name__}: {reason}") from None
    return rows, total, (time.perf_counter() - started) * 1000


def dispose_all() -> None:
    with _lock:
        while _engines:
            _, engine = _engines.popitem()
            engine.dispose()
