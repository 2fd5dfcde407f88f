"""The reference target's shared spaces: members read and write them, anyone else is told
it has no access, a member's deletion leaves the space's facts, the space's deletion
erases them; and the three faults that break exactly that."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memlife.bundled.reference.app import create_app
from memlife.bundled.reference.schema import DELETION_DELAY
from memlife.bundled.reference.store import ReferenceRuntime
from tests.bundled.test_reference_runtime import ANA, BRUNO, T0, ask, setup_pair

FACT = "El proveedor del equipo es Conservas Palacios."
QUESTION = "¿Cuál es el proveedor del equipo?"
LATER = T0 + DELETION_DELAY + timedelta(minutes=5)


def team(tmp_path: Path, *faults: str) -> tuple[ReferenceRuntime, str, str, str]:
    runtime = ReferenceRuntime(tmp_path / f"{'-'.join(faults) or 'clean'}.db", faults)
    ana, bruno = setup_pair(runtime)
    space = runtime.create_space(ANA, "team", T0)["space_id"]
    runtime.space_say(space, ANA, FACT, T0)
    return runtime, space, ana, bruno


def in_space(runtime: ReferenceRuntime, space: str, phone: str, when: object = T0) -> str:
    return runtime.space_say(space, phone, QUESTION, when)[1].reply


def test_members_only_and_the_facts_are_the_spaces(tmp_path: Path) -> None:
    runtime, space, ana, bruno = team(tmp_path)
    assert "Conservas Palacios" in in_space(runtime, space, ANA)
    assert "no tienes acceso" in in_space(runtime, space, BRUNO).lower()
    assert "Palacios" not in ask(runtime, ANA, QUESTION)  # a private question is private
    runtime.change_membership(space, BRUNO, "join", T0)
    assert "Conservas Palacios" in in_space(runtime, space, BRUNO)
    runtime.space_say(space, BRUNO, "Mi mascota se llama Luna Arriaga.", T0)  # the space's
    runtime.change_membership(space, BRUNO, "leave", T0)
    assert "Palacios" not in in_space(runtime, space, BRUNO)
    records = runtime.store_records("memory", T0, tenant_id=space)
    assert {r["tenant_id"] for r in records} == {space} and len(records) == 2


def test_deleting_a_member_keeps_the_space_deleting_the_space_erases_it(tmp_path: Path) -> None:
    runtime, space, ana, _ = team(tmp_path)
    runtime.change_membership(space, BRUNO, "join", T0)
    runtime.delete_tenant(ana, T0)
    runtime.deletion_status(ana, LATER)
    assert "Conservas Palacios" in in_space(runtime, space, BRUNO, LATER)
    runtime.delete_space(space, BRUNO, LATER)
    for store in ("memory", "graph", "cache"):
        assert runtime.store_records(store, LATER, needle="Conservas Palacios") == [], store
    assert all(
        r["deleted"] for r in runtime.store_records("thread", LATER, needle="Conservas Palacios")
    )
    assert "Palacios" not in in_space(runtime, space, BRUNO, LATER)


@pytest.mark.parametrize(
    ("fault", "leaks"),
    [
        ("space-leak", "outsider"),
        ("revocation-ignored", "former member"),
        ("member-delete-overreach", "nothing left"),
    ],
)
def test_each_space_fault(tmp_path: Path, fault: str, leaks: str) -> None:
    runtime, space, ana, _ = team(tmp_path, fault)
    if leaks == "outsider":
        assert "Conservas Palacios" in in_space(runtime, space, BRUNO)
    elif leaks == "former member":
        assert "Palacios" not in in_space(runtime, space, BRUNO)  # never a member: no
        runtime.change_membership(space, BRUNO, "join", T0)
        runtime.change_membership(space, BRUNO, "leave", T0)
        assert "Conservas Palacios" in in_space(runtime, space, BRUNO)
    else:
        runtime.change_membership(space, BRUNO, "join", T0)
        runtime.delete_tenant(ana, T0)
        runtime.deletion_status(ana, LATER)
        assert "Palacios" not in in_space(runtime, space, BRUNO, LATER)


def test_the_space_endpoints(tmp_path: Path) -> None:
    client = TestClient(create_app(ReferenceRuntime(tmp_path / "http.db")))
    for phone in (ANA, BRUNO):
        client.post("/v1/users", json={"phone": phone})
    created = client.post("/v1/spaces", json={"phone": ANA, "name": "team"})
    assert created.status_code == 201
    space = created.json()["space_id"]
    said = client.post(f"/v1/spaces/{space}/messages", json={"phone": ANA, "message": FACT})
    assert said.status_code == 200
    assert client.delete(f"/v1/spaces/{space}", params={"phone": BRUNO}).status_code == 403
    assert (
        client.post(f"/v1/spaces/{space}/join", json={"phone": BRUNO}).json()["status"] == "active"
    )
    answer = client.post(f"/v1/spaces/{space}/messages", json={"phone": BRUNO, "message": QUESTION})
    assert "Conservas Palacios" in answer.json()["reply"]
    assert (
        client.delete(f"/v1/spaces/{space}", params={"phone": BRUNO}).json()["status"] == "deleted"
    )
    assert client.post("/v1/spaces/s_none/join", json={"phone": ANA}).status_code == 404
