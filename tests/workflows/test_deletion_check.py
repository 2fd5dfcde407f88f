"""DeletionCheckWorkflow against the real reference target on the time-skipping server: a
tenant written through the conversation surface, deleted, and followed until every store is
clean (or the deadline says it never will be)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from memlife import recorder
from memlife.bundled.reference.target_file import reference_target
from memlife.rules.erasure import DeletionCheckInput, ErasureReceipt
from memlife.rules.target import Target
from memlife.stack import embedded
from memlife.stack.connection import verdict_result
from memlife.workflows.deletion_check import DeletionCheckWorkflow

FACTS = ["Mi color favorito es el verde jade.", "Trabajo en Astilleros Norte."]
VALUES = ["verde jade", "Astilleros Norte"]


@pytest.fixture(scope="module")
def fresh_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """Its own target: the session's shared one has a clock other tests moved days ahead."""
    state = tmp_path_factory.mktemp("reference-deletion-check")
    with embedded.reference_target(state) as process:
        yield reference_target(process.base_url)


@pytest.fixture(scope="module")
def graph_fault_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    state = tmp_path_factory.mktemp("reference-graph-fault")
    with embedded.reference_target(state, faults=["graph-unscoped-delete"]) as process:
        yield reference_target(process.base_url)


def write_tenant(target: Target) -> tuple[str, str]:
    """A tenant the way a real one comes to exist: registered, then told facts."""
    phone = f"+3460{uuid.uuid4().int % 10**7:07d}"
    with httpx.Client(base_url=target.base_url, timeout=10) as http:
        user_id = http.post("/v1/users", json={"phone": phone}).json()["user_id"]
        for fact in FACTS:
            http.post("/v1/preview", json={"phone": phone, "message": fact}).raise_for_status()
        # Its facts landed (a read waits for the target's ingestion queue): a deletion
        # check is about a tenant whose data is there, not one racing its own writes.
        memory = http.get("/admin/stores/memory/records", params={"tenant_id": user_id})
        assert len(memory.json()["records"]) == len(FACTS)
    return user_id, phone


def check_input(target: Target, user_id: str, phone: str, **changes: object) -> DeletionCheckInput:
    return DeletionCheckInput(
        check_id=f"test-{uuid.uuid4().hex[:8]}",
        target=target,
        user_id=user_id,
        phone=phone,
        values=VALUES,
        questions=["¿Cuál es mi color favorito?"],
        request=True,
        # The reference target answers only through `say` (a chat), which stores what it
        # is asked: asking it is a write the check must be told to make.
        ask_through_say=True,
        deadline=timedelta(hours=6),
        poll=timedelta(minutes=15),
    ).model_copy(update=changes)


async def run_check(
    env: WorkflowEnvironment, task_queue: str, check: DeletionCheckInput
) -> ErasureReceipt:
    """The receipt, whether the check passed (COMPLETED) or not (FAILED, carrying it)."""
    handle = await env.client.start_workflow(
        DeletionCheckWorkflow.run,
        check,
        id=f"memlife/deletion-check/{check.check_id}",
        task_queue=task_queue,
    )
    return await verdict_result(handle, ErasureReceipt)


async def test_a_clean_deletion_gets_a_passing_receipt_with_time_to_forget(
    skip_env: WorkflowEnvironment, skip_worker: str, fresh_target: Target
) -> None:
    user_id, phone = write_tenant(fresh_target)
    receipt = await run_check(skip_env, skip_worker, check_input(fresh_target, user_id, phone))

    assert receipt.verdict == "pass", receipt.reasons
    stores = {s.store: s for s in receipt.stores}
    assert {
        "thread",
        "memory",
        "graph",
        "jobs",
        "summaries",
        "cache",
        "response",
        "deletion-status",
    } <= set(stores)
    assert all(s.status == "clean" for s in stores.values())
    # The reference target purges 30 scenario minutes after the request: the memory store
    # was seen with residue first and became clean at a later round.
    assert stores["memory"].residue_seen_at is not None
    assert stores["memory"].time_to_forget_s is not None
    assert stores["memory"].time_to_forget_s >= 30 * 60
    assert receipt.confirmed_at is not None and receipt.requested_at is not None
    assert receipt.rounds >= 3
    # The tenant's values never appear in clear in the receipt.
    dumped = receipt.model_dump_json()
    assert not any(value in dumped for value in VALUES)
    # The receipt outlives Temporal's retention: it is in the recorder too.
    with recorder.session() as db:
        row = db.get(recorder.ErasureReceiptRow, receipt.check_id)
        assert row is not None and row.verdict == "pass" and row.tenant == user_id
        assert ErasureReceipt.model_validate_json(row.receipt_json) == receipt


async def test_a_deletion_that_misses_the_graph_fails_naming_the_graph(
    skip_env: WorkflowEnvironment, skip_worker: str, graph_fault_target: Target
) -> None:
    user_id, phone = write_tenant(graph_fault_target)
    receipt = await run_check(
        skip_env, skip_worker, check_input(graph_fault_target, user_id, phone)
    )

    assert receipt.verdict == "fail"
    stores = {s.store: s for s in receipt.stores}
    assert stores["graph"].status == "residue"
    assert stores["graph"].found
    assert stores["memory"].status == "clean"
    assert any(reason.startswith("graph:") for reason in receipt.reasons)
    # It polled until the deadline, then stopped.
    assert receipt.finished_at is not None
    assert receipt.finished_at >= receipt.deadline_at


async def test_an_unreachable_target_is_inconclusive_never_clean(
    skip_env: WorkflowEnvironment, skip_worker: str, tmp_path: Path
) -> None:
    nowhere = reference_target(f"http://127.0.0.1:{embedded.free_port()}").model_copy(
        update={"max_attempts": 1}
    )
    check = check_input(
        nowhere, "u-missing", "+34600000000", request=False, deadline=timedelta(minutes=30)
    )
    receipt = await run_check(skip_env, skip_worker, check)

    assert receipt.verdict == "inconclusive"
    assert all(s.status == "unreadable" for s in receipt.stores)
