"""An ad hoc deletion check: its options read and checked (`deletion_check_input`), then
a DeletionCheckWorkflow started on the running stack (`memlife dev`, or the configured
cluster, whose workers run it) and, when asked, awaited for its receipt."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memlife.api.checks import duration_option
from memlife.api.engine import Output
from memlife.errors import InputError, Problem, collect
from memlife.rules.erasure import DeletionCheckInput, ErasureReceipt


@dataclass
class DeletionOptions:
    """What a deletion check is asked, as `memlife check-deletion`'s options name it."""

    target: Any  # a target file's path, or a Target
    tenant: str  # the user id on the target
    value: list[str] = field(default_factory=list)  # values that must be gone
    phone: str | None = None
    ask: list[str] = field(default_factory=list)  # questions asked as the tenant
    ask_through_say: bool = False
    request: bool = False  # request the deletion first (delete_tenant)
    deadline: str = "24h"
    poll: str = "1h"
    id: str | None = None


def deletion_check_input(args: DeletionOptions | Any) -> DeletionCheckInput:
    """The workflow input from the options (a DeletionOptions or the command line's
    namespace: the same names), validated: every problem at once (InputError)."""
    from memlife.rules.target import Target, load_target

    problems: list[Problem] = []
    target = (
        args.target
        if isinstance(args.target, Target)
        else collect(problems, load_target, args.target)
    )
    label = f"(target {target.name})" if isinstance(args.target, Target) else args.target
    deadline = duration_option(args.deadline, "--deadline", problems)
    poll = duration_option(args.poll, "--poll", problems)
    if not args.tenant.strip():
        problems.append(Problem("command line", "--tenant", "must not be empty"))
    if args.ask and not args.phone:
        problems.append(
            Problem("command line", "--ask", "asking the tenant's channel needs its --phone")
        )
    if target is not None:
        if args.ask and target.operations.ask is None and not args.ask_through_say:
            problems.append(
                Problem(
                    label,
                    "operations.ask",
                    "--ask needs an ask "
                    "operation: without one a question goes through say, "
                    "which writes it to the tenant being checked; describe "
                    "ask (e.g. the service's search), or add --ask-through-say"
                    " to accept the writes",
                )
            )
        if args.request and target.operations.delete_tenant is None:
            problems.append(
                Problem(
                    label,
                    "operations.delete_tenant",
                    "--request needs a delete_tenant operation in the target file",
                )
            )
        if not any(store.probe for store in target.stores) and not args.ask:
            problems.append(
                Problem(
                    label,
                    "stores",
                    "no store has a probe and no "
                    "--ask question was given: there is nothing to check",
                )
            )
    if problems:
        raise InputError(problems)
    check_id = args.id or (datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + os.urandom(3).hex())
    return DeletionCheckInput(
        check_id=check_id,
        target=target,
        user_id=args.tenant.strip(),
        phone=args.phone,
        values=args.value,
        questions=args.ask,
        ask_through_say=args.ask_through_say,
        request=args.request,
        deadline=deadline,
        poll=poll,
    )


async def start_deletion_check(
    check: DeletionCheckInput, task_queue: str, output: Output, wait: bool = True
) -> ErasureReceipt | None:
    """Start the check on the running stack; its receipt when `wait`, else None."""
    from memlife.api.engine import search_attributes_ready
    from memlife.stack.connection import connect_to_stack
    from memlife.workflows.deletion_check import DeletionCheckWorkflow

    client, _ = await connect_to_stack()
    ready = await search_attributes_ready(client, output)
    workflow_id = deletion_check_workflow_id(check.check_id)
    handle = await client.start_workflow(
        DeletionCheckWorkflow.run,
        check.model_copy(update={"search_attributes": ready}),
        id=workflow_id,
        task_queue=task_queue,
        static_summary=f"deletion check of {check.user_id} on {check.target.name}",
        search_attributes=None if not ready else _check_attributes(check),
    )
    output.say(f"deletion check {check.check_id} started ({workflow_id})")
    if not wait:
        return None
    return await await_receipt(handle, output)


def deletion_check_workflow_id(check_id: str) -> str:
    return f"memlife/deletion-check/{check_id}"


async def await_receipt(handle: Any, output: Output) -> ErasureReceipt:
    """The check's receipt when it ends (FAILED or not: its verdict is in the receipt)."""

    async def describe() -> str:
        progress = await handle.query("progress")
        stores = " · ".join(f"{k} {v}" for k, v in progress["stores"].items())
        return f"round {progress['rounds']}: {stores}" + (
            f" · next round {progress['wake_at']}" if progress.get("wake_at") else ""
        )

    from memlife.stack.connection import verdict_result

    receipt: ErasureReceipt = await output.wait(
        handle,
        describe,
        "deletion check: waiting for a worker…",
        lambda h: verdict_result(h, ErasureReceipt),
    )
    return receipt


def _check_attributes(check: Any) -> Any:
    from temporalio.common import SearchAttributePair, TypedSearchAttributes

    from memlife.workflows import attributes

    return TypedSearchAttributes(
        [
            SearchAttributePair(attributes.TARGET, check.target.name),
            SearchAttributePair(attributes.PHASE, "deletion-check"),
            SearchAttributePair(attributes.VERDICT, attributes.RUNNING),
        ]
    )
