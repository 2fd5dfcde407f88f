"""memlife's codec endpoint: the Temporal Web UI (and `temporal --codec-endpoint`) reads
memlife's compressed payloads through it as the JSON they hold.

Temporal's codec-server convention: POST `.../decode` or `.../encode` (only the last part
of the path counts, so `/{namespace}/decode` works too; the UI also sends the namespace as
`X-Namespace`) with `{"payloads": [...]}`, payloads in proto3 JSON (metadata values and
data base64), and the same shape comes back. The UI calls it from the browser, so it is a
cross-origin request: answered, preflight included, for the UI's origins only. It decodes
and encodes with CompressingCodec (stack/codec.py) and serves on 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from temporalio.api.common.v1 import Payloads
from temporalio.converter import PayloadCodec

from memlife.errors import UnreachableError
from memlife.stack import DEFAULT_UI_PORT
from memlife.stack.codec import CompressingCodec
from memlife.stack.processes import LOOPBACK

ALLOWED_HEADERS = "content-type, x-namespace, authorization"
MAX_BODY = 256 * 1024 * 1024


def ui_origins(ui_port: int = DEFAULT_UI_PORT) -> list[str]:
    """The origins a Web UI on 127.0.0.1:`ui_port` is opened at."""
    return [f"http://{LOOPBACK}:{ui_port}", f"http://localhost:{ui_port}"]


def create_app(origins: Iterable[str], codec: PayloadCodec | None = None) -> Starlette:
    """The codec endpoint, answering cross-origin requests from `origins` only."""
    allowed = frozenset(origin.rstrip("/") for origin in origins)
    codec = codec or CompressingCodec()

    def cors(request: Request) -> dict[str, str]:
        origin = request.headers.get("origin")
        if origin is None or origin not in allowed:
            return {"Vary": "Origin"}
        return {
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Methods": "POST, OPTIONS",
            "Access-Control-Allow-Headers": ALLOWED_HEADERS,
            "Access-Control-Max-Age": "600",
            "Vary": "Origin",
        }

    def refused(request: Request) -> Response | None:
        origin = request.headers.get("origin")
        if origin is None or origin in allowed:  # no origin: not a browser (the CLI, curl)
            return None
        return PlainTextResponse(
            f"origin {origin} is not allowed: this codec endpoint answers "
            f"{', '.join(sorted(allowed)) or 'no browser origin'} "
            "(memlife codec serve --ui-origin ORIGIN)",
            status_code=403,
            headers={"Vary": "Origin"},
        )

    def bad_request(request: Request, message: str) -> JSONResponse:
        return JSONResponse({"error": message}, status_code=400, headers=cors(request))

    async def endpoint(request: Request) -> Response:
        action = request.path_params["path"].rstrip("/").rsplit("/", 1)[-1]
        if action not in ("encode", "decode"):
            return PlainTextResponse(
                "not found: POST .../decode or .../encode", status_code=404, headers=cors(request)
            )
        denied = refused(request)
        if denied is not None:
            return denied
        if request.method == "OPTIONS":  # the browser's preflight
            return Response(status_code=204, headers=cors(request))
        body = await request.body()
        if len(body) > MAX_BODY:
            return bad_request(request, f"body: {len(body)} bytes, over {MAX_BODY}")
        try:
            payloads = json_format.Parse(body, Payloads())
        except json_format.ParseError as error:
            return bad_request(
                request,
                'body: not {"payloads": [...]} in proto3 JSON (metadata values and data '
                f"base64): {error}",
            )
        try:
            converted = await (codec.decode if action == "decode" else codec.encode)(
                payloads.payloads
            )
        except (zlib.error, ValueError) as error:  # ValueError: protobuf's DecodeError
            return bad_request(request, f"payloads: cannot {action}: {error}")
        return Response(
            json_format.MessageToJson(Payloads(payloads=converted)),
            media_type="application/json",
            headers=cors(request),
        )

    async def health(request: Request) -> Response:
        return PlainTextResponse("ok")

    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/{path:path}", endpoint, methods=["POST", "OPTIONS"]),
        ]
    )


@dataclass
class CodecServer:
    endpoint: str
    origins: list[str]


def _bound_socket(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, port))
    except OSError as error:
        sock.close()
        raise UnreachableError(
            f"codec endpoint: {LOOPBACK}:{port}: cannot listen there ({error.strerror}); "
            "pick another port with --codec-port / --port"
        ) from None
    return sock


@contextlib.contextmanager
def codec_server(
    origins: Sequence[str], port: int = 0, start_timeout: float = 15.0
) -> Iterator[CodecServer]:
    """The codec endpoint on 127.0.0.1:`port` (0: a free one, held from binding on) in a
    thread of this process, for the duration of the block."""
    import uvicorn

    sock = _bound_socket(port)
    server = uvicorn.Server(
        uvicorn.Config(create_app(origins), log_level="warning", lifespan="off", access_log=False)
    )
    # A thread of its own, with its own event loop: the caller's loop runs a worker, and
    # uvicorn leaves signals alone off the main thread (`memlife dev` handles Ctrl-C).
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="codec-endpoint", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        if not server.started:
            raise UnreachableError(
                f"codec endpoint: did not start on {LOOPBACK}:{sock.getsockname()[1]}"
            )
        yield CodecServer(f"http://{LOOPBACK}:{sock.getsockname()[1]}", list(origins))
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def serve(port: int, origins: Sequence[str]) -> None:
    """`memlife codec serve`: the endpoint in the foreground until Ctrl-C."""
    import uvicorn

    sock = _bound_socket(port)
    try:
        uvicorn.Server(uvicorn.Config(create_app(origins), log_level="info", lifespan="off")).run(
            sockets=[sock]
        )
    finally:
        sock.close()
