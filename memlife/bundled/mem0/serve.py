"""Start the mem0 stack: the scripted model (in this process, on a free loopback port),
Mem0 pointed at it, and the HTTP surface."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memlife import embeddings
from memlife.bundled.mem0.runtime import APP_DB, HISTORY_DB, Mem0Runtime
from memlife.bundled.model.serve import ScriptedModel, scripted_model


class Mem0Unavailable(RuntimeError):
    """The mem0 extra is not installed and could not be."""


def require_extra() -> None:
    from memlife.errors import MemlifeError
    from memlife.stack import extras

    try:
        extras.ensure("mem0", "the mem0 target")
    except MemlifeError as error:
        raise Mem0Unavailable(str(error)) from None


def probe_environment(data_dir: Path) -> dict[str, str]:
    """The variables scenarios/targets/mem0.yaml reads its stores with."""
    data_dir = data_dir.resolve()
    return {
        "MEM0_STACK_HISTORY_URL": f"sqlite:///{data_dir / HISTORY_DB}",
        "MEM0_STACK_APP_URL": f"sqlite:///{data_dir / APP_DB}",
        "MEM0_STACK_DATA_DIR": str(data_dir),
    }


@dataclass
class Mem0Stack:
    runtime: Mem0Runtime
    model: ScriptedModel


@contextlib.contextmanager
def mem0_stack(data_dir: Path) -> Iterator[Mem0Stack]:
    with scripted_model() as model:
        embeddings.shared().embed(["warm-up"])  # MiniLM loads now, not on a first request
        runtime = Mem0Runtime(data_dir, model.base_url)
        try:
            yield Mem0Stack(runtime, model)
        finally:
            runtime.close()
