"""Night after night against one long-lived `memlife dev` stack: runs one after another
and a scheduled run started while the previous one is still inside its three-day wait all
pass on the clean target. Each run keeps its own clock on the shared reference target
(X-Memlife-Run, docs/simulated-targets.md) and its own phones and values (recorder
claims)."""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.devstack import REPO, DevStack, pair_states, wait_for

pytestmark = pytest.mark.xdist_group("dev-stack")

NIGHTLY = REPO / "scenarios" / "lifecycle-nightly.yaml"
# Days of scenario time in seconds on the dev server's real timers. Under a compressed
# clock a second of load is hours of scenario time: the deletion SLA is relaxed, as in
# tests/reliability/helpers.py, and each deletion is held instead to a bound that a few
# seconds of load cannot break but a run scheduled from another run's clock does (the
# reference target purges 30 minutes after the request; the first night leaves a shared
# clock three and a half days ahead of the second).
CLOCK = "compress=20000"
FORGOTTEN_WITHIN_S = 2 * 24 * 3600
SCHEDULE = "many-nights"


def _one_pair_nightly(stack: DevStack) -> str:
    text = NIGHTLY.read_text()
    text = re.sub(r"(?m)^  count: \d+$", "  count: 1", text)
    text = re.sub(r"(?m)^deletion_sla: .*$", "deletion_sla: 365d", text)
    path = stack.home / "nightly-one-pair.yaml"
    path.write_text(text)
    return str(path)


def _three_day_step() -> int:
    timeline = [line for line in NIGHTLY.read_text().splitlines() if line.startswith("  - {step:")]
    return next(index for index, line in enumerate(timeline) if "label: three-days" in line)


def _scheduled_runs(stack: DevStack) -> list[dict[str, object]]:
    return stack.workflows(f'WorkflowType="SuiteWorkflow" AND TemporalScheduledById="{SCHEDULE}"')


def _inside_three_day_wait(stack: DevStack, workflow_id: str) -> bool:
    pairs = pair_states(stack, workflow_id.rsplit("/", 1)[1], workflow_id)
    return bool(pairs) and all(
        pair.get("step") == _three_day_step() and pair.get("wake_at") for pair in pairs or []
    )


def _deletion_times(stack: DevStack, run_id: str) -> list[float]:
    report = stack.memlife("report", run_id, "--format", "json")
    assert report.returncode == 0, report.stderr
    deletions = json.loads(report.stdout)["deletions"]
    assert deletions, run_id
    return [float(d["time_to_forget_s"]) for d in deletions]


def _both_finished(stack: DevStack) -> list[dict[str, object]] | None:
    runs = _scheduled_runs(stack)
    running = [w for w in runs if w.get("status") == "WORKFLOW_EXECUTION_STATUS_RUNNING"]
    return runs if len(runs) == 2 and not running else None


def test_consecutive_and_overlapping_nights_on_one_stack_stay_green(dev_stack: DevStack) -> None:
    scenario = _one_pair_nightly(dev_stack)
    target = str(dev_stack.target_file)
    # A night by hand; the next one, scheduled, starts where it left the target's clock
    # three and a half days ahead.
    result = dev_stack.memlife(
        "run", scenario, "--target", target, "--clock", CLOCK, "--enforce", timeout=240
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "PASS: 145/145" in result.stdout
    run_ids = [result.stdout.split(" · run ", 1)[1].split(" ", 1)[0]]
    # The schedule triggered again while its first run sleeps through its three days.
    created = dev_stack.memlife(
        "schedule",
        "create",
        SCHEDULE,
        "--scenario",
        scenario,
        "--target",
        target,
        "--cron",
        "0 2 * * *",
        "--clock",
        CLOCK,
    )
    assert created.returncode == 0, created.stderr
    try:
        assert dev_stack.memlife("schedule", "trigger", SCHEDULE).returncode == 0
        first = wait_for(lambda: _scheduled_runs(dev_stack))
        first_id = str(first[0]["execution"]["workflowId"])  # type: ignore[index]
        wait_for(lambda: _inside_three_day_wait(dev_stack, first_id), timeout=120, interval=0.25)
        assert dev_stack.memlife("schedule", "trigger", SCHEDULE).returncode == 0
        done = wait_for(lambda: _both_finished(dev_stack), timeout=240)
    finally:
        dev_stack.memlife("schedule", "delete", SCHEDULE)
    assert len(done) == 2  # type: ignore[arg-type]
    starts = sorted(str(w["startTime"]) for w in done)  # type: ignore[union-attr]
    closes = sorted(str(w["closeTime"]) for w in done)  # type: ignore[union-attr]
    assert starts[1] < closes[0]  # they overlapped
    passing = dev_stack.workflows(
        f'WorkflowType="SuiteWorkflow" AND TemporalScheduledById="{SCHEDULE}" '
        'AND MemlifeVerdict="pass"'
    )
    assert len(passing) == 2, done
    run_ids += [
        str(w["execution"]["workflowId"]).rsplit("/", 1)[1]  # type: ignore[index]
        for w in done
    ]  # type: ignore[union-attr]
    for run_id in run_ids:  # each deletion on its own run's clock
        assert max(_deletion_times(dev_stack, run_id)) < FORGOTTEN_WITHIN_S, run_id
