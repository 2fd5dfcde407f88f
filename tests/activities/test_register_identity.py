"""Registration never takes over someone else's identity: a phone the target says already
exists, or one another run claimed against the same target, is replaced by a fresh one. And
a registration retried by Temporal (its answer lost, or the activity failed after it) finds
the user its earlier attempt created: no orphan user is left on the target."""

from __future__ import annotations

import dataclasses
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from memlife import recorder
from memlife.activities.calls import send_once
from memlife.activities.target import register, register_tenant
from memlife.contracts import RegisterRequest
from memlife.recorder.claims import claim
from memlife.rules.phones import is_fictional, synthetic_phone
from memlife.rules.target import Operation, Target
from memlife.targets.http import Response, TargetError

NOW = "2026-12-03T00:00:00Z"


def _fresh_phone() -> str:
    return synthetic_phone(uuid.uuid4().hex, 0)


async def test_a_phone_that_already_exists_is_replaced(clean_target: Target) -> None:
    env = ActivityEnvironment()
    phone = _fresh_phone()
    first = await env.run(
        register_tenant,
        RegisterRequest(target=clean_target, phone=phone, tenant_alias="t000a", scenario_now=NOW),
    )
    assert first.phone is None  # registered as asked
    # Another tenant given the same phone: the target answers created=false.
    second = await env.run(
        register_tenant,
        RegisterRequest(
            target=clean_target,
            phone=phone,
            tenant_alias="t007b",
            scenario_now=NOW,
            run_id="another-run",
        ),
    )
    assert second.phone is not None and second.phone != phone and is_fictional(second.phone)
    assert second.user_id != first.user_id


async def test_a_phone_another_run_claimed_is_never_used(clean_target: Target, db_url: str) -> None:
    run_id = _shared_run(clean_target)
    phone = _fresh_phone()
    assert claim(clean_target.base_url, "earlier-run", "phone", [(phone, "t000a", "")]) == set()
    result = await ActivityEnvironment().run(
        register_tenant,
        RegisterRequest(
            target=clean_target, phone=phone, tenant_alias="t000a", scenario_now=NOW, run_id=run_id
        ),
    )
    assert result.phone is not None and result.phone != phone
    # The fresh phone is this run's now: nobody else gets it.
    assert claim(clean_target.base_url, "later-run", "phone", [(result.phone, "t000a", "")]) == {
        result.phone
    }


def _shared_run(target: Target) -> str:
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    recorder.merge_all(
        [
            recorder.RunRow(
                id=run_id,
                scenario="s",
                scenario_sha256="0" * 64,
                target_name="reference",
                target_base_url=target.base_url,
                clock="skip",
                meta_json=json.dumps({"target_identity": {"kind": "target file"}}),
                started_at=datetime.now(UTC),
            )
        ]
    )
    return run_id


class AnswerLost(TargetError):
    """The target answered; memlife never heard it (a timeout, a worker gone)."""


async def test_a_registration_retried_after_a_lost_answer_leaves_no_orphan(
    clean_target: Target, db_url: str
) -> None:
    request = RegisterRequest(
        target=clean_target,
        phone=_fresh_phone(),
        tenant_alias="t000a",
        scenario_now=NOW,
        run_id=_shared_run(clean_target),
    )
    created: list[str] = []

    async def lost(
        target: Target, operation: Operation, variables: dict[str, Any], scenario_now: str, run: str
    ) -> Response:
        response = await send_once(target, operation, variables, scenario_now, run)
        created.append(response.fields["user_id"])
        raise AnswerLost("read timeout")  # the user exists; its answer is gone

    first = ActivityEnvironment()
    with pytest.raises(AnswerLost):
        await first.run(register, request, lost)
    # Temporal retries the activity: same workflow, run and activity id, next attempt.
    retry = ActivityEnvironment()
    retry.info = dataclasses.replace(first.info, attempt=2)
    result = await retry.run(register, request, send_once)
    assert result.phone is None  # the phone asked for, not a fresh one
    assert result.user_id == created[0]  # the user the first attempt created: adopted
    # Without the journal the target's "already exists" made a second user, orphaning the
    # first: as another registration of the same phone still is (another activity).
    other = ActivityEnvironment()
    other.info = dataclasses.replace(first.info, activity_id="another")
    again = await other.run(register, request, send_once)
    assert again.phone is not None and again.user_id != created[0]


async def test_a_registration_retried_after_it_completed_sends_nothing(
    clean_target: Target, db_url: str
) -> None:
    request = RegisterRequest(
        target=clean_target,
        phone=_fresh_phone(),
        tenant_alias="t000b",
        scenario_now=NOW,
        run_id=_shared_run(clean_target),
    )
    env = ActivityEnvironment()
    done = await env.run(register, request, send_once)  # then the activity itself failed

    async def refuse(*_: Any) -> Response:
        raise AssertionError("a finished registration sent a request again")

    retry = ActivityEnvironment()
    retry.info = dataclasses.replace(env.info, attempt=2)
    again = await retry.run(register, request, refuse)
    assert (again.user_id, again.phone, again.status) == (done.user_id, None, done.status)


async def test_a_phone_found_taken_stays_refused_on_a_retry(
    clean_target: Target, db_url: str
) -> None:
    phone = _fresh_phone()
    someone = await ActivityEnvironment().run(
        register_tenant,
        RegisterRequest(target=clean_target, phone=phone, tenant_alias="other", scenario_now=NOW),
    )
    request = RegisterRequest(
        target=clean_target,
        phone=phone,
        tenant_alias="t001a",
        scenario_now=NOW,
        run_id=_shared_run(clean_target),
    )
    env = ActivityEnvironment()
    first = await env.run(register, request, send_once)
    retry = ActivityEnvironment()
    retry.info = dataclasses.replace(env.info, attempt=2)
    again = await retry.run(register, request, send_once)
    assert first.phone is not None and first.user_id != someone.user_id
    assert (again.phone, again.user_id) == (first.phone, first.user_id)
