"""Registration never takes over someone else's identity: a phone the target says already
exists, or one another run claimed against the same target, is replaced by a fresh one."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

from temporalio.testing import ActivityEnvironment

from memlife import recorder
from memlife.activities.target import register_tenant
from memlife.contracts import RegisterRequest
from memlife.recorder.claims import claim
from memlife.rules.phones import is_fictional, synthetic_phone
from memlife.rules.target import Target

NOW = "2026-12-03T00:00:00Z"


def _fresh_phone() -> str:
    return synthetic_phone(uuid.uuid4().hex, 0)


async def test_a_phone_that_already_exists_is_replaced(clean_target: Target) -> None:
    env = ActivityEnvironment()
    phone = _fresh_phone()
    first = await env.run(register_tenant, RegisterRequest(
        target=clean_target, phone=phone, tenant_alias="t000a", scenario_now=NOW))
    assert first.phone is None  # registered as asked
    # Another tenant given the same phone: the target answers created=false.
    second = await env.run(register_tenant, RegisterRequest(
        target=clean_target, phone=phone, tenant_alias="t007b", scenario_now=NOW,
        run_id="another-run"))
    assert second.phone is not None and second.phone != phone and is_fictional(second.phone)
    assert second.user_id != first.user_id


async def test_a_phone_another_run_claimed_is_never_used(clean_target: Target,
                                                         db_url: str) -> None:
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    recorder.merge_all([recorder.RunRow(
        id=run_id, scenario="s", scenario_sha256="0" * 64, target_name="reference",
        target_base_url=clean_target.base_url, clock="skip",
        meta_json=json.dumps({"target_identity": {"kind": "target file"}}),
        started_at=datetime.now(UTC))])
    phone = _fresh_phone()
    assert claim(clean_target.base_url, "earlier-run", "phone", [(phone, "t000a", "")]) == set()
    result = await ActivityEnvironment().run(register_tenant, RegisterRequest(
        target=clean_target, phone=phone, tenant_alias="t000a", scenario_now=NOW,
        run_id=run_id))
    assert result.phone is not None and result.phone != phone
    # The fresh phone is this run's now: nobody else gets it.
    assert claim(clean_target.base_url, "later-run", "phone",
                 [(result.phone, "t000a", "")]) == {result.phone}
