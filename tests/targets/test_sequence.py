"""Sequences of requests against a real HTTP peer: a memory found by the value it holds,
then deleted by its id; refusals; answers a selection cannot be made from."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from memlife.rules.target import parse_target
from memlife.targets import http
from memlife.targets.http import TargetBadResponse
from memlife.targets.sequence import run_sequence
from tests.rules.test_target_sequences import FORGET_BY_ID, with_operation
from tests.servers import serve_in_thread


def memory_api(memories: dict[str, str], sent: list[str]) -> Starlette:
    async def listing(request: Request) -> Response:
        sent.append(f"GET {request.url.path}?{request.url.query}")
        return JSONResponse(
            {"results": [{"id": key, "memory": text} for key, text in memories.items()]}
        )

    async def delete(request: Request) -> Response:
        key = request.path_params["key"]
        sent.append(f"DELETE {request.url.path}")
        if memories.pop(key, None) is None:
            return JSONResponse({"detail": "Memory not found"}, status_code=404)
        return JSONResponse({"message": "Memory deleted successfully"})

    return Starlette(
        routes=[Route("/memories", listing), Route("/memories/{key}", delete, methods=["DELETE"])]
    )


async def forget(base_url: str, values: list[str], steps: Any = None) -> Any:
    target = parse_target(with_operation("forget", steps or FORGET_BY_ID), "t.yaml")
    target = target.model_copy(update={"base_url": base_url})

    async def send(
        target: Any, operation: Any, variables: dict[str, Any], now: str, run: str
    ) -> http.Response:
        return await http.call(target, operation, variables, scenario_now=now, run=run)

    try:
        return await run_sequence(
            target,
            target.operations.sequence("forget"),
            {
                "phone": "+34600",
                "user_id": "+34600",
                "value": values[0],
                "values": values,
                "domain": "job",
            },
            send,
        )
    finally:
        await http.close_clients()


async def test_every_memory_holding_a_value_of_the_fact_is_deleted_by_its_id() -> None:
    memories = {
        "m1": "Trabaja en PANADERÍA  quispe",
        "m2": "Trabaja en Taller Rivas",
        "m3": "Su mascota es Canelo",
    }
    sent: list[str] = []
    with serve_in_thread(memory_api(memories, sent)) as base_url:
        result = await forget(base_url, ["Taller Rivas", "Panadería Quispe"])
    assert result.selected == 2 and result.requests == 3
    assert sent == ["GET /memories?user_id=%2B34600", "DELETE /memories/m1", "DELETE /memories/m2"]
    assert memories == {"m3": "Su mascota es Canelo"}


async def test_nothing_holding_the_value_means_nothing_is_deleted() -> None:
    sent: list[str] = []
    with serve_in_thread(memory_api({"m3": "Su mascota es Canelo"}, sent)) as base_url:
        result = await forget(base_url, ["Taller Rivas"])
    assert result.selected == 0 and sent == ["GET /memories?user_id=%2B34600"]


async def test_a_refusal_ends_the_sequence_as_an_answer_holding_nothing() -> None:
    steps = [
        {
            "method": "DELETE",
            "path": "/memories/gone",
            "refused": [404],
            "extract": {"memory_id": "/id"},
        },
        {"method": "DELETE", "path": "/memories/{memory_id}"},
    ]
    sent: list[str] = []
    with serve_in_thread(memory_api({}, sent)) as base_url:
        result = await forget(base_url, ["x"], steps)
    assert result.refused and result.response.status == 404 and result.requests == 1
    assert sent == ["DELETE /memories/gone"]


async def test_records_that_are_not_a_list_are_a_bad_response() -> None:
    steps = [
        dict(FORGET_BY_ID[0], select={**FORGET_BY_ID[0]["select"], "records": "results[0]"}),
        FORGET_BY_ID[1],
    ]
    with (
        serve_in_thread(memory_api({"m1": "Taller Rivas"}, [])) as base_url,
        pytest.raises(TargetBadResponse, match="is not a list of records"),
    ):
        await forget(base_url, ["Taller Rivas"], steps)
