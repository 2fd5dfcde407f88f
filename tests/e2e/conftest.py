"""The session's `memlife dev` stack (tests/e2e/devstack.py), for the tests that ask for it,
and a dev server of a test's own for the tests that point memlife at "a cluster"."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlife.stack import embedded
from tests.e2e.devstack import dev_stack

__all__ = ["cluster", "dev_stack"]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[str]:
    """A dev server of the test's own, answering before the test starts: its address.

    memlife connects to a configured cluster once and fails at once when nothing listens, so
    a test that ran it while the server was still starting failed at random (CI, stop 44)."""
    server = embedded.start_dev_server(tmp_path / "cluster", ui_port=None)
    try:
        asyncio.run(embedded.wait_for_client(server))
        yield server.address
    finally:
        server.stop()
