"""The embedded dev server starts on ports memlife chose, even when one of them is taken
between being chosen and being bound (two runs starting at once)."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from memlife.stack import embedded
from memlife.stack.processes import LOOPBACK, free_port


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
        with embedded.reference_target(tmp_path) as target:
            assert target.base_url != f"http://{LOOPBACK}:{port}"
            assert httpx.get(f"{target.base_url}/health").status_code == 200
    lost = (tmp_path / f"reference-target-{port}.log").read_text()
    assert "address already in use" in lost
