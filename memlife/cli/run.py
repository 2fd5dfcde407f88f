"""`memlife run SCENARIO`: read and check everything the run needs (scenario, target files or
the bundled reference target, a matrix of configurations, the clock), then hand a RunPlan
to runner.py (the plan is read and checked by memlife/api/plan.py, as for Python callers).
Nothing starts until every input is good."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from memlife.api.plan import check_plan, read_plan
from memlife.cli.common import add_command, problems_exit
from memlife.cli.runner import execute
from memlife.errors import InputError


def add_parsers(commands: Any) -> None:
    from memlife.rules.sizing import (
        AUTO_COHORT,
        AUTO_COHORT_ABOVE,
        DEFAULT_MAX_ACTIVE_PAIRS,
        PAIR_WORKFLOWS_AT_MOST,
    )

    run = add_command(
        commands,
        "run",
        "run a scenario's lifecycles against a target",
        "Run a scenario's lifecycles against a target and judge every answer and every "
        "store read. Without a cluster configured (TEMPORAL_ADDRESS, an envconfig profile) "
        "and without `memlife dev` running, memlife starts what it needs itself on free "
        "loopback ports (the Temporal dev server, or the time-skipping server for --clock "
        "skip; the bundled reference target; a worker) and stops it afterwards. Prints a "
        "summary; --out writes the JSON artifact; --enforce exits 1 unless everything "
        "passed.",
    )
    run.add_argument("scenario", metavar="SCENARIO", help="the scenario file")
    run.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="FILE",
        help="target file, or `reference` for the bundled reference target; "
        "repeat it to compare configurations side by side (default: reference)",
    )
    run.add_argument(
        "--retrieval",
        action="append",
        default=[],
        metavar="MODES",
        help="retrieval modes of the bundled reference target to compare, "
        "e.g. thread,vector,graph,combined",
    )
    run.add_argument(
        "--matrix",
        default=None,
        metavar="FILE",
        help="a file of configurations to compare (target files, reference "
        "retrieval modes and faults), instead of --target and --retrieval",
    )
    run.add_argument(
        "--repeat",
        type=int,
        default=None,
        metavar="N",
        help="run N times with fresh tenants and values, keeping every result "
        "(default: the scenario's `repetitions`, 1)",
    )
    run.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME",
        help="a fault for the bundled reference target (repeatable; "
        "`memlife target serve reference --help` lists them)",
    )
    run.add_argument(
        "--clock",
        default="real",
        metavar="MODE",
        help="scenario time: real (durable real timers), skip (days in "
        "seconds, on memlife's own time-skipping server: not with a configured "
        "cluster) or compress=N (every wait / N)",
    )
    run.add_argument("--out", metavar="FILE", help="write the JSON result artifact here")
    run.add_argument(
        "--sign",
        metavar="KEYFILE",
        default=None,
        help="sign the artifact --out writes with this Ed25519 private key "
        "(`memlife keygen`; check it with `memlife verify`)",
    )
    run.add_argument(
        "--enforce",
        action="store_true",
        help="exit 1 unless every check passed within the latency budget",
    )
    run.add_argument(
        "--seed", default=None, help="seed for generated canary values (default: the run id)"
    )
    run.add_argument(
        "--twins",
        type=int,
        default=None,
        metavar="K",
        help="give the first K generated pairs a control twin each for "
        "neighbour invariance (N1; each twin costs one pair's requests) instead "
        "of the scenario's `generate.twins`",
    )
    run.add_argument(
        "--pairs",
        type=int,
        default=None,
        metavar="N",
        help="generate N pairs instead of the scenario's `generate.count`",
    )
    run.add_argument(
        "--review",
        nargs="?",
        const="default",
        default=None,
        metavar="QUEUE",
        help="queue the replies exact matching failed for blinded review "
        "(`memlife review`; QUEUE defaults to `default`)",
    )
    run.add_argument(
        "--paraphrases",
        action="store_true",
        help="with --review: also queue the answers closer in meaning to the "
        "partner's facts than to the tenant's own though they hold none of "
        "the partner's values (a local embedding model, memlife[model]; "
        "never a verdict)",
    )
    run.add_argument(
        "--cohort",
        default="auto",
        metavar="N",
        help="pairs per cohort workflow (their calls batched per step); 0: a "
        f"workflow per pair, all at once (at most {PAIR_WORKFLOWS_AT_MOST}); "
        f"auto: cohorts of {AUTO_COHORT} above {AUTO_COHORT_ABOVE} pairs",
    )
    run.add_argument(
        "--max-active-pairs",
        type=int,
        default=DEFAULT_MAX_ACTIVE_PAIRS,
        metavar="N",
        help="pairs in flight at once, in cohorts; later cohorts "
        "start as earlier ones end, which bounds the worker's memory (0: every "
        "pair at once)",
    )
    run.add_argument(
        "--task-queue",
        default=None,
        metavar="QUEUE",
        help="the task queue the run's workflows go to (default: memlife)",
    )
    run.add_argument(
        "--no-worker",
        action="store_true",
        help="start no worker in this process: standalone workers serve the run",
    )
    run.add_argument(
        "--target-worker",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="send the target requests from a worker process of their own, "
        "which this command starts beside its own worker and stops at the end "
        "(task queue QUEUE-targets): faster on a machine with a core to spare "
        "(docs/scale.md). Without it a run that uses the `memlife dev` stack "
        "sends them to the stack's target worker when it has one, and a run on "
        "this command's own Temporal server starts one from 20 pairs where "
        "more than one CPU is available; "
        "--no-target-worker keeps them on the run's own task queue",
    )
    run.add_argument(
        "--target-queue",
        default=None,
        metavar="QUEUE",
        help="send the target requests through this task queue, which "
        "standalone workers serve (`memlife worker --serve activities "
        "--task-queue QUEUE`); for a cluster's workers, with --no-worker",
    )
    run.add_argument(
        "--worker-wait",
        default="30s",
        metavar="DURATION",
        help="with --no-worker or --target-queue: how long to wait for "
        "standalone workers to poll their task queues before refusing to "
        "start the run (default: %(default)s)",
    )
    run.set_defaults(handler=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from memlife.cli.signing import check_sign_option, load_private_key

    try:
        plan = read_plan(args, signing=(check_sign_option, load_private_key))
        check_plan(plan)
    except InputError as error:
        return problems_exit(error.problems)
    return asyncio.run(execute(plan))
