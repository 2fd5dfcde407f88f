"""Every request carries a W3C traceparent of its own: each observation of a run records
the trace id the target received (the reference target's access log says so), and every
finding names the trace of the request behind it (docs/tracing.md)."""

from __future__ import annotations

import re
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memlife.bundled.reference.target_file import reference_target
from memlife.rules.scenario import Scenario
from memlife.stack import embedded
from tests.workflows.helpers import run_artifact, run_input, run_suite

LOGGED = re.compile(r"^(GET|POST|DELETE) (\S+) (\d{3}) [\d.]+ms trace=([0-9a-f]{32})$")


async def test_every_observation_and_finding_has_the_trace_the_target_received(
    skip_env: WorkflowEnvironment, skip_worker: str, seed_scenario: Scenario, tmp_path: Path
) -> None:
    with embedded.reference_target(tmp_path, ["cross-tenant-leak"]) as process:
        run = run_input(seed_scenario, reference_target(process.base_url))
        await run_suite(skip_env.client, skip_worker, run)
        log_lines = process.log_path.read_text().splitlines()
    received = {
        match.group(4): match.group(2) for line in log_lines if (match := LOGGED.match(line))
    }
    artifact = run_artifact(run.run_id)
    observations = artifact["observations"]
    assert observations
    for observation in observations:
        trace_id = observation.get("trace_id")
        assert trace_id in received, observation
        assert re.fullmatch(r"[0-9a-f]{16}", observation["span_id"])
    # One trace per request: no two observations share one.
    traces = [o["trace_id"] for o in observations]
    assert len(set(traces)) == len(traces)
    # The leak's findings lead to the probe whose reply held the leaked value.
    failures = artifact["failures"]
    assert failures
    by_trace = {o["trace_id"]: o for o in observations}
    for failure in failures:
        probe = by_trace[failure["trace_id"]]
        assert failure["span_id"] == probe["span_id"]
        assert probe["kind"] == "probe" and probe["case"] == failure["case"]
        assert received[failure["trace_id"]] == "/v1/preview"
