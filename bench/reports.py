"""What `memlife report` (json, html, junit) and the artifact `memlife run --out` writes
cost on the recorder of runs of growing numbers of pairs: wall time and peak RSS of each,
a process of its own, side by side in one invocation. The rows go into BENCHMARKS.json
("reports"), replacing those of the same runs, and BENCHMARKS.md is rendered again.

    ./scripts/bench reports RUN [RUN ...]    # runs of the recorder MEMLIFE_DB_URL names
    ./scripts/bench reports FILE.db [...]    # every run and experiment of these recorders

An experiment in a recorder file (`memlife run ... --matrix M` with MEMLIFE_DB_URL set to
it) is measured as one: `memlife report EXPERIMENT` in each format, and the document
`memlife run --experiment --out` writes; its runs are not measured one by one.

`./scripts/bench --scale-only --scale N` leaves each run's SQLite recorder in its working
directory (it says where), so runs measured on their own can be set side by side here.
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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench.machine import describe_machine
from bench.render import render
from bench.report_tables import FORMATS
from memlife import recorder
from memlife.stack.processes import stop_process

REPO = Path(__file__).resolve().parents[1]
# What reads the signed artifact once written; an experiment's document is not signed
# (`memlife run --sign` refuses one), so an experiment has none of these.
SIGNED = ("signed artifact", "html of the file", "verify")
# Linux counts a child's peak RSS from the process it was forked from: under this bench
# (about 100 MB with what it imports) no report could measure less. Each one runs under
# this launcher instead, about 10 MB, which times it, reaps it and writes what wait4 says.
LAUNCHER = """
import json, os, signal, sys, time
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGTERM))
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    json.dump({"seconds": time.perf_counter() - started, "peak_rss_kb": usage.ru_maxrss,
               "code": os.waitstatus_to_exitcode(status)}, out)
"""
# What `memlife run --out` does once the run has finished (memlife/cli/runner.py).
ARTIFACT = (
    "import sys; from pathlib import Path; from memlife.cli.render import "
    "write_immutable; from memlife.recorder.streams import artifact_chunks; "
    "write_immutable(Path(sys.argv[2]), artifact_chunks(sys.argv[1]))"
)
# What `memlife run --experiment --out` does once the experiment's runs have finished.
EXPERIMENT_ARTIFACT = (
    "import sys; from pathlib import Path; from memlife.cli.render import write_immutable; "
    "from memlife.recorder.streams import experiment_chunks, report_experiment; "
    "write_immutable(Path(sys.argv[2]), experiment_chunks(report_experiment(sys.argv[1])[0]))"
)
# What `memlife run --out --sign KEYFILE` does once the run has finished.
SIGNED_ARTIFACT = (
    "import sys; from datetime import UTC, datetime; from pathlib import Path; "
    "from memlife.cli.render import write_immutable; "
    "from memlife.recorder.streams import artifact_parts; "
    "from memlife.reports.signing import signed_chunks; "
    "write_immutable(Path(sys.argv[2]), signed_chunks(*artifact_parts(sys.argv[1]), "
    "Path(sys.argv[3]).read_bytes(), 'artifact', lambda: datetime.now(UTC)))"
)


@dataclass(frozen=True)
class RecordedRun:
    """A run to report on, and the recorder that holds it (None: MEMLIFE_DB_URL's); or,
    with `experiment`, an experiment of that id."""

    run_id: str
    db_url: str | None = None
    experiment: bool = False


def recorded_runs(names: list[str]) -> list[RecordedRun]:
    """Each name is a run id in MEMLIFE_DB_URL's recorder, or an SQLite recorder file, whose
    runs are all taken, oldest first: each run of no experiment on its own, then each
    experiment as one."""
    runs: list[RecordedRun] = []
    for name in names:
        path = Path(name)
        if not path.is_file():
            runs.append(RecordedRun(name))
            continue
        db_url = f"sqlite:///{path.resolve()}"
        engine = recorder.engine_for(db_url)
        try:
            with engine.connect() as db:
                ids = db.execute(text("SELECT id FROM runs ORDER BY started_at")).scalars().all()
                experiments = (
                    dict(db.execute(text("SELECT run_id, experiment FROM run_experiments")).all())
                    if ids
                    else {}
                )
        finally:
            engine.dispose()
        if not ids:
            raise SystemExit(f"bench reports: {name}: no run in this recorder")
        runs += [RecordedRun(run_id, db_url) for run_id in ids if not experiments.get(run_id)]
        runs += [
            RecordedRun(experiment, db_url, experiment=True)
            for experiment in dict.fromkeys(
                experiments[run_id] for run_id in ids if experiments.get(run_id)
            )
        ]
    return runs


def _run_facts(run: RecordedRun) -> dict[str, Any]:
    """Pairs, cases and cases not passed of a run, or of all an experiment's runs."""
    run_id = run.run_id
    runs = (
        "(SELECT run_id FROM run_experiments WHERE experiment = :r)" if run.experiment else "(:r)"
    )
    with recorder.engine_for(run.db_url).connect() as db:
        pairs, cases, failures = db.execute(
            text(
                "SELECT (SELECT count(*) FROM (SELECT DISTINCT run_id, pair_index FROM tenants "
                f"WHERE run_id IN {runs})), "  # noqa: S608 (no input in the text)
                f"(SELECT count(*) FROM verdicts WHERE run_id IN {runs}), "
                f"(SELECT count(*) FROM verdicts WHERE run_id IN {runs} AND outcome != 'pass')"
            ),
            {"r": run_id},
        ).one()
    if not pairs:
        raise SystemExit(
            f"bench reports: no run {run_id!r} in {run.db_url or recorder.database_url()}"
        )
    return {"pairs": pairs, "cases": cases, "not_passed": failures}


def write_keys(folder: Path) -> Path:
    """A fresh key pair for the signed artifact, as `memlife keygen --out folder` names it."""
    from memlife.reports.signing import generate_key_pair

    folder.mkdir(parents=True)
    for name, pem in zip(
        ("memlife-signing.key", "memlife-signing.pub"), generate_key_pair(), strict=True
    ):
        (folder / name).write_bytes(pem)
    return folder


def launch(command: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Run `command` under the launcher: its wall time and its own peak RSS in KB. Exits
    with its errors where it fails."""
    # Errors go to a file, not a pipe: a child blocked on a full pipe nobody reads would
    # never end.
    with tempfile.TemporaryFile() as errors, tempfile.TemporaryDirectory() as work:
        result = Path(work) / "result.json"
        process = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, str(result), *command],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            env=env,
        )
        try:
            process.wait()
        except BaseException:  # stopped (SIGTERM, Ctrl-C): the report goes too
            stop_process(process, grace=5)
            raise
        launched = json.loads(result.read_text()) if result.exists() else {"code": -1}
        if process.returncode or launched["code"]:
            errors.seek(0)
            raise SystemExit(
                f"bench reports: {shlex.join(command)} failed:\n"
                f"{errors.read().decode(errors='replace')[-2000:]}"
            )
    return launched["seconds"], launched["peak_rss_kb"]


def _command(run: RecordedRun, fmt: str, out: Path, keys: Path, signed: Path) -> list[str]:
    """The command that writes `out` in this format (`verify` writes nothing)."""
    if fmt == "artifact":
        artifact = EXPERIMENT_ARTIFACT if run.experiment else ARTIFACT
        return [sys.executable, "-c", artifact, run.run_id, str(out)]
    if fmt == "signed artifact":
        return [
            sys.executable,
            "-c",
            SIGNED_ARTIFACT,
            run.run_id,
            str(signed),
            str(keys / "memlife-signing.key"),
        ]
    if fmt == "html of the file":  # `memlife report FILE`, the file as a stream
        return [
            sys.executable,
            "-m",
            "memlife",
            "report",
            str(signed),
            "--format",
            "html",
            "--out",
            str(out),
        ]
    if fmt == "verify":  # it must verify
        return [
            sys.executable,
            "-m",
            "memlife",
            "verify",
            str(signed),
            "--public-key",
            str(keys / "memlife-signing.pub"),
        ]
    return [
        sys.executable,
        "-m",
        "memlife",
        "report",
        run.run_id,
        "--format",
        fmt,
        "--out",
        str(out),
    ]


def measure(
    run: RecordedRun, fmt: str, out: Path, keys: Path, signed: Path | None = None
) -> dict[str, float]:
    """Wall time and peak RSS (the kernel's, from wait4) of one report of one run, and the
    size of what it wrote (of what it read, for `verify`). The file a format writes is
    removed once measured. The signed artifact (at `signed`) stays for the formats that
    read it; `verify`, the last, removes it."""
    signed = signed or out.with_suffix(".signed.json")
    command = _command(run, fmt, out, keys, signed)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if run.db_url:
        env["MEMLIFE_DB_URL"] = run.db_url
    seconds, peak_kb = launch(command, env)
    written = signed if fmt in ("signed artifact", "verify") else out
    size = written.stat().st_size
    if fmt != "signed artifact":
        written.unlink()
    return {
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "output_bytes": size,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench reports", description=__doc__.splitlines()[0])
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="a run id in MEMLIFE_DB_URL's recorder, or an SQLite recorder file (every run in it)",
    )
    parser.add_argument(
        "--formats",
        default=",".join(FORMATS),
        metavar="F,F",
        help="the formats to measure, comma-separated (default: all; "
        "those after `signed artifact` need it)",
    )
    parser.add_argument(
        "--note",
        default="",
        metavar="TEXT",
        help="what the reader should know of this invocation (what else "
        "ran on the machine, say), shown under its table",
    )
    parser.add_argument(
        "--out",
        default=str(REPO / "BENCHMARKS.md"),
        help="the report to render again; its figures are beside it as .json",
    )
    args = parser.parse_args(argv)
    formats = [fmt.strip() for fmt in args.formats.split(",") if fmt.strip()]
    unknown = [fmt for fmt in formats if fmt not in FORMATS]
    if unknown or not formats:
        parser.error(
            f"--formats: unknown {', '.join(map(repr, unknown)) or 'nothing'}; "
            f"some of {', '.join(FORMATS)}"
        )
    if (set(formats) & set(SIGNED[1:])) and SIGNED[0] not in formats:
        parser.error(
            f"--formats: {', '.join(SIGNED[1:])} read the signed artifact: add {SIGNED[0]!r}"
        )
    results_path = Path(args.out).with_suffix(".json")
    results = (
        json.loads(results_path.read_text(encoding="utf-8"))
        if results_path.exists()
        else {"scale": []}
    )
    runs = recorded_runs(args.runs)
    # A recorder file is named as the scale bench names it, not by this machine's path.
    chosen = "" if len(formats) == len(FORMATS) else f"--formats {shlex.quote(args.formats)} "
    command = f"./scripts/bench reports {chosen}" + shlex.join(
        Path(name).name if Path(name).is_file() else name for name in args.runs
    )
    measured_at = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    machine = describe_machine()
    facts = {run: _run_facts(run) for run in runs}  # every run found before any is measured
    rows = []
    with tempfile.TemporaryDirectory(prefix="memlife-bench-reports-") as work:
        keys = write_keys(Path(work) / "keys")
        for run in runs:
            for fmt in (fmt for fmt in FORMATS if fmt in formats):
                if run.experiment and fmt in SIGNED:
                    continue
                out = Path(work) / f"{run.run_id}.{fmt.replace(' ', '-')}"
                figures = measure(run, fmt, out, keys, Path(work) / f"{run.run_id}.signed.json")
                shown = f"experiment {fmt}" if run.experiment else fmt
                print(
                    f"{facts[run]['pairs']:>6,} pairs · {shown:<19} "
                    f"{figures['seconds']:>7.1f} s {figures['peak_rss_mb']:>7.0f} MB",
                    flush=True,
                )
                rows.append(
                    {
                        "run_id": run.run_id,
                        "format": shown,
                        **facts[run],
                        **figures,
                        "command": command,
                        "measured_at": measured_at,
                        "machine": machine,
                        "launched": True,
                        **({"note": args.note} if args.note else {}),
                    }
                )
    measured = {run.run_id for run in runs}
    kept = [row for row in results.get("reports", []) if row["run_id"] not in measured]
    results["reports"] = kept + rows
    results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    Path(args.out).write_text(render(results) + "\n", encoding="utf-8")
    print(f"wrote {args.out} and {results_path}")
    return 0


if __name__ == "__main__":
    # SIGTERM, and SIGINT even when the shell started the bench with it ignored, end the
    # bench through its `finally` blocks, which stop what it started.
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main(sys.argv[1:]))
