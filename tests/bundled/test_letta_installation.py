"""Where the Letta server's environment lives (memlife/bundled/letta/serve.py): once per
machine and user in memlife's cache directory, keyed by version and pins, and a clear
error where that directory cannot be written. The install itself is exercised by
tests/workflows/test_letta_server.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memlife.bundled.letta import serve


@pytest.fixture
def no_cache_settings(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("MEMLIFE_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    return monkeypatch


def test_memlife_cache_dir_then_xdg_then_the_users_cache(
    no_cache_settings: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    no_cache_settings.setattr(os, "geteuid", lambda: 1000)
    no_cache_settings.setenv("HOME", str(tmp_path / "home"))
    assert serve.cache_root() == tmp_path / "home" / ".cache" / "memlife"
    no_cache_settings.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert serve.cache_root() == tmp_path / "xdg" / "memlife"
    no_cache_settings.setenv("MEMLIFE_CACHE_DIR", str(tmp_path / "mine"))
    assert serve.cache_root() == tmp_path / "mine"


def test_roots_cache_is_one_postgresqls_user_may_enter(
    no_cache_settings: pytest.MonkeyPatch,
) -> None:
    # PostgreSQL refuses to run as root, so it runs from this environment as another user.
    no_cache_settings.setattr(os, "geteuid", lambda: 0)
    assert serve.cache_root() == Path("/var/cache/memlife")


def test_the_environment_is_named_by_version_and_pins(
    no_cache_settings: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    no_cache_settings.setenv("MEMLIFE_CACHE_DIR", str(tmp_path))
    first = serve.default_installation()
    assert first.root.parent == tmp_path
    assert first.root.name.startswith(f"letta-{serve.LETTA_VERSION}-")
    assert serve.default_installation() == first
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(serve.CONSTRAINTS.read_text() + "fastapi==0.0.1\n")
    no_cache_settings.setattr(serve, "CONSTRAINTS", constraints)
    assert serve.default_installation().root != first.root  # beside it, not over it


def test_an_unwritable_cache_is_one_error_that_names_the_way_out(
    no_cache_settings: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    no_cache_settings.setenv("MEMLIFE_CACHE_DIR", str(blocked / "cache"))
    with pytest.raises(serve.LettaUnavailable, match="MEMLIFE_CACHE_DIR"):
        serve.ensure_installed()


def test_the_servers_environment_has_the_scripted_model_and_nothing_of_the_developers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-a-developers-own")
    monkeypatch.setenv("LETTA_PG_URI", "postgresql://someone-elses-database")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://elsewhere.example")
    monkeypatch.setenv("SEARCH_SERVICE_API_KEY", "secret")
    monkeypatch.setenv("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt")
    environment = serve._environment(
        tmp_path / "home", "postgresql://postgres@127.0.0.1:5/letta", "http://127.0.0.1:6/v1", "pw"
    )
    assert environment["OPENAI_API_KEY"] == "memlife-scripted"
    assert environment["OPENAI_BASE_URL"] == "http://127.0.0.1:6/v1"
    assert environment["LETTA_PG_URI"] == "postgresql://postgres@127.0.0.1:5/letta"
    assert environment["PATH"] == os.environ["PATH"]
    for name in ("ANTHROPIC_BASE_URL", "SEARCH_SERVICE_API_KEY", "SSL_CERT_FILE"):
        assert name not in environment
    # No CA bundle to load for each model call (httpx reads SSL_CERT_DIR): an empty one.
    certificates = Path(environment["SSL_CERT_DIR"])
    assert certificates.is_dir() and not any(certificates.iterdir())
