"""SQL store probes against real databases (SQLite and PostgreSQL): parameterized reads
by tenant and by needle, run read-only, with the URL taken from the worker's environment."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import create_engine, text
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from memlife.activities.stores import inspect_stores
from memlife.contracts import InspectRequest
from memlife.errors import InputError
from memlife.rules.target import parse_target

ROWS = [
    ("m1", "u_ana", "Trabaja en Panadería Quispe", 0),
    ("m2", "u_ana", "Vive en calle Olmo 12", 0),
    ("m3", "u_bruno", "Trabaja en Ferretería Olmos", 0),
    ("m4", "u_ana", "Su mascota es Trufa", 1),
]


def _target(
    scope: str,
    needle: str = "SELECT id, user_id AS tenant_id, memory AS content, "
    "deleted FROM probe_memories WHERE memory LIKE '%' || :needle || '%'",
) -> Any:
    return parse_target(
        {
            "name": "sql-store",
            "base_url": "http://127.0.0.1:9",
            "operations": {"say": {"path": "/say", "extract": {"reply": "/reply"}}},
            "stores": [
                {
                    "name": "memories",
                    "retention": "tombstone",
                    "probe": {
                        "kind": "sql",
                        "url_env": "MEMLIFE_TEST_STORE_URL",
                        "scope": scope,
                        "needle": needle,
                        "deleted": "/deleted",
                    },
                }
            ],
        },
        "sql-store.yaml",
    )


SCOPE = (
    "SELECT id, user_id AS tenant_id, memory AS content, deleted FROM probe_memories "
    "WHERE user_id = :user_id ORDER BY id"
)


def fill_store(url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The memories the probes read, in the database at `url` (MEMLIFE_TEST_STORE_URL)."""
    engine = create_engine(url)
    with engine.begin() as db:
        db.execute(text("DROP TABLE IF EXISTS probe_memories"))
        db.execute(
            text(
                "CREATE TABLE probe_memories (id TEXT PRIMARY KEY, user_id TEXT, "
                "memory TEXT, deleted INTEGER)"
            )
        )
        for row in ROWS:
            db.execute(
                text("INSERT INTO probe_memories VALUES (:i, :u, :m, :d)"),
                dict(zip("iumd", row, strict=True)),
            )
    engine.dispose()
    monkeypatch.setenv("MEMLIFE_TEST_STORE_URL", url)
    return url


@pytest.fixture
def store_url(recorder_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    return fill_store(recorder_url, monkeypatch)


def _count(url: str) -> int:
    engine = create_engine(url)
    with engine.connect() as db:
        count = db.execute(text("SELECT count(*) FROM probe_memories")).scalar_one()
    engine.dispose()
    return int(count)


async def test_reads_by_tenant_and_by_needle(store_url: str) -> None:
    reads = await ActivityEnvironment().run(
        inspect_stores,
        InspectRequest(
            target=_target(SCOPE),
            identities=["u_ana"],
            needles=["Panadería Quispe", "Olmo"],
            watch=["Panadería Quispe", "Olmo", "Trufa"],
            scenario_now="2026-12-01T00:00:00Z",
        ),
    )
    by_key = {(r.mode, r.key): r for r in reads}
    scope = by_key[("scope", "u_ana")]
    assert scope.status == "ok" and scope.total == 3 and scope.latency_ms is not None
    assert [(r.id, r.tenant_id, r.deleted, r.matches) for r in scope.records] == [
        ("m1", "u_ana", False, [0]),
        ("m2", "u_ana", False, [1]),
        ("m4", "u_ana", True, [2]),
    ]
    # A needle is searched across every tenant: "Olmo" is in Ana's street and Bruno's job.
    olmo = by_key[("needle", "Olmo")]
    assert sorted((r.id, r.tenant_id) for r in olmo.records) == [("m2", "u_ana"), ("m3", "u_bruno")]
    assert by_key[("needle", "Panadería Quispe")].total == 1


async def test_a_query_that_writes_is_refused_and_changes_nothing(store_url: str) -> None:
    sneaky = (
        "WITH gone AS (DELETE FROM probe_memories WHERE user_id = :user_id RETURNING *) "
        "SELECT id, user_id AS tenant_id, memory AS content, deleted FROM gone"
    )
    reads = await ActivityEnvironment().run(
        inspect_stores,
        InspectRequest(
            target=_target(sneaky),
            identities=["u_ana"],
            needles=[],
            watch=["Olmo"],
            scenario_now="2026-12-01T00:00:00Z",
        ),
    )
    assert [(r.mode, r.status) for r in reads] == [("scope", "error")]  # inconclusive
    assert reads[0].error and "Error" in reads[0].error
    assert _count(store_url) == len(ROWS)  # read-only transaction (or query_only)


async def test_the_database_url_comes_from_the_worker_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MEMLIFE_TEST_STORE_URL", raising=False)
    target = _target(SCOPE)
    assert target.secret_names() == ["MEMLIFE_TEST_STORE_URL"]  # checked before a run
    with pytest.raises(Exception) as raised:
        await ActivityEnvironment().run(
            inspect_stores,
            InspectRequest(
                target=target,
                identities=["u_ana"],
                needles=[],
                watch=[],
                scenario_now="2026-12-01T00:00:00Z",
            ),
        )
    assert isinstance(raised.value, ApplicationError) and raised.value.non_retryable
    assert raised.value.type == "MissingSecret"
    assert "MEMLIFE_TEST_STORE_URL" in str(raised.value)


@pytest.mark.parametrize(
    ("scope", "needle", "reason"),
    [
        ("DELETE FROM m WHERE user_id = :user_id", None, "one SELECT (or WITH … SELECT)"),
        ("SELECT * FROM m WHERE user_id = :user_id; DROP TABLE m", None, "no ';' inside"),
        ("SELECT * FROM m", None, "exactly one parameter, :user_id (it has none"),
        (SCOPE, "SELECT * FROM m WHERE x = :needle AND y = :other", "(it has :needle, :other)"),
    ],
)
def test_probe_queries_are_validated(scope: str, needle: str | None, reason: str) -> None:
    with pytest.raises(InputError) as raised:
        _target(scope, *([needle] if needle else []))
    assert reason in str(raised.value)


def test_text_inside_a_binary_column_is_read_as_text(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint blob (msgpack, as LangGraph writes) holds its strings as UTF-8 between
    bytes that are not: the value must come out readable, or a probe would call it absent."""
    from memlife.targets import sql

    url = f"sqlite:///{tmp_path / 'blobs.db'}"
    engine = create_engine(url)
    value = "Trabajo en Panadería Quispe"
    blob = (
        b"\x82\xa8messages\x91\x82\xa4role\xa4user\xa7content\xd9"
        + bytes([len(value.encode())])
        + value.encode()
        + b"\xff\xc1"
    )
    with engine.begin() as db:
        db.execute(text("CREATE TABLE checkpoints (thread_id TEXT, checkpoint BLOB)"))
        db.execute(text("INSERT INTO checkpoints VALUES ('u_ana', :blob)"), {"blob": blob})
    engine.dispose()
    monkeypatch.setenv("MEMLIFE_TEST_BLOB_URL", url)
    rows, total, _ = sql.read_rows(
        "MEMLIFE_TEST_BLOB_URL",
        "SELECT thread_id AS tenant_id, checkpoint AS content FROM "
        "checkpoints WHERE instr(checkpoint, CAST(:needle AS BLOB)) > 0",
        {"needle": value},
        10,
    )
    assert total == 1 and value in rows[0]["content"]
    sql.dispose_all()


async def test_a_store_whose_driver_is_missing_is_unread_alone(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A probe whose database driver is not installed says so in one line, for its store
    alone: the other store's reads stand (a missing driver once made every store
    inconclusive, hiding real residue behind "target errors")."""
    import importlib.util

    from memlife.targets.check import check_target

    assert importlib.util.find_spec("MySQLdb") is None  # the driver the URL below names
    fill_store(f"sqlite:///{tmp_path / 'memories.db'}", monkeypatch)
    monkeypatch.setenv("MEMLIFE_TEST_MYSQL_URL", "mysql+mysqldb://probe@127.0.0.1:9/history")
    data = _target(SCOPE).model_dump(mode="json", by_alias=True, exclude_none=True)
    data["stores"].append(
        {
            "name": "history",
            "probe": {
                "kind": "sql",
                "url_env": "MEMLIFE_TEST_MYSQL_URL",
                "needle": "SELECT id, text AS content FROM history WHERE text LIKE :needle",
            },
        }
    )
    target = parse_target(data, "two-stores.yaml")
    reads = await ActivityEnvironment().run(
        inspect_stores,
        InspectRequest(
            target=target,
            identities=["u_ana"],
            needles=["Olmo"],
            watch=["Olmo"],
            erased=["Olmo"],
            scenario_now="2026-12-01T00:00:00Z",
        ),
    )
    status = {(r.store, r.mode): (r.status, r.error) for r in reads}
    assert status[("memories", "scope")] == ("ok", None)
    assert status[("memories", "needle")] == ("ok", None)
    history_status, error = status[("history", "needle")]
    assert history_status == "error"
    assert error == (
        "SqlProbeError: the MEMLIFE_TEST_MYSQL_URL database's driver is missing: MySQLdb"
    )
    # `target check` says the same, as one failed row (exit 2), not a traceback.
    check = await check_target(target)
    failed = [r for r in check.misconfigured if r.operation.startswith("probe history")]
    assert failed and "driver is missing: MySQLdb" in failed[0].detail
