"""Target files: operations that look up before they act (sequences with `select`),
refusals, and how a target answers."""

from __future__ import annotations

from typing import Any

import pytest

from memlife.errors import InputError
from memlife.rules.target import parse_target
from tests.rules.test_target_file import reference_data

FORGET_BY_ID: list[dict[str, Any]] = [
    {
        "method": "GET",
        "path": "/memories",
        "query": {"user_id": "{phone}"},
        "select": {
            "records": "results",
            "content": "memory",
            "holding": "{values}",
            "extract": {"memory_id": "id"},
        },
    },
    {"method": "DELETE", "path": "/memories/{memory_id}", "refused": [404]},
]


def with_operation(name: str, value: Any, **top: Any) -> dict[str, Any]:
    data = reference_data() | top
    data["operations"][name] = value
    return data


def test_forget_finds_the_memory_then_deletes_it_by_id() -> None:
    target = parse_target(with_operation("forget", FORGET_BY_ID), "t.yaml")
    steps = target.operations.sequence("forget")
    assert [step.method for step in steps] == ["GET", "DELETE"]
    assert steps[0].select is not None and steps[0].select.extract == {"memory_id": "id"}
    assert steps[1].refused == [404]
    assert {"forget.0", "forget.1"} <= set(target.all_operations())


def test_a_later_request_may_use_only_what_an_earlier_one_extracted() -> None:
    steps = [dict(FORGET_BY_ID[0]), {"method": "DELETE", "path": "/memories/{memory_key}"}]
    with pytest.raises(
        InputError,
        match=r"t.yaml: operations.forget.1: unknown placeholder "
        r"\{memory_key\}.*\{memory_id\}",
    ):
        parse_target(with_operation("forget", steps), "t.yaml")
    # The first request cannot use what only the second extracts.
    steps = [{"method": "DELETE", "path": "/memories/{memory_id}"}, dict(FORGET_BY_ID[0])]
    with pytest.raises(InputError, match=r"operations.forget.0: unknown placeholder"):
        parse_target(with_operation("forget", steps), "t.yaml")


def test_a_selection_needs_requests_after_it_and_is_made_once() -> None:
    with pytest.raises(InputError, match=r"operations.forget.select: the last request"):
        parse_target(with_operation("forget", [FORGET_BY_ID[0]]), "t.yaml")
    twice = [FORGET_BY_ID[0], FORGET_BY_ID[0], FORGET_BY_ID[1]]
    with pytest.raises(InputError, match=r"operations.forget.1: only one request"):
        parse_target(with_operation("forget", twice), "t.yaml")


def test_a_status_is_a_success_or_a_refusal_never_both() -> None:
    ask = {
        "path": "/search",
        "json": {"q": "{message}"},
        "extract": {"reply": "/r"},
        "refused": [403, 200],
    }
    with pytest.raises(
        InputError,
        match=r"operations.ask: .*200 is both a success and a "
        r"refusal",
    ):
        parse_target(with_operation("ask", ask), "t.yaml")
    ask["refused"] = [403, 999]
    with pytest.raises(InputError, match="999 is not an HTTP status"):
        parse_target(with_operation("ask", ask), "t.yaml")


def test_a_target_says_how_it_answers() -> None:
    assert parse_target(reference_data(), "t.yaml").answers == "assistant"
    ask = {"path": "/search", "json": {"q": "{message}"}, "extract": {"reply": "/r"}}
    target = parse_target(with_operation("ask", ask, answers="retrieval"), "t.yaml")
    assert target.answers == "retrieval"
    with pytest.raises(InputError, match="answers"):
        parse_target(with_operation("ask", ask, answers="oracle"), "t.yaml")
