"""Target activities: one HTTP call each, errors raised with precise, typed failures.

Transport errors, timeouts and 5xx are retryable (the workflow's RetryPolicy backs off);
4xx and configuration problems are non-retryable. The workflow turns an exhausted call
into an inconclusive observation: verdicts are data, never activity failures.
"""

from __future__ import annotations

from datetime import UTC, datetime

from temporalio import activity
from temporalio.exceptions import ApplicationError

from memlife.lifecycle import RegisterRequest, RegisterResult, SayRequest, SayResult
from memlife.log import get_logger
from memlife.targets import http
from memlife.targets.http import TargetError

log = get_logger("memlife.activities.target")

# The error types the workflow's RetryPolicy must not retry.
NON_RETRYABLE_ERRORS = ["TargetClientError", "MissingSecret", "TargetConfigError"]


def _application_error(error: TargetError) -> ApplicationError:
    return ApplicationError(str(error), type=type(error).__name__,
                            non_retryable=not error.retryable)


@activity.defn(name="memlife.register_tenant")
async def register_tenant(request: RegisterRequest) -> RegisterResult:
    operation = request.target.operations.registration
    if operation is None:  # the target identifies tenants by phone alone
        return RegisterResult(user_id=request.phone, latency_ms=0.0, status=0,
                              wall_time=datetime.now(UTC))
    wall_time = datetime.now(UTC)
    try:
        response = await http.call(
            request.target, operation,
            {"phone": request.phone, "tenant_alias": request.tenant_alias},
            scenario_now=request.scenario_now,
        )
    except TargetError as error:
        log.warning("register failed", target=request.target.name, error=str(error),
                    attempt=activity.info().attempt)
        raise _application_error(error) from None
    user_id = response.fields.get("user_id", request.phone)
    return RegisterResult(user_id=str(user_id), latency_ms=response.latency_ms,
                          status=response.status, wall_time=wall_time)


@activity.defn(name="memlife.say")
async def say(request: SayRequest) -> SayResult:
    """Send one message through the conversation endpoint and return the reply."""
    wall_time = datetime.now(UTC)
    try:
        response = await http.call(
            request.target, request.target.operations.say,
            {"phone": request.phone, "user_id": request.user_id, "message": request.message},
            scenario_now=request.scenario_now,
        )
    except TargetError as error:
        log.warning("say failed", target=request.target.name, error=str(error),
                    attempt=activity.info().attempt)
        raise _application_error(error) from None
    reply = response.fields["reply"]
    return SayResult(reply=reply if isinstance(reply, str) else str(reply),
                     latency_ms=response.latency_ms, status=response.status,
                     wall_time=wall_time)
