"""The reference target's shared spaces: a scope with members (a team channel, a
workspace). What is said inside a space is the space's: its checkpoints, memories, graph
facts and job rows are filed under the space's id, not the speaker's. Clean, membership is
checked on every read as well as every write; deleting a member erases that member's own
facts only; deleting the space erases its facts from every store.

Its faults: space-leak (no membership check: anyone reads the space), revocation-ignored
(membership checked when joining, not when reading: a member who left still reads it),
member-delete-overreach (deleting a member purges the spaces it belongs to;
topoteretes/cognee #2732)."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from datetime import datetime

from memlife.bundled.reference import language
from memlife.bundled.reference.faults import Fault
from memlife.bundled.reference.retrieval import Answer
from memlife.bundled.reference.schema import iso, norm

NO_ACCESS = {"es": "No tienes acceso a ese espacio.", "en": "You have no access to that space."}


class UnknownSpace(LookupError):
    pass


class Refused(Exception):
    """With refusals on (`--refuse`), what a real service answers a caller the space does
    not admit: 403 for a non-member, 410 for a deleted space."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


class Spaces:
    """Part of ReferenceRuntime (store.py). Called with the runtime's lock held."""

    _db: sqlite3.Connection
    faults: frozenset[Fault]
    # store.py, jobs.py, retrieval.py (annotations only: stubs would shadow them in the MRO)
    _thread_append: Callable[[str, str, str, str], None]
    _remember: Callable[[str, str, datetime], str]
    _answer: Callable[[str, str, datetime], Answer]
    _flush: Callable[..., None]
    _run: str
    refuse: bool

    def _turned_away(self, space_id: str, lang: str) -> Answer:
        """Someone the space does not admit: an answer saying so, or, with refusals on, the
        status a real service refuses with."""
        if not self.refuse:
            return Answer(NO_ACCESS[lang], [], None)
        if self._space(space_id)["status"] != "active":
            raise Refused(410, "this space was deleted")
        raise Refused(403, "not a member of this space")

    def _create_space(self, tenant: str, name: str, clock: datetime) -> dict[str, str]:
        space_id = f"s_{uuid.uuid4().hex[:16]}"
        self._db.execute(
            "INSERT INTO spaces(space_id, name, owner, status, created_at, run) "
            "VALUES (?,?,?,?,?,?)",
            (space_id, name, tenant, "active", iso(clock), self._run),
        )
        self._set_member(space_id, tenant, "active")
        return {"space_id": space_id, "status": "active"}

    def _set_member(self, space_id: str, tenant: str, status: str) -> None:
        self._space(space_id)
        self._db.execute(
            "INSERT INTO space_members(space_id, tenant_id, status) VALUES (?,?,?) "
            "ON CONFLICT(space_id, tenant_id) DO UPDATE SET status=excluded.status",
            (space_id, tenant, status),
        )

    def _space(self, space_id: str) -> sqlite3.Row:
        row = self._db.execute("SELECT * FROM spaces WHERE space_id=?", (space_id,)).fetchone()
        if row is None:
            raise UnknownSpace(space_id)
        return row

    def _may_read(self, space_id: str, tenant: str) -> bool:
        if self._space(space_id)["status"] != "active":
            return False
        if Fault.SPACE_LEAK in self.faults:
            return True
        row = self._db.execute(
            "SELECT status FROM space_members WHERE space_id=? AND tenant_id=?", (space_id, tenant)
        ).fetchone()
        allowed = ("active", "left") if Fault.REVOCATION_IGNORED in self.faults else ("active",)
        return row is not None and row["status"] in allowed

    def _may_write(self, space_id: str, tenant: str) -> bool:
        row = self._db.execute(
            "SELECT status FROM space_members WHERE space_id=? AND tenant_id=?", (space_id, tenant)
        ).fetchone()
        return (
            self._space(space_id)["status"] == "active"
            and row is not None
            and row["status"] == "active"
        )

    def _space_turn(self, space_id: str, tenant: str, message: str, clock: datetime) -> Answer:
        """One message said inside a space: a statement is the space's, a question is
        answered from the space's memory, each only for whom the space admits."""
        lang = language.detect_language(message)
        stamp = iso(clock)
        if language.is_question(message):
            if not self._may_read(space_id, tenant):
                return self._turned_away(space_id, lang)
            self._flush(clock, tenant=space_id)
            answer = self._answer(space_id, message, clock)
        elif not self._may_write(space_id, tenant):
            return self._turned_away(space_id, lang)
        else:
            answer = Answer(self._remember(space_id, message, clock), [], None)
        self._thread_append(space_id, "user", message, stamp)
        self._thread_append(space_id, "assistant", answer.reply, stamp)
        self._db.execute(
            "INSERT INTO jobs(id, tenant_id, kind, status, input, output, norm, created_at) "
            "VALUES (?,?,?,?,?,?,?,?)",
            (
                f"job_{uuid.uuid4().hex[:16]}",
                space_id,
                "space-conversation",
                "completed",
                message,
                answer.reply,
                norm(f"{message}\n{answer.reply}"),
                stamp,
            ),
        )
        return answer

    def _erase_space_data(self, space_id: str) -> None:
        """Everything filed under the space: purged, tombstoned or redacted by retention."""
        self._db.execute("DELETE FROM ingest_queue WHERE tenant_id=?", (space_id,))
        for table in ("memories", "graph_nodes", "graph_edges", "cache", "summaries"):
            self._db.execute(f"DELETE FROM {table} WHERE tenant_id=?", (space_id,))  # noqa: S608
        self._db.execute("UPDATE thread_messages SET deleted=1 WHERE tenant_id=?", (space_id,))
        self._db.execute(
            "UPDATE jobs SET input='[redacted]', output='[redacted]', norm='[redacted]', "
            "status='redacted' WHERE tenant_id=?",
            (space_id,),
        )

    def _delete_space(self, space_id: str) -> dict[str, str]:
        self._space(space_id)
        self._erase_space_data(space_id)
        self._db.execute("UPDATE spaces SET status='deleted' WHERE space_id=?", (space_id,))
        self._db.execute("UPDATE space_members SET status='removed' WHERE space_id=?", (space_id,))
        return {"space_id": space_id, "status": "deleted"}

    def _purge_member_spaces(self, tenant: str) -> None:
        """The member-delete-overreach fault: a member's purge takes its spaces' facts."""
        if Fault.MEMBER_DELETE_OVERREACH not in self.faults:
            return
        for row in self._db.execute(
            "SELECT space_id FROM space_members WHERE tenant_id=?", (tenant,)
        ).fetchall():
            self._erase_space_data(row["space_id"])
