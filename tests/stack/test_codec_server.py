"""memlife's codec endpoint (stack/codec_server.py): the Web UI's way to read compressed
payloads as JSON, under Temporal's codec-server convention and CORS for the UI only."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import httpx
import pytest
from google.protobuf import json_format
from starlette.testclient import TestClient
from temporalio.api.common.v1 import Payload, Payloads

from memlife.stack.codec import DATA_CONVERTER, ENCODING
from memlife.stack.codec_server import codec_server, create_app, ui_origins

UI = "http://127.0.0.1:8233"
BIG = {"replies": [f"reply {i}: " + "memoria " * 40 for i in range(400)]}  # > 64 KB as JSON


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_app(ui_origins(8233)))


def _wire(payloads: list[Payload]) -> dict[str, Any]:
    """Payloads as the Web UI sends them: proto3 JSON."""
    return json.loads(json_format.MessageToJson(Payloads(payloads=payloads)))


def _payloads(body: dict[str, Any]) -> list[Payload]:
    return list(json_format.ParseDict(body, Payloads()).payloads)


def test_a_compressed_payload_decodes_to_the_json_it_holds(client: TestClient) -> None:
    encoded = asyncio.run(DATA_CONVERTER.encode([BIG, {"small": "stays plain"}]))
    assert encoded[0].metadata["encoding"] == ENCODING  # compressed: bytes in the Web UI
    assert encoded[1].metadata["encoding"] == b"json/plain"
    for path in ("/decode", "/default/decode"):  # the namespace in the path or the header
        response = client.post(
            path, json=_wire(encoded), headers={"X-Namespace": "default", "Origin": UI}
        )
        assert response.status_code == 200, response.text
        assert response.headers["access-control-allow-origin"] == UI
        decoded = _payloads(response.json())
        assert [p.metadata["encoding"] for p in decoded] == [b"json/plain"] * 2
        assert json.loads(decoded[0].data) == BIG
        assert json.loads(decoded[1].data) == {"small": "stays plain"}
        # As the UI reads it: the data field base64 of the JSON text.
        assert json.loads(base64.b64decode(response.json()["payloads"][0]["data"])) == BIG


def test_encode_then_decode_round_trips(client: TestClient) -> None:
    plain = DATA_CONVERTER.payload_converter.to_payloads([BIG, "short"])
    encoded = client.post("/default/encode", json=_wire(plain))
    assert encoded.status_code == 200, encoded.text
    compressed = _payloads(encoded.json())
    assert compressed[0].metadata["encoding"] == ENCODING and compressed[1] == plain[1]
    decoded = client.post("/default/decode", json=encoded.json())
    assert _payloads(decoded.json()) == list(plain)


def test_the_preflight_is_answered_for_the_ui_and_refused_for_others(client: TestClient) -> None:
    asked = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,x-namespace",
    }
    for origin in ui_origins(8233):
        answer = client.options("/default/decode", headers={"Origin": origin, **asked})
        assert answer.status_code == 204
        assert answer.headers["access-control-allow-origin"] == origin
        assert "POST" in answer.headers["access-control-allow-methods"]
        allowed = answer.headers["access-control-allow-headers"]
        assert {"content-type", "x-namespace", "authorization"} <= {
            h.strip() for h in allowed.split(",")
        }
    other = "http://evil.example:8233"
    refused = client.options("/default/decode", headers={"Origin": other, **asked})
    assert refused.status_code == 403 and "access-control-allow-origin" not in refused.headers
    assert f"origin {other} is not allowed" in refused.text
    posted = client.post("/decode", json={"payloads": []}, headers={"Origin": other})
    assert posted.status_code == 403 and "access-control-allow-origin" not in posted.headers
    # Not a browser (the CLI's --codec-endpoint, curl): no origin, no CORS, answered.
    assert client.post("/decode", json={"payloads": []}).json() == {}


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"not json", 'body: not {"payloads": [...]} in proto3 JSON'),
        (b'{"payloads": [{"data": 5}]}', "body: not"),
        (b'{"payload": []}', "body: not"),
        (
            json.dumps(
                {"payloads": [{"metadata": {"encoding": "YmluYXJ5L3psaWI="}, "data": "AAAA"}]}
            ).encode(),
            "payloads: cannot decode",
        ),
    ],
)
def test_a_bad_body_gets_a_400_that_says_why(client: TestClient, body: bytes, says: str) -> None:
    response = client.post(
        "/default/decode", content=body, headers={"Content-Type": "application/json", "Origin": UI}
    )
    assert response.status_code == 400
    assert response.json()["error"].startswith(says), response.json()
    assert response.headers["access-control-allow-origin"] == UI  # the UI can read why


def test_other_paths_are_not_found(client: TestClient) -> None:
    assert client.post("/default/transcode", json={"payloads": []}).status_code == 404
    assert client.get("/default/decode").status_code == 405


def test_the_server_listens_on_loopback_only() -> None:
    with codec_server(ui_origins(8233)) as server:
        assert server.endpoint.startswith("http://127.0.0.1:")
        assert httpx.get(f"{server.endpoint}/health").text == "ok"
        answer = httpx.post(f"{server.endpoint}/default/decode", json={"payloads": []})
        assert answer.status_code == 200 and answer.json() == {}
