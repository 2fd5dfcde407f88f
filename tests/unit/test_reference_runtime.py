"""The reference target's runtime: stores, precedence, deletion, the leak fault."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memlife.reference import language
from memlife.reference.store import STORES, ReferenceRuntime

NOW = datetime(2026, 11, 30, tzinfo=UTC)


@pytest.fixture
def runtime(tmp_path: Path) -> ReferenceRuntime:
    return ReferenceRuntime(tmp_path / "ref.db")


def setup_pair(runtime: ReferenceRuntime) -> tuple[str, str]:
    ana, created = runtime.register("+12015550101", NOW)
    bruno, _ = runtime.register("+12015550102", NOW)
    assert created
    for phone, color, job in (("+12015550101", "azul", "Panadería Quispe"),
                              ("+12015550102", "verde", "Ferretería Olmos")):
        runtime.converse(phone, f"Mi color favorito es {color}.", NOW)
        runtime.converse(phone, f"Trabajo en {job}.", NOW)
    return ana, bruno


def test_statement_split_and_question_tokens() -> None:
    assert language.split_statement("Mi color favorito es azul cobalto.") == (
        frozenset({"color", "favorito"}), "azul cobalto")
    assert language.split_statement("Trabajo en Panadería Quispe") == (
        frozenset({"trabajo"}), "Panadería Quispe")
    assert language.content_tokens("¿En qué empresa trabajo?") == frozenset({"trabajo"})
    assert language.is_question("¿Dónde trabajo?") and not language.is_question("Trabajo.")


def test_register_is_idempotent_per_phone(runtime: ReferenceRuntime) -> None:
    first, created = runtime.register("+12015550101", NOW)
    again, created_again = runtime.register("+12015550101", NOW)
    assert created and not created_again and first == again


def test_answers_are_scoped_to_the_tenant(runtime: ReferenceRuntime) -> None:
    setup_pair(runtime)
    _, reply = runtime.converse("+12015550101", "¿Cuál es mi color favorito?", NOW)
    assert "azul" in reply and "verde" not in reply
    _, reply = runtime.converse("+12015550102", "¿Dónde trabajo?", NOW)
    assert "Ferretería Olmos" in reply and "Quispe" not in reply


def test_update_supersedes_in_memory_and_graph(runtime: ReferenceRuntime) -> None:
    ana, _ = setup_pair(runtime)
    runtime.converse("+12015550101", "Ahora mi color favorito es rojo.", NOW)
    _, reply = runtime.converse("+12015550101", "¿Cuál es mi color favorito?", NOW)
    assert "rojo" in reply and "azul" not in reply
    memory = runtime.store_records("memory", tenant_id=ana)
    assert [r["content"] for r in memory if "color" in str(r["content"])] == [
        "Ahora mi color favorito es rojo."]


def test_precedence_graph_then_memory_then_thread(runtime: ReferenceRuntime) -> None:
    runtime.register("+12015550101", NOW)
    runtime.converse("+12015550101", "Hoy hace sol", NOW)  # no marker: thread only
    _, reply = runtime.converse("+12015550101", "¿Qué tal el sol?", NOW)
    assert "Hoy hace sol" in reply  # answered from the thread
    _, reply = runtime.converse("+12015550101", "¿Cuál es mi deporte?", NOW)
    assert reply == "No tengo esa información."


def test_every_store_is_readable_by_scope_and_needle(runtime: ReferenceRuntime) -> None:
    ana, bruno = setup_pair(runtime)
    for store in STORES:
        scoped = runtime.store_records(store, tenant_id=ana)
        assert scoped and all(r["tenant_id"] == ana for r in scoped), store
    needle = runtime.store_records("graph", needle="panaderia QUISPE")
    assert [r["tenant_id"] for r in needle] == [ana]
    assert runtime.store_records("jobs", needle="verde")[0]["tenant_id"] == bruno


def test_deletion_empties_every_store_for_that_tenant_only(runtime: ReferenceRuntime) -> None:
    ana, bruno = setup_pair(runtime)
    result = runtime.delete_tenant(ana, NOW)
    assert result["status"] == "completed"
    assert runtime.deletion_status(ana)["status"] == "completed"
    for store in STORES:
        assert runtime.store_records(store, tenant_id=ana) == [], store
        assert runtime.store_records(store, tenant_id=bruno), store
    assert runtime.store_records("memory", needle="azul") == []
    new_ana, created = runtime.register("+12015550101", NOW)  # same phone, fresh identity
    assert created and new_ana != ana
    _, reply = runtime.converse("+12015550101", "¿Cuál es mi color favorito?", NOW)
    assert "azul" not in reply


def test_cross_tenant_leak_fault_appends_foreign_values(tmp_path: Path) -> None:
    leaky = ReferenceRuntime(tmp_path / "leaky.db", ["cross-tenant-leak"])
    setup_pair(leaky)
    _, reply = leaky.converse("+12015550101", "¿Cuál es mi color favorito?", NOW)
    assert "azul" in reply and "verde" in reply


def test_unknown_fault_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        ReferenceRuntime(tmp_path / "x.db", ["gremlins"])
