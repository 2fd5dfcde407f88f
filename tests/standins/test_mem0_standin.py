"""The Mem0 stand-ins (tests/standins/mem0_oss.py) held to upstream: the platform stand-in
driven by mem0ai's own `MemoryClient` (2.2.1: the v3 paths, `Authorization: Token`, the
answers it parses and the statuses its errors map), and the OSS stand-in to Mem0's REST
server (server/main.py, server/auth.py) and SQLiteManager (mem0/memory/storage.py): its
auth, `infer`, status codes, and the history database's `history` and `messages` rows. The
shipped target files' SQL probes and answer extracts are run against what it stores."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jmespath
import pytest
import yaml

from tests.groups import MINILM
from tests.servers import serve_in_thread
from tests.standins.mem0_oss import create_app, create_platform_app, rows

# On the worker that imports mem0 for its stack's tests too (tests/groups.py).
pytestmark = MINILM

TARGETS = Path(__file__).resolve().parents[2] / "scenarios" / "targets"
PLATFORM_KEY = "m0-platform-key-1c4e"
USER_KEY = "m0sk_ordinary-user-key"  # a dashboard user's key; that user is not the admin
ADMIN_KEY = "admin-api-key-7b2d9f01"  # the server's ADMIN_API_KEY
ANA, BRUNO = "+12025550100", "+12025550101"


# --- the hosted platform, through mem0ai's MemoryClient -----------------------------------


@pytest.fixture
def memory_client_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """mem0.client.main with its telemetry silenced and its home in tmp_path."""
    monkeypatch.setenv("MEM0_TELEMETRY", "False")
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0-home"))
    module = pytest.importorskip("mem0.client.main")
    monkeypatch.setattr(module, "capture_client_event", lambda *a, **k: None)
    monkeypatch.setattr(module, "_maybe_alias_anon_to_email", lambda *a, **k: None)
    return module


@pytest.fixture
def platform_url(tmp_path: Path) -> Iterator[str]:
    app = create_platform_app(tmp_path / "vectors.db", tmp_path / "history.db", PLATFORM_KEY)
    with serve_in_thread(app) as url:
        yield url


def test_memory_client_adds_searches_lists_and_deletes(
    memory_client_module: Any, platform_url: str
) -> None:
    from mem0.exceptions import MemoryNotFoundError, ValidationError

    client = memory_client_module.MemoryClient(api_key=PLATFORM_KEY, host=platform_url)
    assert client.org_id == "org-standin" and client.project_id == "proj-standin"

    # infer=False: stored as said, answered at once with what was stored.
    added = client.add("Mi mascota se llama Canelo.", user_id=ANA, infer=False)
    assert added["status"] == "SUCCEEDED"
    assert [r["data"]["memory"] for r in added["results"]] == ["Mi mascota se llama Canelo."]
    client.add(
        [{"role": "user", "content": "Mi mascota se llama Luna."}], user_id=BRUNO, infer=False
    )
    # The platform's default (infer true) is queued: an event id, no results.
    queued = client.add("Vivo en la calle Mayor 5.", user_id=ANA)
    assert queued["status"] == "PENDING" and "results" not in queued
    assert client.client.get(f"/v1/event/{queued['event_id']}/").json()["status"] == "SUCCEEDED"

    found = client.search("¿Cómo se llama mi mascota?", filters={"user_id": ANA})
    assert found["results"][0]["memory"] == "Mi mascota se llama Canelo."
    assert {r["user_id"] for r in found["results"]} == {ANA}
    assert all(0 <= r["score"] <= 1 for r in found["results"])
    with pytest.raises(ValueError, match="filters"):  # the client refuses top-level ids
        client.search("mascota", user_id=ANA)

    listed = client.get_all(filters={"user_id": ANA}, page=1, page_size=1)
    assert listed["count"] == 2 and listed["next"] and listed["previous"] is None
    assert len(listed["results"]) == 1
    memory_id = found["results"][0]["id"]
    assert client.get(memory_id)["memory"] == "Mi mascota se llama Canelo."

    assert client.delete(memory_id) == {"message": "Memory deleted successfully!"}
    with pytest.raises(MemoryNotFoundError):  # 404 {"error": "Memory not found!"}
        client.delete(memory_id)
    with pytest.raises(ValidationError):  # 400: not a UUID
        client.delete("not-a-uuid")

    deleted = client.delete_all(user_id=ANA)
    assert deleted["message"].startswith("Delete in progress") and deleted["event_id"]
    assert client.get_all(filters={"user_id": ANA})["results"] == []
    assert client.delete_users(user_id=BRUNO) == {"message": "Entity deleted successfully."}
    assert client.get_all(filters={"user_id": BRUNO})["count"] == 0


def test_a_wrong_key_is_refused_as_the_platform_refuses_it(
    memory_client_module: Any, platform_url: str
) -> None:
    # The client checks its key when built (GET /v1/ping/): 401 becomes a ValueError.
    with pytest.raises(ValueError, match="Invalid API key"):
        memory_client_module.MemoryClient(api_key="wrong", host=platform_url)
    for headers in (
        {"Authorization": "Token wrong"},
        {"Authorization": f"Bearer {PLATFORM_KEY}"},
        {},
    ):
        answer = httpx.post(
            f"{platform_url}/v3/memories/search/",
            headers=headers,
            json={"query": "x", "filters": {"user_id": ANA}},
        )
        assert answer.status_code == 401
    token = {"Authorization": f"Token {PLATFORM_KEY}"}
    # v3 search and list take ids inside `filters` only: 400 at the top level.
    answer = httpx.post(
        f"{platform_url}/v3/memories/search/", headers=token, json={"query": "x", "user_id": ANA}
    )
    assert answer.status_code == 400


def test_the_platform_target_file_reads_the_standin(platform_url: str) -> None:
    """The answers mem0-platform.yaml extracts from, and the store probe it reads."""
    target = yaml.safe_load((TARGETS / "mem0-platform.yaml").read_text())
    operations = target["operations"]
    token = {"Authorization": f"Token {PLATFORM_KEY}"}
    with httpx.Client(base_url=platform_url, headers=token) as http:
        said = http.post(
            "/v3/memories/add/",
            json={
                "messages": [{"role": "user", "content": "Mi mascota se llama Canelo."}],
                "user_id": ANA,
                "infer": False,
            },
        )
        assert (
            jmespath.search(operations["say"]["extract"]["reply"], said.json())
            == "Mi mascota se llama Canelo."
        )
        asked = http.post(
            "/v3/memories/search/",
            json={"query": "mascota", "filters": {"user_id": ANA}, "top_k": 10},
        )
        assert "Canelo" in jmespath.search(operations["ask"]["extract"]["reply"], asked.json())
        probe = target["stores"][0]["probe"]
        needle = _fill(probe["needle"]["json"], {"needle": "canelo"})
        found = http.post("/v3/memories/", params=probe["needle"]["query"], json=needle)
        assert [r["user_id"] for r in found.json()["results"]] == [ANA]

        deletion = http.delete(f"/v2/entities/user/{ANA}/")
        event_id = deletion.json()["event_id"]
        status = http.get(f"/v1/event/{event_id}/").json()["status"]
        assert status in operations["deletion_status"]["done_values"]
        assert (
            http.post("/v3/memories/", params=probe["needle"]["query"], json=needle).json()[
                "results"
            ]
            == []
        )


# --- the OSS REST server -------------------------------------------------------------------


@pytest.fixture
def oss(tmp_path: Path) -> Iterator[tuple[httpx.Client, Path, Path]]:
    vectors, history = tmp_path / "vectors.db", tmp_path / "history.db"
    app = create_app(vectors, history, api_key=USER_KEY, admin_api_key=ADMIN_KEY)
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=5) as http:
        yield http, vectors, history


USER = {"X-API-Key": USER_KEY}
ADMIN = {"X-API-Key": ADMIN_KEY}


def _add(
    http: httpx.Client,
    user_id: str,
    *contents: str,
    infer: bool | None = False,
    roles: tuple[str, ...] = (),
) -> httpx.Response:
    body: dict[str, Any] = {
        "user_id": user_id,
        "messages": [
            {"role": roles[i] if i < len(roles) else "user", "content": text}
            for i, text in enumerate(contents)
        ],
    }
    if infer is not None:
        body["infer"] = infer
    return http.post("/memories", json=body, headers=USER)


def test_auth_is_upstreams_every_endpoint_a_key_deletion_the_admins(
    oss: tuple[httpx.Client, Path, Path],
) -> None:
    http, _, _ = oss
    bare = http.post("/memories", json={"user_id": ANA, "messages": []})
    assert bare.status_code == 401 and bare.headers["www-authenticate"] == "Bearer"
    assert bare.json()["detail"].startswith("Authentication required")
    # Credentials are checked before the body: 401, not 422, for a bad body without a key.
    assert http.post("/memories", json={}).status_code == 401
    assert http.post("/memories", json={}, headers=USER).status_code == 422
    wrong = http.post(
        "/search", json={"query": "x", "user_id": ANA}, headers={"X-API-Key": "m0sk_wrong"}
    )
    assert wrong.status_code == 401 and wrong.json() == {"detail": "Invalid API key."}
    bearer = http.get(
        "/memories", params={"user_id": ANA}, headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert bearer.status_code == 401  # a Bearer token is a dashboard JWT, not a key

    memory_id = _add(http, ANA, "Mi mascota se llama Canelo.").json()["results"][0]["id"]
    refused = http.delete("/memories", params={"user_id": ANA}, headers=USER)
    assert refused.status_code == 403 and refused.json() == {"detail": "Admin role required."}
    assert http.get("/memories", headers=USER).status_code == 403  # listing everyone's
    assert http.post("/reset", headers=USER).status_code == 403
    assert http.get("/memories", headers=ADMIN).json()["results"][0]["id"] == memory_id
    # Deleting one memory by id takes an ordinary key.
    assert http.delete(f"/memories/{memory_id}", headers=USER).json() == {
        "message": "Memory deleted successfully"
    }
    assert http.delete("/memories", params={"user_id": ANA}, headers=ADMIN).json() == {
        "message": "All relevant memories deleted"
    }
    assert http.delete("/memories", headers=ADMIN).status_code == 400  # no identifier


def test_infer_false_keeps_each_message_and_writes_no_messages_rows(
    oss: tuple[httpx.Client, Path, Path],
) -> None:
    http, vectors, history = oss
    added = _add(
        http,
        ANA,
        "Soy Ana.",
        "Hola Ana.",
        "Eres un asistente.",
        roles=("user", "assistant", "system"),
    ).json()["results"]
    # One memory per user or assistant message, as said; the system message is skipped.
    assert [(r["memory"], r["role"], r["event"], r["actor_id"]) for r in added] == [
        ("Soy Ana.", "user", "ADD", None),
        ("Hola Ana.", "assistant", "ADD", None),
    ]
    assert len(rows(vectors, "SELECT id FROM memories WHERE payload->>'user_id' = ?", [ANA])) == 2
    assert rows(
        history,
        "SELECT memory_id, old_memory, new_memory, event, is_deleted, role "
        "FROM history ORDER BY created_at",
    ) == [
        (added[0]["id"], None, "Soy Ana.", "ADD", 0, "user"),
        (added[1]["id"], None, "Hola Ana.", "ADD", 0, "assistant"),
    ]
    assert rows(history, "SELECT * FROM messages") == []
    # The same statement twice is two memories: no dedup without inference.
    _add(http, ANA, "Soy Ana.")
    assert len(rows(vectors, "SELECT id FROM memories")) == 3


def test_infer_true_is_the_default_and_its_messages_outlive_the_deletion(
    oss: tuple[httpx.Client, Path, Path],
) -> None:
    http, vectors, history = oss
    conversation = ("Mi mascota se llama Canelo.", "¡Qué nombre tan bonito!", "Sé breve.")
    roles = ("user", "assistant", "system")
    added = _add(http, ANA, *conversation, infer=None, roles=roles).json()["results"]
    assert [r["memory"] for r in added] == list(conversation[:2])
    assert set(added[0]) == {"id", "memory", "event"}
    # Every message of the add is saved under the session scope, the system one too.
    scope = f"user_id={ANA}"
    assert sorted(
        rows(history, "SELECT session_scope, role, content, name FROM messages")
    ) == sorted((scope, role, text, None) for role, text in zip(roles, conversation, strict=True))
    # batch_add_history: no updated_at, actor_id or role on inferred ADD rows.
    assert rows(history, "SELECT DISTINCT event, updated_at, actor_id, role FROM history") == [
        ("ADD", None, None, None)
    ]
    # The same facts again are deduplicated by hash; the messages are saved again.
    assert _add(http, ANA, *conversation, infer=True, roles=roles).json()["results"] == []
    assert len(rows(history, "SELECT id FROM messages")) == 6

    assert http.delete("/memories", params={"user_id": ANA}, headers=ADMIN).status_code == 200
    assert rows(vectors, "SELECT id FROM memories") == []
    deleted = rows(
        history, "SELECT old_memory, new_memory, is_deleted FROM history WHERE event = 'DELETE'"
    )
    assert sorted(deleted) == sorted((text, None, 1) for text in conversation[:2])
    # delete_all leaves the raw conversation where it was.
    assert len(rows(history, "SELECT id FROM messages WHERE session_scope = ?", [scope])) == 6


def test_messages_keep_the_newest_ten_per_scope_and_reset_drops_them(
    oss: tuple[httpx.Client, Path, Path],
) -> None:
    http, _, history = oss
    _add(http, ANA, *(f"hecho {i}" for i in range(12)), infer=True)
    _add(http, BRUNO, "Mi mascota se llama Luna.", infer=True)
    kept = rows(history, "SELECT content FROM messages WHERE session_scope = ?", [f"user_id={ANA}"])
    assert len(kept) == 10
    assert len(rows(history, "SELECT id FROM messages")) == 11
    assert http.post("/reset", headers=ADMIN).json() == {"message": "All memories reset"}
    assert rows(history, "SELECT id FROM messages") == rows(history, "SELECT id FROM history") == []


def test_statuses_and_shapes_of_reads_and_deletions(oss: tuple[httpx.Client, Path, Path]) -> None:
    http, _, _ = oss
    _add(http, ANA, *(f"Dato número {i} de Ana." for i in range(25)))
    _add(http, BRUNO, "Mi mascota se llama Luna.")
    # GET /memories: 20 unless top_k says otherwise (at most 1000).
    assert len(http.get("/memories", params={"user_id": ANA}, headers=USER).json()["results"]) == 20
    everything = http.get("/memories", params={"user_id": ANA, "top_k": 1000}, headers=USER).json()[
        "results"
    ]
    assert len(everything) == 25 and {m["user_id"] for m in everything} == {ANA}
    assert "score" not in everything[0] and everything[0]["role"] == "user"
    assert (
        http.get("/memories", params={"user_id": ANA, "top_k": 1001}, headers=USER).status_code
        == 422
    )
    # POST /search: ids at the top level (deprecated) or in filters; 20 by default.
    top = http.post("/search", json={"query": "Dato 3", "user_id": ANA}, headers=USER).json()
    filtered = http.post(
        "/search", json={"query": "Dato 3", "filters": {"user_id": ANA}}, headers=USER
    ).json()
    assert top == filtered and len(top["results"]) == 20
    assert {
        "id",
        "memory",
        "hash",
        "metadata",
        "score",
        "created_at",
        "updated_at",
        "user_id",
        "role",
    } == set(top["results"][0])
    assert http.post("/search", json={"query": "x"}, headers=USER).status_code == 400
    assert http.post("/memories", json={"messages": []}, headers=USER).status_code == 400

    unknown = str(uuid.uuid4())
    assert http.get(f"/memories/{unknown}", headers=USER).json() is None  # 200, null
    gone = http.delete(f"/memories/{unknown}", headers=USER)
    assert gone.status_code == 404
    assert gone.json() == {"detail": f"Memory with id {unknown} not found"}
    assert http.delete("/memories/not-a-uuid", headers=USER).status_code == 502
    assert http.delete("/memories/", headers=ADMIN).status_code == 404  # no slash redirect


def test_sqlite_tables_are_mem0s(tmp_path: Path) -> None:
    """The history database's tables, column for column, as mem0's SQLiteManager makes them."""
    storage = pytest.importorskip("mem0.memory.storage")
    upstream = storage.SQLiteManager(str(tmp_path / "upstream.db"))
    upstream.save_messages([{"role": "user", "content": "hola"}], "user_id=x")
    upstream.add_history("m", None, "hola", "ADD", created_at="t", updated_at="t", role="user")
    upstream.close()
    create_app(tmp_path / "vectors.db", tmp_path / "standin.db")

    def schema(path: Path) -> dict[str, list[tuple[Any, ...]]]:
        with sqlite3.connect(path) as connection:
            return {
                table: connection.execute(f"PRAGMA table_info({table})").fetchall()
                for table in ("history", "messages")
            }

    assert schema(tmp_path / "standin.db") == schema(tmp_path / "upstream.db")


def test_the_oss_target_files_queries_read_the_standins_rows(
    oss: tuple[httpx.Client, Path, Path],
) -> None:
    """mem0-oss.yaml's answers, its forget's listing, and its SQL probes (as SQLite runs
    them: the stand-in's files), against what the stand-in stored."""
    http, vectors, history = oss
    target = yaml.safe_load((TARGETS / "mem0-oss.yaml").read_text())
    operations = target["operations"]
    said = http.post(
        "/memories",
        headers=USER,
        json=_fill(
            operations["say"]["json"], {"message": "Mi mascota se llama Canelo.", "phone": ANA}
        ),
    )
    assert (
        jmespath.search(operations["say"]["extract"]["reply"], said.json())
        == "Mi mascota se llama Canelo."
    )
    _add(http, BRUNO, "Mi mascota se llama Luna.", infer=True)  # a messages row for Bruno
    asked = http.post(
        "/search",
        headers=USER,
        json=_fill(operations["ask"]["json"], {"message": "¿Mascota?", "phone": ANA}),
    )
    assert (
        jmespath.search(operations["ask"]["extract"]["reply"], asked.json())
        == "Mi mascota se llama Canelo."
    )
    listing = operations["forget"][0]
    listed = http.get(
        listing["path"], headers=USER, params=_fill(listing["query"], {"phone": ANA})
    ).json()
    records = jmespath.search(listing["select"]["records"], listed)
    assert [jmespath.search(listing["select"]["content"], r) for r in records] == [
        "Mi mascota se llama Canelo."
    ]

    stores = {store["name"]: store["probe"] for store in target["stores"]}
    files = {"MEM0_VECTOR_DB_URL": vectors, "MEM0_HISTORY_DB_URL": history}

    def read(store: str, mode: str, **parameters: str) -> list[tuple[Any, ...]]:
        probe = stores[store]
        with sqlite3.connect(files[probe["url_env"]]) as connection:
            cursor = connection.execute(probe[mode], parameters)
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    assert [(r["tenant_id"], r["content"]) for r in read("vectors", "scope", user_id=ANA)] == [
        (ANA, "Mi mascota se llama Canelo.")
    ]
    assert [r["tenant_id"] for r in read("vectors", "needle", needle="canelo")] == [ANA]
    assert [(r["tenant_id"], r["content"]) for r in read("messages", "scope", user_id=BRUNO)] == [
        (BRUNO, "Mi mascota se llama Luna.")
    ]
    assert read("messages", "scope", user_id=ANA) == []  # infer false writes none
    assert [r["tenant_id"] for r in read("messages", "needle", needle="LUNA")] == [BRUNO]

    http.delete("/memories", params={"user_id": BRUNO}, headers=ADMIN)
    assert read("vectors", "needle", needle="luna") == []
    assert [r["content"] for r in read("history", "needle", needle="luna")] == [
        " -> Mi mascota se llama Luna.",
        "Mi mascota se llama Luna. -> ",
    ]
    assert [r["tenant_id"] for r in read("messages", "needle", needle="luna")] == [BRUNO]


def _fill(template: Any, values: dict[str, str]) -> Any:
    """A target file's template with its placeholders replaced (strings only)."""
    if isinstance(template, str):
        for name, value in values.items():
            template = template.replace(f"{{{name}}}", value)
        return template
    if isinstance(template, dict):
        return {key: _fill(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [_fill(item, values) for item in template]
    return template


# --- the shipped target files, checked as `memlife target check` checks them -----------------


async def test_memlife_target_check_passes_both_mem0_files_against_the_standins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every operation and probe of mem0-oss.yaml (the forget's select→DELETE, the admin key
    on the deletion, the three SQL stores) and of mem0-platform.yaml (the deletion polled
    as an event) works against the stand-ins; the same OSS file with an ordinary key where
    the admin key belongs is refused at the deletion (403), and only there."""
    from memlife.rules.target import load_target
    from memlife.targets.check import check_target

    vectors, history = tmp_path / "vectors.db", tmp_path / "history.db"
    monkeypatch.setenv("MEM0_VECTOR_DB_URL", f"sqlite:///{vectors}")
    monkeypatch.setenv("MEM0_HISTORY_DB_URL", f"sqlite:///{history}")
    monkeypatch.setenv("MEM0_API_KEY", USER_KEY)
    monkeypatch.setenv("MEM0_ADMIN_API_KEY", ADMIN_KEY)
    with serve_in_thread(
        create_app(vectors, history, api_key=USER_KEY, admin_api_key=ADMIN_KEY)
    ) as url:
        target = load_target(TARGETS / "mem0-oss.yaml").model_copy(update={"base_url": url})
        check = await check_target(target)
        assert check.misconfigured == [], check.misconfigured
        operations = [r.operation for r in check.results]
        assert "delete_tenant" in operations and any(o.startswith("forget") for o in operations)
        assert any(o.startswith("probe messages") for o in operations)
        monkeypatch.setenv("MEM0_ADMIN_API_KEY", USER_KEY)
        refused = await check_target(target)
        assert [r.operation for r in refused.misconfigured] == ["delete_tenant"]
        assert "403" in refused.misconfigured[0].detail

    monkeypatch.setenv("MEM0_API_KEY", PLATFORM_KEY)
    app = create_platform_app(tmp_path / "p-vectors.db", tmp_path / "p-history.db", PLATFORM_KEY)
    with serve_in_thread(app) as url:
        target = load_target(TARGETS / "mem0-platform.yaml").model_copy(update={"base_url": url})
        check = await check_target(target)
        assert check.misconfigured == [], check.misconfigured
        status = [r for r in check.results if r.operation == "deletion_status"]
        assert status and status[0].ok and "SUCCEEDED" in status[0].detail
