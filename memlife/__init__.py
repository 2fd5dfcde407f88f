"""memlife: long-horizon lifecycle tester for multi-tenant conversational memory.

From Python (docs/python-api.md):

    import memlife

    result = memlife.run("scenarios/seed-six-case.yaml", clock="skip")

The API's names (memlife.api.__all__) are loaded on first use, so `import memlife` and
`memlife --help` stay fast.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

# The task queue memlife's workflows go to and its workers poll unless told otherwise.
DEFAULT_TASK_QUEUE = "memlife"

_API = frozenset(
    {
        "API_VERSION",
        "InputError",
        "MemlifeError",
        "Output",
        "Problem",
        "RunResult",
        "check_deletion",
        "check_deletion_async",
        "run",
        "run_async",
    }
)


def __getattr__(name: str) -> Any:
    if name in _API:
        # Loaded by name: every room imports this package for its version and task
        # queue, and none of them may depend on the API above them (pyproject.toml).
        from importlib import import_module

        return getattr(import_module("memlife.api"), name)
    raise AttributeError(f"module 'memlife' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
