"""The real Letta server (PyPI `letta` 0.16.8, memlife/bundled/letta/serve.py: its own
environment, PostgreSQL with pgvector, the scripted model) under the shipped
scenarios/targets/letta.yaml, one pair of the nightly on the skip clock (three of its five
fact domains: every kind of step, two fifths fewer agent steps); then its database read
directly. The full nightlies, races and the seed run on it in bench/stacks.py.

The first run on a machine installs Letta into memlife's cache directory (2 to 3 minutes with
pip's cache warm, less with uv's), shared by every checkout; later runs start the stack in
about 15 s. The nightly needs the scripted model to give each
tool call an id of its own: Letta drops a tool result whose id an earlier one had."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife.bundled.letta.serve import LettaStack, letta_stack
from memlife.rules.pairs import materialize
from memlife.rules.scenario_file import load_scenario
from memlife.rules.target import Target, load_target
from tests.reliability.helpers import small_nightly
from tests.workflows.helpers import erased_values, run_artifact, run_input, run_suite

REPO = Path(__file__).resolve().parents[2]
STATE = REPO / ".memlife" / "letta"  # the server's state, where `target serve letta` keeps it

# One Letta server per run of this module: its data directory (.memlife/letta) holds one
# PostgreSQL, so the module's tests share a worker.
# The first test's setup installs the Letta server on a fresh machine (150 to 250 s with
# the suite's other workers sharing the cores), and pytest-timeout counts a test's fixtures
# in its time: 300 s was passed in a fresh clone.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("letta-server"), pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def letta() -> Iterator[LettaStack]:
    with letta_stack(STATE) as stack:
        yield stack


@pytest.fixture
def letta_target(letta: LettaStack, monkeypatch: pytest.MonkeyPatch) -> Target:
    monkeypatch.setenv("LETTA_API_KEY", letta.server.password)
    return load_target(REPO / "scenarios" / "targets" / "letta.yaml").model_copy(
        update={"base_url": letta.server.base_url}
    )


async def test_a_deleted_agents_archival_passages_stay_in_letta_s_database(
    letta: LettaStack, letta_target: Target, skip_env: WorkflowEnvironment, skip_worker: str
) -> None:
    """letta-ai/letta PR #1632 (never merged), in 0.16.8: deleting an agent deletes its
    links to its archive (archives_agents, ON DELETE CASCADE), not the archive nor its
    passages (AgentManager.delete_agent_async; letta/orm/agent.py, archive.py)."""
    # employer is updated, pet forgotten, school only a's (b abstains).
    scenario = small_nightly("letta", pairs=1, domains=("employer", "pet", "school"))
    run = run_input(scenario, letta_target, fresh=True)
    await run_suite(skip_env.client, skip_worker, run)
    artifact = run_artifact(run.run_id)
    failures = {(f["invariant"], f["store"], f["reason"]) for f in artifact["failures"]}
    by_invariant = artifact["summary"]["by_invariant"]
    assert artifact["inconclusive"] == []
    # The agent answers from its archival memory: every recall and abstention passes.
    assert by_invariant["recall"]["checked"] > 0 and by_invariant["recall"]["failed"] == 0
    assert by_invariant["abstain"]["failed"] == 0 and by_invariant["I3"]["failed"] == 0
    # Passages name no agent, and the passage search spans every agent: the partner's
    # passages it returns are neither a leak nor the deleted tenant's residue.
    assert by_invariant["I2"]["failed"] == 0 and by_invariant["I1"]["failed"] == 0
    erasure_findings = {
        (f["tenant"], f["evidence"]["value"])
        for f in artifact["failures"]
        if f["invariant"] == "I4" and f["evidence"]["value"] is not None
    }
    assert erasure_findings and erasure_findings <= erased_values(scenario)
    # Archival memory only adds: the superseded employer stays beside the new one.
    assert ("U1", "archival", "stale") in failures
    assert ("I4", "archival", "residue") in failures
    # The deleted agent's passages, read in Letta's own tables: an archive no agent links.
    deleted = [t["alias"] for t in artifact["tenants"] if t["role"] == "a"]
    orphans = letta.query(
        "select a.name, p.text, p.is_deleted from archival_passages p "
        "join archives a on a.id = p.archive_id where not exists (select 1 "
        "from archives_agents l where l.archive_id = p.archive_id)",
    )
    names = {name for name, _, _ in orphans}
    assert names == {f"memlife-{alias}'s Archive" for alias in deleted}
    assert all(is_deleted == "f" for _, _, is_deleted in orphans)
    residue = {
        f["evidence"]["value"]
        for f in artifact["failures"]
        if f["invariant"] == "I4" and f["store"] == "archival" and f["stage"] == "after-3d"
    }
    assert any(value in text for value in residue for _, text, _ in orphans)


async def test_a_joiners_agent_never_sees_the_space_it_joined(
    letta: LettaStack, letta_target: Target, skip_env: WorkflowEnvironment, skip_worker: str
) -> None:
    """Letta 0.16.8 compiles an agent's core-memory blocks into its system message, and
    rebuilds that message when a block's value changes (BlockManager.update_block_async),
    not when a block is attached (AgentManager.attach_block_async), and the agent's steps do
    not rebuild it (letta_agent_v3.py: 'We skip system prompt refresh during normal steps').
    A tenant that joins a space after its fact was stated never sees it."""
    spaces = load_scenario(REPO / "scenarios" / "shared-spaces.yaml")
    assert spaces.generate is not None
    joined = next(i for i, step in enumerate(spaces.timeline) if step.label == "joined")
    scenario = materialize(
        spaces.model_copy(
            update={
                "timeline": spaces.timeline[: joined + 1],
                "generate": spaces.generate.model_copy(update={"count": 1}),
            }
        ),
        "letta-joined",
    )
    run = run_input(scenario, letta_target, fresh=True)
    await run_suite(skip_env.client, skip_worker, run)
    artifact = run_artifact(run.run_id)
    assert artifact["inconclusive"] == []
    missing = {
        (f["tenant"], f["stage"]) for f in artifact["failures"] if f["invariant"] == "recall"
    }
    creator, joiner = (
        next(t["alias"] for t in artifact["tenants"] if t["role"] == role) for role in ("a", "b")
    )
    assert missing == {(joiner, "joined")}
    assert not [f for f in artifact["failures"] if f["invariant"] not in ("recall", "L")]
    # In Letta's tables: both agents link the space's block; only the creator's system
    # message holds its value.
    rows = letta.query(
        "select a.name, position(b.value in (m.content->0->>'text')) > 0 "
        "from blocks_agents l join agents a on a.id = l.agent_id join block b "
        "on b.id = l.block_id join messages m on m.id = (a.message_ids->>0) "
        f"where b.label like 'team-{run.run_id}%'",
    )
    assert sorted(rows) == sorted([[f"memlife-{creator}", "t"], [f"memlife-{joiner}", "f"]])
