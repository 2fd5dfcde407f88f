"""Where the CPU of a run goes: `memlife run SCENARIO --clock skip --no-target-worker` (its
worker, target requests included, in the command's own process; from 20 pairs a run
otherwise sends its target requests from a second process, memlife/stack/worker_process.py)
sampled by py-spy, the busy samples grouped by package and by memlife's own frames.

    ./scripts/bench profile                               # lifecycle-nightly, 20 pairs
    ./scripts/bench profile --scenario scenarios/seed-six-case.yaml --rate 200

Only memlife's process is sampled: the bundled reference target and the time-skipping
server are what it drives, not its cost. A sample is busy when its thread was running
(py-spy leaves idle threads out); the event loop's and the thread pool's waits that it
still reports are left out here too. The figures go into BENCHMARKS.json ("profile") and
BENCHMARKS.md is rendered again. Issue #51 asked for this before any change to the
request path: each change there is kept only if it moves these shares beyond their noise
(measure before and after side by side, as the section's rows were).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.machine import describe_machine

REPO = Path(__file__).resolve().parents[1]
NIGHTLY = REPO / "scenarios" / "lifecycle-nightly.yaml"
# Innermost frames where a thread that py-spy still counts is waiting, not working: the
# event loop's poll, a lock or condition, an idle pool thread's queue.
WAITING = {
    ("EpollSelector.select", "selectors.py"),
    ("Thread._wait_for_tstate_lock", "threading.py"),
    ("Condition.wait", "threading.py"),
    ("Event.wait", "threading.py"),
    ("_worker", "concurrent/futures/thread.py"),
    ("Queue.get", "queue.py"),
}
OWN_PACKAGES = ("memlife", "workflows", "activities")
NATIVE = "(no Python frame)"
TOP = 12
# The command's own frames hold every sample: they say nothing about where it went.
COMMAND_FRAMES = (
    "<module> (memlife/__main__.py)",
    "entry (memlife/cli",
    "main (memlife/cli",
    "cmd_run (memlife/cli",
)

_FRAME = re.compile(r"^(?P<function>.*) \((?P<path>[^()]*?)(?::\d+)?\)$")


def _frame(text: str) -> tuple[str, str]:
    """(function, path) of a py-spy frame "function (path:line)"; the path shortened to
    what follows site-packages/."""
    match = _FRAME.match(text)
    if match is None:
        return text, ""
    path = match.group("path")
    if "site-packages/" in path:
        path = path.split("site-packages/", 1)[1]
    elif str(REPO) + "/" in path:
        path = path.split(str(REPO) + "/", 1)[1]
    return match.group("function"), path


def _package(path: str) -> str:
    """A frame's package: memlife's own to its subpackage (memlife/recorder), others to
    their top level (sqlalchemy), the standard library's modules by name (asyncio)."""
    parts = path.split("/")
    if parts[0] in OWN_PACKAGES and len(parts) > 1:
        return "/".join(parts[:2]).removesuffix(".py")
    if parts[0].startswith("<frozen"):
        return "importlib" if "importlib" in parts[0] else parts[0]
    return parts[0].removesuffix(".py")


def summarize(raw_lines: Iterable[str]) -> dict[str, Any]:
    """py-spy's raw output ("frame;frame;... count" per line, outermost first) as shares of
    the busy samples: by package of the innermost frame (self), the innermost frames
    themselves, and memlife's own frames with everything they called (inclusive)."""
    by_package: Counter[str] = Counter()
    by_frame: Counter[str] = Counter()
    own_inclusive: Counter[str] = Counter()
    busy = 0
    for line in raw_lines:
        stack, _, count_text = line.rstrip("\n").rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        frames = [
            frame for frame in stack.split(";") if not frame.startswith(("process ", "thread "))
        ]
        count = int(count_text)
        if not frames:  # a thread running outside Python: the SDK core's, grpc's
            busy += count
            by_package[NATIVE] += count
            by_frame[NATIVE] += count
            continue
        function, path = _frame(frames[-1])
        if (function, path) in WAITING:
            continue
        busy += count
        by_package[_package(path)] += count
        by_frame[f"{function} ({path})"] += count
        seen: set[str] = set()
        for frame in frames:
            function, path = _frame(frame)
            name = f"{function} ({path})"
            if path.split("/")[0] in OWN_PACKAGES and name not in seen:
                seen.add(name)
                own_inclusive[name] += count

    def shares(counter: Counter[str], skip: tuple[str, ...] = ()) -> list[list[Any]]:
        kept = [(name, n) for name, n in counter.most_common() if not name.startswith(skip)]
        return [[name, round(n / busy, 4)] for name, n in kept[:TOP]] if busy else []

    return {
        "busy_samples": busy,
        "packages": shares(by_package),
        "frames": shares(by_frame),
        "own": shares(own_inclusive, COMMAND_FRAMES),
    }


def profile(scenario: Path, rate: int, work: Path) -> tuple[dict[str, Any], str]:
    """Sample one run of `scenario` (one process, skip clock) in `work`: the
    summary and the run's last output line."""
    py_spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if py_spy is None:
        raise SystemExit("bench profile: py-spy not found; ./scripts/bootstrap test installs it")
    raw = work / "profile.raw"
    result = subprocess.run(
        [
            py_spy,
            "record",
            "--threads",
            "--format",
            "raw",
            "--rate",
            str(rate),
            "--output",
            str(raw),
            "--",
            sys.executable,
            "-m",
            "memlife",
            "run",
            str(scenario),
            "--clock",
            "skip",
            "--no-target-worker",
        ],
        cwd=work,
        # A user's run writes its bytecode once; compiling on every import is not its cost.
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0 or not raw.exists():
        raise SystemExit(
            f"bench profile: the run under py-spy failed (exit {result.returncode}):\n"
            f"{result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
    last = next(
        (line for line in reversed(result.stdout.splitlines()) if line.startswith("PASS")),
        result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "",
    )
    with raw.open(encoding="utf-8", errors="replace") as lines:
        return summarize(lines), last


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench profile", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scenario", default=str(NIGHTLY), help="the scenario run (default: the nightly)"
    )
    parser.add_argument(
        "--rate", type=int, default=100, help="py-spy's samples per second (default 100)"
    )
    parser.add_argument(
        "--out",
        default=str(REPO / "BENCHMARKS.md"),
        help="the report to render again; its figures are beside it as .json",
    )
    args = parser.parse_args(argv)
    from bench.render import render

    scenario = Path(args.scenario).resolve()
    if not scenario.is_file():
        parser.error(f"--scenario: {args.scenario}: file not found")
    command = f"./scripts/bench profile {shlex.join(argv)}".rstrip()
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as work:
        summary, outcome = profile(scenario, args.rate, Path(work))
    results_path = Path(args.out).with_suffix(".json")
    results = json.loads(results_path.read_text(encoding="utf-8")) if results_path.exists() else {}
    results["profile"] = {
        **summary,
        "scenario": scenario.name,
        "rate": args.rate,
        "outcome": outcome,
        "command": command,
        "machine": describe_machine(),
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    Path(args.out).write_text(render(results) + "\n", encoding="utf-8")
    print(f"{summary['busy_samples']} busy samples; {outcome}")
    print(f"results: {results_path}; {args.out} rendered again")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
