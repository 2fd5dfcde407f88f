"""A bench run's clock starts once its workers poll (bench/runs.py `polling`): worker
processes stand in here as small Python children that write, or never write, the file a
worker writes once it polls."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.runs import polling


def child(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)


async def test_waits_until_every_worker_says_it_polls(tmp_path: Path) -> None:
    logs = [tmp_path / "worker-a.log", tmp_path / "worker-b.log"]
    workers = [
        child(
            f"import pathlib, time; time.sleep({delay}); "
            f"pathlib.Path({str(log) + '.ready'!r}).write_text('pid 1')"
        )
        for delay, log in zip((0.2, 0.6), logs, strict=True)
    ]
    started = time.monotonic()
    try:
        await polling(list(zip(workers, logs, strict=True)), timeout=30)
        assert time.monotonic() - started >= 0.6
        assert all(Path(f"{log}.ready").exists() for log in logs)
    finally:
        for worker in workers:
            worker.wait(timeout=10)


async def test_a_worker_that_exits_at_start_names_its_log(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    worker = child("raise SystemExit(3)")
    with pytest.raises(RuntimeError, match=rf"exited at start \(code 3\); see {log}"):
        await polling([(worker, log)], timeout=30)


async def test_a_worker_that_never_polls_is_not_waited_for_forever(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    worker = child("import time; time.sleep(30)")
    try:
        with pytest.raises(RuntimeError, match=rf"not polling after 0.5s; see {log}"):
            await polling([(worker, log)], timeout=0.5)
    finally:
        worker.kill()
        worker.wait(timeout=10)
