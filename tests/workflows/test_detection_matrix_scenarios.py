"""The detection matrix of the faults the nightly cannot show: maintenance, races, shared
spaces, adversarial turns and neighbour influence (scenarios/maintenance.yaml, races.yaml,
shared-spaces.yaml, adversarial.yaml, neighbour-invariance.yaml). Each scenario
gives no failure on the clean reference target, and each of its faults is caught by the
right invariant, store, stage and reason, on the time-skipping server with the real
activities and a real target (a pair per run, two where neighbours are the point)."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife.rules.scenario import Scenario
from memlife.rules.scenario_file import load_scenario
from tests.workflows.test_detection_matrix import cells, run_nightly, target_with

__all__ = ["target_with"]  # the fixture, shared with the detection matrix

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"

# scenario -> fault -> (cells that must fail, cells that must not fail); a cell is
# (invariant, store, stage[, reason]), as in test_detection_matrix.py.
DETECTION = {
    "adversarial.yaml": {
        "identity-from-prompt": (
            [("I3", "response", "spoof", "spoofed")],
            [("I3", "response", "baseline"), ("I3", "response", "extract")],
        ),
        "global-promotion": (
            [
                ("I3", "response", "poisoned", "poisoned"),
                ("abstain", "response", "poisoned", "missing"),
            ],
            [("I3", "response", "spoof"), ("I3", "response", "baseline")],
        ),
    },
    "maintenance.yaml": {
        "reindex-resurrects": (
            [("I4", "memory", "maintained-after-erasure", "resurrected")],
            [("I4", "memory", "erased"), ("I3", "response", "maintained")],
        ),
        "reindex-drops-tenant": (
            [("I3", "response", "maintained", "leaked"), ("I1", "memory", "maintained", "leaked")],
            [("I3", "response", "baseline")],
        ),
    },
    "shared-spaces.yaml": {
        "space-leak": (
            [("S1", "response", "space-created", "leaked")],
            [("S2", "response", "member-deleted"), ("I3", "response", "space-created")],
        ),
        "revocation-ignored": (
            [("S1", "response", "left", "leaked")],
            [("S1", "response", "space-created")],
        ),
        "member-delete-overreach": (
            [("S2", "response", "member-deleted", "overreach")],
            [("S1", "response", "left"), ("I4", "memory", "member-deleted")],
        ),
    },
    "neighbour-invariance.yaml": {
        # Checked a day on, when every pair's facts are in the shards: at baseline a pair
        # may be asked before its shard neighbours have written (a loaded machine), and
        # then nothing crowds it yet.
        "post-filter-crowding": (
            [
                ("N1", "response", "after-1d", "influenced"),
                ("recall", "response", "after-1d", "missing"),
            ],
            [("I3", "response", "baseline"), ("I2", "response-context", "baseline")],
        ),
    },
    "races.yaml": {
        "ingest-after-delete": (
            [
                ("I4", "memory", "erased", "residue"),
                ("I4", "graph", "erased", "residue"),
                ("I4", "response", "erased", "residue"),
            ],
            [("I3", "response", "erased")],
        ),
    },
}


# One pair per run finds each fault; neighbour influence needs pairs beside the pair. The
# reference target's crowding shards tenants by their random user ids, and the newest fact
# of a shard crowds the others, so whether an original and its twin are answered apart
# is chance: with two pairs and two twins it was not, once in some thirty full runs
# (a simulation of that model: 0.6% of runs; with three and three, 0.09%).
PAIRS = {"neighbour-invariance.yaml": 3}


def small(name: str) -> Scenario:
    scenario = load_scenario(SCENARIOS / name)
    assert scenario.generate is not None
    return scenario.model_copy(
        update={"generate": scenario.generate.model_copy(update={"count": PAIRS.get(name, 1)})}
    )


@pytest.mark.parametrize("name", sorted(DETECTION))
async def test_the_clean_reference_target_passes(
    skip_env: WorkflowEnvironment, skip_worker: str, target_with, name: str
) -> None:
    artifact = await run_nightly(
        skip_env, skip_worker, small(name), target_with([]), f"clean-{name}"
    )
    assert artifact["failures"] == [] and artifact["inconclusive"] == []
    assert artifact["summary"]["passed"]
    if name == "neighbour-invariance.yaml":  # the twins were compared, and agree
        assert artifact["summary"]["by_invariant"]["N1"]["checked"] >= 10


@pytest.mark.parametrize(
    ("name", "fault", "cohort"),
    [
        (name, fault, index % 2 == 1)
        for index, (name, fault) in enumerate(
            (name, fault) for name in sorted(DETECTION) for fault in sorted(DETECTION[name])
        )
    ],
)
async def test_each_fault_is_caught_by_the_right_invariant_store_and_stage(
    skip_env: WorkflowEnvironment,
    skip_worker: str,
    target_with,
    name: str,
    fault: str,
    cohort: bool,
) -> None:
    artifact = await run_nightly(
        skip_env, skip_worker, small(name), target_with([fault]), f"seed-{fault}", cohort=cohort
    )
    found = cells(artifact)
    must, must_not = DETECTION[name][fault]
    assert not artifact["summary"]["passed"]
    for cell in must:
        assert cell in found, f"{fault}: expected {cell}, found {sorted(found)}"
    for cell in must_not:
        assert cell not in found, f"{fault}: {cell} should hold, found {sorted(found)}"


@pytest.mark.parametrize("fault", [None, "space-leak", "revocation-ignored"])
async def test_a_target_that_refuses_non_members_is_judged_as_clean_and_still_caught(
    skip_env: WorkflowEnvironment, skip_worker: str, target_with, fault: str | None
) -> None:
    """Served with --refuse, the reference target answers a non-member 403 and a deleted
    space 410, as real services do: refusals, not errors, so the clean target passes and
    each space fault is still caught where it is without refusals."""
    faults = [fault] if fault else []
    artifact = await run_nightly(
        skip_env,
        skip_worker,
        small("shared-spaces.yaml"),
        target_with(faults, refuse=True),
        f"refusing-{fault or 'clean'}",
    )
    refused = [o for o in artifact["observations"] if o["status"] == "refused"]
    assert refused and {o["http_status"] for o in refused} <= {403, 410}
    assert artifact["inconclusive"] == []
    if fault is None:
        assert artifact["failures"] == [] and artifact["summary"]["passed"]
        return
    must, must_not = DETECTION["shared-spaces.yaml"][fault]
    found = cells(artifact)
    for cell in must:
        assert cell in found, f"{fault}: expected {cell}, found {sorted(found)}"
    for cell in must_not:
        assert cell not in found, f"{fault}: {cell} should hold, found {sorted(found)}"
