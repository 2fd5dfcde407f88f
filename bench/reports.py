"""What `memlife report` (json, html, junit) and the artifact `memlife run --out` writes
cost on the recorder of runs of growing numbers of pairs: wall time and peak RSS of each,
a process of its own, side by side in one invocation. The rows go into BENCHMARKS.json
("reports"), replacing those of the same runs, and BENCHMARKS.md is rendered again.

    ./scripts/bench reports RUN [RUN ...]    # runs of the recorder MEMLIFE_DB_URL names
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text

from memlife import recorder
from memlife.stack.processes import stop_process

REPO = Path(__file__).resolve().parents[1]
FORMATS = ("json", "html", "junit", "artifact")
# What `memlife run --out` does once the run has finished (memlife/cli/runner.py).
ARTIFACT = ("import sys; from pathlib import Path; from memlife.cli.render import "
            "write_immutable; from memlife.recorder.streams import artifact_chunks; "
            "write_immutable(Path(sys.argv[2]), artifact_chunks(sys.argv[1]))")


def _run_facts(run_id: str) -> dict[str, Any]:
    with recorder.engine_for().connect() as db:
        pairs, cases, failures = db.execute(text(
            "SELECT (SELECT count(DISTINCT pair_index) FROM tenants WHERE run_id = :r), "
            "(SELECT count(*) FROM verdicts WHERE run_id = :r), "
            "(SELECT count(*) FROM verdicts WHERE run_id = :r AND outcome != 'pass')"),
            {"r": run_id}).one()
    if not pairs:
        raise SystemExit(f"bench reports: no run {run_id!r} in {recorder.database_url()}")
    return {"pairs": pairs, "cases": cases, "not_passed": failures}


def measure(run_id: str, fmt: str, out: Path) -> dict[str, float]:
    """Wall time and peak RSS (the kernel's, from wait4) of one report of one run."""
    command = ([sys.executable, "-c", ARTIFACT, run_id, str(out)] if fmt == "artifact" else
               [sys.executable, "-m", "memlife", "report", run_id, "--format", fmt,
                "--out", str(out)])
    # Errors go to a file, not a pipe: wait4 reaps the child, and a child blocked on a full
    # pipe nobody reads would never end.
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL,
                                   stderr=errors, env={**os.environ, "PYTHONPATH": str(REPO)})
        try:
            _, status, usage = os.wait4(process.pid, 0)
        except BaseException:  # stopped (SIGTERM, Ctrl-C): the report goes too
            stop_process(process, grace=5)
            raise
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode:
            errors.seek(0)
            raise SystemExit(f"bench reports: {shlex.join(command)} failed:\n"
                             f"{errors.read().decode(errors='replace')[-2000:]}")
    size = out.stat().st_size
    out.unlink()
    return {"seconds": round(seconds, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "output_bytes": size}


def render_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The section of BENCHMARKS.md: each format's cost by number of pairs, and the ratio
    of the largest run's to the smallest's."""
    if not rows:
        return []
    by_format: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda row: row["pairs"]):
        by_format.setdefault(row["format"], []).append(row)
    lines = ["## Reports and artifacts at growing numbers of pairs", "",
             "Each a process of its own on the recorder of one finished nightly "
             "(`memlife report RUN --format F --out FILE`; `artifact` is what "
             "`memlife run --out` writes once the run has finished). Time and peak RSS "
             "(the kernel's) beside the smallest run's, measured in one invocation.", "",
             "| format | pairs | cases (not passed) | time | peak RSS | written | time ÷ "
             "smallest | RSS ÷ smallest |", "|---|---|---|---|---|---|---|---|"]
    for fmt in FORMATS:
        measured = by_format.get(fmt, [])
        for row in measured:
            base = measured[0]
            lines.append(
                f"| {fmt} | {row['pairs']:,} | {row['cases']:,} ({row['not_passed']:,}) | "
                f"{row['seconds']:,.1f} s | {row['peak_rss_mb']:,.0f} MB | "
                f"{row['output_bytes'] / 1e6:,.1f} MB | {row['seconds'] / base['seconds']:.2f}"
                f" | {row['peak_rss_mb'] / base['peak_rss_mb']:.2f} |")
    commands = sorted({row["command"] for row in rows})
    lines += ["", "Reproduce: " + "; ".join(f"`{c}`" for c in commands) + " (with the "
              "nightlies' recorder as MEMLIFE_DB_URL; the runs come from "
              "`memlife run scenarios/lifecycle-nightly.yaml --pairs N --clock skip`).", ""]
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench reports", description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run ids in the recorder")
    parser.add_argument("--out", default=str(REPO / "BENCHMARKS.md"),
                        help="the report to render again; its figures are beside it as .json")
    args = parser.parse_args(argv)
    results_path = Path(args.out).with_suffix(".json")
    results = json.loads(results_path.read_text(encoding="utf-8")) if results_path.exists() \
        else {"scale": []}
    command = f"./scripts/bench reports {shlex.join(args.runs)}"
    measured_at = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    rows = []
    with tempfile.TemporaryDirectory(prefix="memlife-bench-reports-") as work:
        for run_id in args.runs:
            facts = _run_facts(run_id)
            for fmt in FORMATS:
                figures = measure(run_id, fmt, Path(work) / f"{run_id}.{fmt}")
                print(f"{facts['pairs']:>6,} pairs · {fmt:<8} {figures['seconds']:>7.1f} s "
                      f"{figures['peak_rss_mb']:>7.0f} MB", flush=True)
                rows.append({"run_id": run_id, "format": fmt, **facts, **figures,
                             "command": command, "measured_at": measured_at})
    kept = [row for row in results.get("reports", []) if row["run_id"] not in args.runs]
    results["reports"] = kept + rows
    results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    from bench.__main__ import render

    Path(args.out).write_text(render(results) + "\n", encoding="utf-8")
    print(f"wrote {args.out} and {results_path}")
    return 0


if __name__ == "__main__":
    # SIGTERM, and SIGINT even when the shell started the bench with it ignored, end the
    # bench through its `finally` blocks, which stop what it started.
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main(sys.argv[1:]))
