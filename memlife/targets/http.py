"""Talking to a target over HTTP: templating, bounded bodies, extraction, precise errors.

Used only inside activities. One pooled `aiohttp.ClientSession` per worker process and base
URL; latency is measured around the HTTP exchange alone (send to last body byte).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import random
import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import aiohttp
import certifi
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from memlife.rules.target import PLACEHOLDER, EnvRef, HeaderValue, Operation, Target
from memlife.rules.tracing import traceparent
from memlife.targets.lanes import Lane, LaneClosed

NOW_HEADER = "X-Memlife-Now"
TRACE_HEADER = "traceparent"
# Which run a request belongs to, so that a simulated target keeps each run's background
# work on that run's clock (docs/simulated-targets.md).
RUN_HEADER = "X-Memlife-Run"
_BODY_EXCERPT = 300


class TargetError(Exception):
    """A target call that did not produce a usable answer. `retryable` says if trying again
    could help (transport errors, timeouts, 5xx, 429) or not (4xx, configuration)."""

    retryable = True
    kind = "target-error"

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status, when the target answered at all
        self.traceparent: str | None = None  # of the request, when one was sent


class TargetUnreachable(TargetError):
    kind = "unreachable"


class TargetTimeout(TargetError):
    kind = "timeout"


class TargetServerError(TargetError):
    kind = "server-error"


class TargetClientError(TargetError):
    retryable = False
    kind = "client-error"


class TargetBadResponse(TargetError):
    kind = "bad-response"


class MissingSecret(TargetError):
    retryable = False
    kind = "missing-secret"


def required_env(name: str, what: str) -> str:
    """A probe's URL, key or directory, read on the worker from the variable the target file
    names; its value never reaches an error message."""
    value = os.environ.get(name)
    if not value:
        raise MissingSecret(f"environment variable {name} ({what}) is not set on the worker")
    return value


@dataclass(frozen=True)
class Response:
    status: int
    latency_ms: float
    data: Any
    fields: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)  # Server-Timing, ms per stage
    traceparent: str | None = None  # what the request carried (rules/tracing.py)
    # The status is one the operation lists as `refused`: an answer that holds nothing.
    refused: bool = False


def parse_server_timing(header: str | None) -> dict[str, float]:
    """`retrieval;dur=1.2, assembly;desc="x";dur=0.3` → {retrieval: 1.2, assembly: 0.3}.

    The W3C Server-Timing syntax: metrics separated by commas, parameters by semicolons;
    metrics without a duration carry no timing and are left out, a repeated name adds up.
    """
    timings: dict[str, float] = {}
    for metric in (header or "").split(","):
        name, *params = [part.strip() for part in metric.split(";")]
        if not name:
            continue
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "dur":
                try:
                    duration = float(value.strip().strip('"'))
                except ValueError:
                    break
                timings[name] = timings.get(name, 0.0) + duration
                break
    return timings


def render(template: str, variables: dict[str, Any], *, url: bool = False) -> str:
    def substitute(match: Any) -> str:
        value = str(variables[match.group(1)])
        return quote(value, safe="") if url else value

    return PLACEHOLDER.sub(substitute, template)


def _query_values(template: str, variables: dict[str, Any]) -> list[str]:
    """A query parameter's values; a lone placeholder holding a list repeats the parameter."""
    value = render_body(template, variables)  # a lone placeholder keeps its value's type
    return [str(item) for item in value] if isinstance(value, list) else [str(value)]


def render_body(node: Any, variables: dict[str, Any]) -> Any:
    if isinstance(node, str):
        whole = PLACEHOLDER.fullmatch(node)
        if whole:  # a lone placeholder keeps its value's type
            return variables[whole.group(1)]
        return render(node, variables)
    if isinstance(node, dict):
        return {key: render_body(value, variables) for key, value in node.items()}
    if isinstance(node, list):
        return [render_body(item, variables) for item in node]
    return node


def resolve_header(value: HeaderValue) -> str:
    if isinstance(value, EnvRef):
        secret = os.environ.get(value.env)
        if secret is None:
            raise MissingSecret(
                f"environment variable {value.env} is not set on the worker; the target file "
                "names it for a header. Set it where the worker runs and retry."
            )
        return value.prefix + secret
    return value


@functools.lru_cache(maxsize=1024)
def _pointer_tokens(pointer: str) -> tuple[str, ...]:
    """A pointer's tokens, unescaped once: every record of every store read is addressed by
    the same few pointers."""
    return tuple(raw.replace("~1", "/").replace("~0", "~") for raw in pointer[1:].split("/"))


def json_pointer(document: Any, pointer: str) -> Any:
    """RFC 6901. Raises KeyError naming the pointer when the path does not exist (or the
    pointer is not one: a non-empty pointer starts with `/`)."""
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        raise KeyError(pointer)
    node = document
    for token in _pointer_tokens(pointer):
        if isinstance(node, list):
            # An array index is 0 or digits without a leading zero ("-" is past the end).
            if not token.isdigit() or token != str(int(token)) or int(token) >= len(node):
                raise KeyError(pointer)
            node = node[int(token)]
        elif isinstance(node, dict):
            if token not in node:
                raise KeyError(pointer)
            node = node[token]
        else:
            raise KeyError(pointer)
    return node


def is_pointer(expression: str) -> bool:
    return expression == "" or expression.startswith("/")


@functools.lru_cache(maxsize=256)
def _jmespath(expression: str) -> Any:
    import jmespath

    return jmespath.compile(expression)


def extract(document: Any, expression: str) -> Any:
    """A JSON pointer (`/data/0/id`, RFC 6901) or a JMESPath expression (`data[0].id`,
    `results[?score > `0.5`].memory`). Raises KeyError naming the expression when the
    document has nothing there (JMESPath's null counts as nothing)."""
    if is_pointer(expression):
        return json_pointer(document, expression)
    value = _jmespath(expression).search(document)
    if value is None:
        raise KeyError(expression)
    return value


@dataclass(frozen=True)
class _Pooled:
    """A target's session and the proxy its requests go through (None: straight)."""

    session: aiohttp.ClientSession
    proxy: URL | None
    proxy_auth: aiohttp.BasicAuth | None


# One pooled session per worker process, event loop and base URL; a session belongs to the
# loop it was made on (tests run several loops in one process).
_clients: dict[tuple[int, str, float], _Pooled] = {}
# Each target's requests in flight, per loop: `max_concurrency` of them (lanes.py).
_lanes: dict[tuple[int, str, int], Lane[_Job, tuple[aiohttp.ClientResponse, bytes, float]]] = {}


@dataclass(frozen=True)
class _Job:
    """One request as a lane's sender sends it."""

    client: _Pooled
    method: str
    url: URL
    params: list[tuple[str, str]] | None
    body: Any
    headers: dict[str, str]
    max_body_bytes: int


def _lane_for(target: Target) -> Lane[_Job, tuple[aiohttp.ClientResponse, bytes, float]]:
    key = (id(asyncio.get_running_loop()), target.base_url, target.max_concurrency)
    lane = _lanes.get(key)
    if lane is None or not lane.open:
        lane = _lanes[key] = Lane(target.max_concurrency, _send)
    return lane


async def _send(job: _Job) -> tuple[aiohttp.ClientResponse, bytes, float]:
    """(response, body, latency in ms)."""
    # The latency recorded is the exchange on the wire: from the moment the request's
    # headers are written to just after the response's last byte is read, not the
    # client's own work before it.
    marks: dict[str, float] = {}
    started = time.perf_counter()
    async with job.client.session.request(
        job.method,
        job.url,
        params=job.params,
        json=job.body,
        headers=job.headers,
        allow_redirects=False,
        proxy=job.client.proxy,
        proxy_auth=job.client.proxy_auth,
        trace_request_ctx=marks,
    ) as response:
        payload = await _read_capped(response, job.max_body_bytes)
    return response, payload, (time.perf_counter() - marks.get("sent", started)) * 1000


async def mark_headers_sent(
    _session: aiohttp.ClientSession, context: Any, _params: aiohttp.TraceRequestHeadersSentParams
) -> None:
    """aiohttp trace hook: when the request's headers were written, as `sent` in its
    trace_request_ctx. A recorded latency starts there (the bench's plain runner times
    its requests with the same hook)."""
    context.trace_request_ctx["sent"] = time.perf_counter()


def _tls_context() -> ssl.SSLContext:
    """Certificates verified against SSL_CERT_FILE or SSL_CERT_DIR when set, else certifi's
    bundle: what the httpx client trusted, so an https target that worked still does."""
    return _tls_context_from(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.cache
def _tls_context_from(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    """One per trust store and process: loading a bundle of certificates costs more CPU
    than a request (each new target session asked for one)."""
    if cafile or capath:
        return ssl.create_default_context(cafile=cafile, capath=capath)
    return ssl.create_default_context(cafile=certifi.where())


def _env_proxy(base_url: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy HTTP(S)_PROXY names for the target, unless NO_PROXY exempts it: what the
    httpx client honoured. Read once per session: aiohttp's `trust_env` reads the
    environment and ~/.netrc again for every request, each in a thread of its own."""
    try:
        return get_env_proxy_for_url(URL(base_url))
    except LookupError:
        return None, None


def client_for(target: Target) -> _Pooled:
    """The worker's pooled session for this target (created on first use). aiohttp, not
    httpx: a response waits less for a busy worker before its latency is taken (about 1 ms
    less at the median under full load, side by side), and a request costs a fifth of the
    CPU (BENCHMARKS.md). No cookie jar: a cookie one tenant's answer sets must not ride
    along on another tenant's request. No ~/.netrc either: a target's credentials come
    from its target file, through environment variables."""
    loop = asyncio.get_running_loop()
    key = (id(loop), target.base_url, target.timeout.total_seconds())
    client = _clients.get(key)
    if client is None or client.session.closed:
        trace = aiohttp.TraceConfig()
        trace.on_request_headers_sent.append(mark_headers_sent)
        session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=target.timeout.total_seconds()),
            connector=aiohttp.TCPConnector(limit=64, ssl=_tls_context()),
            cookie_jar=aiohttp.DummyCookieJar(),
            trace_configs=[trace],
        )
        client = _clients[key] = _Pooled(session, *_env_proxy(target.base_url))
    return client


async def close_clients() -> None:
    """Close the lanes and sessions of the running loop (those of other loops are theirs to
    close); a request still waiting for a sender fails as unreachable."""
    loop = id(asyncio.get_running_loop())
    for key in [key for key in _lanes if key[0] == loop]:
        await _lanes.pop(key).close()
    for key in [key for key in _clients if key[0] == loop]:
        await _clients.pop(key).session.close()


async def call(
    target: Target,
    operation: Operation,
    variables: dict[str, Any],
    *,
    scenario_now: str | None = None,
    run: str = "",
) -> Response:
    """One request as the operation describes it; raises a TargetError subclass on failure.
    Each request carries a trace context of its own (a `traceparent` the target file sets
    itself is kept)."""
    headers = {
        name: resolve_header(v) for name, v in {**target.headers, **operation.headers}.items()
    }
    if scenario_now:
        headers[NOW_HEADER] = scenario_now
    if run:
        headers[RUN_HEADER] = run
    with _request_span(operation) as span_traceparent:
        sent_trace = next(
            (value for name, value in headers.items() if name.lower() == TRACE_HEADER), None
        )
        if sent_trace is None:
            sent_trace = headers[TRACE_HEADER] = span_traceparent
        try:
            return await _exchange(target, operation, variables, headers, sent_trace)
        except TargetError as error:
            error.traceparent = sent_trace
            raise


# The tracer target requests are spans of, when OpenTelemetry is on (stack/telemetry.py).
_request_tracer: Any = None
# Trace and span ids need to be unique, not secret: drawn as OpenTelemetry's own
# RandomIdGenerator draws them, from a generator of this module's own (seeded from the OS,
# untouched by whoever seeds `random`). secrets.token_hex read the OS's random source twice
# per request, 2 % of a busy worker's samples. Seeded again in a forked child, as `random`'s
# own generator is: processes forked from one that imported memlife (a pre-forking server,
# tests/forked.py) would otherwise all draw the same ids.
_ids = random.Random()
os.register_at_fork(after_in_child=_ids.seed)


def trace_requests_with(tracer: Any) -> None:
    """Make every target request a span of `tracer` (None: fresh ids, no span)."""
    global _request_tracer
    _request_tracer = tracer


@contextlib.contextmanager
def _request_span(operation: Operation) -> Iterator[str]:
    """The traceparent of one request: its OpenTelemetry span's (a child of the current
    span, the activity's), or fresh random ids when no tracer is on."""
    if _request_tracer is None:
        yield traceparent(f"{_ids.getrandbits(128) or 1:032x}", f"{_ids.getrandbits(64) or 1:016x}")
        return
    from opentelemetry.trace import SpanKind

    with _request_tracer.start_as_current_span(
        f"target {operation.method} {operation.path}",
        kind=SpanKind.CLIENT,
        attributes={"http.request.method": operation.method, "url.path": operation.path},
    ) as span:
        context = span.get_span_context()
        yield traceparent(f"{context.trace_id:032x}", f"{context.span_id:016x}")


def _url(base_url: str, path: str) -> URL:
    """The base URL's path, then the operation's (as httpx joins them): a target served
    under a prefix keeps it. The path is already percent-encoded by `render`."""
    return URL(f"{base_url.rstrip('/')}/{path.lstrip('/')}", encoded=True)


async def _exchange(
    target: Target,
    operation: Operation,
    variables: dict[str, Any],
    headers: dict[str, str],
    sent_trace: str,
) -> Response:
    path = render(operation.path, variables, url=True)
    params = [
        (name, value)
        for name, template in operation.query.items()
        for value in _query_values(template, variables)
    ]
    body = render_body(operation.body, variables) if operation.body is not None else None
    job = _Job(
        client_for(target),
        operation.method,
        _url(target.base_url, path),
        params or None,
        body,
        headers,
        target.max_body_bytes,
    )
    try:
        # Waiting for the lane is not the target's latency.
        response, payload, latency_ms = await _lane_for(target).submit(job)
    except TimeoutError as exc:
        raise TargetTimeout(
            f"{operation.method} {path}: no answer within {target.timeout.total_seconds():g}s "
            f"({type(exc).__name__})"
        ) from None
    except (aiohttp.ClientError, LaneClosed) as exc:
        raise TargetUnreachable(
            f"{operation.method} {target.base_url}{path}: {type(exc).__name__}: {exc or 'failed'}"
        ) from None
    excerpt = payload[:_BODY_EXCERPT].decode("utf-8", "replace")
    status = response.status
    if status in operation.refused:
        # Refused (a non-member's 403, a deleted user's 404): nothing to extract.
        return Response(
            status=status,
            latency_ms=latency_ms,
            data=None,
            fields={},
            traceparent=sent_trace,
            refused=True,
        )
    if status not in operation.success:
        message = f"{operation.method} {path} answered HTTP {status}: {excerpt!r}"
        if status >= 500 or status in (408, 425, 429):
            raise TargetServerError(message, status)
        raise TargetClientError(message, status)
    data: Any = None
    if payload:
        try:
            data = json.loads(payload)
        except (UnicodeDecodeError, json.JSONDecodeError):
            content_type = response.headers.get("content-type", "?")
            raise TargetBadResponse(
                f"{operation.method} {path} answered HTTP {status} with a body that is not JSON "
                f"(content-type {content_type}): {excerpt!r}"
            ) from None
    fields: dict[str, Any] = {}
    for name, pointer in operation.extract.items():
        try:
            fields[name] = extract(data, pointer)
        except KeyError:
            raise TargetBadResponse(
                f"{operation.method} {path}: the response has no {name!r} at {pointer!r}: "
                f"{excerpt!r}"
            ) from None
    return Response(
        status=status,
        latency_ms=latency_ms,
        data=data,
        fields=fields,
        # A response may carry several Server-Timing headers (the reference target's
        # stages, and its total): they read as one list.
        timings=parse_server_timing(", ".join(response.headers.getall("server-timing", ()))),
        traceparent=sent_trace,
    )


async def _read_capped(response: aiohttp.ClientResponse, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise TargetBadResponse(
                f"response body exceeds the cap of {limit} bytes (max_body_bytes in the target "
                "file); refusing to read more"
            )
        chunks.append(chunk)
    return b"".join(chunks)
