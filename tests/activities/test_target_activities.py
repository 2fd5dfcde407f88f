"""Target activities against real HTTP servers: the reference target and a misbehaving one.

The misbehaving server is a real uvicorn process thread on a loopback port; only what is
*around* the code under test is synthetic.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from temporalio.testing import ActivityEnvironment

from memlife.activities.stores import inspect_stores
from memlife.activities.target import converse, register_tenant
from memlife.contracts import ConverseRequest, InspectRequest, RegisterRequest
from memlife.rules.target import Target, parse_target
from memlife.targets import http
from tests.servers import serve_in_thread


def misbehaving_app() -> FastAPI:
    app = FastAPI()

    @app.post("/ok")
    def ok() -> dict[str, str]:
        return {"reply": "fine"}

    @app.post("/timed")
    def timed() -> Response:
        # Two Server-Timing headers, as the reference target sends its stages and its total.
        response = JSONResponse({"reply": "fine"})
        response.headers.append("server-timing", "retrieval;dur=1.5, assembly;dur=0.5")
        response.headers.append("server-timing", "total;dur=2.25")
        return response

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

    @app.post("/records")
    def records() -> dict[str, Any]:
        return {"records": [{"text": "Llámame al 612 345 678 después de las ocho"}]}

    @app.post("/slow")
    async def slow() -> dict[str, str]:
        await asyncio.sleep(3)
        return {"reply": "late"}

    return app


@pytest.fixture(scope="module")
def misbehaving_url() -> Iterator[str]:
    with serve_in_thread(misbehaving_app()) as url:
        yield url


def target_for(base_url: str, path: str, timeout: str = "10s") -> Target:
    return parse_target(
        {
            "name": "misbehaving",
            "base_url": base_url,
            "timeout": timeout,
            "max_body_bytes": 1_048_576,
            "operations": {
                "say": {"path": path, "json": {"m": "{message}"}, "extract": {"reply": "/reply"}}
            },
        }
    )


def store_target_for(base_url: str, store: str, probe: dict[str, Any]) -> Target:
    """A target of one store, read by `probe` (its one operation is never called)."""
    return parse_target(
        {
            "name": "misbehaving",
            "base_url": base_url,
            "operations": {"say": {"path": "/ok", "extract": {"reply": "/reply"}}},
            "stores": [{"name": store, "probe": probe}],
        }
    )


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
    misbehaving_url: str,
    path: str,
    error: type[http.TargetError],
    retryable: bool,
    text: str,
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


async def test_no_more_requests_than_max_concurrency_are_in_flight() -> None:
    """The target file's max_concurrency bounds what the target sees at once, and a request
    that waited for its turn still counts its latency from when it was sent."""
    app = FastAPI()
    in_flight, most = 0, 0

    @app.post("/ok")
    async def ok() -> dict[str, str]:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.05)
        in_flight -= 1
        return {"reply": "fine"}

    with serve_in_thread(app) as url:
        target = target_for(url, "/ok").model_copy(update={"max_concurrency": 2})
        started = time.perf_counter()
        responses = await asyncio.gather(
            *(http.call(target, target.operations.say, {"message": str(i)}) for i in range(8))
        )
        elapsed_ms = (time.perf_counter() - started) * 1000  # four turns of 50 ms at least
        await http.close_clients()
    assert most == 2
    assert all(r.fields == {"reply": "fine"} for r in responses)
    # The last pair waited three turns: counted from its turn, not from the call.
    assert max(r.latency_ms for r in responses) < elapsed_ms * 0.75


async def test_latency_is_measured_and_now_header_sent(misbehaving_url: str) -> None:
    target = target_for(misbehaving_url, "/ok")
    response = await http.call(
        target, target.operations.say, {"message": "hola"}, scenario_now="2026-12-03T00:00:00Z"
    )
    assert response.fields == {"reply": "fine"}
    assert 0 < response.latency_ms < 5000


async def test_every_server_timing_header_is_read(misbehaving_url: str) -> None:
    target = target_for(misbehaving_url, "/timed")
    response = await http.call(target, target.operations.say, {"message": "hola"})
    assert response.timings == {"retrieval": 1.5, "assembly": 0.5, "total": 2.25}


async def test_converse_retries_in_place_and_returns_errors_as_data(misbehaving_url: str) -> None:
    env = ActivityEnvironment()
    for path, attempts in (("/boom", 4), ("/missing", 1)):
        request = ConverseRequest(
            target=target_for(misbehaving_url, path),
            phone="+12015550101",
            user_id="u",
            messages=["hola", "adiós"],
            scenario_now="2026-12-03T00:00:00Z",
        )
        replies = await env.run(converse, request)
        assert [r.status for r in replies] == ["target-error", "target-error"]
        assert all(r.attempts == attempts for r in replies)
        assert "HTTP" in (replies[0].error or "")


async def test_converse_resumes_after_the_last_heartbeat(clean_target: Target) -> None:
    """A retried activity must not send again what already got an answer."""
    env = ActivityEnvironment()
    registered = await env.run(
        register_tenant,
        RegisterRequest(
            target=clean_target,
            phone="+12025550177",
            tenant_alias="t",
            scenario_now="2026-12-03T00:00:00Z",
        ),
    )
    request = ConverseRequest(
        target=clean_target,
        phone="+12025550177",
        user_id=registered.user_id,
        messages=["Mi color favorito es ámbar.", "¿Cuál es mi color favorito?"],
        scenario_now="2026-12-03T00:00:00Z",
    )
    first_beats: list[tuple[Any, ...]] = []
    env.on_heartbeat = lambda *details: first_beats.append(details)
    first = await env.run(converse, request)
    assert "ámbar" in (first[1].reply or "")
    # After each answer, the replies so far: what a retry resumes from. (A background beat
    # of a slow request carries the same.)
    dumped = [r.model_dump(mode="json") for r in first]
    assert all(beat == (dumped[: len(beat[0])],) for beat in first_beats)
    assert {len(beat[0]) for beat in first_beats} == {1, 2}
    beats: list[tuple[Any, ...]] = []
    resumed_env = ActivityEnvironment()
    resumed_env.info = resumed_env.info.__class__(
        **{
            **resumed_env.info.__dict__,
            "heartbeat_details": [[first[0].model_dump(mode="json")]],
            "attempt": 2,
        }
    )
    resumed_env.on_heartbeat = lambda *details: beats.append(details)
    resumed = await resumed_env.run(converse, request)
    assert resumed[0] == first[0]  # taken from the heartbeat, not sent again
    assert resumed[1].index == 1 and "ámbar" in (resumed[1].reply or "")
    assert beats[-1] == ([r.model_dump(mode="json") for r in resumed],)
    assert all(beat[0][0] == dumped[0] for beat in beats)
    thread = await env.run(
        inspect_stores,
        InspectRequest(
            target=clean_target,
            identities=[registered.user_id],
            needles=[],
            watch=["ámbar"],
            scenario_now="2026-12-03T00:00:00Z",
        ),
    )
    statements = [
        r
        for read in thread
        if read.store == "thread"
        for r in read.records
        if r.excerpt.startswith("Mi color")
    ]
    assert len(statements) == 1  # the statement reached the target once


async def test_register_converse_and_inspect_against_the_reference_target(
    clean_target: Target,
) -> None:
    env = ActivityEnvironment()
    registered = await env.run(
        register_tenant,
        RegisterRequest(
            target=clean_target,
            phone="+12025550188",
            tenant_alias="t",
            scenario_now="2026-12-03T00:00:00Z",
        ),
    )
    assert registered.user_id.startswith("u_") and registered.status == 200
    replies = await env.run(
        converse,
        ConverseRequest(
            target=clean_target,
            phone="+12025550188",
            user_id=registered.user_id,
            messages=["Mi color favorito es turquesa.", "¿Cuál es mi color favorito?"],
            scenario_now="2026-12-03T00:00:00Z",
        ),
    )
    assert [r.status for r in replies] == ["ok", "ok"]
    assert "turquesa" in (replies[1].reply or "") and replies[1].latency_ms
    assert replies[1].context is not None and "turquesa" in replies[1].context
    before = datetime.now(UTC)
    reads = await env.run(
        inspect_stores,
        InspectRequest(
            target=clean_target,
            identities=[registered.user_id],
            needles=["turquesa", "granate"],
            watch=["turquesa", "granate"],
            scenario_now="2026-12-03T00:00:00Z",
        ),
    )
    assert {r.store for r in reads} == {s.name for s in clean_target.stores}
    assert all(r.status == "ok" for r in reads)
    assert all(r.wall_time and before <= r.wall_time <= datetime.now(UTC) for r in reads)
    # The target file has a `needles` read: one request per store for both values.
    assert sorted(r.mode for r in reads if r.store == "memory") == ["needles", "scope"]
    memory = [r for r in reads if r.store == "memory" and r.mode == "needles"][0]
    assert memory.key == "turquesa\ngranate"
    assert memory.total == 1 and memory.records[0].matches == [0]
    # A live tenant's own records that hold no watched value decide nothing: counted, not
    # returned (they would only weigh on workflow history).
    lean = await env.run(
        inspect_stores,
        InspectRequest(
            target=clean_target,
            identities=[registered.user_id],
            needles=["turquesa", "granate"],
            watch=["turquesa", "granate"],
            scenario_now="2026-12-03T00:00:00Z",
            keep_unmatched=False,
        ),
    )
    full_thread = next(r for r in reads if r.store == "thread" and r.mode == "scope")
    lean_thread = next(r for r in lean if r.store == "thread" and r.mode == "scope")
    assert lean_thread.total == full_thread.total > len(lean_thread.records) > 0
    assert all(record.matches for record in lean_thread.records)
    assert [r for r in full_thread.records if r.matches] == lean_thread.records
    assert memory.records[0].tenant_id == registered.user_id


async def test_an_unreadable_store_comes_back_as_an_error(misbehaving_url: str) -> None:
    target = store_target_for(
        misbehaving_url,
        "broken",
        {
            "scope": {"method": "POST", "path": "/boom", "json": {"u": "{user_id}"}},
            "needle": {"method": "POST", "path": "/html", "json": {"q": "{needle}"}},
        },
    )
    reads = await ActivityEnvironment().run(
        inspect_stores,
        InspectRequest(
            target=target,
            identities=["u"],
            needles=["x"],
            watch=["x"],
            scenario_now="2026-12-03T00:00:00Z",
        ),
    )
    assert [(r.mode, r.status) for r in reads] == [("scope", "error"), ("needle", "error")]
    assert "HTTP 503" in (reads[0].error or "") and "not JSON" in (reads[1].error or "")


async def test_a_record_read_again_is_matched_against_each_reads_own_watch_list(
    misbehaving_url: str,
) -> None:
    """A record's values in other forms are remembered between reads (activities/stores.py,
    _reworded): the same record, read with other watched values, is matched on those."""
    target = store_target_for(
        misbehaving_url,
        "memory",
        {
            "scope": {"method": "POST", "path": "/records", "json": {"u": "{user_id}"}},
            "needle": {"method": "POST", "path": "/records", "json": {"q": "{needle}"}},
            "records": "/records",
            "content": "/text",
        },
    )

    async def forms(watch: list[str]) -> dict[int, str]:
        [read] = await ActivityEnvironment().run(
            inspect_stores,
            InspectRequest(
                target=target,
                identities=["u"],
                needles=[],  # the scope read alone
                watch=watch,
                scenario_now="2026-12-03T00:00:00Z",
            ),
        )
        assert read.status == "ok", read.error
        return read.records[0].forms if read.records else {}

    phone, other = "+34 612-345-678", "+34 699 000 111"
    for _ in range(2):
        assert await forms([phone]) == {0: "612345678"}
        assert await forms([other, phone]) == {1: "612345678"}
        assert await forms([other]) == {}


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that no public bundle trusts, and its key."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "memlife test target")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "target.pem", directory / "target.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


async def test_an_https_target_is_verified_against_ssl_cert_file_or_certifi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = _self_signed(tmp_path)
    with serve_in_thread(misbehaving_app(), ssl_certfile=str(cert), ssl_keyfile=str(key)) as url:
        target = target_for(url, "/ok")
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        with pytest.raises(http.TargetUnreachable, match="(?i)certificate"):
            await http.call(target, target.operations.say, {"message": "hola"})
        await http.close_clients()  # the next session reads the variable again
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        response = await http.call(target, target.operations.say, {"message": "hola"})
        await http.close_clients()
    assert response.fields == {"reply": "fine"}


async def test_a_target_is_reached_through_the_proxy_the_environment_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HTTP_PROXY is honoured and NO_PROXY exempts, as with httpx: nothing listens at the
    target's own address, so only the proxy can answer."""
    target = target_for("http://127.0.0.1:9", "/ok")
    with serve_in_thread(misbehaving_app()) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        response = await http.call(target, target.operations.say, {"message": "hola"})
        await http.close_clients()  # the next session reads the variables again
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        with pytest.raises(http.TargetUnreachable):
            await http.call(target, target.operations.say, {"message": "hola"})
        await http.close_clients()
    assert response.fields == {"reply": "fine"}
