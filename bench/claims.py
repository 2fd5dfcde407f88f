"""Claims on one long-lived target over many runs: the live claims and the preparation
time at run 1, the middle run and the last, which stay flat when each run's tenants are
deleted (recorder/claims.py retires what can no longer mislead).

    ./scripts/bench claims [--runs 100] [--scenario scenarios/seed-six-case.yaml]

One bundled reference target outlives every run, as a user's service does, and one SQLite
recorder keeps every run. Each run goes through what a run against a target file does
that touches claims, in the activities' own code, without Temporal (100 whole runs would
measure Temporal's start-up 100 times, not claims): its preparation (`materialize_unclaimed`,
which reviews the finished runs' claims, reads the live ones and claims its values; timed),
its first foreign-value index (`foreign_values`, timed), its tenants' registration (their
phones claimed), their deletion and its confirmation on the target, recorded as the
lifecycle records them (`record_tenant_sets`, `record_step`), and `finish_run`. A listed
scenario's values are marked from each run's seed, so every run claims values of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SIX_CASE = REPO / "scenarios" / "seed-six-case.yaml"
# What the reference target waits, in scenario time, before a deletion is complete.
PURGE_AFTER = timedelta(minutes=31)


async def one_run(
    index: int,
    scenario: Any,
    target: Any,
    scenario_file: Path,
) -> dict[str, float]:
    """One run against the long-lived target; its figures."""
    from memlife import __version__
    from memlife.activities.calls import send_once
    from memlife.activities.record import (
        finish_run,
        record_run_started,
        record_step,
        record_tenant_sets,
    )
    from memlife.activities.target import delete, read_deletion_status, register
    from memlife.contracts import DeleteRequest, RegisterRequest, RunInput, RunMeta, StepRecord
    from memlife.recorder.claims import claim_count, materialize_unclaimed
    from memlife.recorder.values import foreign_values
    from memlife.rules.evidence import Observation
    from memlife.rules.pairs import pair_tenants
    from memlife.rules.request_verdicts import deletion_verdict

    run_id = f"bench-claims-{index:03d}"
    started = time.perf_counter()
    materialized = await asyncio.to_thread(
        materialize_unclaimed, scenario, run_id, run_id, target.base_url
    )
    prepare_s = time.perf_counter() - started
    meta = RunMeta(
        memlife_version=__version__,
        git_revision=None,
        command="bench claims",
        scenario_file=str(scenario_file),
        scenario_name=scenario.name,
        scenario_sha256="0" * 64,
        target_name=target.name,
        target_base_url=target.base_url,
        target_identity={"kind": "target file"},
        clock="skip",
        temporal_address="none",
        canary_seed=run_id,
    )
    record_run_started(RunInput(run_id=run_id, scenario=materialized, target=target, meta=meta))
    started = time.perf_counter()
    index_size = foreign_values(run_id, 0).size
    index_s = time.perf_counter() - started
    now = datetime.now(UTC)
    for pair_index, pair in enumerate(materialized.pairs):
        tenants = pair_tenants(run_id, pair_index, pair, materialized)
        registered, observations, verdicts = [], [], []
        for seq, tenant in enumerate(tenants):
            result = await register(
                RegisterRequest(
                    target=target,
                    phone=tenant.phone,
                    tenant_alias=tenant.alias,
                    scenario_now=now.isoformat(),
                    run_id=run_id,
                ),
                send_once,
            )
            registered.append(
                tenant.model_copy(
                    update={"user_id": result.user_id, "phone": result.phone or tenant.phone}
                )
            )
            observations.append(
                Observation(
                    seq=seq,
                    role=tenant.role,
                    kind="register",
                    request=tenant.phone,
                    scenario_time=now,
                    wall_time=datetime.now(UTC),
                )
            )
        record_tenant_sets(run_id, [pair_index], [registered])
        # Both deleted at once, then confirmed once the target's purge is due: the run's
        # scenario clock on the target only moves forward.
        requests = [
            DeleteRequest(
                target=target,
                phone=tenant.phone,
                user_id=tenant.user_id or "",
                run_id=run_id,
                scenario_now=now.isoformat(),
            )
            for tenant in registered
        ]
        states = [await delete(request, send_once) for request in requests]
        for tenant, request, state in zip(registered, requests, states, strict=True):
            if not state.done:
                state = await read_deletion_status(
                    request.model_copy(
                        update={
                            "deletion_id": state.deletion_id,
                            "scenario_now": (now + PURGE_AFTER).isoformat(),
                        }
                    ),
                    send_once,
                )
            verdicts.append(
                deletion_verdict(
                    f"s1-{tenant.role}-deletion",
                    tenant.role,
                    tenant.alias,
                    state,
                    None,
                    timedelta(hours=24),
                    PURGE_AFTER,
                )
            )
        for step_index, kind, stage, step_observations, step_verdicts in (
            (-1, "register", "", observations, []),
            (1, "await-deletion", "deletion-confirmed", [], verdicts),
        ):
            record_step(
                StepRecord(
                    run_id=run_id,
                    pair_index=pair_index,
                    step_index=step_index,
                    kind=kind,
                    stage=stage,
                    scenario_started=now,
                    scenario_finished=now,
                    wall_started=now,
                    wall_finished=now,
                    observations=step_observations,
                    verdicts=step_verdicts,
                    tenants=registered,
                )
            )
    finish_run(run_id, [])
    return {
        "run": index,
        "prepare_ms": prepare_s * 1000,
        "index_ms": index_s * 1000,
        "live_claims": claim_count(target.base_url),
        "foreign_values": index_size,
    }


async def measure(runs: int, scenario_file: Path, work: Path) -> list[dict[str, float]]:
    """`runs` runs against one reference target, recording to one SQLite recorder."""
    os.environ["MEMLIFE_DB_URL"] = f"sqlite:///{work / 'memlife.db'}"
    from memlife.bundled.reference.target_file import reference_target
    from memlife.recorder.claims import claim_count
    from memlife.rules.scenario_file import load_scenario
    from memlife.stack import embedded
    from memlife.targets import http

    scenario = load_scenario(scenario_file)
    figures = []
    with embedded.reference_target(work / "target", db_path=work / "long-lived.db") as process:
        target = reference_target(process.base_url)
        try:
            for index in range(1, runs + 1):
                figure = await one_run(index, scenario, target, scenario_file)
                figures.append(figure)
                if index in {1, runs // 2, runs} or index % 10 == 0:
                    print(
                        f"run {index:>3}: {figure['live_claims']:>4} live claims, "
                        f"prepared in {figure['prepare_ms']:.1f} ms, foreign index "
                        f"({figure['foreign_values']} values) in "
                        f"{figure['index_ms']:.1f} ms",
                        flush=True,
                    )
        finally:
            await http.close_clients()
        figures[-1]["claims_after"] = claim_count(target.base_url)
    return figures


def row(figures: list[dict[str, float]], scenario_file: Path, command: str) -> dict[str, Any]:
    """What BENCHMARKS.json keeps: the figures at run 1, the middle run and the last."""
    runs = len(figures)
    marks = sorted({1, max(1, runs // 2), runs})
    return {
        "runs": runs,
        "scenario": scenario_file.name,
        "command": command,
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "at": [figures[mark - 1] for mark in marks],
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench claims", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="runs (default 100)")
    parser.add_argument(
        "--scenario",
        default=str(SIX_CASE),
        help="the runs' scenario (default scenarios/seed-six-case.yaml)",
    )
    parser.add_argument(
        "--out",
        default=str(REPO / "BENCHMARKS.md"),
        help="the report to render again; its figures are beside it as .json",
    )
    args = parser.parse_args(argv)
    if args.runs < 2:
        parser.error("--runs: at least 2")
    from bench.render import render

    command = f"./scripts/bench claims {shlex.join(argv)}".rstrip()
    with tempfile.TemporaryDirectory(prefix="bench-claims-") as work:
        figures = asyncio.run(measure(args.runs, Path(args.scenario), Path(work)))
    results_path = Path(args.out).with_suffix(".json")
    results = json.loads(results_path.read_text(encoding="utf-8")) if results_path.exists() else {}
    results["claims"] = row(figures, Path(args.scenario), command)
    results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    Path(args.out).write_text(render(results) + "\n", encoding="utf-8")
    print(f"results: {results_path}; {args.out} rendered again")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
