"""`memlife check-deletion` and `memlife receipt`: is one tenant gone from every store and
every answer, and when did each store become clean? The result is an erasure receipt."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlife.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    add_command,
    err,
)
from memlife.errors import InputError, Problem
from memlife.stack.commands import command, temporal_command


def add_parsers(commands: Any) -> None:
    check = add_command(
        commands,
        "check-deletion",
        "is a tenant gone from every store? (erasure receipt)",
        "Check that one tenant (a real one, not only a synthetic one) is gone: optionally "
        "request its deletion, then every --poll read every store the target file probes "
        "(by the tenant's scope and, for each --value, across the whole store), ask the "
        "tenant's channel each --ask question and poll the deletion status, until everything "
        "is clean or the --deadline passes. What counts as residue follows each store's "
        "retention policy. The result is an erasure receipt: per store, the queries, what "
        "was found, when it became clean, the time-to-forget. Values appear only as labels "
        "(value #1, sha256 …). Exit 0 only when the verdict is pass; without --wait, "
        "`memlife receipt ID` fetches it later.",
    )
    check.add_argument(
        "--target",
        required=True,
        metavar="FILE",
        help="the target file (its stores' probes and operations)",
    )
    check.add_argument("--tenant", required=True, metavar="ID", help="the tenant's user id")
    check.add_argument("--phone", default=None, help="the tenant's channel (needed for --ask)")
    check.add_argument(
        "--value",
        action="append",
        default=[],
        metavar="V",
        help="a value of the tenant to search for everywhere (repeatable)",
    )
    check.add_argument(
        "--ask",
        action="append",
        default=[],
        metavar="QUESTION",
        help="ask the tenant's channel, through the target file's `ask` (which "
        "writes nothing); an answer carrying a value is residue (repeatable)",
    )
    check.add_argument(
        "--ask-through-say",
        action="store_true",
        help="let --ask go through `say` when the target file has no `ask`: "
        "the service then stores each question as the tenant's, so the check "
        "writes to the tenant it checks (and may find that as residue)",
    )
    check.add_argument(
        "--request",
        action="store_true",
        help="request the deletion first (the target file's delete_tenant)",
    )
    check.add_argument(
        "--deadline", default="24h", metavar="DURATION", help="how long the tenant has to disappear"
    )
    check.add_argument(
        "--poll", default="15m", metavar="DURATION", help="how often everything is read again"
    )
    check.add_argument("--wait", action="store_true", help="wait for the end and print the receipt")
    check.add_argument(
        "--out", default=None, metavar="FILE", help="write the receipt here (with --wait)"
    )
    check.add_argument(
        "--format", choices=["md", "json"], default="md", help="the receipt's format"
    )
    check.add_argument(
        "--sign",
        default=None,
        metavar="KEYFILE",
        help="sign the receipt --out writes (JSON) with this Ed25519 private key "
        "(`memlife keygen`; check it with `memlife verify`)",
    )
    check.add_argument(
        "--id", default=None, help="the check's id (default: the time and a random suffix)"
    )
    check.add_argument(
        "--task-queue",
        default=None,
        metavar="QUEUE",
        help="the task queue the check goes to (default: memlife)",
    )
    check.add_argument(
        "--print-input",
        action="store_true",
        help="print the workflow's JSON input instead of starting it (for "
        "`temporal workflow start` or the Web UI)",
    )
    check.set_defaults(handler=cmd_check_deletion)

    receipt = add_command(
        commands,
        "receipt",
        "the erasure receipt of a deletion check",
        "Print (or write) the erasure receipt of a deletion check: so far while it runs, the "
        "final one after. Finished receipts are kept in the recorder, past Temporal's "
        "retention. Exit 0 only when the verdict is pass.",
    )
    receipt.add_argument("check", metavar="CHECK", help="the check's id or workflow id")
    receipt.add_argument("--wait", action="store_true", help="wait until the check ends")
    receipt.add_argument("--out", default=None, metavar="FILE", help="write it here")
    receipt.add_argument(
        "--format", choices=["md", "json"], default="md", help="the receipt's format"
    )
    receipt.add_argument(
        "--sign",
        default=None,
        metavar="KEYFILE",
        help="sign the receipt --out writes (JSON) with this Ed25519 "
        "private key (`memlife keygen`; check it with `memlife verify`)",
    )
    receipt.set_defaults(handler=cmd_receipt)


def cmd_check_deletion(args: argparse.Namespace) -> int:
    from memlife import DEFAULT_TASK_QUEUE
    from memlife.api.deletion import (
        deletion_check_input,
        deletion_check_workflow_id,
        start_deletion_check,
    )
    from memlife.cli.runner import CommandLineOutput

    signing_key = _signing_key(args, "a receipt, with --wait --out FILE --format json")
    if args.sign and not args.wait:
        raise InputError(
            [Problem("command line", "--sign", "signs the receipt of a finished check: add --wait")]
        )
    check = deletion_check_input(args)
    workflow_id = deletion_check_workflow_id(check.check_id)
    if args.print_input:
        from temporalio.contrib.pydantic import pydantic_data_converter

        payload = pydantic_data_converter.payload_converter.to_payloads([check])[0]
        document = json.loads(payload.data)
        print(json.dumps(document, indent=2))
        err(
            f"start it with: {temporal_command()} workflow start --type DeletionCheckWorkflow "
            f"--task-queue {args.task_queue or DEFAULT_TASK_QUEUE} --workflow-id "
            f"{workflow_id} --input-file FILE"
        )
        return EXIT_OK

    async def start() -> Any:
        receipt = await start_deletion_check(
            check, args.task_queue or DEFAULT_TASK_QUEUE, CommandLineOutput(), wait=args.wait
        )
        if not args.wait:
            print(
                f"  follow it: {command()} status {check.check_id}\n"
                f"  its receipt: {command()} receipt {check.check_id} [--out FILE]"
            )
        return receipt

    receipt = asyncio.run(start())
    if receipt is None:
        return EXIT_OK
    return _emit_receipt(receipt, args.out, args.format, signing_key)


async def _await_receipt(handle: Any) -> Any:
    from memlife.api.deletion import await_receipt
    from memlife.cli.runner import CommandLineOutput

    return await await_receipt(handle, CommandLineOutput())


def _signing_key(args: argparse.Namespace, needs: str) -> bytes | None:
    """The private key `--sign` names, checked before anything starts."""
    if not args.sign:
        return None
    from memlife.cli.signing import check_sign_option, load_private_key

    problems = check_sign_option(args, needs)
    if args.format != "json":
        problems.append(
            Problem("command line", "--sign", "signs a JSON receipt: add --format json")
        )
    if problems:
        raise InputError(problems)
    return load_private_key(args.sign)


def _emit_receipt(receipt: Any, out: str | None, fmt: str, signing_key: bytes | None = None) -> int:
    from memlife.reports.receipt import receipt_markdown

    text = receipt.model_dump_json(indent=2) + "\n" if fmt == "json" else receipt_markdown(receipt)
    if out and signing_key is not None:
        from memlife.reports.signing import sign

        signed = sign(receipt.model_dump(mode="json"), signing_key, datetime.now(UTC))
        text = json.dumps(signed, indent=2, ensure_ascii=False) + "\n"
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text, encoding="utf-8")
        print(f"receipt ({fmt}{', signed' if signing_key else ''}): {out}")
    print(receipt_markdown(receipt) if fmt == "json" or out else text, end="")
    return EXIT_OK if receipt.verdict == "pass" else EXIT_FAILED


def _recorded_receipt(check_id: str) -> Any:
    from memlife import recorder
    from memlife.rules.erasure import ErasureReceipt

    with recorder.session() as db:
        row = db.get(recorder.ErasureReceiptRow, check_id)
        return None if row is None else ErasureReceipt.model_validate_json(row.receipt_json)


def cmd_receipt(args: argparse.Namespace) -> int:
    from memlife.rules.erasure import ErasureReceipt
    from memlife.stack.connection import connect_to_stack

    signing_key = _signing_key(args, "a receipt, with --out FILE --format json")

    async def fetch() -> Any:
        client, _ = await connect_to_stack()
        workflow_id = args.check if "/" in args.check else f"memlife/deletion-check/{args.check}"
        from memlife.workflows.deletion_check import DeletionCheckWorkflow

        handle = client.get_workflow_handle_for(DeletionCheckWorkflow.run, workflow_id)
        try:
            description = await handle.describe()
        except Exception:
            recorded = _recorded_receipt(workflow_id.rsplit("/", 1)[-1])
            if recorded is not None:  # past Temporal's retention: the recorder keeps it
                return recorded
            raise InputError(
                [
                    Problem(
                        "command line",
                        "CHECK",
                        f"no deletion check {args.check!r}; see `{command()} status`",
                    )
                ]
            ) from None
        if description.status and description.status.name == "RUNNING" and not args.wait:
            receipt = await handle.query("receipt", result_type=ErasureReceipt)
            err(
                "memlife: the check is still running; this is its receipt so far "
                "(--wait waits for the end)"
            )
            return receipt
        return await _await_receipt(handle)

    receipt = asyncio.run(fetch())
    return _emit_receipt(receipt, args.out, args.format, signing_key)
