"""`memlife codec serve`: the codec endpoint through which the Temporal Web UI reads
memlife's compressed payloads as JSON (memlife/stack/codec_server.py)."""

from __future__ import annotations

import argparse
from typing import Any

from memlife.cli.common import EXIT_OK, add_command, err, problems_exit
from memlife.errors import Problem


def add_parsers(commands: Any) -> None:
    from memlife.stack import DEFAULT_CODEC_PORT, DEFAULT_UI_PORT

    codec = add_command(
        commands,
        "codec",
        "the codec endpoint the Temporal Web UI decodes payloads with",
        "memlife compresses payloads over 64 KB; the Temporal Web UI shows those as bytes "
        "unless it decodes them through memlife's codec endpoint (Temporal's codec-server "
        "convention). `memlife dev` starts one for its Web UI; this serves one for a Web UI "
        "of your own.",
    )
    sub = codec.add_subparsers(dest="codec_command", required=True, metavar="SUBCOMMAND")
    serve = add_command(
        sub,
        "serve",
        "serve the codec endpoint on loopback",
        "Serve the codec endpoint on 127.0.0.1 until Ctrl-C: POST .../decode and "
        '.../encode with {"payloads": [...]} (proto3 JSON), answered for browsers on the Web '
        "UI's origins only (CORS). Point the UI at it: in the UI's Data Encoder settings, or "
        "`temporal server start-dev --ui-codec-endpoint URL`, or a UI server's "
        "TEMPORAL_CODEC_ENDPOINT; the CLI takes it as `temporal workflow show "
        "--codec-endpoint URL`.",
    )
    serve.add_argument("--port", type=int, default=DEFAULT_CODEC_PORT, help="the port on 127.0.0.1")
    serve.add_argument(
        "--ui-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a Web UI origin the endpoint answers, e.g. http://127.0.0.1:8233 (repeatable; "
        f"default: http://127.0.0.1:{DEFAULT_UI_PORT} and http://localhost:{DEFAULT_UI_PORT})",
    )
    serve.set_defaults(handler=cmd_codec_serve, temporal=False)


def cmd_codec_serve(args: argparse.Namespace) -> int:
    from memlife.stack.codec_server import serve, ui_origins

    problems = [
        Problem("command line", "--ui-origin", f"{origin!r}: not an origin like http://host:port")
        for origin in args.ui_origin
        if not origin.startswith(("http://", "https://")) or "/" in origin.split("://", 1)[1]
    ]
    if problems:
        return problems_exit(problems)
    origins = args.ui_origin or ui_origins()
    err(
        f"memlife codec: http://127.0.0.1:{args.port} (decode and encode), for "
        f"{', '.join(origins)}; Ctrl-C stops it"
    )
    serve(args.port, origins)
    return EXIT_OK
