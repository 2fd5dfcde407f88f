"""The operations commands find a `memlife dev` stack wherever its ports are: the address
its stack file names, while the server it names is alive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memlife.stack.connection import STACK_FILE, dev_stack_address


def write_stack(state_dir: Path, address: str, pid: int) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / STACK_FILE).write_text(
        json.dumps(
            {
                "temporal_address": address,
                "web_ui": None,
                "namespace": "default",
                "task_queue": "memlife",
                "reference_target": "http://127.0.0.1:1",
                "reference_faults": [],
                "recorder": "sqlite://",
                "pids": {"temporal": pid},
            }
        )
    )


def test_a_running_stack_is_found_on_its_own_port(tmp_path: Path) -> None:
    write_stack(tmp_path, "127.0.0.1:27233", os.getpid())
    assert dev_stack_address(tmp_path) == "127.0.0.1:27233"


def test_a_stack_that_is_gone_or_was_never_there_is_not(tmp_path: Path) -> None:
    assert dev_stack_address(tmp_path) is None
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    write_stack(tmp_path, "127.0.0.1:27233", gone.pid)
    assert dev_stack_address(tmp_path) is None
    (tmp_path / STACK_FILE).write_text("{not json")
    assert dev_stack_address(tmp_path) is None
