"""The real stacks on the scripted model, full runs: each bundled stack started as a user
starts it (`memlife target serve KIND` on a free loopback port), each shipped scenario run
against it with its shipped target file (`memlife run --clock skip`), and the time per pair
and the findings recorded. The rows go into BENCHMARKS.json ("stacks") and BENCHMARKS.md
is rendered again.

    ./scripts/bench stacks                                  # every stack, the nightlies, races
    ./scripts/bench stacks --stacks mem0 --scenarios lifecycle-nightly-en

Where a finding can only be shown on the stack's own database while it runs (Letta's
archival passages of a deleted agent, letta-ai/letta PR #1632), the stack's `confirm` reads
it directly after each run and the row says what it found (the suite's one-pair run reads
it too: tests/workflows/test_letta_server.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import yaml

from bench.render import render
from bench.workdir import remove_work_directory
from memlife.stack.processes import free_port, stop_process, wait_listening

REPO = Path(__file__).resolve().parents[1]
MEMLIFE = [sys.executable, "-m", "memlife"]
START_SECONDS = 600  # a first start installs the stack's extra


@dataclass(frozen=True)
class Stack:
    kind: str  # memlife target serve KIND
    target_file: str
    env_file: str  # written by serve into its data directory
    library: str  # the library and version, as the row names it
    # The stack keeps its installation in its default data directory (.memlife/KIND): the
    # bench does not give it a fresh one.
    keeps_state: bool = False
    # A direct read of the stack's own store after a run: (data dir, environment, artifact,
    # what earlier runs on this start left) -> what it shows, for the row.
    confirm: Callable[[Path, dict[str, str], dict[str, Any], set[str]], str] | None = None

    def version(self) -> str:
        from importlib.metadata import PackageNotFoundError, version

        package = self.library.split()[0]
        try:
            return f"{self.library} {version(package)}"
        except PackageNotFoundError:
            return self.library


def letta_orphaned_passages(
    data: Path, env: dict[str, str], artifact: dict[str, Any], seen: set[str]
) -> str:
    """The deleted agents' archival passages this run left, read in Letta's own PostgreSQL:
    passages in archives no agent links any more (letta-ai/letta PR #1632, never merged; in
    0.16.8 deleting an agent deletes its links to its archive, ON DELETE CASCADE, not the
    archive). `seen` holds the passages earlier runs on the same server left."""
    from memlife.bundled.letta.serve import default_installation

    rows = default_installation().query(
        env["LETTA_DATABASE_URL"],
        (
            "select p.id, p.archive_id, p.text from archival_passages p where not p.is_deleted "
            "and not exists (select 1 from archives_agents l where l.archive_id = p.archive_id)"
        ),
    )
    new = [(archive, text) for passage, archive, text in rows if passage not in seen]
    seen.update(passage for passage, _, _ in rows)
    residue = {
        f["evidence"]["value"]
        for f in artifact["failures"]
        if f["invariant"] == "I4" and f["store"] == "archival"
    }
    holding = {value for value in residue for _, text in new if value in text}
    archives = {archive for archive, _ in new}
    return (
        f"{len(new)} passages in {len(archives)} archives no agent links (read in "
        f"archival_passages); {len(holding)} of {len(residue)} I4 archival values in them"
    )


STACKS = {
    "mem0": Stack("mem0", "scenarios/targets/mem0.yaml", "mem0.env", "mem0ai"),
    "graphiti": Stack(
        "graphiti", "scenarios/targets/graphiti.yaml", "graphiti.env", "graphiti-core"
    ),
    # Letta lives in an environment of its own (memlife/bundled/letta/serve.py), not in
    # memlife's: its version is the one it pins.
    "letta": Stack(
        "letta",
        "scenarios/targets/letta.yaml",
        "letta.env",
        "letta 0.16.8",
        keeps_state=True,
        confirm=letta_orphaned_passages,
    ),
}
SCENARIOS = ("lifecycle-nightly-en", "lifecycle-nightly", "races")


def say(message: str) -> None:
    print(f"bench stacks: {message}", file=sys.stderr, flush=True)


def start_target(kind: str, port: int, data: Path, log: IO[bytes]) -> subprocess.Popen[bytes]:
    """`memlife target serve KIND` on loopback `port`, its data in `data`, its output to
    `log`: how each bench section serves a bundled stack (stop it by its PID)."""
    return subprocess.Popen(
        [*MEMLIFE, "target", "serve", kind, "--port", str(port), "--data-dir", str(data)],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )


def read_env_file(env_file: Path) -> dict[str, str]:
    """The `export NAME=value` lines `memlife target serve` writes beside a stack's data."""
    found = {}
    for line in env_file.read_text(encoding="utf-8").splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        if name and value:
            found[name.strip()] = value.strip()
    return found


def measure(
    stack: Stack,
    scenarios: list[str],
    work: Path,
    command: str,
    written: Callable[[dict[str, Any]], None],
) -> None:
    port = free_port()
    data = REPO / ".memlife" / stack.kind if stack.keeps_state else work / stack.kind
    log = (work / f"{stack.kind}-serve.log").open("ab")
    server = start_target(stack.kind, port, data, log)
    seen: set[str] = set()
    try:
        started = time.monotonic()
        if not wait_listening(port, server, START_SECONDS):
            raise SystemExit(f"bench stacks: {stack.kind} did not start (log: {log.name})")
        say(f"{stack.kind} up in {time.monotonic() - started:.0f} s on port {port}")
        target = yaml.safe_load((REPO / stack.target_file).read_text(encoding="utf-8"))
        target["base_url"] = f"http://127.0.0.1:{port}"
        target_file = work / f"{stack.kind}.yaml"
        target_file.write_text(yaml.safe_dump(target, allow_unicode=True), encoding="utf-8")
        env = {**os.environ, **read_env_file(data / stack.env_file)}
        for scenario in scenarios:
            out = work / f"{stack.kind}-{scenario}.json"
            began = time.monotonic()
            done = subprocess.run(
                [
                    *MEMLIFE,
                    "run",
                    f"scenarios/{scenario}.yaml",
                    "--target",
                    str(target_file),
                    "--clock",
                    "skip",
                    "--out",
                    str(out),
                ],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            seconds = time.monotonic() - began
            if done.returncode not in (0, 1) or not out.exists():
                raise SystemExit(
                    f"bench stacks: {stack.kind} {scenario} ended with exit "
                    f"{done.returncode}:\n{done.stderr[-2000:]}"
                )
            artifact = json.loads(out.read_text(encoding="utf-8"))
            row = _row(stack, scenario, artifact, seconds, command)
            if stack.confirm is not None:
                row["confirmed"] = stack.confirm(data, env, artifact, seen)
                say(f"{stack.kind} {scenario}, read directly: {row['confirmed']}")
            say(
                f"{stack.kind} {scenario}: {seconds:.0f} s, "
                f"{row['failures']} failure(s), {row['inconclusive']} inconclusive"
            )
            written(row)
    finally:
        stop_process(server, grace=30)
        log.close()


def _row(
    stack: Stack, scenario: str, artifact: dict[str, Any], seconds: float, command: str
) -> dict[str, Any]:
    findings = Counter(f"{f['invariant']} · {f['store']}" for f in artifact["failures"])
    summary = artifact["summary"]
    return {
        "stack": stack.kind,
        "library": stack.version(),
        "scenario": scenario,
        "pairs": len(artifact["pairs"]),
        "seconds": seconds,
        "cases": summary["cases"],
        "cases_passed": summary["cases_passed"],
        "failures": len(artifact["failures"]),
        "inconclusive": len(artifact["inconclusive"]),
        "findings": dict(findings.most_common()),
        "command": command,
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def merge_stacks(rows: list[dict[str, Any]], row: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows with a new measure in place of the same stack's on the same scenario (at
    the end when it is new); every other row is kept as it was."""
    key = (row["stack"], row["scenario"])
    merged = [row if (old["stack"], old["scenario"]) == key else old for old in rows]
    return merged if row in merged else [*merged, row]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench stacks", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--stacks", default=",".join(STACKS), help=f"stacks to run (default {','.join(STACKS)})"
    )
    parser.add_argument(
        "--scenarios",
        default=",".join(SCENARIOS),
        help=f"shipped scenarios (default {','.join(SCENARIOS)})",
    )
    parser.add_argument(
        "--out",
        default=str(REPO / "BENCHMARKS.md"),
        help="the report to render again; its figures are beside it as .json",
    )
    args = parser.parse_args(argv)
    names = [name.strip() for name in args.stacks.split(",") if name.strip()]
    scenarios = [name.strip() for name in args.scenarios.split(",") if name.strip()]
    unknown = [name for name in names if name not in STACKS]
    missing = [name for name in scenarios if not (REPO / "scenarios" / f"{name}.yaml").exists()]
    if unknown or missing or not names or not scenarios:
        parser.error(
            f"--stacks: one or more of {', '.join(STACKS)}; --scenarios: files of "
            f"scenarios/ without .yaml (unknown: {', '.join(unknown + missing)})"
        )
    results_path = Path(args.out).with_suffix(".json")
    command = f"./scripts/bench stacks {shlex.join(argv)}".rstrip()
    work = Path(tempfile.mkdtemp(prefix="memlife-bench-stacks-"))
    say(f"working in {work}")
    results = (
        json.loads(results_path.read_text(encoding="utf-8"))
        if results_path.exists()
        else {"scale": []}
    )

    def written(row: dict[str, Any]) -> None:
        """Each row as soon as it is measured: an hour-long bench stopped half-way keeps
        what it measured."""
        results["stacks"] = merge_stacks(results.get("stacks", []), row)
        results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        Path(args.out).write_text(render(results) + "\n", encoding="utf-8")

    for name in names:
        measure(STACKS[name], scenarios, work, command, written)
    say(f"wrote {args.out} and {results_path}")
    say(remove_work_directory(work))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
