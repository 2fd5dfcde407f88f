"""The embedded dev server starts on ports memlife chose, even when one of them is taken
between being chosen and being bound (two runs starting at once); its Web UI reads
compressed payloads through a codec endpoint that lives as long as the server."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import httpx
import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads

from memlife.errors import UnreachableError
from memlife.stack import embedded
from memlife.stack.codec import DATA_CONVERTER, ENCODING
from memlife.stack.processes import LOOPBACK, free_port
from tests.forked import ForkedProcess


async def test_a_port_taken_before_the_server_binds_it_means_other_ports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as taken:
        taken.bind((LOOPBACK, 0))
        taken.listen()
        port = taken.getsockname()[1]

        # The race: the port looked free when it was chosen (another run took it since).
        def chosen(preferred: int | None = None) -> int:
            return preferred if preferred == port else free_port(preferred)

        monkeypatch.setattr(embedded, "free_port", chosen)
        async with embedded.embedded_temporal(tmp_path, ui_port=port) as temporal:
            assert temporal.web_ui is not None and temporal.web_ui != f"http://{LOOPBACK}:{port}"
            assert (await temporal.client.count_workflows()).count == 0
    log = (tmp_path / embedded.DEV_SERVER_LOG).read_text()
    assert "address already in use" in log  # the first start did lose the port


def test_a_reference_target_whose_port_was_taken_starts_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as taken:
        taken.bind((LOOPBACK, 0))
        taken.listen()
        port = taken.getsockname()[1]
        choices = iter([port])  # the first choice is already taken by the time it binds

        def chosen(preferred: int | None = None) -> int:
            return next(choices, None) or free_port(preferred)

        monkeypatch.setattr(embedded, "free_port", chosen)
        # Started the product's way (`python -m memlife`), not forked (conftest.py).
        monkeypatch.setattr(embedded, "launch_target", embedded.exec_memlife)
        with embedded.reference_target(tmp_path) as target:
            assert isinstance(target.process, subprocess.Popen)
            assert target.base_url != f"http://{LOOPBACK}:{port}"
            assert httpx.get(f"{target.base_url}/health").status_code == 200
    lost = (tmp_path / f"reference-target-{port}.log").read_text()
    assert "address already in use" in lost


def test_a_forked_target_has_the_environment_and_exit_code_of_its_own_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The suite's targets are forked from a server started by an earlier test
    (tests/forked.py): each still runs with the environment of the test that
    starts it, and its exit code and log are its own."""
    with embedded.reference_target(tmp_path / "first") as first:
        assert isinstance(first.process, ForkedProcess)
    monkeypatch.setenv("MEMLIFE_TEST_FORKED_KEY", "set after the fork server started")
    with embedded.reference_target(
        tmp_path / "keyed", api_key_env="MEMLIFE_TEST_FORKED_KEY"
    ) as keyed:
        assert httpx.get(f"{keyed.base_url}/health").status_code == 200
        keyed.process.terminate()
        assert keyed.process.wait(timeout=10) == 0  # its own: the fork server still runs
    with pytest.raises(UnreachableError, match=r"exited at start \(code 2\)"):
        embedded.start_reference_target(tmp_path / "bad", service_time="soon")
    assert "--service-time" in next((tmp_path / "bad").glob("*.log")).read_text()


async def test_the_web_ui_of_a_run_without_a_dev_stack_reads_payloads_through_its_codec(
    tmp_path: Path,
) -> None:
    """`memlife run` with no `memlife dev` running starts a dev server with its Web UI for
    the run's duration (memlife/api/engine.py): that UI is told of a codec endpoint, which
    decodes a compressed payload for the UI's origin, and stops with the server."""
    big = {"rows": [f"row {i} " + "memoria " * 40 for i in range(400)]}
    compressed = await DATA_CONVERTER.encode([big])
    assert compressed[0].metadata["encoding"] == ENCODING
    wire = json.loads(json_format.MessageToJson(Payloads(payloads=compressed)))
    async with (
        embedded.embedded_temporal(tmp_path, ui_port=free_port()) as temporal,
        httpx.AsyncClient(timeout=10) as http,
    ):
        assert temporal.web_ui is not None
        settings = (await http.get(f"{temporal.web_ui}/api/v1/settings")).json()
        endpoint = settings["Codec"]["Endpoint"]
        assert endpoint.startswith(f"http://{LOOPBACK}:"), settings["Codec"]
        response = await http.post(
            f"{endpoint}/default/decode", json=wire, headers={"Origin": temporal.web_ui}
        )
        assert response.status_code == 200, response.text
        assert response.headers["access-control-allow-origin"] == temporal.web_ui
        decoded = json_format.ParseDict(response.json(), Payloads()).payloads
        assert decoded[0].metadata["encoding"] == b"json/plain"
        assert json.loads(decoded[0].data) == big
    with pytest.raises(httpx.ConnectError):
        httpx.post(f"{endpoint}/default/decode", json=wire, timeout=5)


def test_sigterm_stops_a_served_target_as_ctrl_c_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memlife target serve`, started as a user starts it and stopped by SIGTERM as a
    service manager stops it: uvicorn drains, then the blocks that started the target's
    stores stop them (a bundled stack's FalkorDB outlived its command before), and the
    command exits 0. The reference target shows it with its database: closed cleanly,
    SQLite folds its write-ahead log back into the file and removes it."""
    monkeypatch.setattr(embedded, "launch_target", embedded.exec_memlife)
    db = tmp_path / "served.db"
    target = embedded.start_reference_target(tmp_path, db_path=db)
    assert isinstance(target.process, subprocess.Popen)
    assert httpx.get(f"{target.base_url}/health").status_code == 200
    assert db.with_name("served.db-wal").exists()  # open: SQLite writes beside the file
    target.process.terminate()
    assert target.process.wait(timeout=30) == 0
    assert not db.with_name("served.db-wal").exists()
