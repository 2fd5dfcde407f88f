"""memlife's command line: one module per command group, rendering apart (render.py).

Exit codes: 0 ok; 1 checks failed (--enforce), a receipt not clean; 2 bad input or an
unreachable service (one `where: what: why` line per problem, no traceback, nothing
started). Importing this package is light: each command imports what it runs when it
runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from memlife import __version__
from memlife.cli import (
    codec,
    deletion,
    dev,
    model,
    report,
    review,
    run,
    schedule,
    signing,
    status,
    target,
    validate,
)
from memlife.cli.common import EXIT_USAGE, HelpFormatter, err

GROUPS = (
    validate,
    run,
    dev,
    codec,
    schedule,
    status,
    deletion,
    review,
    report,
    target,
    model,
    signing,
)


def build_parser() -> argparse.ArgumentParser:
    from memlife.stack.commands import command

    parser = argparse.ArgumentParser(
        prog=command(),
        formatter_class=HelpFormatter,
        description="Long-horizon lifecycle tests for multi-tenant conversational memory.\n\n"
        "Drives synthetic pairs of tenants through scripted lifecycles against a memory "
        "system and proves, with a recorded trail, that one tenant's facts never reach "
        "another, that updates propagate, and that a deleted tenant is gone from every "
        "store and every answer. `COMMAND --help` says what each command does.",
        epilog="Exit status: 0 ok; 1 a check failed (with --enforce) or a receipt is not "
        "clean; 2 bad input or an unreachable service.",
    )
    parser.add_argument("--version", action="version", version=f"memlife {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in GROUPS:
        group.add_parsers(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from memlife.errors import InputError, MemlifeError
    from memlife.log import configure, forward_sdk_core_logs

    args = build_parser().parse_args(argv)
    # A long-running stack (dev, worker) logs its work as a worker would; other commands
    # show only what their user needs.
    service = args.command in ("dev", "worker")
    if service or args.command == "run":  # a worker in this process, at any scale
        from memlife.stack.heap import limit_malloc_arenas

        limit_malloc_arenas()  # before any thread: one keeps the arena it first used
    configure(level="INFO" if service else "WARNING", sdk_level="WARNING" if service else "ERROR")
    # Commands that never reach Temporal (set_defaults(temporal=False)) skip starting the
    # SDK's runtime: a third of a second of every reference target's start.
    if getattr(args, "temporal", True):
        forward_sdk_core_logs()
    try:
        return int(args.handler(args))
    except InputError as error:  # one line per problem: where, what, why
        for problem in error.problems:
            err(str(problem))
        return EXIT_USAGE
    except MemlifeError as error:
        err(str(error))
        return EXIT_USAGE
    except KeyboardInterrupt:
        err("memlife: interrupted")
        return 130
    except Exception as error:
        from temporalio.client import WorkflowFailureError

        if not isinstance(error, WorkflowFailureError):
            raise
        # Verdicts are data: a workflow that fails is memlife or its cluster failing.
        cause = error.cause
        while getattr(cause, "cause", None) is not None:
            cause = cause.cause
        err(
            f"Temporal: a workflow failed ({type(cause).__name__}: {cause}); what was "
            "recorded so far is kept; see the worker's log and the Web UI"
        )
        return EXIT_USAGE


def entry() -> None:
    """The `memlife` executable."""
    end_process(main())


def end_process(code: int) -> NoReturn:
    """Exit with `code`. After a Temporal client was used, the process ends without
    interpreter teardown: the SDK's Rust threads can otherwise abort a finished command
    during finalization (temporalio/sdk-python#300; a stopped `worker.py` exited with
    SIGABRT about one time in ten). Output is flushed first; nothing memlife writes depends
    on atexit handlers."""
    telemetry = sys.modules.get("memlife.stack.telemetry")
    if telemetry is not None:  # spans still batched go out before the process ends
        telemetry.shutdown()
    # Looked up, not imported: a command that never imported the connection module used no
    # client, and importing it now would cost a third of a second for nothing.
    connection = sys.modules.get("memlife.stack.connection")
    if connection is not None and connection.client_used():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
