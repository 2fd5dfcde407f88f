"""The workflow sandbox loads each workflow's own module afresh, to isolate its state, and
takes the rest of memlife from the host, already imported. memlife's wire contracts are
pydantic models that take about 90 ms of CPU to build: reloaded inside the sandbox, they
would be built again for every workflow run (every pair of a ten-thousand-pair night).
A `from memlife import contracts` inside `imports_passed_through()` does exactly that,
since the sandbox's fresh `memlife` package lacks the attribute and Python then imports
the submodule around the sandbox's import hook."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pydantic._internal._model_construction import ModelMetaclass
from temporalio.testing import WorkflowEnvironment

from memlife.stack.registry import WORKFLOWS
from memlife.stack.worker import build_worker


async def test_workflow_instances_take_memlife_from_the_host(
    skip_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: Counter[str] = Counter()
    build = ModelMetaclass.__new__

    def counting(
        mcs: Any, name: str, bases: Any, namespace: dict[str, Any], *args: Any, **kwargs: Any
    ) -> Any:
        built[f"{namespace.get('__module__')}.{name}"] += 1
        return build(mcs, name, bases, namespace, *args, **kwargs)

    monkeypatch.setattr(ModelMetaclass, "__new__", counting)
    # A new worker creates one instance of each workflow in the sandbox to validate it,
    # the same way every run of that workflow starts.
    with ThreadPoolExecutor(max_workers=1) as executor:
        async with build_worker(skip_env.client, "sandbox-imports", executor):
            pass

    own_modules = {workflow.__module__ for workflow in WORKFLOWS}
    reloaded = {model for model in built if model.rpartition(".")[0] not in own_modules}
    assert reloaded == set(), f"rebuilt in the sandbox for every workflow run: {reloaded}"
