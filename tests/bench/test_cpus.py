"""The bench's placement of processes on CPUs (bench/cpus.py): a CPU the target's alone,
every other process the bench starts meanwhile on the rest."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from bench import cpus

# A child with a second thread, started before it is pinned: both must move.
_THREADED = (
    "import threading, time; threading.Thread(target=time.sleep, args=(60,), "
    "daemon=True).start(); print('ready', flush=True); time.sleep(60)"
)


@pytest.fixture
def threaded_child() -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen([sys.executable, "-c", _THREADED], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        yield child
    finally:
        child.kill()
        child.wait()


def _threads(pid: int) -> list[int]:
    return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]


def test_the_highest_cpu_is_the_targets_alone_and_the_rest_its_drivers() -> None:
    assert cpus.split({0, 1}) == cpus.Placement(target=frozenset({0, 1}), drivers=frozenset({0}))
    four = cpus.split({0, 1, 2, 3})
    assert four is not None and four.describe() == {"target": [0, 1, 2, 3], "drivers": [0, 1, 2]}
    assert cpus.split({5}) is None  # one CPU: nothing to split


def test_pinning_moves_every_thread_of_a_running_process(
    threaded_child: subprocess.Popen[str],
) -> None:
    one = {min(os.sched_getaffinity(0))}
    assert len(_threads(threaded_child.pid)) == 2
    cpus.pin(threaded_child.pid, one)
    assert all(os.sched_getaffinity(tid) == one for tid in _threads(threaded_child.pid))


def test_what_is_started_while_placed_runs_on_the_drivers_cpus_and_a_target_on_its_own() -> None:
    everything = frozenset(os.sched_getaffinity(0))
    lowest = frozenset({min(everything)})
    # The drivers on the lowest CPU, the target on every one: what `split` gives on 2.
    with cpus.placed(cpus.Placement(target=everything, drivers=lowest)):
        assert os.sched_getaffinity(0) == lowest
        target = subprocess.Popen(
            [sys.executable, "-c", _THREADED], stdout=subprocess.PIPE, text=True
        )
        try:
            assert target.stdout is not None and target.stdout.readline() == "ready\n"
            assert all(
                os.sched_getaffinity(tid) == lowest  # inherited at its fork
                for tid in _threads(target.pid)
            )
            cpus.place_target(target.pid)
            assert all(os.sched_getaffinity(tid) == everything for tid in _threads(target.pid))
        finally:
            target.kill()
            target.wait()
    assert os.sched_getaffinity(0) == everything  # put back as it was


def test_outside_a_placement_a_target_stays_where_it_is(
    threaded_child: subprocess.Popen[str],
) -> None:
    before = os.sched_getaffinity(threaded_child.pid)
    with cpus.placed(None):
        cpus.place_target(threaded_child.pid)
    cpus.place_target(threaded_child.pid)
    assert os.sched_getaffinity(threaded_child.pid) == before


def test_the_report_says_where_the_processes_ran() -> None:
    assert cpus.describe(None) == "every process on every CPU"
    assert cpus.describe({"target": [0, 1], "drivers": [0]}) == (
        "CPU 1 is the target's alone, and everything that drives it runs on CPU 0 (where "
        "the target may run too)"
    )
