"""The application's own tenant registry of the bundled stacks (realstack, mem0, graphiti): a phone
number registers a user id, and a user's deletion is recorded once. Kept in SQLite tables
(`users`, `deletions`) of the stack's application database, which its target file reads.

Not safe to share between threads on its own: each stack calls it under its lock.
"""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    user_id TEXT PRIMARY KEY, phone TEXT NOT NULL, status TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS users_phone ON users(phone, status);
CREATE TABLE IF NOT EXISTS deletions (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, status TEXT NOT NULL,
    requested_at TEXT NOT NULL, completed_at TEXT
);
"""


class UnknownTenant(LookupError):
    pass


def stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class Tenants:
    def __init__(self, db: sqlite3.Connection, prefix: str = "u_") -> None:
        self._db = db
        self._prefix = prefix  # of the user ids it makes (graphiti: a graph's name)
        self._db.row_factory = sqlite3.Row
        self._db.executescript(SCHEMA)

    def register(self, phone: str) -> tuple[str, bool]:
        """The phone's active user id, and whether it was created now."""
        row = self._db.execute(
            "SELECT user_id FROM users WHERE phone=? AND status='active'", (phone,)
        ).fetchone()
        if row is not None:
            return row["user_id"], False
        user_id = f"{self._prefix}{uuid.uuid4().hex[:16]}"
        self._db.execute(
            "INSERT INTO users(user_id, phone, status, created_at) VALUES (?,?,?,?)",
            (user_id, phone, "active", stamp()),
        )
        return user_id, True

    def for_phone(self, phone: str) -> str:
        row = self._db.execute(
            "SELECT user_id FROM users WHERE phone=? AND status='active'", (phone,)
        ).fetchone()
        if row is None:
            raise UnknownTenant(phone)
        return str(row["user_id"])

    def is_active(self, user_id: str) -> bool:
        row = self._db.execute("SELECT status FROM users WHERE user_id=?", (user_id,)).fetchone()
        return row is not None and row["status"] == "active"

    def deletion_of(self, user_id: str) -> str | None:
        """The id of the user's recorded deletion, None if it has none yet; UnknownTenant
        for a user never registered."""
        if self._db.execute("SELECT 1 FROM users WHERE user_id=?", (user_id,)).fetchone() is None:
            raise UnknownTenant(user_id)
        done = self._db.execute("SELECT id FROM deletions WHERE user_id=?", (user_id,)).fetchone()
        return None if done is None else str(done["id"])

    def record_deletion(self, user_id: str) -> dict[str, str]:
        """Mark the user deleted, its (synchronous) deletion completed."""
        self._db.execute("UPDATE users SET status='deleted' WHERE user_id=?", (user_id,))
        deletion_id = f"del_{uuid.uuid4().hex[:16]}"
        now = stamp()
        self._db.execute(
            "INSERT INTO deletions(id, user_id, status, requested_at, "
            "completed_at) VALUES (?,?,?,?,?)",
            (deletion_id, user_id, "completed", now, now),
        )
        return {"deletion_id": deletion_id, "status": "completed"}

    def deletion_status(self, user_id: str) -> dict[str, str | None]:
        row = self._db.execute("SELECT * FROM deletions WHERE user_id=?", (user_id,)).fetchone()
        if row is None:
            raise UnknownTenant(user_id)
        return {
            "deletion_id": row["id"],
            "status": row["status"],
            "requested_at": row["requested_at"],
            "completed_at": row["completed_at"],
        }
