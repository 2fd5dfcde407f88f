"""What summarizing a finished run costs a worker's memory, with the index of the run's
values built first, as a worker that judged the run's probes holds it: summarized while
the index is still held (as finish_run did before) and after it is dropped (as it does
now). Each is a fresh process of its own on the same recorded run, side by side in one
invocation.

    ./scripts/bench finish RUN|FILE.db    # a run of MEMLIFE_DB_URL's recorder, or a file's
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

# Neither loads the Temporal client into the measured process.
from bench.materialize import REPO, status_mb

MODES = ("index-held", "index-dropped")


def measure(mode: str, run_id: str) -> dict[str, float]:
    """In this process (its recorder from MEMLIFE_DB_URL): index the run's values, then
    summarize the run with the index held or dropped."""
    from memlife import recorder
    from memlife.recorder.values import foreign_values, forget_run_values

    before = status_mb("VmRSS")
    foreign_values(run_id, 0)
    indexed = status_mb("VmRSS")
    if mode == "index-dropped":
        forget_run_values(run_id)
    built = recorder.run_builder(run_id, summary_only=True)
    if built is None:
        raise SystemExit(f"bench finish: no run {run_id!r} in {recorder.database_url()}")
    summary = built[0].summary()
    return {
        "cases": summary["cases"],
        "rss_before_mb": before,
        "rss_indexed_mb": indexed,
        "peak_mb": status_mb("VmHWM"),
    }


def measure_in_process(mode: str, run_id: str, db_url: str | None) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if db_url:
        env["MEMLIFE_DB_URL"] = db_url
    done = subprocess.run(
        [sys.executable, "-m", "bench.finish", "--child", mode, run_id],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if done.returncode:
        raise SystemExit(
            done.stderr.strip().splitlines()[-1]
            if done.stderr.strip()
            else f"bench finish: {mode} exited {done.returncode}"
        )
    return json.loads(done.stdout)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench finish", description=__doc__.splitlines()[0])
    parser.add_argument(
        "run",
        metavar="RUN",
        help="a run id in MEMLIFE_DB_URL's recorder, or an SQLite recorder file (its first run)",
    )
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child, args.run)))
        return 0
    from bench.reports import recorded_runs

    run = recorded_runs([args.run])[0]
    results = {mode: measure_in_process(mode, run.run_id, run.db_url) for mode in MODES}
    for mode, figures in results.items():
        print(
            f"{mode}: {figures['cases']:,} cases summarized; RSS "
            f"{figures['rss_before_mb']:.0f} MB before, {figures['rss_indexed_mb']:.0f} MB "
            f"with the index, peak {figures['peak_mb']:.0f} MB"
        )
    saved = results["index-held"]["peak_mb"] - results["index-dropped"]["peak_mb"]
    print(f"peak, index dropped first: {saved:.0f} MB lower")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
