"""`memlife dev` (the local stack until Ctrl-C) and `memlife worker` (a standalone worker)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from memlife.cli.common import EXIT_OK, STATE_DIR, add_command, problems_exit, unknown_faults


def add_parsers(commands: Any) -> None:
    from memlife.stack import DEFAULT_ADDRESS, DEFAULT_CODEC_PORT, DEFAULT_UI_PORT

    dev = add_command(
        commands,
        "dev",
        "run the local stack (Temporal, worker, reference target) until Ctrl-C",
        "Run the local stack until Ctrl-C: the Temporal dev server (history kept in "
        f"{STATE_DIR}/temporal.db, Web UI, memlife's search attributes registered), memlife's "
        "codec endpoint for that Web UI (every payload reads as JSON), a worker "
        "and the bundled reference target (scenarios/targets/reference.yaml describes it). "
        "Where the machine has more than one CPU, also a worker process of their own for "
        "the target requests of the runs that use the stack (task queue QUEUE-targets; "
        "docs/scale.md). "
        "Other commands find it without flags; standalone `memlife run`s reuse the same "
        "history file, so their runs can be browsed here afterwards. Ctrl-C stops the "
        "workers, the target and the server, by PID.",
    )
    dev.add_argument(
        "--port",
        type=int,
        default=int(DEFAULT_ADDRESS.rsplit(":", 1)[1]),
        help="Temporal's gRPC port on 127.0.0.1",
    )
    dev.add_argument(
        "--ui-port", type=int, default=DEFAULT_UI_PORT, help="the Web UI's port on 127.0.0.1"
    )
    dev.add_argument(
        "--codec-port",
        type=int,
        default=DEFAULT_CODEC_PORT,
        help="the codec endpoint's port on 127.0.0.1, through which the Web UI reads "
        "compressed payloads as JSON (a free one when taken)",
    )
    dev.add_argument(
        "--target-port", type=int, default=8080, help="the reference target's port on 127.0.0.1"
    )
    dev.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME",
        help="a fault for the reference target (repeatable)",
    )
    dev.add_argument(
        "--task-queue", default="memlife", metavar="QUEUE", help="the task queue its worker polls"
    )
    dev.add_argument(
        "--target-worker",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="start (or not) a worker process of their own for the target requests of the "
        "runs that use the stack, on task queue QUEUE-targets (default: where more than "
        "one CPU is available, where it makes runs faster; docs/scale.md)",
    )
    dev.set_defaults(handler=cmd_dev)

    from memlife.stack.worker import add_arguments

    worker = add_command(
        commands,
        "worker",
        "a standalone worker for a Temporal cluster",
        "Run a standalone memlife worker: every workflow and activity (--serve: only one "
        "of the two, with another worker serving the other), on a cluster named "
        "by TEMPORAL_ADDRESS or a Temporal envconfig profile (TLS, API key), recording to "
        "MEMLIFE_DB_URL (default: .memlife/memlife.db). Ctrl-C or SIGTERM drains in-flight "
        "activities (MEMLIFE_GRACEFUL_SHUTDOWN, default 30s) and exits. The same as "
        "`python worker.py` in a checkout.",
    )
    add_arguments(worker)
    worker.set_defaults(handler=cmd_worker)


def cmd_dev(args: argparse.Namespace) -> int:
    from memlife.stack import devstack
    from memlife.stack.worker_process import target_worker_helps

    problems = unknown_faults(args.fault)
    if problems:
        return problems_exit(problems)
    asyncio.run(
        devstack.serve(
            STATE_DIR,
            port=args.port,
            ui_port=args.ui_port,
            target_port=args.target_port,
            faults=args.fault,
            task_queue=args.task_queue,
            codec_port=args.codec_port,
            target_worker=target_worker_helps()
            if args.target_worker is None
            else args.target_worker,
        )
    )
    print("memlife dev: stopped", flush=True)
    return EXIT_OK


def cmd_worker(args: argparse.Namespace) -> int:
    from memlife.stack.worker import run_worker

    return run_worker(args)
