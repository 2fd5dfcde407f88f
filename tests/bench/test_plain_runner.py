"""The benchmark's baseline really sends what memlife sent: replaying a recorded run
against a fresh reference target makes the same requests, all accepted, and leaves the
target holding what memlife's run left in it, in the test's process and in one of its own
(as the bench runs it)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from bench.plain_runner import replay, replay_in_process
from memlife.bundled.reference.target_file import reference_target
from memlife.rules.scenario import Scenario
from memlife.stack import embedded
from tests.reliability.helpers import small_nightly
from tests.workflows.helpers import run_input, run_suite


def _store_sizes(base_url: str, user_ids: list[str]) -> dict[str, int]:
    sizes = {}
    with httpx.Client(base_url=base_url) as http:  # one client: each builds a TLS context
        for store in ("thread", "memory", "graph", "jobs", "summaries", "cache"):
            sizes[store] = sum(
                len(
                    http.get(f"/admin/stores/{store}/records", params={"tenant_id": user}).json()[
                        "records"
                    ]
                )
                for user in user_ids
            )
    return sizes


def _users(base_url: str, phones: list[str]) -> list[str]:
    """Each phone's current user (registering an active phone returns its user)."""
    with httpx.Client(base_url=base_url) as http:
        return [http.post("/v1/users", json={"phone": phone}).json()["user_id"] for phone in phones]


async def test_replay_sends_the_recorded_requests_to_the_same_effect(
    tmp_path: Path, skip_env: WorkflowEnvironment, skip_worker: str, db_url: str
) -> None:
    scenario: Scenario = small_nightly("plain-runner", pairs=2)
    with embedded.reference_target(tmp_path / "memlife") as first:
        run = run_input(scenario, reference_target(first.base_url))
        summary = await run_suite(skip_env.client, skip_worker, run)
        from memlife import recorder

        loaded = recorder.load_run(run.run_id)
        assert loaded is not None
        phones = sorted(t.phone for t in loaded["tenants"])
        after_memlife = _store_sizes(first.base_url, _users(first.base_url, phones))

    replayed = {}
    # The baseline here, and memlife's own client in a process of its own.
    for client, how in (("httpx", replay), ("aiohttp", replay_in_process)):
        with embedded.reference_target(tmp_path / f"plain-{client}") as second:
            result = await how(second.base_url, run.run_id, db_url, concurrency=4, client=client)
            replayed[client] = (
                result,
                _store_sizes(second.base_url, _users(second.base_url, phones)),
            )

    assert summary.passed
    assert sum(after_memlife.values()) > 0
    for client, (result, after_plain) in replayed.items():
        assert result.requests == len(loaded["observations"]) > 100, client
        assert result.errors == 0, client
        assert after_plain == after_memlife, client
        # The runner's own CPU over the replay, within its wall time (one thread sends).
        assert 0 < result.cpu_seconds["runner"] <= result.seconds * 1.1, client

    # On aiohttp every conversation request is timed as memlife times it, beside the
    # target's own time for it, which lies within it.
    conversations = {m.observation_id for m in loaded["metrics"] if m.name == "stage:total"}
    timed = replayed["aiohttp"][0].timed
    assert len(timed) == len(conversations) > 10
    assert all(latency > total > 0 for latency, total in timed), timed
    assert replayed["httpx"][0].timed == []


async def test_a_replay_of_no_recorded_run_fails_and_says_why(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    with pytest.raises(
        RuntimeError,
        match="(?s)plain httpx replay of run no-such-run "
        "exited with status 2.*no recorded requests",
    ):
        await replay_in_process(
            "http://127.0.0.1:9", "no-such-run", "sqlite:///" + str(db), concurrency=1
        )
