"""Helpers shared by the reliability tests: a small seeded nightly, a worker process,
and the multiset of rows a run recorded."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Collection
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client

from memlife import recorder
from memlife.rules.pairs import materialize
from memlife.rules.scenario import Scenario
from memlife.rules.scenario_file import load_scenario
from memlife.stack.processes import ChildProcess
from tests.forked import launch_script

REPO = Path(__file__).resolve().parents[2]
NIGHTLY = REPO / "scenarios" / "lifecycle-nightly.yaml"


def written_nightly(pairs: int) -> Scenario:
    """The nightly as written, generating `pairs` pairs (a cohort run materializes them)."""
    scenario = load_scenario(NIGHTLY)
    assert scenario.generate is not None
    return scenario.model_copy(
        update={"generate": scenario.generate.model_copy(update={"count": pairs})}
    )


def recorded_nightly_values(pairs: int, seed: str) -> str:
    """A run of the nightly started in the recorder (MEMLIFE_DB_URL's) with its pairs and
    their values written, as the suite's first activities leave it: its run id."""
    from memlife.activities.record import materialize_pairs, record_run_started
    from memlife.bundled.reference.target_file import reference_target
    from tests.workflows.helpers import run_input

    scenario = written_nightly(pairs)
    run = run_input(scenario, reference_target("http://127.0.0.1:9"))
    record_run_started(run)
    assert materialize_pairs(run.run_id, scenario, seed) == pairs
    return run.run_id


def small_nightly(seed: str, pairs: int = 2, domains: Collection[str] | None = None) -> Scenario:
    """The nightly with `pairs` pairs, materialized; with `domains`, only those of its fact
    domains (a real stack's test: every kind of step, fewer messages to pay for)."""
    scenario = load_scenario(NIGHTLY)
    if domains is not None:
        scenario = only_domains(scenario, domains)
    assert scenario.generate is not None
    generation = scenario.generate.model_copy(update={"count": pairs})
    # Under a compressed clock a recovery of a few seconds is many scenario hours: the
    # deletion SLA is not what these tests are about.
    return materialize(
        scenario.model_copy(update={"generate": generation, "deletion_sla": timedelta(days=365)}),
        seed,
    )


def only_domains(scenario: Scenario, keep: Collection[str]) -> Scenario:
    """`scenario` with its other fact domains left out: a step that named some names only
    the kept ones, and a step left naming none is dropped."""
    unknown = set(keep) - set(scenario.domains)
    assert not unknown, f"not domains of {scenario.name}: {sorted(unknown)}"
    timeline = []
    for step in scenario.timeline:
        named = getattr(step, "domains", None)
        if isinstance(named, list):
            kept = [domain for domain in named if domain in keep]
            if not kept:
                continue
            step = step.model_copy(update={"domains": kept})
        timeline.append(step)
    return scenario.model_copy(
        update={
            "domains": {name: d for name, d in scenario.domains.items() if name in keep},
            "timeline": timeline,
        }
    )


def start_worker(
    address: str, db_url: str, log: Path, options: list[str] | None = None, forked: bool = True
) -> ChildProcess:
    """`python worker.py OPTIONS` on the dev server at `address`, recording to `db_url`,
    a process of its own stopped or killed by its PID: forked from an interpreter that has
    already imported it (tests/forked.py, a second of CPU less), or with `forked=False`
    started as deploy/ starts it."""
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": address,
        "MEMLIFE_DB_URL": db_url,
        "PYTHONPATH": str(REPO),
    }
    if forked:
        return launch_script(REPO / "worker.py", options or [], log, env, REPO)
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, str(REPO / "worker.py"), *(options or [])],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


def row_keys(run_id: str, url: str) -> dict[str, object]:
    """What the run recorded, as multisets (a duplicate would count twice). Deletion-status
    polls are left out: how many it takes depends on timing under a compressed clock (a
    retried, idempotent deletion request may even find the purge done and need none). That
    every deletion was confirmed shows in the verdicts, which must be identical."""
    loaded = recorder.load_run(run_id, url)
    assert loaded is not None
    observations = [o for o in loaded["observations"] if o.kind != "deletion-status"]
    return {
        "steps": Counter((s.pair_index, s.step_index, s.kind) for s in loaded["steps"]),
        "observations": Counter(
            (o.pair_index, o.step_index, o.kind, o.domain, o.case_id, o.status)
            for o in observations
        ),
        "verdicts": Counter(
            (v.pair_index, v.step_index, v.case_id, v.outcome) for v in loaded["verdicts"]
        ),
        "tenants": Counter((t.pair_index, t.role) for t in loaded["tenants"]),
    }


def assert_same_rows(actual: dict[str, object], expected: dict[str, object]) -> None:
    for name in ("steps", "observations", "verdicts", "tenants"):
        assert actual[name] == expected[name], (
            name,
            actual[name] - expected[name],  # type: ignore[operator]
            expected[name] - actual[name],
        )  # type: ignore[operator]


# How often the tests ask a pair for its progress: each query is answered by the worker
# under test, through the sandbox. Five a second find every step these tests aim at;
# twenty cost the sigkill test's worker a fifth of its CPU.
PROGRESS_POLL = 0.2


async def progress_of(client: Client, workflow_id: str) -> dict[str, object] | None:
    try:
        return await client.get_workflow_handle(workflow_id).query(
            "progress", rpc_timeout=timedelta(seconds=1)
        )
    except Exception:  # no worker up to answer, the server is down, or not started yet
        return None
