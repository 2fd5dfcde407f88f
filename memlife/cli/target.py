"""`memlife target serve reference|realstack|mem0|graphiti|letta` and `memlife target check
FILE`."""

from __future__ import annotations

import argparse
import asyncio
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from memlife.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    STATE_DIR,
    add_command,
    ensure_runtime_extras,
    problems_exit,
    unknown_faults,
)
from memlife.errors import Problem

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def add_parsers(commands: Any) -> None:
    from memlife.bundled.reference.faults import FAULTS, RETRIEVAL_MODES

    target = add_command(
        commands,
        "target",
        "target files and the bundled targets",
        "Serve one of the targets memlife bundles, or check that a target "
        "file describes its service correctly.",
    )
    target_commands = target.add_subparsers(
        dest="target_command", required=True, metavar="SUBCOMMAND"
    )
    faults = "\n".join(f"  {name:<26} {text}" for name, text in FAULTS.items())
    serve = add_command(
        target_commands,
        "serve",
        "serve a bundled target over HTTP",
        "Serve a bundled target on loopback until Ctrl-C.\n\nreference: a SQLite model of "
        "the reference runtime (thread checkpoints, vector memory, graph, jobs, summaries, cache, "
        "an asynchronous deletion worker and a nightly job), following the scenario clock "
        "memlife sends (X-Memlife-Now), one clock per run (X-Memlife-Run): many runs can share "
        "one long-lived server. Its target file is scenarios/targets/reference.yaml."
        "\nrealstack: the same surface on Mem0, LangGraph and FalkorDB (its extra installs "
        "on first use); its target file is scenarios/targets/realstack.yaml."
        "\nmem0: Mem0 with its model on (infer=True), the model memlife's scripted model "
        "(docs/scripted-model.md); its target file is scenarios/targets/mem0.yaml."
        "\ngraphiti: Graphiti (graphiti-core) on FalkorDB, its model the scripted model; its "
        "target file is scenarios/targets/graphiti.yaml."
        "\nletta: the Letta server 0.16.8 (its own environment, installed on first use once "
        "per machine in ~/.cache/memlife, root's in /var/cache/memlife, MEMLIFE_CACHE_DIR "
        "moves it; its state in .memlife/letta) on PostgreSQL with pgvector, its agents' "
        "model the scripted model; its target file is scenarios/targets/letta.yaml, "
        "written with this server's base_url to "
        ".memlife/letta/letta.yaml.\n\nFaults of "
        f"the reference target (--fault, repeatable):\n{faults}",
    )
    serve.add_argument(
        "kind",
        choices=["reference", "realstack", "mem0", "graphiti", "letta"],
        help="which target to serve",
    )
    serve.add_argument("--port", type=int, default=8080, help="the port to listen on")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (loopback only, unless --container)",
    )
    serve.add_argument(
        "--container",
        action="store_true",
        help="allow --host beyond loopback (a container's own network only)",
    )
    serve.add_argument(
        "--db",
        default=str(STATE_DIR / "reference-target.db"),
        metavar="FILE",
        help="reference: its SQLite database",
    )
    serve.add_argument(
        "--data-dir",
        default=str(STATE_DIR / "realstack"),
        metavar="DIR",
        help="realstack, mem0, graphiti: where its stores keep their files "
        "(mem0: default .memlife/mem0; graphiti: .memlife/graphiti)",
    )
    serve.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME",
        help="reference: a fault to inject (repeatable; listed above)",
    )
    serve.add_argument(
        "--api-key-env",
        default=None,
        metavar="NAME",
        help="require 'Authorization: Bearer <value of NAME>' on every request",
    )
    serve.add_argument(
        "--service-time",
        default=None,
        metavar="DURATION",
        help="reference: simulated thinking time per turn, e.g. 300ms",
    )
    serve.add_argument(
        "--retrieval",
        choices=RETRIEVAL_MODES,
        default="combined",
        help="reference: which layers answer: the thread, vector memory or "
        "the graph alone, or all three in the answer precedence",
    )
    # Long enough that a deletion or forget right after a write meets the statement still
    # queued, however slowly requests follow each other (memlife/bundled/reference/ingestion.py).
    serve.add_argument(
        "--ingest-delay",
        default="1m",
        metavar="DURATION",
        help="reference: how much later on the run's clock a statement lands "
        "in memory, unless a read of its run comes first (asynchronous "
        "ingestion; 0 writes at once)",
    )
    serve.add_argument(
        "--refuse",
        action="store_true",
        help="reference: refuse as real services do: 403 to a non-member of a "
        "space, 410 once the space is deleted (the target file lists them as "
        "`refused`), instead of answering that there is no access",
    )
    serve.add_argument(
        "--no-access-log",
        dest="access_log",
        action="store_false",
        help="reference: do not print a line per request (method, path, "
        "status, time and the trace id it carried)",
    )
    serve.set_defaults(handler=cmd_target_serve, temporal=False)
    check = add_command(
        target_commands,
        "check",
        "exercise every operation and probe of a target file once",
        "Exercise every operation and probe of a target file once against its service, with "
        "a throwaway tenant: registration, a statement and a question, deletion and its "
        "status, each store's reads. Prints what each request did; exits 2 when an "
        "operation or probe does not work as the file describes it.",
    )
    check.add_argument("file", metavar="FILE", help="the target file")
    check.set_defaults(handler=cmd_target_check, temporal=False)
    from memlife.cli.target_init import add_parser as add_init_parser

    add_init_parser(target_commands, cmd_target_check)


def cmd_target_serve(args: argparse.Namespace) -> int:
    import signal

    # SIGTERM (a service manager, `docker stop`, bench/stacks.py) stops a target as Ctrl-C
    # does. uvicorn drains on it, then raises it again with the handler it found
    # (uvicorn/server.py, capture_signals): Python's default ended the process on the spot,
    # before the blocks that started FalkorDB, PostgreSQL or the scripted model could stop
    # them, and FalkorDB outlived `target serve graphiti`. This handler unwinds them.
    signal.signal(signal.SIGTERM, _interrupt)
    if args.kind == "realstack":
        return _serve_realstack(args)
    if args.kind == "mem0":
        return _serve_mem0(args)
    if args.kind == "graphiti":
        return _serve_graphiti(args)
    if args.kind == "letta":
        return _serve_letta(args)

    from memlife.bundled.reference.app import create_app
    from memlife.bundled.reference.store import ReferenceRuntime
    from memlife.rules.durations import parse_duration

    problems = unknown_faults(args.fault)
    ingest_delay = None
    if args.host not in LOOPBACK_HOSTS and not args.container:
        problems.append(
            Problem(
                "command line",
                "--host",
                "the reference target binds "
                "loopback only (127.0.0.1 or ::1); inside a container, add "
                "--container to listen on its network",
            )
        )
    service_time = 0.0
    if args.service_time:
        try:
            service_time = parse_duration(args.service_time).total_seconds()
        except ValueError as error:
            problems.append(Problem("command line", "--service-time", str(error)))
    try:
        ingest_delay = parse_duration(args.ingest_delay) if args.ingest_delay != "0" else None
    except ValueError as error:
        problems.append(Problem("command line", "--ingest-delay", str(error)))
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            problems.append(
                Problem(
                    "command line",
                    "--api-key-env",
                    f"environment variable {args.api_key_env} is not set",
                )
            )
    if problems:
        return problems_exit(problems)
    runtime = ReferenceRuntime(
        args.db, args.fault, args.retrieval, ingest_delay or timedelta(0), refuse=args.refuse
    )
    faults = ", ".join(args.fault) or "none"
    print(
        f"reference target on http://{args.host}:{args.port} (db {args.db}, faults: {faults},"
        f" retrieval: {args.retrieval},{' refusing,' if args.refuse else ''} ingestion: "
        f"{'+' + args.ingest_delay if ingest_delay else 'synchronous'})",
        flush=True,
    )
    try:
        _serve_until_stopped(
            create_app(runtime, service_time, api_key, access_log=args.access_log), args
        )
    finally:
        runtime.close()
    return EXIT_OK


def _serve_realstack(args: argparse.Namespace) -> int:
    """The reference runtime from real libraries; prints the variables its target file reads
    the stores with, and writes them beside the data as realstack.env."""
    problem = _loopback_port_problem(args, "realstack")
    if problem is not None:
        return problem

    from memlife.bundled.realstack.serve import (
        RealstackUnavailable,
        falkordb_server,
        probe_environment,
        require_extra,
    )

    try:
        require_extra()
    except RealstackUnavailable as error:
        return problems_exit([Problem("realstack target", "extra", str(error))])
    from memlife.bundled.realstack.app import create_app
    from memlife.bundled.realstack.runtime import RealstackRuntime

    data_dir = Path(args.data_dir)
    try:
        with falkordb_server(data_dir / "falkordb") as falkordb_url:
            environment = probe_environment(data_dir, falkordb_url)
            exports = _exports(environment)
            (data_dir / "realstack.env").write_text(exports, encoding="utf-8")
            print(
                "loading Mem0 (local Qdrant, all-MiniLM-L6-v2), LangGraph and FalkorDB ...",
                flush=True,
            )
            runtime = RealstackRuntime(data_dir, falkordb_url)
            print(
                f"realstack target on http://{args.host}:{args.port} (data {data_dir}).\n"
                "Its stores, for scenarios/targets/realstack.yaml (also in "
                f"{data_dir / 'realstack.env'}):\n{exports}",
                end="",
                flush=True,
            )
            try:
                _serve_until_stopped(create_app(runtime), args)
            finally:
                runtime.close()
    except RealstackUnavailable as error:
        print(f"realstack target: {error}", flush=True)
        return EXIT_FAILED
    return EXIT_OK


def _loopback_port_problem(args: argparse.Namespace, kind: str) -> int | None:
    """Exit early (2) when --host is not loopback or --port is taken: before an extra or a
    model loads, not after."""
    import socket

    if args.host not in LOOPBACK_HOSTS:
        return problems_exit(
            [
                Problem(
                    "command line",
                    "--host",
                    f"the {kind} target binds loopback only (127.0.0.1 or ::1)",
                )
            ]
        )
    with socket.socket() as probe:
        try:
            probe.bind((args.host, args.port))
        except OSError as error:
            return problems_exit(
                [
                    Problem(
                        "command line",
                        "--port",
                        f"cannot listen on "
                        f"{args.host}:{args.port} ({error.strerror}); "
                        "choose a free port",
                    )
                ]
            )
    return None


def _serve_mem0(args: argparse.Namespace) -> int:
    """Mem0 with infer=True on the scripted model; prints the variables its target file
    reads the stores with, and writes them beside the data as mem0.env."""
    problem = _loopback_port_problem(args, "mem0")
    if problem is not None:
        return problem
    from memlife.bundled.mem0.serve import Mem0Unavailable, require_extra

    try:
        require_extra()
    except Mem0Unavailable as error:
        return problems_exit([Problem("mem0 target", "extra", str(error))])

    from memlife.bundled.mem0.serve import mem0_stack, probe_environment
    from memlife.bundled.realstack.app import create_app
    from memlife.bundled.reference.app import ServerTotalTiming

    data_dir = _data_dir(args, "mem0")
    environment = probe_environment(data_dir)
    exports = _exports(environment)
    print("loading Mem0 (local Qdrant) and the scripted model (all-MiniLM-L6-v2) ...", flush=True)
    with mem0_stack(data_dir) as stack:
        (data_dir / "mem0.env").write_text(exports, encoding="utf-8")
        print(
            f"mem0 target on http://{args.host}:{args.port} (data {data_dir}; scripted "
            f"model {stack.model.base_url}).\nIts stores, for scenarios/targets/mem0.yaml "
            f"(also in {data_dir / 'mem0.env'}):\n{exports}",
            end="",
            flush=True,
        )
        app = create_app(stack.runtime, "memlife mem0 target")
        # `Server-Timing: total;dur=<ms>` on every response: the time from the request's
        # arrival in this application (memlife's HTTP surface over Mem0's library) to its
        # response, as the reference target reports it. Mem0 itself emits none (neither its
        # library nor its own REST server); this measures around its calls, changing none.
        # memlife records it beside its own latency of each turn (BENCHMARKS.md, "memlife
        # against a plain runner on a real server").
        app.add_middleware(ServerTotalTiming)
        _serve_until_stopped(app, args)
        calls = stack.model.calls()
    _print_model_calls(calls)
    return EXIT_OK


def _serve_graphiti(args: argparse.Namespace) -> int:
    """Graphiti on FalkorDB with the scripted model; prints the variables its target file
    reads the stores with, and writes them beside the data as graphiti.env."""
    problem = _loopback_port_problem(args, "graphiti")
    if problem is not None:
        return problem
    from memlife.bundled.graphiti.serve import GraphitiUnavailable, require_extra

    try:
        require_extra()
    except GraphitiUnavailable as error:
        return problems_exit([Problem("graphiti target", "extra", str(error))])

    from memlife.bundled.graphiti.app import create_app
    from memlife.bundled.graphiti.serve import graphiti_stack

    data_dir = _data_dir(args, "graphiti")
    print("loading FalkorDB, Graphiti and the scripted model (all-MiniLM-L6-v2) ...", flush=True)
    try:
        with graphiti_stack(data_dir) as stack:
            exports = _exports(stack.environment)
            (data_dir / "graphiti.env").write_text(exports, encoding="utf-8")
            print(
                f"graphiti target on http://{args.host}:{args.port} (data {data_dir}; "
                f"scripted model {stack.model.base_url}).\nIts stores, for "
                f"scenarios/targets/graphiti.yaml (also in {data_dir / 'graphiti.env'}):\n"
                f"{exports}",
                end="",
                flush=True,
            )
            _serve_until_stopped(create_app(stack.runtime), args)
            calls = stack.model.calls()
    except GraphitiUnavailable as error:
        print(f"graphiti target: {error}", flush=True)
        return EXIT_FAILED
    _print_model_calls(calls)
    return EXIT_OK


def _serve_letta(args: argparse.Namespace) -> int:
    """The Letta server on the scripted model until Ctrl-C; writes the shipped letta.yaml
    with this server's base_url, and the variables it and a direct read of the database
    need, beside the data."""
    import time

    problem = _loopback_port_problem(args, "letta")
    if problem is not None:
        return problem
    from memlife.bundled.letta.serve import LettaUnavailable, letta_stack, require_extra

    password = None
    if args.api_key_env:
        password = os.environ.get(args.api_key_env)
        if not password:
            return problems_exit(
                [
                    Problem(
                        "command line",
                        "--api-key-env",
                        f"environment variable {args.api_key_env} is not set",
                    )
                ]
            )
    try:
        require_extra()
    except LettaUnavailable as error:
        return problems_exit([Problem("letta target", "extra", str(error))])

    data_dir = _data_dir(args, "letta")
    print("starting the scripted model, PostgreSQL and the Letta server ...", flush=True)
    try:
        with letta_stack(data_dir, args.port, password) as stack:
            server = stack.server
            exports = (
                f"export LETTA_API_KEY={server.password}\n"
                f"export LETTA_DATABASE_URL={server.database_url}\n"
            )
            (data_dir / "letta.env").write_text(exports, encoding="utf-8")
            shipped = Path(__file__).resolve().parents[2] / "scenarios/targets/letta.yaml"
            target_file = data_dir / "letta.yaml"
            if shipped.exists():  # a checkout; an installed wheel has no scenarios/
                target_file.write_text(
                    _with_base_url(shipped.read_text(encoding="utf-8"), server.base_url),
                    encoding="utf-8",
                )
            print(
                f"letta target on {server.base_url} (Letta server PID {server.pid}, data "
                f"{data_dir}; scripted model {stack.model_base_url}).\nIts target file: "
                f"{target_file}; its key and database (also in {data_dir / 'letta.env'}):\n"
                f"{exports}",
                end="",
                flush=True,
            )
            # Ctrl-C or SIGTERM (cmd_target_serve): leave through the context managers,
            # which stop the Letta server and PostgreSQL by their PIDs.
            try:
                while server.running():
                    time.sleep(1)
                print(
                    f"letta target: the Letta server exited; its log is {data_dir / 'letta.log'}",
                    flush=True,
                )
            except KeyboardInterrupt:
                pass
            calls = stack.model_calls()
    except LettaUnavailable as error:
        print(f"letta target: {error}", flush=True)
        return EXIT_FAILED
    _print_model_calls(calls)
    return EXIT_OK


def _exports(environment: dict[str, str]) -> str:
    """Shell lines exporting a stack's variables, as it prints them and writes them."""
    return "".join(f"export {name}={value}\n" for name, value in environment.items())


def _data_dir(args: argparse.Namespace, kind: str) -> Path:
    """--data-dir, or the kind's own directory under .memlife/ when it was not given (its
    default names the realstack's)."""
    return Path(
        args.data_dir if args.data_dir != str(STATE_DIR / "realstack") else STATE_DIR / kind
    )


def _print_model_calls(calls: list[Any]) -> None:
    from memlife.bundled.model.serve import summary

    kinds = ", ".join(f"{kind} {count}" for kind, count, _ in summary(calls))
    print(
        f"the scripted model answered {len(calls)} call(s){': ' + kinds if kinds else ''}",
        flush=True,
    )


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _serve_until_stopped(app: Any, args: argparse.Namespace) -> None:
    """uvicorn on --host and --port until Ctrl-C or SIGTERM, after which it has drained;
    then the caller's blocks stop what the target started, and the command exits 0."""
    import contextlib

    import uvicorn

    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


def _with_base_url(text: str, base_url: str) -> str:
    """A target file's text with its top-level base_url replaced, nothing else touched."""
    import re

    return re.sub(r"^base_url:.*$", f"base_url: {base_url}", text, count=1, flags=re.MULTILINE)


def cmd_target_check(args: argparse.Namespace) -> int:
    from rich.table import Table

    from memlife.cli.common import check_target_reachable
    from memlife.cli.display import output_console
    from memlife.rules.target import load_target
    from memlife.targets.check import check_target

    target = load_target(args.file)  # bad files: one line per problem, exit 2 (main)
    ensure_runtime_extras([target], recording=False)  # a check records nothing
    missing = [name for name in target.secret_names() if name not in os.environ]
    if missing:
        return problems_exit(
            [
                Problem(
                    args.file,
                    "headers",
                    f"environment variable(s) "
                    f"{', '.join(missing)} not set; export them before "
                    "checking",
                )
            ]
        )
    check_target_reachable(args.file, target.base_url)
    check = asyncio.run(check_target(target))
    console = output_console()
    table = Table(title=f"{args.file}: {target.name} at {target.base_url}", title_justify="left")
    for column in ("operation", "request", "", "result"):
        table.add_column(column, overflow="fold")
    for result in check.results:
        mark = (
            "[green]ok[/green]"
            if result.ok
            else "[yellow]note[/yellow]"
            if result.optional
            else "[red]FAIL[/red]"
        )
        table.add_row(result.operation, result.request, mark, result.detail)
    console.print(table)
    if check.misconfigured:
        console.print(
            f"[red]{len(check.misconfigured)} operation(s) or probe(s) do not work "
            "as the file describes them[/red]: fix the fields named above"
        )
        return EXIT_USAGE
    console.print("ok: every operation and probe works as the file describes it")
    return EXIT_OK
