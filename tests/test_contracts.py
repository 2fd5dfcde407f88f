"""Each activity's binding (memlife/contracts.py: `Activity[In, Out]`) holds: the worker
registers one implementation under its name, taking what the binding says it is given
and answering what it says it answers; and a workflow that calls it with anything else
is a type error (mypy, as ./scripts/test runs it over the workflows)."""

from __future__ import annotations

import inspect
import subprocess
import textwrap
import typing
from pathlib import Path
from types import UnionType
from typing import Any

import pytest
from temporalio import activity

import memlife.contracts as contracts
from memlife.stack.registry import ACTIVITIES

ROOT = Path(__file__).resolve().parent.parent


def _implementations() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for implementation in ACTIVITIES:
        definition = activity._Definition.must_from_callable(implementation)
        assert definition.name not in found, f"{definition.name} registered twice"
        found[str(definition.name)] = implementation
    return found


def _signatures(declared: Any) -> list[tuple[Any, ...]]:
    """The argument lists a binding allows: one per tuple of a union, or the one value."""
    options = (
        typing.get_args(declared)
        if typing.get_origin(declared) in (typing.Union, UnionType)
        else (declared,)
    )
    return [
        typing.get_args(option) if typing.get_origin(option) is tuple else (option,)
        for option in options
    ]


def test_every_binding_has_one_implementation_and_every_implementation_a_binding() -> None:
    bound = {binding.name for binding in contracts.ACTIVITIES}
    assert len(bound) == len(contracts.ACTIVITIES), "two bindings share a name"
    assert set(_implementations()) == bound


@pytest.mark.parametrize("binding", contracts.ACTIVITIES, ids=lambda b: b.name)
def test_the_implementation_takes_and_answers_what_its_binding_says(
    binding: contracts.Activity[Any, Any],
) -> None:
    implementation = _implementations()[binding.name]
    hints = typing.get_type_hints(implementation)
    parameters = list(inspect.signature(implementation).parameters.values())
    for arguments in _signatures(binding.input_type):
        assert len(arguments) <= len(parameters), (binding.name, arguments)
        for parameter, argument in zip(parameters, arguments, strict=False):
            assert hints[parameter.name] == argument, (binding.name, parameter.name)
        # What a shorter argument list leaves out has a default.
        assert all(
            p.default is not inspect.Parameter.empty for p in parameters[len(arguments) :]
        ), (binding.name, arguments)
    assert len(parameters) == max(len(a) for a in _signatures(binding.input_type))
    expected = binding.result_type
    assert hints["return"] == (type(None) if expected is None else expected), binding.name


def test_a_binding_sends_a_tuple_as_the_argument_list_and_anything_else_alone() -> None:
    request = contracts.DeleteRequest.model_construct()
    assert contracts.DELETE_TENANT.arguments(request) == [request]
    assert contracts.LOAD_PAIRS.arguments(("run", 0, 10)) == ["run", 0, 10]
    assert contracts.FINISH_RUN.arguments(("run", [1])) == ["run", [1]]
    assert contracts.FINISH_RUN.arguments(("run", [1], [2])) == ["run", [1], [2]]


MISMATCHED_CALL = """
from memlife import contracts
from memlife.contracts import DeleteRequest, RegisterResult
from memlife.workflows.calls import Calls


async def register(calls: Calls, request: DeleteRequest) -> RegisterResult:
    return await calls.activity(contracts.REGISTER_TENANT, request)


async def deleted(calls: Calls, request: DeleteRequest) -> RegisterResult:
    return await calls.activity(contracts.DELETE_TENANT, request)
"""


def test_a_call_that_does_not_match_its_binding_is_a_type_error(tmp_path: Path) -> None:
    (tmp_path / "mismatch.py").write_text(textwrap.dedent(MISMATCHED_CALL))
    result = subprocess.run(
        [str(ROOT / "scripts" / "typecheck"), str(tmp_path / "mismatch.py")],
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert result.returncode == 1, result.stdout + result.stderr
    # The wrong input (mypy finds no `In` both the binding and the request fit), and the
    # wrong result, each said where it is; nothing in the workflows themselves.
    assert [line.split(":")[1] for line in errors] == ["8", "12"], errors
    assert '"activity" of "Calls"' in errors[0], errors
    assert "Activity[DeleteRequest, DeletionState]" in errors[1], errors
