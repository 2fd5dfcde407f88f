"""Target files: safe templating, extraction pointers, secrets by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from memlife.errors import InputError
from memlife.rules.target import load_target, parse_target
from memlife.targets.http import (
    MissingSecret,
    extract,
    json_pointer,
    render,
    render_body,
    resolve_header,
)

REPO = Path(__file__).resolve().parents[2]


def reference_data() -> dict[str, Any]:
    return yaml.safe_load((REPO / "scenarios" / "targets" / "reference.yaml").read_text())


def test_bundled_reference_target_file_is_valid() -> None:
    target = load_target(REPO / "scenarios" / "targets" / "reference.yaml")
    assert target.base_url == "http://127.0.0.1:8080"
    assert [s.name for s in target.stores] == [
        "thread",
        "memory",
        "graph",
        "jobs",
        "summaries",
        "cache",
    ]
    assert {s.name: s.retention for s in target.stores}["thread"] == "tombstone"
    assert target.operations.registration is not None


def test_unknown_placeholder_is_rejected_with_the_allowed_ones() -> None:
    data = reference_data()
    data["operations"]["say"]["json"] = {"phone": "{phone}", "text": "{mesage}"}
    with pytest.raises(InputError) as caught:
        parse_target(data, "t.yaml")
    assert str(caught.value).startswith("t.yaml: operations.say: unknown placeholder {mesage}")


def test_reply_extraction_is_required_and_pointer_checked() -> None:
    data = reference_data()
    data["operations"]["say"]["extract"] = {"answer": "reply[?"}
    with pytest.raises(InputError) as caught:
        parse_target(data, "t.yaml")
    text = str(caught.value)
    assert (
        "t.yaml: operations.say.extract: 'reply[?' is neither a JSON pointer (write e.g. "
        "'/reply' or '/data/id') nor a JMESPath expression"
    ) in text
    data["operations"]["say"]["extract"] = {"answer": "/reply"}
    with pytest.raises(InputError, match="operations.say.extract"):
        parse_target(data, "t.yaml")  # no `reply` to extract at all


def test_fields_are_extracted_by_json_pointer_or_jmespath() -> None:
    response = {
        "results": [
            {"memory": "Trabaja en Quispe", "score": 0.9},
            {"memory": "Vive en Lima", "score": 0.2},
        ],
        "usage": {"cost": 0.002},
    }
    assert extract(response, "/results/0/memory") == "Trabaja en Quispe"
    assert extract(response, "results[0].memory") == "Trabaja en Quispe"
    assert extract(response, "results[?score > `0.5`].memory") == ["Trabaja en Quispe"]
    assert extract(response, "usage.cost") == 0.002
    for missing in ("usage.tokens", "/usage/tokens"):
        with pytest.raises(KeyError, match="tokens"):
            extract(response, missing)
    data = reference_data()
    data["operations"]["say"]["extract"] = {"reply": "choices[0].message.content"}
    assert parse_target(data, "t.yaml").operations.say.extract["reply"] == (
        "choices[0].message.content"
    )


def test_base_url_and_unknown_fields() -> None:
    data = reference_data()
    data["base_url"] = "localhost:8080"
    data["retries"] = 3
    with pytest.raises(InputError) as caught:
        parse_target(data, "t.yaml")
    lines = str(caught.value).splitlines()
    assert any(line.startswith("t.yaml: base_url:") for line in lines)
    assert "t.yaml: retries: unknown field" in lines


@pytest.mark.parametrize(
    ("where", "headers", "expected"),
    [
        (
            "target",
            {"X-Team": "a\r\nX-Injected: 1"},
            "t.yaml: headers: X-Team: a header value "
            "cannot hold a carriage return, line feed or NUL character",
        ),
        ("say", {"X-Team": "a\nb"}, "t.yaml: operations.say.headers: X-Team: a header value"),
        (
            "target",
            {"Authorization": {"env": "KEY", "prefix": "Bearer \r\n"}},
            "t.yaml: headers: Authorization: a header value",
        ),
        (
            "target",
            {"X Team:": "a"},
            "t.yaml: headers.\"X Team:\": header name 'X Team:' is not an HTTP token",
        ),
    ],
)
def test_headers_that_would_split_a_request_are_refused(
    where: str, headers: dict[str, Any], expected: str
) -> None:
    data = reference_data()
    (data if where == "target" else data["operations"][where])["headers"] = headers
    with pytest.raises(InputError) as caught:
        parse_target(data, "t.yaml")
    assert str(caught.value).splitlines() == [str(caught.value)]  # one line
    assert str(caught.value).startswith(expected), str(caught.value)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d.update(base_url="http://127.0.0.1:8080/\r\nHost: evil"),
            "t.yaml: base_url: a URL cannot hold control characters (U+000A, U+000D)",
        ),
        (
            lambda d: d["operations"]["say"].update(path="/v1/preview\x00"),
            "t.yaml: operations.say.path: a URL cannot hold control characters (U+0000)",
        ),
        (
            lambda d: d["operations"]["say"].update(query={"q": "a\tb"}),
            "t.yaml: operations.say.query.q: a URL cannot hold control characters (U+0009)",
        ),
        (
            lambda d: d.update(base_url="http://[::1"),
            "t.yaml: base_url: 'http://[::1' is not a usable URL (Invalid IPv6 URL)",
        ),
        (
            lambda d: d.update(base_url="http://127.0.0.1:99999"),
            "t.yaml: base_url: 'http://127.0.0.1:99999' is not a usable URL (Port out of range",
        ),
    ],
    ids=["base_url", "path", "query", "ipv6", "port"],
)
def test_urls_that_cannot_be_sent_as_written_are_refused(change: Any, expected: str) -> None:
    data = reference_data()
    change(data)
    with pytest.raises(InputError) as caught:
        parse_target(data, "t.yaml")
    assert str(caught.value).splitlines() == [str(caught.value)]  # one line
    assert str(caught.value).startswith(expected), str(caught.value)


def test_rendering_is_substitution_only() -> None:
    variables = {"phone": "+1 555/01", "message": "{user_id}", "count": 3}
    assert render("/v1/users/{phone}", variables, url=True) == "/v1/users/%2B1%20555%2F01"
    # A value that looks like a placeholder is not expanded again.
    assert render_body({"m": "{message}", "n": "{count}", "s": "x{count}"}, variables) == {
        "m": "{user_id}",
        "n": 3,
        "s": "x3",
    }
    # No attribute access or expressions: such text is left alone.
    assert render("{phone.__class__}", variables) == "{phone.__class__}"


def test_json_pointer() -> None:
    doc = {"data": {"items": [{"a/b": 1}, {"~x": 2}]}}
    assert json_pointer(doc, "/data/items/0/a~1b") == 1
    assert json_pointer(doc, "/data/items/1/~0x") == 2
    assert json_pointer(doc, "") == doc
    # Every "/" starts a token: "//x" is the key "" and then "x", not "/x".
    assert json_pointer({"": {"x": 3}, "x": 4}, "//x") == 3
    assert json_pointer({"": 5}, "/") == 5
    for missing in (
        "/data/nope",
        "/data/items/5",
        "/data/items/0/a~1b/deeper",
        "//data",
        "data",
        "/data/items/01",
        "/data/items/-",
    ):
        with pytest.raises(KeyError):
            json_pointer(doc, missing)


def test_secrets_are_named_and_resolved_late(monkeypatch: pytest.MonkeyPatch) -> None:
    data = reference_data()
    data["headers"] = {"Authorization": {"env": "MEMLIFE_TEST_TOKEN", "prefix": "Bearer "}}
    target = parse_target(data, "t.yaml")
    assert target.secret_names() == ["MEMLIFE_TEST_TOKEN"]
    assert "s3cr3t" not in target.model_dump_json()
    monkeypatch.delenv("MEMLIFE_TEST_TOKEN", raising=False)
    with pytest.raises(MissingSecret, match="MEMLIFE_TEST_TOKEN is not set"):
        resolve_header(target.headers["Authorization"])
    monkeypatch.setenv("MEMLIFE_TEST_TOKEN", "s3cr3t")
    assert resolve_header(target.headers["Authorization"]) == "Bearer s3cr3t"


def test_files_probes_name_one_directory_and_take_a_grace() -> None:
    from datetime import timedelta

    from memlife.rules.target import FilesProbe

    data = reference_data()
    data["stores"].append(
        {
            "name": "memory-disk",
            "probe": {
                "kind": "files",
                "path_env": "MEMORY_DATA_DIR",
                "include": ["*.db*"],
                "grace": "7d",
            },
        }
    )
    target = parse_target(data, "t.yaml")
    probe = target.stores[-1].probe
    assert isinstance(probe, FilesProbe)
    assert (probe.grace, probe.encodings, probe.include) == (
        timedelta(days=7),
        ["utf-8"],
        ["*.db*"],
    )
    assert "MEMORY_DATA_DIR" in target.secret_names()  # resolved on the worker, like secrets

    data["stores"][-1]["probe"] = {"kind": "files", "path": "/data", "path_env": "DATA_DIR"}
    with pytest.raises(InputError) as caught:
        parse_target(data, "t.yaml")
    assert "stores.6.probe" in str(caught.value)
    assert "`path` or `path_env`, exactly one" in str(caught.value)
    data["stores"][-1]["probe"] = {"kind": "files", "path": "/data", "encodings": ["latin-1"]}
    with pytest.raises(InputError, match="stores.6.probe.*encodings"):
        parse_target(data, "t.yaml")


def test_registration_may_take_several_requests_in_order() -> None:
    data = reference_data()
    data["operations"]["register"] = [
        {"path": "/users", "json": {"id": "{phone}"}, "extract": {"user_id": "/id"}},
        {"path": "/sessions", "json": {"user": "{user_id}", "name": "{tenant_alias}"}},
    ]
    target = parse_target(data, "t.yaml")
    assert [op.path for op in target.operations.register_steps()] == ["/users", "/sessions"]
    assert list(target.all_operations())[:2] == ["register.0", "register.1"]
    data["operations"]["register"][1]["json"] = {"user": "{message}"}
    with pytest.raises(
        InputError,
        match=r"t.yaml: operations.register.1: unknown placeholder "
        r"\{message\}",
    ):
        parse_target(data, "t.yaml")
