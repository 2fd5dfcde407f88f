"""Timeouts and retry policies of every activity call, in one place."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.common import RetryPolicy

from memlife.rules.target import Target

# Target calls: transport errors, timeouts and 5xx back off and retry, bounded;
# 4xx, bad responses and configuration problems fail at once (non-retryable types).
TARGET_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=4,
    non_retryable_error_types=[
        "TargetClientError",
        "MissingSecret",
        "TargetConfigError",
        "TargetBadResponse",
    ],
)

# Conversations and store inspections retry their requests in place and heartbeat what is
# done, so a Temporal-level retry means the worker died (heartbeat timeout) and resumes where
# it stopped. Rolling restarts can kill one long activity several times in a row: measured in
# the crash test, four consecutive kills exhausted four attempts. These attempts are cheap
# (nothing is sent twice), so the budget is larger; what still fails is inconclusive.
RESUMABLE_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=10,
    non_retryable_error_types=TARGET_RETRY.non_retryable_error_types,
)
INSPECT_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=10,
    non_retryable_error_types=["MissingSecret", "TargetConfigError"],
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
_SLACK = timedelta(seconds=10)
_BACKOFF_TOTAL = timedelta(seconds=20)  # in-place retries sleep 0.2 s doubling to 5 s


def target_timeout(call_timeout: timedelta) -> timedelta:
    """An attempt may take the HTTP timeout plus scheduling slack."""
    return call_timeout + _SLACK


def _per_request(target: Target) -> timedelta:
    return target.timeout * target.max_attempts + _BACKOFF_TOTAL


# Activities heartbeat every 2 s in the background: a worker that died is noticed this fast.
HEARTBEAT_TIMEOUT = timedelta(seconds=10)


def converse_timeouts(target: Target, messages: int) -> tuple[timedelta, timedelta]:
    """(start-to-close, heartbeat) for sending `messages` in order, each retried in place."""
    per_message = _per_request(target)
    return per_message * messages + _SLACK, HEARTBEAT_TIMEOUT


def inspect_timeout(target: Target, reads_per_store: int) -> timedelta:
    stores = max(1, sum(1 for s in target.stores if s.probe is not None))
    # Reads run 8 at a time; bound generously by the serial worst case of one store.
    return _per_request(target) * reads_per_store * stores / 8 + _per_request(target) + _SLACK


def batch_timeout(target: Target, kind: str, requests: list[Any]) -> timedelta:
    """A cohort's batch: its requests go `max_concurrency` at a time; bound it by the serial
    worst case of that many lanes (the heartbeat notices a dead worker long before)."""
    if kind == "converse":
        count = sum(len(request.messages) for request in requests)
    elif kind == "inspect":
        stores = max(1, sum(1 for s in target.stores if s.probe is not None))
        count = sum(stores * (len(r.identities) + len(r.needles)) for r in requests)
    else:
        count = len(requests)
    lanes = max(1, target.max_concurrency)
    return _per_request(target) * (count / lanes + 1) + _SLACK


# Paraphrase candidates (activities/paraphrase.py): a local model embeds every answer of the
# run, minutes at thousands of pairs; a missing model is the worker's to fix, not retried.
PARAPHRASE_TIMEOUT = timedelta(hours=1)
PARAPHRASE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=5),
    maximum_attempts=3,
    non_retryable_error_types=["ParaphraseModelMissing", "ValidationError", "TypeError"],
)
