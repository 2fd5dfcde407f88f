"""A deletion check proves a tenant's erasure without writing to it: against the shipped
Mem0 target file and a stand-in that records every request, the check's questions go
through `ask` (Mem0's search), and the only request that changes anything is the
deletion it was asked to make."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment

from memlife.rules.erasure import DeletionCheckInput, ErasureReceipt
from memlife.rules.target import load_target
from memlife.stack.connection import verdict_result
from memlife.workflows.deletion_check import DeletionCheckWorkflow
from tests.servers import serve_in_thread
from tests.standins.mem0_oss import create_app
from tests.standins.recording import Recording
from tests.workflows.test_public_api_targets import MEM0_KEYS, TARGETS, mem0_databases

__all__ = ["mem0_databases"]  # the fixture

FACTS = ["I work at Astilleros Norte.", "My favourite colour is jade green."]


async def test_a_deletion_check_sends_no_write_for_the_tenant_it_checks(
    mem0_databases: tuple[Path, Path], skip_env: WorkflowEnvironment, skip_worker: str
) -> None:
    vectors, history = mem0_databases
    recording = Recording(create_app(vectors, history, **MEM0_KEYS))
    phone = f"+3460{uuid.uuid4().int % 10**7:07d}"
    with serve_in_thread(recording) as base_url:
        with httpx.Client(
            base_url=base_url, timeout=10, headers={"X-API-Key": MEM0_KEYS["api_key"]}
        ) as http:
            for fact in FACTS:
                http.post(
                    "/memories",
                    json={
                        "messages": [{"role": "user", "content": fact}],
                        "user_id": phone,
                        "infer": False,
                    },
                ).raise_for_status()
        recording.requests.clear()
        target = load_target(TARGETS / "mem0-oss.yaml").model_copy(update={"base_url": base_url})
        check = DeletionCheckInput(
            check_id=f"test-{uuid.uuid4().hex[:8]}",
            target=target,
            user_id=phone,
            phone=phone,
            values=["Astilleros Norte", "jade green"],
            questions=["Where do I work?"],
            request=True,
            deadline=timedelta(hours=1),
            poll=timedelta(minutes=15),
        )
        handle = await skip_env.client.start_workflow(
            DeletionCheckWorkflow.run,
            check,
            id=f"memlife/deletion-check/{check.check_id}",
            task_queue=skip_worker,
        )
        receipt = await verdict_result(handle, ErasureReceipt)

    # It asked (through search) and it deleted, once; it added nothing.
    assert any(r.startswith("POST /search") for r in recording.requests)
    assert recording.writes() == [f"DELETE /memories?user_id=%2B{phone[1:]}"]
    # What it found is Mem0's own: the history database keeps every deleted memory's text.
    stores = {s.store: s for s in receipt.stores}
    assert stores["vectors"].status == "clean" and stores["response"].status == "clean"
    assert stores["history"].status == "residue"
    assert receipt.verdict == "fail"
