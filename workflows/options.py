"""Timeouts and retry policies of every activity call, in one place."""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import RetryPolicy

# Target calls: transport errors, timeouts and 5xx back off and retry, bounded;
# 4xx and configuration problems fail at once (non-retryable types).
TARGET_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=4,
    non_retryable_error_types=["TargetClientError", "MissingSecret", "TargetConfigError"],
)

# Recording: the database may be briefly unavailable; retries are safe (idempotent writes).
RECORD_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(minutes=1),
    maximum_attempts=20,
    non_retryable_error_types=["ValidationError", "TypeError"],
)

RECORD_TIMEOUT = timedelta(minutes=2)


def target_timeout(call_timeout: timedelta) -> timedelta:
    """An attempt may take the HTTP timeout plus scheduling slack."""
    return call_timeout + timedelta(seconds=10)
