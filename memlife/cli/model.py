"""`memlife model serve`: the scripted model, an OpenAI-compatible server that real memory
stacks are pointed at to run their LLM paths offline and deterministically."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from memlife.cli.common import EXIT_OK, add_command, problems_exit
from memlife.errors import Problem


def add_parsers(commands: Any) -> None:
    model = add_command(
        commands,
        "model",
        "the scripted model (an offline OpenAI API)",
        "The scripted model: a deterministic, OpenAI-compatible server "
        "(chat completions, tool calls, streaming, embeddings) that answers "
        "the prompts of the memory stacks memlife knows by documented rules "
        "(docs/scripted-model.md).",
    )
    sub = model.add_subparsers(dest="model_command", required=True, metavar="SUBCOMMAND")
    serve = add_command(
        sub,
        "serve",
        "serve the scripted model on loopback",
        "Serve the scripted model on 127.0.0.1 until Ctrl-C. Point a stack's OpenAI client "
        "at the printed base URL with any API key. Embeddings come from all-MiniLM-L6-v2 "
        "(its extra installs on first use). An unknown prompt is answered with a 400 that "
        "names its caller. At the end, a summary of the calls by prompt kind.",
    )
    serve.add_argument("--port", type=int, default=8070, help="the port to listen on")
    serve.add_argument(
        "--calls",
        default=None,
        metavar="FILE",
        help="write every call (kind, caller, model, milliseconds) to FILE as "
        "JSON lines when stopped",
    )
    serve.set_defaults(handler=cmd_model_serve, temporal=False)


def cmd_model_serve(args: argparse.Namespace) -> int:
    import signal
    import threading

    from rich.console import Console
    from rich.table import Table

    from memlife.bundled.model.serve import ModelUnavailable, scripted_model, summary
    from memlife.stack import extras

    try:
        from memlife.bundled.model.serve import bound_socket

        bound_socket(port=args.port).close()
    except OSError as error:
        return problems_exit(
            [
                Problem(
                    "command line",
                    "--port",
                    f"cannot listen on "
                    f"127.0.0.1:{args.port} ({error.strerror}); choose a "
                    "free port",
                )
            ]
        )
    extras.ensure("model", "the scripted model's embeddings")
    console = Console(stderr=True)
    console.print("loading all-MiniLM-L6-v2 ...")
    from memlife import embeddings

    embeddings.shared().embed(["warm-up"])  # the first client should not wait for it
    try:
        with scripted_model(port=args.port) as model:
            console.print(
                f"scripted model on {model.base_url} (any API key; calls: "
                f"{model.base_url.removesuffix('/v1')}/calls). Ctrl-C stops it."
            )
            stop = threading.Event()  # Ctrl-C, or a SIGTERM from whoever started it
            for signum in (signal.SIGINT, signal.SIGTERM):
                signal.signal(signum, lambda *_: stop.set())
            stop.wait()
            calls = model.calls()
    except ModelUnavailable as error:
        return problems_exit([Problem("scripted model", "server", str(error))])
    table = Table(title=f"{len(calls)} call(s)")
    for column in ("prompt kind", "calls", "mean ms"):
        table.add_column(column, justify="left" if column == "prompt kind" else "right")
    for kind, count, mean in summary(calls):
        table.add_row(kind, str(count), f"{mean:.1f}")
    console.print(table)
    if args.calls:
        with Path(args.calls).open("w", encoding="utf-8") as out:
            out.writelines(json.dumps(asdict(call)) + "\n" for call in calls)
    return EXIT_OK
