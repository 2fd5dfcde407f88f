"""The cohort workflow's one activity per step (`memlife.target_batch`): many target calls
of one kind at once, each retried in place, each item's error returned as data."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import activity

from memlife import contracts
from memlife.activities.calls import (
    application_error,
    heartbeating,
    send_retrying,
)
from memlife.activities.stores import inspect, stage_and_strip
from memlife.activities.target import (
    IdentityTaken,
    change_space,
    delete,
    forget,
    maintain,
    read_deletion_status,
    register,
    send_all,
)
from memlife.contracts import (
    BatchOutcome,
    ConverseRequest,
    DeleteRequest,
    ForgetRequest,
    InspectRequest,
    MaintainRequest,
    RegisterRequest,
    SpaceRequest,
    TargetBatch,
)
from memlife.rules.evidence import Reply, StoreRead
from memlife.targets.http import MissingSecret, TargetError
from memlife.targets.lanes import WORK_BEGAN

# Items of a batch in flight at once; the target's own max_concurrency bounds the requests.
BATCH_ITEMS_IN_FLIGHT = 64

_REQUEST_TYPES: dict[str, type[Any]] = {
    "register": RegisterRequest,
    "converse": ConverseRequest,
    "delete": DeleteRequest,
    "deletion-status": DeleteRequest,
    "forget": ForgetRequest,
    "inspect": InspectRequest,
    "maintain": MaintainRequest,
    "space": SpaceRequest,
}


def _jsonable(value: Any) -> Any:
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    return value.model_dump(mode="json")


async def _batch_item(kind: str, request: Any, partial: list[Reply]) -> Any:
    if kind == "register":
        return await register(request, send_retrying)
    if kind == "converse":
        await send_all(request, partial)
        return partial
    if kind == "delete":
        return await delete(request, send_retrying)
    if kind == "deletion-status":
        return await read_deletion_status(request, send_retrying)
    if kind == "forget":
        return await forget(request, send_retrying)
    if kind == "maintain":
        return await maintain(request, send_retrying)
    if kind == "space":
        return await change_space(request, send_retrying)
    return await inspect(request)  # staged with the batch's others (target_batch)


@activity.defn(name=contracts.TARGET_BATCH.name)
async def target_batch(batch: TargetBatch) -> list[BatchOutcome]:
    """Many target calls of one kind at once: each request retried in place, each item's
    error returned as data. Finished items (and a conversation's answered messages) are
    heartbeated, so a retried batch sends nothing twice."""
    saved = activity.info().heartbeat_details
    state: dict[str, Any] = saved[0] if saved else {}
    # Each finished item is serialized once, when it finishes: a heartbeat sends what is
    # already there instead of dumping every result again every two seconds.
    done_json: dict[str, Any] = dict(state.get("done", {}))
    done = {int(k): BatchOutcome.model_validate(v) for k, v in done_json.items()}
    partial = {
        int(k): [Reply.model_validate(r) for r in v] for k, v in state.get("partial", {}).items()
    }
    request_type = _REQUEST_TYPES[batch.kind]
    limit = asyncio.Semaphore(BATCH_ITEMS_IN_FLIGHT)
    # Store reads change nothing: a retried inspection reads again, and its (large) results
    # stay out of the heartbeats. Everything else resumes where it stopped.
    resumable = batch.kind != "inspect"

    def progress() -> dict[str, Any]:
        if not resumable:
            return {}
        return {
            "done": done_json,
            "partial": {
                str(k): [r.model_dump(mode="json") for r in v] for k, v in partial.items() if v
            },
        }

    # An inspection's reads, staged for its step's recording once every item has read:
    # one write for the batch (activities/stores.py, stage_and_strip).
    inspected: dict[int, tuple[InspectRequest, list[StoreRead]]] = {}

    async def run(index: int, item: dict[str, Any]) -> None:
        if index in done:
            return
        request = request_type.model_validate({**item, "target": batch.target})
        async with limit:
            try:
                value = await _batch_item(batch.kind, request, partial.setdefault(index, []))
                if batch.kind == "inspect":
                    inspected[index] = (request, value)
                    return
                outcome = BatchOutcome(value=_jsonable(value))
            except MissingSecret as error:  # the same for every item: the batch fails
                raise application_error(error) from None
            except (TargetError, IdentityTaken) as error:
                outcome = BatchOutcome(ok=False, error=f"{type(error).__name__}: {error}")
            done[index] = outcome
            if resumable:
                done_json[str(index)] = outcome.model_dump(mode="json")
            partial.pop(index, None)

    # Every request of the batch counts as old as the batch (memlife/targets/lanes.py).
    WORK_BEGAN.set(asyncio.get_running_loop().time())
    async with heartbeating(progress):
        await asyncio.gather(*(run(i, item) for i, item in enumerate(batch.items)))
        if inspected:
            indexes = list(inspected)
            stripped = await stage_and_strip([inspected[i] for i in indexes])
            done.update(
                {
                    i: BatchOutcome(value=_jsonable(reads))
                    for i, reads in zip(indexes, stripped, strict=True)
                }
            )
    return [done[i] for i in range(len(batch.items))]
