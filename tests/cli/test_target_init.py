"""`memlife target init` as a new user runs it: a stand-in served on a free loopback port,
its /openapi.json read, the file written and checked against the service; bad input one
line, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from memlife.cli import main
from memlife.rules.target import load_target
from tests.servers import serve_in_thread

pytestmark = pytest.mark.slow  # servers and checks: seconds


@pytest.fixture(autouse=True)
def wide_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables as wide as their rows: a cell folded at the console's width (the rows hold
    this test's temporary paths, longer under xdist) would split a phrase looked for."""
    monkeypatch.setenv("COLUMNS", "400")


def test_letta_standin_file_passes_check_as_proposed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.standins.letta import create_app

    monkeypatch.setenv("LETTA_API_KEY", "init-key")
    out = tmp_path / "letta.yaml"
    with serve_in_thread(create_app("init-key")) as url:
        code = main(["target", "init", f"{url}/openapi.json", "-o", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert f"wrote {out}: target 'letta-api' at {url}" in printed
    assert "ok: every operation and probe works as the file describes it" in printed
    target = load_target(out)
    assert target.base_url == url and target.operations.say.path == "/v1/agents/{user_id}/messages"
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Proposed by `memlife target init` from")
    assert "#   export LETTA_API_KEY=…" in text


def test_zep_standin_fails_on_the_guessed_scheme_and_says_what_to_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.standins.zep import create_app

    monkeypatch.setenv("ZEP_API_KEY", "init-key")
    out = tmp_path / "zep.yaml"
    with serve_in_thread(create_app("init-key")) as url:
        code = main(["target", "init", f"{url}/openapi.json", "-o", str(out)])
        printed = capsys.readouterr().out
        # The document shows an Authorization header but not its scheme: the guessed
        # `Bearer ` is refused, and the row and the file's comment say so.
        assert code == 2
        assert "POST /api/v4/users answered HTTP 401" in printed
        assert f"next: edit {out}" in printed
        comments = " ".join(out.read_text(encoding="utf-8").replace("#", " ").split())
        assert "`Bearer ` is a guess (others: `Api-Key `" in comments
        # The one edit a person makes: the scheme. Then it passes.
        data = yaml.safe_load(out.read_text(encoding="utf-8"))
        data["headers"]["Authorization"]["prefix"] = "Api-Key "
        out.write_text(yaml.safe_dump(data), encoding="utf-8")
        assert main(["target", "check", str(out)]) == 0
        # Written once: a second init refuses to overwrite it.
        assert main(["target", "init", f"{url}/openapi.json", "-o", str(out)]) == 2
    assert f"command line: --out: {out} exists; add --force" in capsys.readouterr().err


def test_mem0_standin_from_a_file_with_base_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.standins.mem0_oss import create_app

    # A stock server's dashboard key is the admin's: DELETE /memories (admin-only) works.
    monkeypatch.setenv("MEM0_API_KEY", "admin-key")
    app = create_app(tmp_path / "v.db", tmp_path / "h.db", admin_api_key="admin-key")
    document = tmp_path / "openapi.json"
    document.write_text(json.dumps(app.openapi()), encoding="utf-8")
    out = tmp_path / "mem0.yaml"
    with serve_in_thread(app) as url:
        # A file names no server: the base URL is given.
        assert main(["target", "init", str(document), "-o", str(out), "--no-check"]) == 2
        assert "--base-url" in capsys.readouterr().err and not out.exists()
        code = main(
            ["target", "init", str(document), "-o", str(out), "--base-url", url, "--name", "m"]
        )
    captured = capsys.readouterr()
    printed = captured.out
    assert code == 0, printed + captured.err
    assert "forget (2/2)" in printed and "1 record(s) selected" in printed
    assert load_target(out).name == "m"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json: [", "neither JSON nor YAML"),
        ('{"swagger": "2.0", "paths": {}}', "swagger: Swagger 2.0 is not OpenAPI 3"),
        ('{"openapi": "3.1.0", "paths": {}}', "paths: the document describes no operations"),
    ],
)
def test_bad_documents_one_line_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, reason: str
) -> None:
    document = tmp_path / "doc.json"
    document.write_text(content, encoding="utf-8")
    out = tmp_path / "t.yaml"
    assert main(["target", "init", str(document), "-o", str(out)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{document}: ") and reason in lines[0]
    assert "Traceback" not in captured.err and not out.exists()


def test_an_unreachable_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    source = f"http://127.0.0.1:{port}/openapi.json"
    assert main(["target", "init", source, "-o", str(tmp_path / "t.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{source}: cannot fetch the document")
