"""Runs sharing one long-lived reference target: each run's background work is due on its
own clock (X-Memlife-Run), and databases from before run clocks keep working."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from fastapi.testclient import TestClient

from memlife.bundled.reference.app import create_app
from memlife.bundled.reference.schema import open_database
from memlife.bundled.reference.store import ReferenceRuntime

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
ANA, BRUNO, CARLA = "+12015550101", "+12015550102", "+12015550103"


def test_a_run_far_ahead_does_not_move_another_runs_deletion(tmp_path: Path) -> None:
    runtime = ReferenceRuntime(tmp_path / "shared.db")
    # The first run skipped three days ahead and left a deletion pending on its clock.
    ahead = T0 + timedelta(days=3)
    ana, _ = runtime.register(ANA, ahead, run="first")
    runtime.converse(ANA, "Trabajo en Panadería Quispe.", ahead, run="first")
    runtime.delete_tenant(ana, ahead, run="first")
    # The second run starts at T0: its deletion completes 30 minutes later on its clock.
    bruno, _ = runtime.register(BRUNO, T0, run="second")
    runtime.converse(BRUNO, "Trabajo en Ferretería Olmos.", T0, run="second")
    assert runtime.delete_tenant(bruno, T0, run="second")["status"] == "pending"
    assert (
        runtime.deletion_status(bruno, T0 + timedelta(minutes=29), run="second")["status"]
        == "pending"
    )
    done = runtime.deletion_status(bruno, T0 + timedelta(minutes=31), run="second")
    assert done["status"] == "completed"
    assert (
        runtime.store_records("memory", T0 + timedelta(minutes=31), tenant_id=bruno, run="second")
        == []
    )
    # The second run's requests never ran the first run's purge.
    assert runtime.deletion_status(ana, ahead, run="first")["status"] == "pending"
    assert runtime.store_records("memory", ahead, tenant_id=ana, run="first")
    assert (
        runtime.deletion_status(ana, ahead + timedelta(minutes=31), run="first")["status"]
        == "completed"
    )


def test_each_run_has_its_own_summaries_nightly_and_cache_expiry(tmp_path: Path) -> None:
    runtime = ReferenceRuntime(tmp_path / "shared.db")
    ana, _ = runtime.register(ANA, T0, run="first")
    bruno, _ = runtime.register(BRUNO, T0, run="second")
    runtime.converse(ANA, "Trabajo en Panadería Quispe.", T0, run="first")
    runtime.converse(BRUNO, "Trabajo en Ferretería Olmos.", T0, run="second")
    runtime.converse(BRUNO, "¿Dónde trabajo?", T0, run="second")  # cached for 6 hours
    # The first run moves two days on: its own session summary and nightly happen...
    later = T0 + timedelta(days=2)
    summary = runtime.store_records("summaries", later, tenant_id=ana, run="first")
    assert summary and summary[0]["source"] == "nightly"
    # ...and none of the second run's work: its session is not summarized, its cache lives.
    assert runtime.store_records("summaries", later, tenant_id=bruno, run="first") == []
    assert runtime.store_records("cache", later, tenant_id=bruno, run="first")
    # On the second run's own clock, an hour idle summarizes it, six hours expire its cache.
    hour = T0 + timedelta(minutes=61)
    assert (
        runtime.store_records("summaries", hour, tenant_id=bruno, run="second")[0]["source"]
        == "session"
    )
    assert (
        runtime.store_records("cache", T0 + timedelta(hours=7), tenant_id=bruno, run="second") == []
    )


def test_requests_that_name_no_run_share_one_clock(tmp_path: Path) -> None:
    runtime = ReferenceRuntime(tmp_path / "shared.db")
    runtime.register(ANA, T0 + timedelta(days=3))
    bruno, _ = runtime.register(BRUNO, T0)
    # The shared clock is three days ahead: a deletion asked "at T0" is scheduled from it.
    runtime.delete_tenant(bruno, T0)
    assert runtime.deletion_status(bruno, T0 + timedelta(hours=1))["status"] == "pending"
    assert (
        runtime.deletion_status(bruno, T0 + timedelta(days=3, minutes=31))["status"] == "completed"
    )


def test_the_run_header_reaches_the_runtime_and_is_checked(tmp_path: Path) -> None:
    runtime = ReferenceRuntime(tmp_path / "shared.db")
    client = TestClient(create_app(runtime))
    for run, now in (("first", "2031-05-04T00:00:00Z"), ("second", "2031-05-01T00:00:00Z")):
        headers = {"X-Memlife-Now": now, "X-Memlife-Run": run}
        assert (
            client.post(
                "/v1/users", json={"phone": ANA if run == "first" else BRUNO}, headers=headers
            ).status_code
            == 200
        )
    clocks = dict(runtime._db.execute("SELECT name, value FROM clock").fetchall())
    assert clocks == {
        "now:first": "2031-05-04T00:00:00.000000Z",
        "now:second": "2031-05-01T00:00:00.000000Z",
    }
    bad = client.post("/v1/users", json={"phone": CARLA}, headers={"X-Memlife-Run": "x" * 201})
    assert bad.status_code == 400 and "X-Memlife-Run" in bad.text


def test_a_database_from_before_run_clocks_is_brought_up_to_date(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE deletions (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL,
            status TEXT NOT NULL, requested_at TEXT NOT NULL, purge_due TEXT NOT NULL,
            completed_at TEXT, reported_completed_at TEXT);
        CREATE INDEX deletions_pending ON deletions(purge_due) WHERE completed_at IS NULL;
        CREATE TABLE activity (tenant_id TEXT PRIMARY KEY, last_message_at TEXT NOT NULL,
            summarized_at TEXT);
        CREATE TABLE nightly_dirty (tenant_id TEXT PRIMARY KEY);
        CREATE TABLE users (user_id TEXT PRIMARY KEY, phone TEXT NOT NULL,
            status TEXT NOT NULL, created_at TEXT NOT NULL, deleted_at TEXT);
        INSERT INTO deletions VALUES ('del_1', 'u_1', 'pending', '2026-11-30T10:00:00.000000Z',
            '2026-11-30T10:30:00.000000Z', NULL, NULL);
    """)
    old.close()
    db = open_database(path)
    for table in ("deletions", "activity", "nightly_dirty", "cache"):
        columns = {row["name"] for row in db.execute(f"PRAGMA table_info({table})")}
        assert "run" in columns, table
    assert "namespace" in {row["name"] for row in db.execute("PRAGMA table_info(users)")}
    indexes = {
        row["name"] for row in db.execute("SELECT name FROM sqlite_master WHERE type='index'")
    }
    assert "deletions_pending" not in indexes and "deletions_pending_run" in indexes
    # The old pending deletion belongs to the shared clock of requests without a run.
    assert db.execute("SELECT run FROM deletions").fetchone()["run"] == ""
    db.close()
