"""The run's summary and digest, streamed from the recorder in bounded memory, say exactly
what the whole artifact built from every row says — on a run with leaks, residue, costs,
Server-Timing stages, target errors and inconclusive checks."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memlife import recorder
from memlife.bundled.reference.target_file import TARGET_FILE
from memlife.recorder.builder import build_artifact
from memlife.rules.documents import load_yaml_file
from memlife.rules.pairs import materialize
from memlife.rules.scenario import Scenario
from memlife.rules.scenario_file import load_scenario
from memlife.rules.target import parse_target
from memlife.stack import embedded
from tests.reliability.helpers import NIGHTLY
from tests.workflows.helpers import run_input, run_suite

FAULTS = ["cross-tenant-leak", "graph-unscoped-delete"]


def _nightly(pairs: int) -> Scenario:
    scenario = load_scenario(NIGHTLY)
    assert scenario.generate is not None
    return materialize(
        scenario.model_copy(
            update={"generate": scenario.generate.model_copy(update={"count": pairs})}
        ),
        "digest",
    )


async def test_streamed_summary_and_digest_equal_the_whole_artifact(
    tmp_path: Path, skip_env: WorkflowEnvironment, skip_worker: str, db_url: str
) -> None:
    bundled = TARGET_FILE
    with embedded.reference_target(tmp_path / "target", FAULTS) as process:
        data = load_yaml_file(bundled)
        data["base_url"] = process.base_url
        # One store whose probe reads a path the target does not serve: inconclusive
        # checks and target errors, beside the faults' failures.
        cache = next(store for store in data["stores"] if store["name"] == "cache")
        for operation in cache["probe"].values():
            operation["path"] = operation["path"].replace("/cache/", "/no-such-store/")
        target = parse_target(data, "(test)")
        run = run_input(_nightly(3), target)
        summary = await run_suite(skip_env.client, skip_worker, run)

    loaded = recorder.load_run(run.run_id)
    assert loaded is not None
    whole = build_artifact(loaded).model_dump(mode="json")
    assert whole["failures"] and whole["inconclusive"] and whole["summary"]["target_errors"]
    assert whole["cost"] is not None and whole["latency_ms"]["stages"]

    # finish_run's summary is the streamed one.
    assert not summary.passed
    assert (summary.cases, summary.cases_passed, summary.failures, summary.inconclusive) == (
        whole["summary"]["cases"],
        whole["summary"]["cases_passed"],
        len(whole["failures"]),
        len(whole["inconclusive"]),
    )
    built = recorder.run_builder(run.run_id, summary_only=True)
    assert built is not None
    assert built[0].summary() == whole["summary"]
    assert built[0].failures == []  # counted, not kept

    streamed = recorder.run_digest(run.run_id)
    assert streamed is not None
    digest = streamed.model_dump(mode="json")
    for key in (
        "meta",
        "summary",
        "stages",
        "matrix",
        "latency_ms",
        "cost",
        "deletions",
        "failures",
        "inconclusive",
    ):
        assert digest[key] == whole[key], key
    # What a digest leaves out: the per-tenant, per-pair, per-step and per-case entries.
    for key in ("tenants", "pairs", "timeline", "cases", "observations"):
        assert digest[key] == [] and whole[key], key
    assert recorder.run_digest("no-such-run") is None
