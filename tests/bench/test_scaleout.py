"""The scale-out bench (bench/scaleout.py): its table, its refusals, and one real
measurement with two workers on PostgreSQL against two reference-target shards."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bench.runs import REPO
from bench.scaleout import main
from bench.scaleout_table import render_lines


def row(workers: int, seconds: float, **extra: Any) -> dict[str, Any]:
    return {
        "workers": workers,
        "shards": 3,
        "pairs": 300,
        "cohort": 10,
        "clock": "skip",
        "seconds": seconds,
        "requests": 63_000,
        "cases": 43_500,
        "cases_passed": 43_500,
        "failures": 0,
        "inconclusive": 0,
        "worker_peak_rss_mb": [200.0] * workers,
        "cpu_seconds": {"workers": seconds, "targets": seconds / 2, "temporal": 0.0},
        "workflow_tasks": 900,
        "workflow_tasks_over_1s": 0,
        "measured_at": "2026-12-01 12:00 UTC",
        "command": "./scripts/bench scaleout",
        **extra,
    }


def test_each_worker_count_is_set_beside_one_workers_rate() -> None:
    lines = render_lines([row(3, 50.0), row(1, 100.0), row(2, 60.0)])
    table = [line for line in lines if line.startswith("| ") and line[2].isdigit()]
    assert [line.split(" | ")[0] for line in table] == ["| 1", "| 2", "| 3"]
    speedups = [line.split(" | ")[4:6] for line in table]
    assert speedups == [["**1.00×**", "1.00"], ["**1.67×**", "0.83"], ["**2.00×**", "0.67"]]
    # CPU over wall time, in cores: workers used one core, targets half of one; the
    # database's was not read for these rows.
    assert all(line.split(" | ")[11:15] == ["1.00", "0.50", "0.00", "— |"] for line in table)
    cpu = {"workers": 10.0, "targets": 5.0, "temporal": 0.0, "postgres": 2.5}
    [read] = [
        line for line in render_lines([row(1, 10.0, cpu_seconds=cpu)]) if line.startswith("| 1 ")
    ]
    assert read.endswith(" | 1.00 | 0.50 | 0.00 | 0.25 |")
    assert "`./scripts/bench scaleout`" in lines[-2]


def test_no_rows_no_section() -> None:
    assert render_lines([]) == []


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--workers", "0"], "--workers"),
        (["--workers", "one"], "--workers"),
        (["--pairs", "2", "--shards", "3"], "--shards"),
        (["--clock", "real"], "--clock real"),
        (["--out", "/nonexistent-dir/BENCH.md"], "--out: directory /nonexistent-dir"),
        (["--work-dir", __file__], "--work-dir: "),
    ],
)
async def test_bad_options_are_refused_before_anything_starts(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        await main(argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert said in error and "Traceback" not in error


async def test_two_workers_on_postgresql_serve_two_shards_cleanly(tmp_path: Path) -> None:
    out = tmp_path / "BENCH.md"
    out.with_suffix(".json").write_text(json.dumps({"scale": [], "reports": []}))
    work = tmp_path / "work"
    argv = ["--pairs", "2", "--shards", "2", "--workers", "2", "--out", str(out)]
    assert await main([*argv, "--work-dir", str(work)]) == 0
    assert (work / "workers-2" / "worker-1.log").exists()  # kept where it was asked to be
    [measured] = json.loads(out.with_suffix(".json").read_text())["scaleout"]
    assert measured["workers"] == 2 and measured["shards"] == 2
    assert measured["failures"] == 0 and measured["inconclusive"] == 0
    assert measured["cases_passed"] == measured["cases"] > 0
    assert measured["requests"] > 0 and len(measured["worker_peak_rss_mb"]) == 2
    assert sum(measured["tasks_per_worker"]) == measured["workflow_tasks"] > 0
    assert all(measured["cpu_seconds"][part] > 0 for part in ("workers", "targets", "postgres"))
    assert "## Scaling out" in out.read_text()


def _descendants(pid: int) -> dict[int, str]:
    """Every live process under `pid`, with its command line (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = {}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            with contextlib.suppress(OSError):
                found[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
            todo.append(child)
    return {child: command.decode(errors="replace") for child, command in found.items()}


def test_sigterm_stops_the_bench_and_every_process_it_started(tmp_path: Path) -> None:
    """Killing a bench that runs in the background (SIGINT ignored there) must not leave
    its workers, targets and Temporal server running."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "MEMLIFE_GRACEFUL_SHUTDOWN": "1s"}
    log = tmp_path / "bench.log"
    started: dict[int, str] = {}
    with log.open("wb") as out:  # a file: a child left running would hold a pipe open
        bench = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.scaleout",
                "--pairs",
                "20",
                "--workers",
                "1",
                "--shards",
                "1",
                "--out",
                str(tmp_path / "BENCH.md"),
                "--work-dir",
                str(tmp_path / "work"),
            ],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while not (
            any("worker.py" in c for c in started.values())
            and any("target serve" in c for c in started.values())
        ):
            assert bench.poll() is None, log.read_text()
            assert time.monotonic() < deadline, started
            time.sleep(0.2)
            started = _descendants(bench.pid)
        bench.send_signal(signal.SIGTERM)
        bench.wait(timeout=90)
        still = [command for pid, command in started.items() if _alive(pid)]
    finally:
        for pid in [bench.pid, *started]:  # whatever is left, by PID
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    output = log.read_text()
    assert bench.returncode == 128 + signal.SIGTERM, output
    assert "SIGTERM received: stopping what it started" in output
    assert "Traceback" not in output
    assert not still, still


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
