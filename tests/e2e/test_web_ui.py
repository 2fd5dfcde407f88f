"""The Temporal Web UI of `memlife dev`, as a new user reads it in a browser (headless
Chromium): a leaking run's pair-0, where the six leaks were found, reads Failed, its input
and result as JSON and its verdict without a stack trace; a compressed payload reads as the
JSON it holds, through memlife's codec endpoint; `MemlifeVerdict="fail"` lists the pair
beside its run."""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.parse
from pathlib import Path

import httpx
import pytest

from tests import browser
from tests.e2e.devstack import REPO, DevStack

# On the session's one `memlife dev` stack (tests/e2e/devstack.py), not a second one.
pytestmark = pytest.mark.xdist_group("dev-stack")

SEED = REPO / "scenarios" / "seed-six-case.yaml"


def workflow_page(stack: DevStack, workflow_id: str) -> str:
    return f"{stack.web_ui}/namespaces/default/workflows/{urllib.parse.quote(workflow_id, '')}"


def test_a_leaking_pair_reads_failed_and_its_payloads_as_json(
    dev_stack: DevStack, tmp_path: Path
) -> None:
    info = json.loads((dev_stack.home / ".memlife" / "dev.json").read_text())
    codec = info["codec_endpoint"]
    # The UI was started with memlife's codec endpoint, and the endpoint answers it.
    settings = httpx.get(f"{dev_stack.web_ui}/api/v1/settings", timeout=10).json()
    assert settings["Codec"]["Endpoint"] == codec, settings["Codec"]
    preflight = httpx.options(
        f"{codec}/default/decode",
        headers={"Origin": dev_stack.web_ui, "Access-Control-Request-Method": "POST"},
    )
    assert preflight.headers["access-control-allow-origin"] == dev_stack.web_ui

    run = dev_stack.memlife(
        "run", str(SEED), "--target", "reference", "--fault", "cross-tenant-leak"
    )
    assert " · run " in run.stdout, run.stdout + run.stderr
    run_id = run.stdout.split(" · run ", 1)[1].split()[0]
    pair_id = f"memlife/seed-six-case/{run_id}/pair-0"

    # In history: FAILED, the verdict the message, the PairResult the details, no trace.
    described = json.loads(dev_stack.temporal("workflow", "describe", "--workflow-id", pair_id))
    assert described["workflowExecutionInfo"]["status"] == "WORKFLOW_EXECUTION_STATUS_FAILED"
    shown = json.loads(dev_stack.temporal("workflow", "show", "--workflow-id", pair_id))
    failure = shown["events"][-1]["workflowExecutionFailedEventAttributes"]["failure"]
    assert failure["message"] == (
        f"FAIL: 0/6 cases passed · 6 failure(s) · 0 inconclusive · pair 0 of run {run_id}"
    )
    assert not failure.get("stackTrace"), failure["stackTrace"]
    assert failure["applicationFailureInfo"]["type"] == "MemlifeVerdict"

    # In the browser: Failed, input and result as JSON (not base64), no stack trace.
    url = workflow_page(dev_stack, pair_id)
    shot = tmp_path / "pair-0.png"
    text = browser.text_of(
        browser.render(
            url,
            tmp_path / "profile-pair",
            screenshot=shot,
            width=1400,
            height=1600,
            virtual_time_ms=20000,
        )
    )
    assert "Back to Workflows Failed" in text, text[:2000]
    squashed = text.replace(" ", "")
    assert f'"run_id":"{run_id}"' in squashed  # the input
    assert '"type":"MemlifeVerdict"' in squashed and '"failures":6' in squashed  # the result
    assert "stackTrace" not in squashed and "eyJ" not in squashed  # no trace, no base64 JSON
    assert shot.stat().st_size > 50_000  # a rendered page, not a blank one
    print(f"screenshot: {shot}")

    # A saved view of sorts: the list filtered by the verdict shows the pair beside its run,
    # both Failed.
    query = urllib.parse.quote(f'MemlifeRun="{run_id}" AND MemlifeVerdict="fail"')
    rows = browser.rendered_text_rows(
        f"{dev_stack.web_ui}/namespaces/default/workflows?query={query}", tmp_path / "list"
    )
    failed = {row.split(" Failed ", 1)[1].split()[0] for row in rows if " Failed " in row}
    assert {f"memlife/seed-six-case/{run_id}", pair_id} <= failed, rows


def test_a_compressed_payload_reads_as_json_through_the_codec_endpoint(
    dev_stack: DevStack, tmp_path: Path
) -> None:
    from temporalio.client import Client

    from memlife.stack.codec import DATA_CONVERTER, ENCODING

    marker = "compressed-payload-marker"
    big = {"marker": marker, "rows": [f"row {i} " + "memoria " * 40 for i in range(400)]}

    async def start() -> str:
        assert (await DATA_CONVERTER.encode([big]))[0].metadata["encoding"] == ENCODING
        client = await Client.connect(dev_stack.address, data_converter=DATA_CONVERTER)
        # Nobody polls its queue: it waits with its input, and is terminated to be read.
        handle = await client.start_workflow(
            "CodecProbe", big, id=f"codec-probe-{tmp_path.name}", task_queue="nobody-polls"
        )
        await handle.terminate("read in the Web UI")
        return handle.id

    workflow_id = asyncio.run(start())
    # The Temporal CLI reads it through the same endpoint; without it, compressed bytes.
    codec = json.loads((dev_stack.home / ".memlife" / "dev.json").read_text())["codec_endpoint"]
    shown = dev_stack.temporal("workflow", "show", "--workflow-id", workflow_id)
    zlib_encoding = base64.b64encode(ENCODING).decode()  # metadata is base64 in JSON
    assert marker not in shown and zlib_encoding in shown
    decoded = dev_stack.temporal(
        "workflow", "show", "--workflow-id", workflow_id, "--codec-endpoint", codec
    )
    started = json.loads(decoded)["events"][0]["workflowExecutionStartedEventAttributes"]
    payload = started["input"]["payloads"][0]
    assert base64.b64decode(payload["metadata"]["encoding"]) == b"json/plain"
    assert json.loads(base64.b64decode(payload["data"])) == big
    page = workflow_page(dev_stack, workflow_id)
    text = browser.text_of(browser.render(page, tmp_path / "profile", virtual_time_ms=20000))
    assert f'"marker" : "{marker}"' in text, text[:3000]
    assert "binary/zlib" not in text
