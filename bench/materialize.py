"""What drawing a run's pairs into the recorder costs a worker's memory: as the suite's
materialize_pairs activity does it (a chunk at a time) and with every pair held at once,
as it did before; each a fresh process of its own with a fresh SQLite recorder, side by
side in one invocation.

    ./scripts/bench materialize [--pairs 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NIGHTLY = REPO / "scenarios" / "lifecycle-nightly.yaml"
MODES = ("chunked", "whole")


def status_mb(field: str) -> float:
    """This process's VmRSS or VmHWM, in MB, from the kernel."""
    text = Path("/proc/self/status").read_text()
    return int(text.split(f"{field}:", 1)[1].split()[0]) / 1024


def measure(mode: str, pairs: int) -> dict[str, float]:
    """In this process (its recorder from MEMLIFE_DB_URL): draw and write `pairs` pairs."""
    from memlife.activities import record
    from memlife.rules.pairs import materialize
    from memlife.rules.scenario_file import load_scenario

    scenario = load_scenario(NIGHTLY)
    assert scenario.generate is not None
    scenario = scenario.model_copy(
        update={"generate": scenario.generate.model_copy(update={"count": pairs})}
    )
    before, started = status_mb("VmRSS"), time.perf_counter()
    if mode == "chunked":
        written = record.materialize_pairs("bench-materialize", scenario, "bench-seed")
    else:  # every pair held while all are written: what materialize_pairs did before
        held = materialize(scenario, "bench-seed").pairs
        record._write_chunked(
            record.recorder.RunPairRow,
            (
                {
                    "id": f"bench-materialize/{index}",
                    "run_id": "bench-materialize",
                    "pair_index": index,
                    "pair_json": pair.model_dump_json(),
                }
                for index, pair in enumerate(held)
            ),
        )
        record._write_chunked(
            record.recorder.RunValueRow, record._value_rows("bench-materialize", held, 0)
        )
        written = len(held)
    return {
        "pairs": written,
        "seconds": time.perf_counter() - started,
        "rss_before_mb": before,
        "peak_mb": status_mb("VmHWM"),
        "rss_after_mb": status_mb("VmRSS"),
    }


def measure_in_process(mode: str, pairs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-materialize-") as work:
        env = {
            **os.environ,
            "MEMLIFE_DB_URL": f"sqlite:///{work}/memlife.db",
            "PYTHONPATH": str(REPO),
        }
        done = subprocess.run(
            [sys.executable, "-m", "bench.materialize", "--child", mode, "--pairs", str(pairs)],
            cwd=REPO,
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=3600,
        )
    return json.loads(done.stdout)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench materialize", description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10_000, help="pairs to draw (default 10000)")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.pairs < 1:
        parser.error("--pairs: at least 1")
    if args.child:
        print(json.dumps(measure(args.child, args.pairs)))
        return 0
    results = {mode: measure_in_process(mode, args.pairs) for mode in MODES}
    for mode, figures in results.items():
        print(
            f"{mode}: {figures['pairs']:,} pairs in {figures['seconds']:.1f} s; RSS "
            f"{figures['rss_before_mb']:.0f} MB before, peak {figures['peak_mb']:.0f} MB, "
            f"{figures['rss_after_mb']:.0f} MB after"
        )
    growth = {
        mode: figures["peak_mb"] - figures["rss_before_mb"] for mode, figures in results.items()
    }
    ratio = f"{growth['chunked'] / growth['whole']:.2f}" if growth["whole"] > 0 else "n/a"
    print(f"peak growth, chunked / whole: {ratio}")  # n/a: too few pairs to move the peak
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
