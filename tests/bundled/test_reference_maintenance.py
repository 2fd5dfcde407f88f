"""The reference target's asynchronous ingestion and on-demand reindex, clean and with the
faults that reproduce their reported bugs (ingestion.py, maintenance.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memlife.bundled.reference.app import create_app
from memlife.bundled.reference.schema import DELETION_DELAY
from memlife.bundled.reference.store import ReferenceRuntime
from tests.bundled.test_reference_runtime import ANA, BRUNO, T0, ask, setup_pair

DELAY = timedelta(seconds=1)
AFTER_PURGE = T0 + DELETION_DELAY + timedelta(minutes=5)


def runtime_with(tmp_path: Path, *faults: str, delay: timedelta = DELAY) -> ReferenceRuntime:
    return ReferenceRuntime(
        tmp_path / f"{'-'.join(faults) or 'clean'}.db", faults, ingest_delay=delay
    )


def holders(runtime: ReferenceRuntime, store: str, needle: str, now: object) -> list[object]:
    return [
        r["tenant_id"]
        for r in runtime.store_records(store, now, needle=needle)
        if not r.get("deleted")
    ]


def queued(runtime: ReferenceRuntime) -> int:
    return runtime._db.execute("SELECT count(*) FROM ingest_queue").fetchone()[0]


def test_statements_wait_in_the_queue_until_due_or_until_a_read(tmp_path: Path) -> None:
    runtime = runtime_with(tmp_path)
    ana, _ = setup_pair(runtime)
    assert queued(runtime) == 4  # acknowledged, not yet written
    runtime.register("+12015550199", T0 + DELAY)  # any request of the run, once they are due
    assert queued(runtime) == 0
    runtime.converse(ANA, "Ahora trabajo en Taller Ruiz.", T0 + DELAY)
    assert queued(runtime) == 1
    # A read waits for the run's queued statements: no stale answer, no missing record.
    assert "Taller Ruiz" in ask(runtime, ANA, "¿Dónde trabajo?", T0 + DELAY)
    assert queued(runtime) == 0 and holders(runtime, "memory", "Ruiz", T0 + DELAY) == [ana]


@pytest.mark.parametrize("fault", [(), ("ingest-after-delete",)])
def test_deletion_right_after_writes_drains_the_queue_unless_the_fault(
    tmp_path: Path, fault: tuple[str, ...]
) -> None:
    runtime = runtime_with(tmp_path, *fault)
    ana, bruno = setup_pair(runtime)
    assert runtime.delete_tenant(ana, T0)["status"] == "pending"
    status = runtime.deletion_status(ana, AFTER_PURGE)
    assert status["status"] == "completed"
    later = AFTER_PURGE + timedelta(minutes=1)
    found = holders(runtime, "memory", "Quispe", later) + holders(runtime, "graph", "Quispe", later)
    assert found == ([] if not fault else [ana, ana])  # landed after "completed"
    assert holders(runtime, "memory", "Olmos", later) == [bruno]  # the partner's, intact


@pytest.mark.parametrize("fault", [(), ("ingest-after-delete",)])
def test_forget_right_after_an_update_erases_the_update(
    tmp_path: Path, fault: tuple[str, ...]
) -> None:
    runtime = runtime_with(tmp_path, *fault)
    ana, _ = setup_pair(runtime, T0 - timedelta(hours=1))
    runtime.converse(ANA, "Ahora trabajo en Taller Ruiz.", T0)
    runtime.forget(ana, "Taller Ruiz", T0)
    later = T0 + timedelta(minutes=1)
    reply = ask(runtime, ANA, "¿Dónde trabajo?", later)
    if fault:
        assert "Taller Ruiz" in reply and holders(runtime, "memory", "Ruiz", later) == [ana]
    else:  # neither the forgotten value nor the one it superseded
        assert "Taller Ruiz" not in reply and "Quispe" not in reply
        assert holders(runtime, "memory", "Ruiz", later) == []


def test_a_clean_reindex_changes_nothing_a_probe_can_see(tmp_path: Path) -> None:
    runtime = runtime_with(tmp_path, delay=timedelta(0))
    ana, bruno = setup_pair(runtime)
    runtime.converse(ANA, "Ahora trabajo en Taller Ruiz.", T0)
    runtime.converse(BRUNO, "Mi mascota se llama Luna Arriaga.", T0)
    runtime.forget(bruno, "Luna Arriaga", T0)
    runtime.delete_tenant(ana, T0)
    runtime.deletion_status(ana, AFTER_PURGE)
    memory_before = runtime.store_records("memory", AFTER_PURGE, tenant_id=bruno)
    assert runtime.reindex(bruno, AFTER_PURGE) == {"status": "completed", "records": 2}
    assert runtime.reindex(ana, AFTER_PURGE)["status"] == "skipped"  # deleted: nothing live
    after = runtime.store_records("memory", AFTER_PURGE, tenant_id=bruno)
    assert sorted(r["content"] for r in after) == sorted(r["content"] for r in memory_before)
    for needle in ("Quispe", "Ruiz", "Luna Arriaga"):
        assert holders(runtime, "memory", needle, AFTER_PURGE) == []


def test_reindex_resurrects_deleted_and_forgotten_facts(tmp_path: Path) -> None:
    runtime = runtime_with(tmp_path, "reindex-resurrects", delay=timedelta(0))
    ana, bruno = setup_pair(runtime)
    runtime.converse(BRUNO, "Mi mascota se llama Luna Arriaga.", T0)
    runtime.forget(bruno, "Luna Arriaga", T0)
    runtime.delete_tenant(ana, T0)
    runtime.deletion_status(ana, AFTER_PURGE)
    assert holders(runtime, "memory", "Quispe", AFTER_PURGE) == []
    runtime.reindex(ana, AFTER_PURGE)
    runtime.reindex(bruno, AFTER_PURGE)
    assert holders(runtime, "memory", "Quispe", AFTER_PURGE) == [ana]
    assert "Luna Arriaga" in ask(runtime, BRUNO, "¿Cómo se llama mi mascota?", AFTER_PURGE)


def test_reindex_drops_tenant_lets_every_tenant_read_the_rebuilt_records(tmp_path: Path) -> None:
    runtime = runtime_with(tmp_path, "reindex-drops-tenant", delay=timedelta(0))
    ana, bruno = setup_pair(runtime)
    runtime.converse(ANA, "Mi mascota se llama Luna Arriaga.", T0)
    runtime.reindex(ana, T0)
    assert holders(runtime, "memory", "Luna Arriaga", T0) == [""]  # no tenant key left
    # Bruno never named a pet: his answer now comes from Ana's rebuilt record.
    assert "Luna Arriaga" in ask(runtime, BRUNO, "¿Cómo se llama mi mascota?")


def test_the_reindex_endpoint(tmp_path: Path) -> None:
    client = TestClient(create_app(runtime_with(tmp_path, delay=timedelta(0))))
    user = client.post("/v1/users", json={"phone": ANA}).json()["user_id"]
    client.post("/v1/preview", json={"phone": ANA, "message": "Trabajo en Panadería Quispe."})
    answer = client.post("/admin/reindex", json={"tenant_id": user})
    assert answer.status_code == 200 and answer.json() == {"status": "completed", "records": 1}
    assert client.post("/admin/reindex", json={"tenant_id": "u_nobody"}).status_code == 404
    assert client.post("/admin/reindex", json={}).status_code == 422


def test_no_single_request_applies_a_whole_runs_backlog(tmp_path: Path) -> None:
    from memlife.bundled.reference.ingestion import INGEST_BATCH

    runtime = runtime_with(tmp_path)
    phones = [f"+1201555{n:04d}" for n in range(INGEST_BATCH // 2 + 10)]
    for phone in phones:
        runtime.register(phone, T0)
        runtime.converse(phone, f"Trabajo en Taller {phone[-4:]}.", T0)
        runtime.converse(phone, f"Mi mascota se llama Luna {phone[-4:]}.", T0)
    backlog = queued(runtime)
    assert backlog == 2 * len(phones) > INGEST_BATCH
    # A question waits for its own tenant's statements only (the clean target reads no one
    # else's), not for everyone's.
    assert "Taller 0003" in ask(runtime, phones[3], "¿Dónde trabajo?")
    assert queued(runtime) == backlog - 2
    # Once due, the background worker takes a batch per request, not the whole backlog.
    runtime.register("+12015559999", T0 + DELAY)
    assert queued(runtime) == backlog - 2 - INGEST_BATCH
    # A store read by needle waits for the statements holding it, and only for those.
    waiting = runtime._db.execute("SELECT message FROM ingest_queue").fetchall()
    needle = waiting[0]["message"].split(" es ")[-1].split(" en ")[-1].rstrip(".")
    before = queued(runtime)
    assert len(holders(runtime, "memory", needle, T0 + DELAY)) == 1
    assert queued(runtime) == before - 1
    runtime.register("+12015559998", T0 + 2 * DELAY)  # the clock moves: the next batch
    assert queued(runtime) == 0
