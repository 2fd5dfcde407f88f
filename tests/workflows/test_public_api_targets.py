"""The shipped target files for public memory APIs, run end to end against stand-ins that
follow the same documented shapes (tests/standins: clearly not the real services). Each
run's verdicts must be exactly the faults the stand-in really has."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife import recorder
from memlife.contracts import suite_workflow_id
from memlife.rules.scenario import DeleteStep, Scenario
from memlife.rules.target import load_target
from tests.reliability.helpers import small_nightly
from tests.servers import serve_in_thread
from tests.standins.mem0_oss import create_app
from tests.workflows.helpers import run_artifact, run_input, run_suite

TARGETS = Path(__file__).resolve().parents[2] / "scenarios" / "targets"
# The Mem0 stand-in's keys: an ordinary (non-admin) user's key and the server's admin key.
MEM0_KEYS = {"api_key": "m0sk_standin-user-key", "admin_api_key": "standin-admin-key-0123"}


@pytest.fixture
def mem0_databases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The Mem0 stand-in's vector and history databases, named to the target file's
    probes as the environment variables it reads, and its keys as the file names them."""
    vectors, history = tmp_path / "vectors.db", tmp_path / "history.db"
    monkeypatch.setenv("MEM0_VECTOR_DB_URL", f"sqlite:///{vectors}")
    monkeypatch.setenv("MEM0_HISTORY_DB_URL", f"sqlite:///{history}")
    monkeypatch.setenv("MEM0_API_KEY", MEM0_KEYS["api_key"])
    monkeypatch.setenv("MEM0_ADMIN_API_KEY", MEM0_KEYS["admin_api_key"])
    return vectors, history


async def test_mem0_oss_keeps_deleted_memories_in_its_history(
    mem0_databases: tuple[Path, Path], skip_env: WorkflowEnvironment, skip_worker: str
) -> None:
    vectors, history = mem0_databases
    scenario = small_nightly("mem0-oss")
    # The whole nightly, its single-fact forget included: Mem0 erases a memory by id, and
    # the target file finds the ids by value first (a sequence with `select`).
    assert any(isinstance(step, DeleteStep) and step.domains for step in scenario.timeline)
    with serve_in_thread(create_app(vectors, history, **MEM0_KEYS)) as base_url:
        target = load_target(TARGETS / "mem0-oss.yaml").model_copy(update={"base_url": base_url})
        run = run_input(scenario, target)
        await run_suite(skip_env.client, skip_worker, run)
    artifact = run_artifact(run.run_id)
    by_invariant = artifact["summary"]["by_invariant"]
    failures = {(f["invariant"], f["store"], f["reason"]) for f in artifact["failures"]}

    assert artifact["inconclusive"] == []
    # Answers come from the tenant's own memories only: recall, and no leaks.
    assert by_invariant["recall"]["checked"] > 0 and by_invariant["recall"]["failed"] == 0
    assert by_invariant["I3"]["failed"] == 0 and by_invariant["I2"]["failed"] == 0
    # With infer=False Mem0 adds an update beside the old memory: search serves both.
    assert ("U1", "response", "stale") in failures
    # delete_all empties the vector store, and writes every deleted memory's text into
    # the history database (Memory._delete_memory): residue there, and only there.
    assert ("I4", "history", "residue") in failures
    assert not any(invariant == "I4" and store == "vectors" for invariant, store, _ in failures)
    deleted = {t["alias"] for t in artifact["tenants"] if t["role"] == "a"}
    residue = {
        f["tenant"]
        for f in artifact["failures"]
        if f["store"] == "history" and f["stage"] in ("deletion-confirmed", "after-3d")
    }
    assert deleted <= residue
    # The forgotten fact's memories were found by value and deleted by id: gone from the
    # vectors, kept as DELETE rows in the history.
    forgotten = {
        f["tenant"]
        for f in artifact["failures"]
        if f["store"] == "history" and f["stage"] == "b-intact"
    }
    assert forgotten == {t["alias"] for t in artifact["tenants"] if t["role"] == "b"}
    # A search abstains by holding nothing of the partner's: a correct Mem0 passes.
    assert by_invariant["abstain"]["checked"] > 0 and by_invariant["abstain"]["failed"] == 0
    assert {(i, store, reason) for i, store, reason in failures} == {
        ("U1", "response", "stale"),
        ("I4", "history", "residue"),
    }


async def test_mem0_platform_runs_the_seed_protocol_with_its_key_kept_secret(
    tmp_path: Path,
    skip_env: WorkflowEnvironment,
    skip_worker: str,
    seed_scenario: Scenario,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.standins.mem0_oss import create_platform_app

    key = "m0-secret-7f3a9c"
    monkeypatch.setenv("MEM0_API_KEY", key)
    app = create_platform_app(tmp_path / "vectors.db", tmp_path / "history.db", key)
    with serve_in_thread(app) as base_url:
        target = load_target(TARGETS / "mem0-platform.yaml").model_copy(
            update={"base_url": base_url}
        )
        run = run_input(seed_scenario, target)
        summary = await run_suite(skip_env.client, skip_worker, run)
        # The same run with a key the service refuses: every case inconclusive, none passed.
        monkeypatch.setenv("MEM0_API_KEY", "wrong")
        refused = await run_suite(skip_env.client, skip_worker, run_input(seed_scenario, target))
    assert summary.passed and summary.cases == summary.cases_passed == 6
    assert refused.cases_passed == 0 and refused.inconclusive > 0 and not refused.passed
    history = await skip_env.client.get_workflow_handle(
        suite_workflow_id(seed_scenario.name, run.run_id)
    ).fetch_history()
    assert key not in history.to_json()
    loaded = recorder.load_run(run.run_id)
    assert loaded is not None
    assert key not in repr(loaded)


async def _seed_run_and_check(
    env: WorkflowEnvironment, task_queue: str, scenario: Scenario, file: str, app: Any
) -> tuple[Any, Any, Any]:
    """The seed protocol against a stand-in through a shipped target file, then `target
    check` on the same file: (summary, run, check)."""
    from memlife.targets.check import check_target

    with serve_in_thread(app) as base_url:
        target = load_target(TARGETS / file).model_copy(update={"base_url": base_url})
        run = run_input(scenario, target)
        summary = await run_suite(env.client, task_queue, run)
        check = await check_target(target)  # every operation once, the deletion included
    return summary, run, check


async def test_zep_registers_in_two_steps_and_answers_from_its_context(
    skip_env: WorkflowEnvironment,
    skip_worker: str,
    seed_scenario: Scenario,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.standins.zep import create_app as create_zep

    monkeypatch.setenv("ZEP_API_KEY", "zep-key-41d2")
    summary, _, check = await _seed_run_and_check(
        skip_env, skip_worker, seed_scenario, "zep.yaml", create_zep("zep-key-41d2")
    )
    assert summary.passed and summary.cases == summary.cases_passed == 6
    assert check.misconfigured == []
    # The user, then its thread, then the messages; the deletion (find the thread's
    # user, delete it) and its task last.
    assert [r.operation for r in check.results] == [
        "register (1/2)",
        "register (2/2)",
        "say (statement)",
        "say (question)",
        "recall",
        "create_space",
        "space_say (statement)",
        "space_ask",
        "delete_space",
        "delete_tenant (1/2)",
        "delete_tenant (2/2)",
        "deletion_status",
    ]
    assert all(r.ok for r in check.results)


# A space in a Zep group graph: created by a, its fact added to the group's graph, asked
# about by a member and by an outsider, then deleted.
ZEP_SPACE = {
    "name": "zep-space",
    "domains": {
        "pet": {
            "templates": {
                "es": {
                    "statement": ["Mi mascota se llama {value}."],
                    "question": ["¿Cómo se llama mi mascota?"],
                }
            }
        },
        "supplier": {
            "templates": {
                "es": {
                    "statement": ["El proveedor del equipo es {value}."],
                    "question": ["¿Cuál es el proveedor del equipo?"],
                }
            }
        },
    },
    "spaces": {"team": {"domains": ["supplier"]}},
    "pairs": [
        {
            "a": {"alias": "ana", "facts": {"pet": "Canelo"}},
            "b": {"alias": "bruno", "facts": {"pet": "Luna"}},
            "spaces": {"team": {"supplier": "Conservas Palacios"}},
        }
    ],
    "timeline": [
        {"step": "write", "domains": ["pet"]},
        {"step": "space", "action": "create", "space": "team", "tenants": ["a"]},
        {"step": "write", "space": "team", "tenants": ["a"]},
        {"step": "probe", "label": "created", "space": "team", "tenants": ["a", "b"]},
        {"step": "space", "action": "delete", "space": "team", "tenants": ["a"]},
        {"step": "probe", "label": "deleted", "space": "team", "tenants": ["a"]},
    ],
}


async def test_zep_group_graphs_are_spaces_without_members(
    skip_env: WorkflowEnvironment, skip_worker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlife.rules.scenario_file import parse_scenario
    from tests.standins.zep import create_app as create_zep

    monkeypatch.setenv("ZEP_API_KEY", "zep-key-41d2")
    scenario = parse_scenario(ZEP_SPACE, "zep-space.yaml")
    with serve_in_thread(create_zep("zep-key-41d2")) as base_url:
        target = load_target(TARGETS / "zep.yaml").model_copy(update={"base_url": base_url})
        run = run_input(scenario, target)
        await run_suite(skip_env.client, skip_worker, run)
    artifact = run_artifact(run.run_id)
    failures = {
        (f["invariant"], f["stage"], f["tenant"], f["reason"]) for f in artifact["failures"]
    }
    by_invariant = artifact["summary"]["by_invariant"]
    # The member recalls the group's fact; once the group is deleted, nobody gets it.
    assert by_invariant["recall"]["checked"] == 1 and by_invariant["recall"]["failed"] == 0
    assert by_invariant["I4"]["checked"] >= 1 and by_invariant["I4"]["failed"] == 0
    assert artifact["inconclusive"] == []
    # A group has no members: the outsider asking with its id gets the fact, as Zep's
    # documentation says (the application must check membership).
    assert failures == {("S1", "created", "bruno", "leaked")}


async def test_letta_gives_each_tenant_its_own_agent(
    skip_env: WorkflowEnvironment,
    skip_worker: str,
    seed_scenario: Scenario,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.standins.letta import create_app as create_letta

    monkeypatch.setenv("LETTA_API_KEY", "letta-key-9c1e")
    summary, run, check = await _seed_run_and_check(
        skip_env, skip_worker, seed_scenario, "letta.yaml", create_letta("letta-key-9c1e")
    )
    assert summary.passed and summary.cases == summary.cases_passed == 6
    loaded = recorder.load_run(run.run_id)
    assert loaded is not None
    assert all((t.user_id or "").startswith("agent-") for t in loaded["tenants"])
    assert check.misconfigured == [] and all(r.ok for r in check.results)
    assert "delete_tenant" in [r.operation for r in check.results]


async def test_mem0_agent_scopes_are_spaces_without_members_whose_history_remembers(
    mem0_databases: tuple[Path, Path], skip_env: WorkflowEnvironment, skip_worker: str
) -> None:
    from memlife.rules.scenario_file import parse_scenario

    vectors, history = mem0_databases
    timeline = [*ZEP_SPACE["timeline"], {"step": "inspect", "label": "deleted", "tenants": ["a"]}]
    scenario = parse_scenario(
        {**ZEP_SPACE, "name": "mem0-space", "timeline": timeline}, "mem0-space.yaml"
    )
    with serve_in_thread(create_app(vectors, history, **MEM0_KEYS)) as base_url:
        target = load_target(TARGETS / "mem0-oss.yaml").model_copy(update={"base_url": base_url})
        run = run_input(scenario, target)
        await run_suite(skip_env.client, skip_worker, run)
    artifact = run_artifact(run.run_id)
    failures = {
        (f["invariant"], f["store"], f["stage"], f["tenant"], f["reason"])
        for f in artifact["failures"]
    }
    by_invariant = artifact["summary"]["by_invariant"]
    assert by_invariant["recall"]["checked"] == 1 and by_invariant["recall"]["failed"] == 0
    assert artifact["inconclusive"] == []
    # An agent scope has no members; deleting it empties the vector store but leaves the
    # space's fact in the history database, as a tenant's deletion does.
    assert failures == {
        ("S1", "response", "created", "bruno", "leaked"),
        ("I4", "history", "deleted", "ana", "residue"),
    }


async def test_letta_shared_blocks_are_spaces_whose_membership_is_attachment(
    skip_env: WorkflowEnvironment, skip_worker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlife.rules.pairs import materialize
    from memlife.rules.scenario_file import load_scenario
    from tests.standins.letta import create_app as create_letta

    monkeypatch.setenv("LETTA_API_KEY", "letta-key-9c1e")
    scenario = load_scenario(TARGETS.parent / "shared-spaces.yaml")
    assert scenario.generate is not None
    scenario = materialize(
        scenario.model_copy(update={"generate": scenario.generate.model_copy(update={"count": 1})}),
        "letta-spaces",
    )
    with serve_in_thread(create_letta("letta-key-9c1e")) as base_url:
        target = load_target(TARGETS / "letta.yaml").model_copy(update={"base_url": base_url})
        run = run_input(scenario, target)
        await run_suite(skip_env.client, skip_worker, run)
    artifact = run_artifact(run.run_id)
    by_invariant = artifact["summary"]["by_invariant"]
    # Attaching is joining, detaching is leaving: the whole shared-spaces lifecycle holds.
    # Deleting an agent leaves its core-memory blocks (Letta 0.16.8 deletes the agent and
    # its links, not its blocks; seen on the real server too): the deleted member's own
    # block is residue there, and that is the only failure.
    assert artifact["inconclusive"] == []
    assert {
        (f["invariant"], f["store"], f["stage"], f["reason"]) for f in artifact["failures"]
    } == {("I4", "core-memory", "member-deleted", "residue")}
    assert by_invariant["S1"]["checked"] > 0 and by_invariant["S2"]["checked"] > 0
    assert by_invariant["recall"]["checked"] > 0
