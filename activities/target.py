"""Target activities: the operations of a target file, one call per activity (the store
reads are stores.py, the cohort's batches batch.py).

Registration and deletion requests are one call per activity: transport errors, timeouts
and 5xx are retried by the workflow's RetryPolicy with backoff; 4xx and configuration
problems are non-retryable. A conversation step sends one tenant's messages in order inside
one activity (the dev server's activity rate would otherwise cap a large run): each request
is retried in place with backoff, every result is heartbeated, and a retried activity
resumes after the last message that got an answer, so nothing is sent twice. A request that
still fails is returned as a target error: verdicts are data, never activity failures.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from memlife import contracts
from memlife.activities.calls import (
    Send,
    application_error,
    as_activity,
    call_with_retries,
    heartbeating,
    log,
    send_once,
    text_of,
)
from memlife.contracts import (
    ConverseRequest,
    DeleteRequest,
    ForgetRequest,
    MaintainRequest,
    RegisterRequest,
    RegisterResult,
    SpaceRequest,
)
from memlife.rules.evidence import DeletionState, MaintenanceResult, Reply, SpaceResult
from memlife.rules.target import (
    DeleteOperation,
)
from memlife.targets.http import MissingSecret, TargetError
from memlife.targets.sequence import SequenceResult, run_sequence

if TYPE_CHECKING:  # the recorder is imported where it is used, as claims are
    from memlife.recorder.registrations import Attempt, Outcome


@activity.defn(name=contracts.REGISTER_TENANT.name)
async def register_tenant(request: RegisterRequest) -> RegisterResult:
    try:
        return await register(request, send_once)
    except TargetError as error:
        log.warning(
            "register failed",
            target=request.target.name,
            error=str(error),
            attempt=activity.info().attempt,
        )
        raise application_error(error) from None
    except IdentityTaken as error:
        raise ApplicationError(str(error), type="IdentityTaken", non_retryable=True) from None


# Fresh identities tried when a phone is taken (claimed by another run against the same
# target, or answered "already exists") before registration fails.
IDENTITY_ATTEMPTS = 5


class IdentityTaken(Exception):
    """Every phone tried for a tenant was already someone's on the target."""


async def register(request: RegisterRequest, send: Send) -> RegisterResult:
    """Register the tenant under a phone that is its own: never one another run used
    against the same target (recorder/claims.py), never one the target says already
    exists (a `created` of false). A taken phone is replaced by a fresh fictional one, and
    the result says which phone the tenant has.

    Against a shared target a registration is idempotent: it keeps a journal of what it
    sent and got back (recorder/registrations.py), so a retried attempt finds the user an
    earlier one created (resuming after the last step that got an answer, or adopting the
    user the phone names when that answer was lost) instead of leaving it on the target as
    an orphan. A fresh target is the run's alone and goes with it: no journal there."""
    from memlife.recorder.claims import claim
    from memlife.recorder.registrations import attempts
    from memlife.recorder.values import run_shared_target
    from memlife.rules.phones import synthetic_phone

    shared = await asyncio.to_thread(run_shared_target, request.run_id) if request.run_id else None
    key = registration_key(request) if shared is not None else None
    journal = await asyncio.to_thread(attempts, key) if key is not None else {}
    phone = request.phone
    refused: list[str] = []
    for attempt in range(1, IDENTITY_ATTEMPTS + 1):
        earlier = journal.get(phone)
        known_refused = earlier is not None and earlier.outcome == "refused"
        taken = (
            not known_refused
            and shared is not None
            and bool(
                await asyncio.to_thread(
                    claim, shared, request.run_id, "phone", [(phone, request.tenant_alias, "")]
                )
            )
        )
        if not taken and not known_refused:
            result = await _register_as(request, phone, send, key, earlier)
            if result is not None:
                return result
        refused.append(phone)
        log.info(
            "registration retried with a fresh phone",
            tenant=request.tenant_alias,
            reason="claimed by another run" if taken else "already exists",
        )
        phone = synthetic_phone(f"{request.run_id}/{request.tenant_alias}/{attempt}", 0)
    raise IdentityTaken(
        f"{request.tenant_alias}: phones {', '.join(refused)} are all taken "
        f"on {request.target.name}"
    )


def registration_key(request: RegisterRequest) -> str | None:
    """What stays the same across the retries of one registration and differs between
    registrations (a tenant registered again after its deletion is a new one): the
    activity's identity in its workflow run, and the tenant. None outside an activity."""
    try:
        info = activity.info()
    except RuntimeError:
        return None
    return (
        f"{request.run_id}/{info.workflow_id}/{info.workflow_run_id}/{info.activity_id}/"
        f"{request.tenant_alias}"
    )


async def _register_as(
    request: RegisterRequest,
    phone: str,
    send: Send,
    key: str | None = None,
    earlier: Attempt | None = None,
) -> RegisterResult | None:
    """The registration requests in order; None when the target answers that the identity
    already exists (`created` extracted as false). With a journal `key`, each answer is
    noted as it comes, and a retry (`earlier`) resumes after the last step answered."""
    from memlife.recorder.registrations import note

    async def journal(outcome: Outcome, steps_done: int, answer: dict[str, Any]) -> None:
        if key is not None:
            await asyncio.to_thread(
                note, key, request.run_id, request.tenant_alias, phone, outcome, steps_done, answer
            )

    steps = request.target.operations.register_steps()  # e.g. user, then session
    done = earlier.answer if earlier is not None else {}
    extracted: dict[str, Any] = dict(done.get("fields", {}))
    latency_ms = float(done.get("latency_ms", 0.0))
    status, trace = int(done.get("status", 0)), done.get("traceparent")
    first = earlier.steps_done if earlier is not None else 0
    wall_time = (
        datetime.fromisoformat(done["wall_time"]) if "wall_time" in done else datetime.now(UTC)
    )
    if earlier is None:  # before anything is sent: a retry then knows what may exist
        await journal("sent", 0, {"wall_time": wall_time.isoformat()})
    for index in range(first, len(steps)):
        # What a step extracts is a variable of the steps after it, as in every sequence
        # (the loader accepts `{model}` after a step that extracts `model`: Letta's agent
        # takes the model handle its server lists). The user id is the phone until the
        # target gives one.
        user_id = str(extracted.get("user_id", phone))
        response = await send(
            request.target,
            steps[index],
            {
                **extracted,
                "phone": phone,
                "tenant_alias": request.tenant_alias,
                "user_id": user_id,
                "registration_key": _idempotency_key(key, request, phone),
            },
            request.scenario_now,
            request.run_id,
        )
        # "Already exists" answering the step an earlier attempt sent and never heard back
        # from is that attempt's own user: adopted, not left behind as an orphan. (Lost
        # between the target's refusal and the journal, a phone that was someone else's
        # would be adopted too: a moment's window, where memlife would at worst see that
        # user's data as a leak, never miss one.)
        adopt = earlier is not None and index == first and earlier.outcome == "sent"
        if _is_false(response.fields.get("created")) and not adopt:
            await journal("refused", index, {})
            return None
        extracted.update(response.fields)
        latency_ms += response.latency_ms
        status, trace = response.status, response.traceparent
        await journal(
            "registered" if index + 1 == len(steps) else "sent",
            index + 1,
            {
                "fields": extracted,
                "latency_ms": latency_ms,
                "status": status,
                "traceparent": trace,
                "wall_time": wall_time.isoformat(),
            },
        )
    return RegisterResult(
        user_id=str(extracted.get("user_id", phone)),
        latency_ms=latency_ms,
        status=status,
        wall_time=wall_time,
        phone=None if phone == request.phone else phone,
        traceparent=trace,
    )


def _idempotency_key(key: str | None, request: RegisterRequest, phone: str) -> str:
    """`{registration_key}` of a target file's register steps: the same across the retries
    of one registration with one phone, for a service that takes an idempotency key."""
    identity = key or f"{request.run_id}/{request.tenant_alias}/{request.scenario_now}"
    return hashlib.sha256(f"{identity}\n{phone}".encode()).hexdigest()[:32]


def _is_false(value: Any) -> bool:
    return value is False or (isinstance(value, str) and value.strip().lower() == "false")


@activity.defn(name=contracts.CONVERSE.name)
async def converse(request: ConverseRequest) -> list[Reply]:
    """Send a tenant's messages in order; return one Reply per message."""
    info = activity.info()
    resumed: list[dict[str, Any]] = info.heartbeat_details[0] if info.heartbeat_details else []
    done = [Reply.model_validate(item) for item in resumed]
    # Every heartbeat carries every reply so far; each is dumped once, not once per beat
    # (dumping them all again made a conversation's heartbeats quadratic in its length).
    dumped = list(resumed)

    def progress() -> list[dict[str, Any]]:
        dumped.extend(r.model_dump(mode="json") for r in done[len(dumped) :])
        return list(dumped)

    async with heartbeating(progress):
        await send_all(request, done, beat=progress)
    return done


async def send_all(
    request: ConverseRequest,
    done: list[Reply],
    beat: Callable[[], list[dict[str, Any]]] | None = None,
) -> None:
    """Send the messages after the `done` ones in order, appending a Reply for each; with
    `beat`, heartbeat what it returns after each reply."""
    operations = request.target.operations
    questions = set(request.questions)
    for index in range(len(done), len(request.messages)):
        # A memory API answers questions elsewhere (search) than it takes statements (add).
        operation = (
            operations.ask if index in questions and operations.ask is not None else operations.say
        )
        variables = {
            "phone": request.phone,
            "user_id": request.user_id,
            "message": request.messages[index],
        }
        if request.space_id is not None:  # said inside a shared space
            if operations.space_say is None:
                raise ApplicationError(
                    "the target file has no operations.space_say",
                    type="TargetConfigError",
                    non_retryable=True,
                )
            operation = (
                operations.space_ask
                if index in questions and operations.space_ask is not None
                else operations.space_say
            )
            variables |= {"space_id": request.space_id, "space_name": request.space_name}
        retrieval = (operation.answers or request.target.answers) == "retrieval"
        wall_time = datetime.now(UTC)
        try:
            response, attempts = await call_with_retries(
                request.target, operation, variables, request.scenario_now, request.run_id
            )
            # A refused answer (a non-member's 403) holds nothing: it has no fields.
            context = response.fields.get("context")
            reply = Reply(
                index=index,
                refused=response.refused,
                reply="" if response.refused else text_of(response.fields["reply"]),
                context=None if context is None else text_of(context),
                stages=response.timings,
                cost=_number(response.fields.get("cost")),
                tokens=_whole(response.fields.get("tokens")),
                http_status=response.status,
                latency_ms=response.latency_ms,
                attempts=attempts,
                wall_time=wall_time,
                traceparent=response.traceparent,
                retrieval=retrieval,
            )
        except MissingSecret as error:
            raise application_error(error) from None
        except TargetError as error:
            reply = Reply(
                index=index,
                status="target-error",
                http_status=error.status,
                error=f"{type(error).__name__}: {error}",
                wall_time=wall_time,
                traceparent=error.traceparent,
                attempts=request.target.max_attempts if error.retryable else 1,
            )
        done.append(reply)
        if beat is not None:
            activity.heartbeat(beat())


def _number(value: Any) -> float | None:
    """A reported cost: a number, or a numeric string; anything else is not a cost."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _whole(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _deletion_state(
    operation: DeleteOperation,
    result: SequenceResult,
    wall_time: datetime,
    synchronous_if_silent: bool,
) -> DeletionState:
    response = result.response
    status = response.fields.get("status")
    status_text = None if status is None else str(status)
    done = (
        status_text in operation.done_values if status_text is not None else (synchronous_if_silent)
    )
    return DeletionState(
        status=status_text,
        deletion_id=None
        if response.fields.get("deletion_id") is None
        else str(response.fields["deletion_id"]),
        done=done,
        failed=status_text in operation.failed_values,
        http_status=response.status,
        latency_ms=result.latency_ms,
        wall_time=wall_time,
        traceparent=response.traceparent,
    )


async def _send_named(
    request: DeleteRequest | ForgetRequest | MaintainRequest | SpaceRequest,
    name: str,
    variables: dict[str, Any],
    send: Send,
) -> tuple[SequenceResult, datetime]:
    """An optional operation of the target file, by name: one request or a sequence (a
    configuration error, never retried, when the file has none)."""
    steps = request.target.operations.sequence(name)
    if not steps:
        raise ApplicationError(
            f"the target file has no operations.{name}",
            type="TargetConfigError",
            non_retryable=True,
        )
    wall_time = datetime.now(UTC)
    result = await run_sequence(
        request.target,
        steps,
        {"phone": request.phone, "user_id": request.user_id, **variables},
        send,
        request.scenario_now,
        request.run_id,
    )
    return result, wall_time


@activity.defn(name=contracts.DELETE_TENANT.name)
async def delete_tenant(request: DeleteRequest) -> DeletionState:
    return await as_activity(delete(request, send_once))


async def delete(request: DeleteRequest, send: Send) -> DeletionState:
    result, wall_time = await _send_named(request, "delete_tenant", {}, send)
    if result.refused:  # the service has no such tenant (any more): nothing to erase
        return _refused_erasure(result, wall_time)
    # Without a status operation, a 2xx answer is all the confirmation there is.
    silent_is_done = request.target.operations.deletion_status is None
    operation = request.target.operations.sequence("delete_tenant")[-1]
    return _deletion_state(operation, result, wall_time, silent_is_done)


@activity.defn(name=contracts.DELETION_STATUS.name)
async def deletion_status(request: DeleteRequest) -> DeletionState:
    return await as_activity(read_deletion_status(request, send_once))


async def read_deletion_status(request: DeleteRequest, send: Send) -> DeletionState:
    result, wall_time = await _send_named(
        request, "deletion_status", {"deletion_id": request.deletion_id or ""}, send
    )
    if result.refused:
        return _refused_erasure(result, wall_time)
    operation = request.target.operations.deletion_status
    assert operation is not None  # _send_named refuses a file without one
    return _deletion_state(operation, result, wall_time, False)


def _refused_erasure(result: SequenceResult, wall_time: datetime) -> DeletionState:
    """The service refused the erasure request as one for something it does not have (a
    404 for a user already gone): done, which the stores and answers then prove or not."""
    return DeletionState(
        status=f"refused (HTTP {result.response.status})",
        done=True,
        http_status=result.response.status,
        latency_ms=result.latency_ms,
        wall_time=wall_time,
        traceparent=result.response.traceparent,
    )


@activity.defn(name=contracts.FORGET_FACT.name)
async def forget_fact(request: ForgetRequest) -> DeletionState:
    """Erase one fact through the target's `forget` operation (a 2xx means done)."""
    return await as_activity(forget(request, send_once))


async def forget(request: ForgetRequest, send: Send) -> DeletionState:
    result, wall_time = await _send_named(
        request,
        "forget",
        {
            "value": request.value,
            "values": request.values or [request.value],
            "domain": request.domain,
        },
        send,
    )
    if result.refused:
        return _refused_erasure(result, wall_time)
    status = result.response.fields.get("status")
    if result.selected == 0:  # the look-up found no record holding the value
        status = "nothing held the value"
    return DeletionState(
        status=None if status is None else str(status),
        done=True,
        http_status=result.response.status,
        latency_ms=result.latency_ms,
        wall_time=wall_time,
        traceparent=result.response.traceparent,
    )


@activity.defn(name=contracts.MAINTAIN_TARGET.name)
async def maintain_target(request: MaintainRequest) -> MaintenanceResult:
    """Trigger one of the target's `maintain` operations (a 2xx means it ran)."""
    return await as_activity(maintain(request, send_once))


async def maintain(request: MaintainRequest, send: Send) -> MaintenanceResult:
    result, wall_time = await _send_named(request, f"maintain.{request.operation}", {}, send)
    response = result.response
    status = response.fields.get("status")
    return MaintenanceResult(
        operation=request.operation,
        status=None if status is None else str(status),
        http_status=response.status,
        latency_ms=result.latency_ms,
        wall_time=wall_time,
        traceparent=response.traceparent,
    )


@activity.defn(name=contracts.SPACE_OPERATION.name)
async def space_operation(request: SpaceRequest) -> SpaceResult:
    """Create, join, leave or delete a shared space through the target file's operation."""
    return await as_activity(change_space(request, send_once))


async def change_space(request: SpaceRequest, send: Send) -> SpaceResult:
    name = f"{request.action}_space"
    result, wall_time = await _send_named(
        request,
        name,
        {"space_name": request.space_name, "space_id": request.space_id or request.space_name},
        send,
    )
    response = result.response
    status = response.fields.get("status")
    space_id = response.fields.get("space_id") or request.space_id or request.space_name
    return SpaceResult(
        space_id=str(space_id),
        status=None if status is None else str(status),
        http_status=response.status,
        latency_ms=result.latency_ms,
        wall_time=wall_time,
        traceparent=response.traceparent,
    )
