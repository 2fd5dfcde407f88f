"""Children stopped together (memlife/stack/processes.py, StoppedTogether): each is told
to stop where its block ends and is not waited for there; the wait at the end reaps every
one, and kills one that outlives its grace. Real child processes, stopped by PID."""

from __future__ import annotations

import subprocess
import sys

from memlife.stack.processes import StoppedTogether

# Says "ready" once its SIGTERM handler is in place; on SIGTERM, drains for `drain` seconds
# and exits 0, or, with `drain` negative, ignores SIGTERM.
CHILD = """
import signal, sys, time
drain = float(sys.argv[1])
def stop(*_):
    time.sleep(drain)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop if drain >= 0 else signal.SIG_IGN)
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""


def _child(drain: float) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(drain)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    return child


def test_children_drain_at_once_and_are_reaped_at_the_end() -> None:
    first, second = _child(drain=1.0), _child(drain=1.0)
    together = StoppedTogether()
    together.terminate(first, grace=30)
    together.terminate(second, grace=30)
    # Both were told, neither was waited for: they drain at the same time.
    assert first.poll() is None and second.poll() is None
    together.wait()
    assert (first.returncode, second.returncode) == (0, 0)


def test_a_child_that_ignores_sigterm_is_killed_past_its_grace() -> None:
    stubborn = _child(drain=-1)
    together = StoppedTogether()
    together.terminate(stubborn, grace=0.5)
    together.wait()
    assert stubborn.returncode == -9  # SIGKILL


def test_a_child_that_has_already_exited_is_only_reaped() -> None:
    done = _child(drain=0)
    done.terminate()
    done.wait()
    together = StoppedTogether()
    together.terminate(done, grace=5)
    together.wait()
    assert done.returncode == 0
