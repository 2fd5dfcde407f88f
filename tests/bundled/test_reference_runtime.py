"""The reference target's runtime: stores, precedence, time-driven jobs, deletion, faults."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memlife.bundled.reference import language
from memlife.bundled.reference.app import create_app
from memlife.bundled.reference.schema import STORE_TABLES, STORES
from memlife.bundled.reference.store import ReferenceRuntime
from memlife.rules.scoring import normalize

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
ANA, BRUNO = "+12015550101", "+12015550102"


@pytest.fixture
def runtime(tmp_path: Path) -> ReferenceRuntime:
    return ReferenceRuntime(tmp_path / "ref.db")


def setup_pair(runtime: ReferenceRuntime, now: datetime = T0) -> tuple[str, str]:
    ana, created = runtime.register(ANA, now)
    bruno, _ = runtime.register(BRUNO, now)
    assert created
    for phone, color, job in (
        (ANA, "azul", "Panadería Quispe"),
        (BRUNO, "verde", "Ferretería Olmos"),
    ):
        runtime.converse(phone, f"Mi color favorito es {color}.", now)
        runtime.converse(phone, f"Trabajo en {job}.", now)
    return ana, bruno


def ask(runtime: ReferenceRuntime, phone: str, question: str, now: datetime = T0) -> str:
    return runtime.converse(phone, question, now)[1].reply


def test_statement_split_and_question_tokens() -> None:
    assert language.split_statement("Mi color favorito es azul cobalto.") == (
        frozenset({"color", "favorito"}),
        "azul cobalto",
    )
    assert language.split_statement("Trabajo en Panadería Quispe") == (
        frozenset({"trabajo"}),
        "Panadería Quispe",
    )
    assert language.split_statement("Mi mascota se llama Luna Arriaga") == (
        frozenset({"mascota"}),
        "Luna Arriaga",
    )
    assert language.content_tokens("¿En qué empresa trabajo?") == frozenset({"trabajo"})
    assert language.is_question("¿Dónde trabajo?") and not language.is_question("Trabajo.")


def test_register_is_idempotent_per_phone(runtime: ReferenceRuntime) -> None:
    first, created = runtime.register(ANA, T0)
    again, created_again = runtime.register(ANA, T0)
    assert created and not created_again and first == again


def test_answers_and_context_are_scoped_to_the_tenant(runtime: ReferenceRuntime) -> None:
    setup_pair(runtime)
    _, answer = runtime.converse(ANA, "¿Cuál es mi color favorito?", T0)
    assert "azul" in answer.reply and "verde" not in answer.reply
    assert answer.layer == "graph" and answer.context == ["Mi color favorito es azul."]
    assert "Ferretería Olmos" in ask(runtime, BRUNO, "¿Dónde trabajo?")


def test_update_supersedes_in_memory_graph_and_cache(runtime: ReferenceRuntime) -> None:
    ana, _ = setup_pair(runtime)
    assert "azul" in ask(runtime, ANA, "¿Cuál es mi color favorito?")  # now cached
    runtime.converse(ANA, "Ahora mi color favorito es rojo.", T0 + timedelta(minutes=1))
    reply = ask(runtime, ANA, "¿Cuál es mi color favorito?", T0 + timedelta(minutes=2))
    assert "rojo" in reply and "azul" not in reply
    now = T0 + timedelta(minutes=3)
    assert runtime.store_records("memory", now, needle="azul") == []
    assert runtime.store_records("graph", now, needle="azul") == []


def test_precedence_falls_back_to_the_thread_then_abstains(runtime: ReferenceRuntime) -> None:
    runtime.register(ANA, T0)
    runtime.converse(ANA, "Hoy hace sol", T0)  # no marker: stays in the thread only
    assert "Hoy hace sol" in ask(runtime, ANA, "¿Qué tal el sol?")
    assert ask(runtime, ANA, "¿Cuál es mi deporte?") == "No tengo esa información."


def test_every_store_is_readable_by_scope_and_needle(runtime: ReferenceRuntime) -> None:
    ana, bruno = setup_pair(runtime)
    ask(runtime, ANA, "¿Dónde trabajo?")
    later = T0 + timedelta(hours=2)  # the session summary is due after an idle hour
    for store in STORES:
        scoped = runtime.store_records(store, later, tenant_id=ana)
        assert scoped and all(r["tenant_id"] == ana for r in scoped), store
    needle = runtime.store_records("graph", later, needle="panaderia QUISPE")
    assert [r["tenant_id"] for r in needle] == [ana]
    assert runtime.store_records("jobs", later, needle="verde")[0]["tenant_id"] == bruno


def test_deletion_is_asynchronous_and_honours_each_retention_policy(
    runtime: ReferenceRuntime,
) -> None:
    ana, bruno = setup_pair(runtime)
    ask(runtime, ANA, "¿Dónde trabajo?")
    assert runtime.delete_tenant(ana, T0)["status"] == "pending"
    assert runtime.deletion_status(ana, T0 + timedelta(minutes=29))["status"] == "pending"
    assert runtime.store_records("memory", T0 + timedelta(minutes=29), tenant_id=ana)
    done = T0 + timedelta(minutes=31)
    assert runtime.deletion_status(ana, done)["status"] == "completed"
    for store in ("memory", "graph", "summaries", "cache"):
        assert runtime.store_records(store, done, tenant_id=ana) == [], store
    thread = runtime.store_records("thread", done, tenant_id=ana)
    assert thread and all(r["deleted"] for r in thread)  # tombstoned
    jobs = runtime.store_records("jobs", done, tenant_id=ana)
    assert jobs and all("Quispe" not in r["content"] for r in jobs)  # redacted
    assert runtime.store_records("memory", done, tenant_id=bruno)
    new_ana, created = runtime.register(ANA, done)  # same phone, fresh identity
    assert created and new_ana != ana
    assert "azul" not in ask(runtime, ANA, "¿Cuál es mi color favorito?", done)


def test_nightly_job_and_session_summaries_follow_the_scenario_clock(
    runtime: ReferenceRuntime,
) -> None:
    ana, _ = setup_pair(runtime)
    assert runtime.store_records("summaries", T0 + timedelta(minutes=59), tenant_id=ana) == []
    summary = runtime.store_records("summaries", T0 + timedelta(minutes=61), tenant_id=ana)
    assert summary[0]["source"] == "session" and "Quispe" in summary[0]["content"]
    nightly = runtime.store_records("summaries", T0 + timedelta(days=1), tenant_id=ana)
    assert nightly[0]["source"] == "nightly"


def test_cache_answers_expire_after_six_hours(runtime: ReferenceRuntime) -> None:
    ana, _ = setup_pair(runtime)
    ask(runtime, ANA, "¿Dónde trabajo?")
    assert runtime.store_records("cache", T0 + timedelta(hours=5), tenant_id=ana)
    assert runtime.store_records("cache", T0 + timedelta(hours=6, seconds=1), tenant_id=ana) == []


def fault_runtime(tmp_path: Path, fault: str) -> ReferenceRuntime:
    return ReferenceRuntime(tmp_path / f"{fault}.db", [fault])


def test_cross_tenant_leak_fault(tmp_path: Path) -> None:
    leaky = fault_runtime(tmp_path, "cross-tenant-leak")
    setup_pair(leaky)
    reply = ask(leaky, ANA, "¿Cuál es mi color favorito?")
    assert "azul" in reply and "verde" in reply


def test_stale_and_cache_faults_serve_the_old_value(tmp_path: Path) -> None:
    for fault in ("stale-after-update", "cache-stale"):
        runtime = fault_runtime(tmp_path, fault)
        setup_pair(runtime)
        ask(runtime, ANA, "¿Dónde trabajo?")
        runtime.converse(ANA, "Ahora trabajo en Taller Rivas.", T0 + timedelta(minutes=1))
        reply = ask(runtime, ANA, "¿Dónde trabajo?", T0 + timedelta(hours=1))
        assert "Quispe" in reply, fault


def test_deletion_faults(tmp_path: Path) -> None:
    expectations = {
        "graph-unscoped-delete": ("graph", True),
        "partial-delete": ("memory", True),
        "deletion-skips-summaries": ("summaries", True),
    }
    for fault, (store, survives) in expectations.items():
        runtime = fault_runtime(tmp_path, fault)
        ana, _ = setup_pair(runtime)
        ask(runtime, ANA, "¿Dónde trabajo?", T0 + timedelta(hours=2))  # a summary exists
        runtime.delete_tenant(ana, T0 + timedelta(hours=2))
        done = T0 + timedelta(hours=3)
        assert runtime.deletion_status(ana, done)["status"] == "completed"
        assert bool(runtime.store_records(store, done, tenant_id=ana)) is survives, fault


def test_premature_status_and_nightly_resurrection(tmp_path: Path) -> None:
    premature = fault_runtime(tmp_path, "premature-deletion-status")
    ana, _ = setup_pair(premature)
    assert premature.delete_tenant(ana, T0)["status"] == "completed"
    assert premature.store_records("memory", T0 + timedelta(minutes=1), tenant_id=ana)
    assert (
        premature.store_records("memory", T0 + timedelta(hours=2, minutes=1), tenant_id=ana) == []
    )
    resurrecting = fault_runtime(tmp_path, "nightly-resurrection")
    ana, _ = setup_pair(resurrecting)
    resurrecting.delete_tenant(ana, T0)
    assert resurrecting.store_records("memory", T0 + timedelta(hours=1), tenant_id=ana) == []
    assert resurrecting.store_records("memory", T0 + timedelta(days=1), tenant_id=ana)


def test_overreach_and_topk_faults(tmp_path: Path) -> None:
    overreach = fault_runtime(tmp_path, "delete-overreach")
    ana, bruno = setup_pair(overreach)
    overreach.delete_tenant(ana, T0)
    assert overreach.store_records("memory", T0 + timedelta(hours=1), tenant_id=bruno) == []
    topk = fault_runtime(tmp_path, "topk-fallback-leak")
    setup_pair(topk)
    _, answer = topk.converse(ANA, "¿Dónde trabajo?", T0)
    assert any("Olmos" in item for item in answer.context)


def test_unknown_fault_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        ReferenceRuntime(tmp_path / "x.db", ["gremlins"])


def test_http_surface_follows_the_memlife_clock_header(runtime: ReferenceRuntime) -> None:
    client = TestClient(create_app(runtime))
    later = "2031-05-01T00:00:00Z"
    user = client.post("/v1/users", json={"phone": ANA}, headers={"X-Memlife-Now": later})
    assert user.status_code == 200
    client.post(
        "/v1/preview",
        json={"phone": ANA, "message": "Trabajo en Panadería Quispe."},
        headers={"X-Memlife-Now": later},
    )
    records = client.get(
        "/admin/stores/thread/records",
        params={"tenant_id": user.json()["user_id"]},
        headers={"X-Memlife-Now": later},
    ).json()["records"]
    assert records[0]["created_at"] == "2031-05-01T00:00:00.000000Z"  # the header's moment
    deletion = client.delete(
        f"/v1/users/{user.json()['user_id']}", headers={"X-Memlife-Now": later}
    )
    assert deletion.status_code == 202 and deletion.json()["status"] == "pending"
    bad = client.post("/v1/users", json={"phone": BRUNO}, headers={"X-Memlife-Now": "soon"})
    assert bad.status_code == 400 and "ISO-8601" in bad.text


def test_forget_erases_one_fact_everywhere(runtime: ReferenceRuntime, tmp_path: Path) -> None:
    ana, _ = setup_pair(runtime)
    assert runtime.forget(ana, "Panadería Quispe", T0)["status"] == "completed"
    for store in STORES:
        found = runtime.store_records(store, T0, needle="Quispe")
        if store == "thread":  # tombstoned checkpoints: kept, never served
            assert found and all(record["deleted"] for record in found)
        else:
            assert found == [], store
    assert "azul" in ask(runtime, ANA, "¿Cuál es mi color favorito?")
    assert "Quispe" not in ask(runtime, ANA, "¿Dónde trabajo?")
    faulty = fault_runtime(tmp_path, "forget-skips-graph")
    ana, _ = setup_pair(faulty)
    faulty.forget(ana, "Panadería Quispe", T0)
    assert faulty.store_records("memory", T0, needle="Quispe") == []
    assert faulty.store_records("graph", T0, needle="Quispe")
    assert "Quispe" in ask(faulty, ANA, "¿Dónde trabajo?")


@pytest.mark.parametrize(
    ("mode", "layer"),
    [("combined", "graph"), ("graph", "graph"), ("vector", "memory"), ("thread", "thread")],
)
def test_each_retrieval_mode_answers_from_its_own_layer(
    tmp_path: Path, mode: str, layer: str
) -> None:
    runtime = ReferenceRuntime(tmp_path / f"{mode}.db", retrieval=mode)
    setup_pair(runtime)
    _, answer = runtime.converse(ANA, "¿Cuál es mi color favorito?", T0)
    assert answer.layer == layer and "azul" in answer.reply and "verde" not in answer.reply
    assert (answer.context != []) == (mode in ("combined", "vector"))  # vector retrieval only
    # What only the thread holds, only thread-reading modes can answer.
    runtime.converse(ANA, "Hoy hace sol", T0)
    thread_only = ask(runtime, ANA, "¿Qué tal el sol?")
    assert ("Hoy hace sol" in thread_only) == (mode in ("combined", "thread"))
    with pytest.raises(ValueError, match="unknown retrieval"):
        ReferenceRuntime(tmp_path / "x.db", retrieval="oracle")


def test_answers_report_stage_timings_and_usage(runtime: ReferenceRuntime) -> None:
    client = TestClient(create_app(runtime, service_time=0.01))
    client.post("/v1/users", json={"phone": ANA})
    client.post("/v1/preview", json={"phone": ANA, "message": "Trabajo en Panadería Quispe."})
    response = client.post("/v1/preview", json={"phone": ANA, "message": "¿Dónde trabajo?"})
    from memlife.targets.http import parse_server_timing

    stages = parse_server_timing(response.headers["server-timing"])
    assert set(stages) == {"queue", "retrieval", "assembly", "think", "total"}
    assert stages["think"] >= 10  # the simulated thinking time
    # The whole time in the application covers every stage (what latency fidelity uses).
    assert stages["total"] >= stages["think"] + stages["retrieval"] + stages["assembly"]
    usage = response.json()["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    assert usage["cost_usd"] == pytest.approx(
        (usage["prompt_tokens"] * 0.15 + usage["completion_tokens"] * 0.60) / 1e6
    )


def test_indexed_needle_search_finds_exactly_what_a_full_scan_finds(
    runtime: ReferenceRuntime,
) -> None:
    ana, bruno = setup_pair(runtime)
    runtime.converse(ANA, "Ahora trabajo en Panadería Olmo.", T0 + timedelta(hours=1))
    runtime.forget(bruno, "verde", T0 + timedelta(hours=2))
    runtime.delete_tenant(ana, T0 + timedelta(hours=3))
    later = T0 + timedelta(days=3)  # the purge has run: rows updated and deleted
    runtime.store_records("thread", later, tenant_id=bruno)  # bring the clock there
    rng = random.Random(7)
    for store, table in STORE_TABLES.items():
        norms = [row[0] for row in runtime._db.execute(f"SELECT norm FROM {table}")]
        # Any piece of a stored text, cut anywhere (mid-word too), and words it never holds.
        pieces = [
            text[start : start + length]
            for text in norms
            for start, length in ((rng.randrange(len(text)), rng.randrange(1, 40)),)
            if text
        ]
        needles = [
            "Panadería Quispe",
            "olmo",
            "verde",
            "az",
            "ferreteria",
            "a",
            "u_",
            "en Panadería Olmo",
            "bajo en panaderia ol",
            "Ahora trabajo en",
            "en panaderia olmo quispe",
            "trabajo en panaderia olmo.",
            *pieces,
        ]
        for needle in needles:
            full_scan = runtime._db.execute(  # what the search answered before the index
                f"SELECT * FROM {table} WHERE instr(norm, ?) > 0", (normalize(needle),)
            )
            expected = sorted(str(runtime._record(store, row)["id"]) for row in full_scan)
            found = sorted(str(r["id"]) for r in runtime.store_records(store, later, needle=needle))
            assert found == expected, (store, needle)
        forgotten = runtime.store_records(store, later, needle="verde")
        assert all(record.get("deleted") for record in forgotten)  # gone, or tombstoned


class _FullNightly(ReferenceRuntime):
    """The nightly as it was: every tenant rebuilt, whether anything changed or not."""

    def _nightly(self, when: datetime, run: str) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO nightly_dirty(tenant_id, run) SELECT user_id, ? FROM users",
            (run,),
        )
        super()._nightly(when, run)


@pytest.mark.parametrize("faults", [(), ("nightly-resurrection",), ("delete-overreach",)])
def test_the_incremental_nightly_leaves_what_a_full_rebuild_leaves(
    tmp_path: Path, faults: tuple[str, ...]
) -> None:
    def contents(runtime: ReferenceRuntime, tenants: list[str], at: datetime) -> dict:
        def named(text: str) -> str:  # tenant ids differ between the two runtimes
            return text.replace(tenants[0], "ana").replace(tenants[1], "bruno")

        return {
            store: sorted(
                named(str(r["content"]))
                for tenant in tenants
                for r in runtime.store_records(store, at, tenant_id=tenant)
            )
            for store in ("memory", "summaries", "graph")
        }

    results = []
    for kind in (ReferenceRuntime, _FullNightly):
        runtime = kind(tmp_path / f"{kind.__name__}-{'-'.join(faults)}.db", faults)
        ana, bruno = setup_pair(runtime)
        runtime.converse(BRUNO, "Ahora trabajo en Ferretería Norte.", T0 + timedelta(hours=2))
        # Requested just before the night: the purge (30 min later) falls after it.
        runtime.delete_tenant(ana, T0.replace(hour=1, minute=50) + timedelta(days=1))
        later = T0 + timedelta(days=4)
        results.append(contents(runtime, [ana, bruno], later))
    assert results[0] == results[1]
    if "nightly-resurrection" in faults:  # the fault still resurrects what was purged
        assert "Trabajo en Panadería Quispe." in results[0]["memory"]
