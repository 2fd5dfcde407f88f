"""Target activities against real HTTP servers: the reference target and a misbehaving one.

The misbehaving server is a real uvicorn process thread on a loopback port; only what is
*around* the code under test is synthetic.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse, Response
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.target import register_tenant, say
from memlife.lifecycle import RegisterRequest, SayRequest
from memlife.targets import http
from memlife.targets.config import Target, parse_target


def misbehaving_app() -> FastAPI:
    app = FastAPI()

    @app.post("/ok")
    def ok() -> dict[str, str]:
        return {"reply": "fine"}

    @app.post("/boom")
    def boom() -> Response:
        return PlainTextResponse("upstream exploded", status_code=503)

    @app.post("/html")
    def html() -> Response:
        return Response("<html><body>Login</body></html>", media_type="text/html")

    @app.post("/huge")
    def huge() -> Response:
        return Response(b'{"reply": "' + b"x" * 3_000_000 + b'"}', media_type="application/json")

    @app.post("/missing")
    def missing() -> Response:
        return PlainTextResponse("no such user", status_code=404)

    @app.post("/shape")
    def shape() -> dict[str, Any]:
        return {"answer": "wrong field"}

    @app.post("/slow")
    async def slow() -> dict[str, str]:
        await asyncio.sleep(3)
        return {"reply": "late"}

    return app


@pytest.fixture(scope="module")
def misbehaving_url() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(misbehaving_app(), host="127.0.0.1", port=port,
                                           log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def target_for(base_url: str, path: str, timeout: str = "10s") -> Target:
    return parse_target({
        "name": "misbehaving", "base_url": base_url, "timeout": timeout,
        "max_body_bytes": 1_048_576,
        "operations": {"say": {"path": path, "json": {"m": "{message}"},
                               "extract": {"reply": "/reply"}}},
    })


@pytest.mark.parametrize(
    ("path", "error", "retryable", "text"),
    [
        ("/boom", http.TargetServerError, True, "HTTP 503"),
        ("/html", http.TargetBadResponse, True, "not JSON (content-type text/html"),
        ("/huge", http.TargetBadResponse, True, "exceeds the cap of 1048576 bytes"),
        ("/missing", http.TargetClientError, False, "HTTP 404"),
        ("/shape", http.TargetBadResponse, True, "no 'reply' at '/reply'"),
    ],
)
async def test_misbehaviour_raises_precise_errors(
    misbehaving_url: str, path: str, error: type[http.TargetError], retryable: bool, text: str,
) -> None:
    target = target_for(misbehaving_url, path)
    with pytest.raises(error) as caught:
        await http.call(target, target.operations.say, {"message": "hola"})
    assert caught.value.retryable is retryable
    assert text in str(caught.value)


async def test_timeout_and_refused_connection(misbehaving_url: str) -> None:
    target = target_for(misbehaving_url, "/slow", timeout="500ms")
    with pytest.raises(http.TargetTimeout, match="no answer within 0.5s"):
        await http.call(target, target.operations.say, {"message": "hola"})
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    refused = target_for(f"http://127.0.0.1:{closed_port}", "/ok")
    with pytest.raises(http.TargetUnreachable):
        await http.call(refused, refused.operations.say, {"message": "hola"})


async def test_latency_is_measured_and_now_header_sent(misbehaving_url: str) -> None:
    target = target_for(misbehaving_url, "/ok")
    response = await http.call(target, target.operations.say, {"message": "hola"},
                               scenario_now="2026-12-03T00:00:00Z")
    assert response.fields == {"reply": "fine"}
    assert 0 < response.latency_ms < 5000


async def test_say_activity_maps_errors_to_retryable_or_not(misbehaving_url: str) -> None:
    env = ActivityEnvironment()
    for path, non_retryable in (("/boom", False), ("/missing", True)):
        request = SayRequest(target=target_for(misbehaving_url, path), phone="+12015550101",
                             user_id="u", message="hola", scenario_now="2026-12-03T00:00:00Z")
        with pytest.raises(ApplicationError) as caught:
            await env.run(say, request)
        assert caught.value.non_retryable is non_retryable
        assert caught.value.type in ("TargetServerError", "TargetClientError")


async def test_register_and_say_against_the_reference_target(clean_target: Target) -> None:
    env = ActivityEnvironment()
    registered = await env.run(register_tenant, RegisterRequest(
        target=clean_target, phone="+12025550188", tenant_alias="t",
        scenario_now="2026-12-03T00:00:00Z"))
    assert registered.user_id.startswith("u_") and registered.status == 200
    said = await env.run(say, SayRequest(
        target=clean_target, phone="+12025550188", user_id=registered.user_id,
        message="Mi color favorito es ámbar.", scenario_now="2026-12-03T00:00:00Z"))
    assert said.status == 200 and said.reply
    asked = await env.run(say, SayRequest(
        target=clean_target, phone="+12025550188", user_id=registered.user_id,
        message="¿Cuál es mi color favorito?", scenario_now="2026-12-03T00:00:00Z"))
    assert "ámbar" in asked.reply and asked.latency_ms > 0
