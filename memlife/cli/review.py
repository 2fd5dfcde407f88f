"""`memlife review`: blinded adjudication from the command line, one reply at a time, or by
a model judge through an OpenAI-compatible endpoint (off unless asked for).

The reviewer sees what the AdjudicationWorkflow's `pending` query shows — question, reply,
candidate values — and nothing about tenant, pair or which value was expected. Each
decision is a Temporal update, validated by the workflow before it is recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memlife.cli.common import EXIT_OK, add_command, problems_exit
from memlife.errors import InputError, Problem

if TYPE_CHECKING:
    import httpx

PROMPT = """You check what an assistant's reply states. Read the question and the reply,
then say which of the numbered candidate values the reply states as the answer, and whether
the reply declines to answer (it does not know). Mentioning a value as the answer counts;
a value that only appears in the question does not.

Question: {question}
Reply: {reply}
Candidates:
{candidates}

Answer with JSON only: {{"stated": [candidate numbers], "abstains": true or false}}"""


def add_parsers(commands: Any) -> None:
    parser = add_command(
        commands,
        "review",
        "review queued replies blind (or let a model judge them)",
        "Decide, one at a time, what queued replies state: the replies a run queued with "
        "--review because exact matching failed on them. You see the question, the reply "
        "and numbered candidate values, nothing about tenant, pair or which value was "
        "expected. Answer with candidate numbers, 0 for none, a for an abstention, s to "
        "skip. With --judge-endpoint a model decides instead. Reports show the exact and "
        "the adjudicated rates side by side.",
    )
    parser.add_argument("--queue", default="default", help="the review queue")
    parser.add_argument(
        "--reviewer", default=None, help="who decides (default: $MEMLIFE_REVIEWER or $USER)"
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        metavar="N",
        help="stop after N decisions (default: the whole queue)",
    )
    parser.add_argument(
        "--judge-endpoint",
        default=None,
        metavar="URL",
        help="an OpenAI-compatible API base URL: a model decides",
    )
    parser.add_argument(
        "--judge-model",
        default=None,
        metavar="MODEL",
        help="the model to ask (required with --judge-endpoint)",
    )
    parser.add_argument(
        "--judge-key-env",
        default=None,
        metavar="VAR",
        help="environment variable holding the endpoint's API key",
    )
    parser.set_defaults(handler=cmd_review)


def cmd_review(args: argparse.Namespace) -> int:
    from memlife.stack.connection import connect_to_stack

    judge = None
    http: httpx.Client | None = None
    reviewer = args.reviewer or default_reviewer()
    if args.judge_endpoint:
        if not args.judge_model:
            return problems_exit(
                [Problem("command line", "--judge-model", "required with --judge-endpoint")]
            )
        key = None
        if args.judge_key_env:
            key = os.environ.get(args.judge_key_env)
            if not key:
                return problems_exit(
                    [
                        Problem(
                            "command line",
                            "--judge-key-env",
                            f"environment variable {args.judge_key_env} is not set",
                        )
                    ]
                )
        import httpx

        endpoint, model = args.judge_endpoint, args.judge_model
        # One client for the session: its connection (and TLS session) serves every item.
        http = httpx.Client()

        def judge(item: dict[str, Any]) -> Verdict:
            return judge_with_model(endpoint, model, key, item, client=http)

        reviewer = args.reviewer or f"model:{model}"

    async def session() -> dict[str, int]:
        client, _ = await connect_to_stack()
        return await review(client, args.queue, reviewer, judge=judge, limit=args.limit)

    try:
        counts = asyncio.run(session())
    finally:
        if http is not None:
            http.close()
    print(f"\nreview: {counts['decided']} decided, {counts['skipped']} skipped, by {reviewer}")
    return EXIT_OK


@dataclass
class Verdict:
    asserted: list[int]
    abstains: bool
    note: str = ""


def parse_answer(text: str, candidates: int) -> Verdict | None:
    """A person's answer: `1`, `1 3`, `0` (none), `a` (abstains); None for skip."""
    text = text.strip().lower()
    if text in ("s", "skip", ""):
        return None
    if text in ("a", "abstains"):
        return Verdict([], True)
    if text in ("0", "none", "n"):
        return Verdict([], False)
    numbers = re.findall(r"\d+", text)
    if not numbers or re.sub(r"[\d,\s]", "", text):
        raise ValueError("answer with candidate numbers, 0, a, s or q")
    asserted = sorted({int(n) - 1 for n in numbers})
    if any(not 0 <= i < candidates for i in asserted):
        raise ValueError(f"candidates are numbered 1–{candidates}")
    return Verdict(asserted, False)


def judge_with_model(
    endpoint: str,
    model: str,
    api_key: str | None,
    item: dict[str, Any],
    timeout: float = 60.0,
    client: httpx.Client | None = None,
) -> Verdict:
    """Ask an OpenAI-compatible chat completions endpoint to decide one item, through
    `client` when given (a session's items then share its connection; a client of its own
    for each item built a TLS context and opened a connection every time)."""
    import httpx

    candidates = "\n".join(f"{i + 1}. {value}" for i, value in enumerate(item["candidates"]))
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    response = (client.post if client is not None else httpx.post)(
        endpoint.rstrip("/") + "/chat/completions",
        headers=headers,
        timeout=timeout,
        json={
            "model": model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {
                    "role": "user",
                    "content": PROMPT.format(
                        question=item["question"], reply=item["reply"], candidates=candidates
                    ),
                }
            ],
        },
    )
    response.raise_for_status()
    content = response.json()["choices"][0]["message"]["content"]
    decided = json.loads(content)
    stated = [int(n) - 1 for n in decided.get("stated", [])]
    if any(not 0 <= i < len(item["candidates"]) for i in stated):
        raise ValueError(f"the model named a candidate that does not exist: {decided}")
    return Verdict(
        sorted(set(stated)), bool(decided.get("abstains")) and not stated, note=f"model {model}"
    )


async def decide(handle: Any, decision: Any, patience: float = 30.0) -> bool:
    """Send one decision (a workflow update). True once it is recorded; a refused decision
    raises WorkflowUpdateFailedError. When the server answers that it knows no such update
    (it lost it: seen on the time-skipping test server under load, several in a row), the
    queue's own state decides: recorded if the queue says the ticket is decided; still
    pending, the decision is sent again, for up to `patience` seconds (an update that never
    arrived recorded nothing); neither, it was refused."""
    import asyncio
    import time

    from temporalio.service import RPCError, RPCStatusCode

    deadline = time.monotonic() + patience
    pause = 0.2
    while True:
        try:
            await handle.execute_update("decide", decision)
            return True
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
        if await handle.query("is_decided", decision.ticket):
            return True
        pending = {item["ticket"] for item in await handle.query("pending", 1_000_000)}
        if decision.ticket not in pending:
            return False  # never pending: nothing to decide
        if time.monotonic() + pause > deadline:
            return False
        await asyncio.sleep(pause)
        pause = min(pause * 2, 2.0)


async def review(
    client: Any,
    queue: str,
    reviewer: str,
    *,
    ask: Callable[[str], str] = input,
    judge: Callable[[dict[str, Any]], Verdict] | None = None,
    limit: int | None = None,
    out: Any = sys.stdout,
) -> dict[str, int]:
    """Decide pending items until the queue is empty, `limit` is reached, or the person
    quits. Returns counts of decided and skipped items."""
    from temporalio.client import WorkflowUpdateFailedError

    from memlife.contracts import review_workflow_id
    from memlife.rules.adjudication import Decision

    handle = client.get_workflow_handle(review_workflow_id(queue))
    try:
        await handle.describe()
    except Exception:
        raise InputError(
            [
                Problem(
                    "command line",
                    "--queue",
                    f"no review queue {queue!r}: start a run with --review first",
                )
            ]
        ) from None
    skipped: set[str] = set()
    decided = 0
    while limit is None or decided < limit:
        pending = [
            item for item in await handle.query("pending", 200) if item["ticket"] not in skipped
        ]
        if not pending:
            break
        item = pending[0]
        status = await handle.query("status")
        print(
            f"\n— reply waiting for review ({status['pending']} pending, "
            f"{status['decided']} decided) · ticket {item['ticket']}",
            file=out,
        )
        print(f"  question: {item['question']}", file=out)
        print(f"  reply:    {item['reply']}", file=out)
        print("  candidate values:", file=out)
        for number, value in enumerate(item["candidates"], 1):
            print(f"    {number}. {value}", file=out)
        if judge is not None:
            try:
                verdict: Verdict | None = judge(item)
            except Exception as error:  # a judge that fails decides nothing
                print(f"  judge failed ({error}); left for a person", file=out)
                skipped.add(item["ticket"])
                continue
        else:
            verdict = _ask_person(ask, len(item["candidates"]), out)
            if verdict == "quit":
                break
        if verdict is None:
            skipped.add(item["ticket"])
            continue
        assert isinstance(verdict, Verdict)
        try:
            recorded = await decide(
                handle,
                Decision(
                    ticket=item["ticket"],
                    asserted=verdict.asserted,
                    abstains=verdict.abstains,
                    reviewer=reviewer,
                    note=verdict.note,
                ),
            )
        except WorkflowUpdateFailedError as error:
            print(f"  not recorded: {error.cause}", file=out)
            skipped.add(item["ticket"])
            continue
        if not recorded:
            print(
                "  not recorded: the server lost the decision's outcome and the ticket is "
                "still pending; it stays in the queue",
                file=out,
            )
            skipped.add(item["ticket"])
            continue
        decided += 1
        stated = (
            "abstains"
            if verdict.abstains
            else ", ".join(item["candidates"][i] for i in verdict.asserted) or "nothing"
        )
        print(f"  recorded: the reply states {stated} (by {reviewer})", file=out)
    return {"decided": decided, "skipped": len(skipped)}


def _ask_person(ask: Callable[[str], str], candidates: int, out: Any) -> Verdict | None | str:
    while True:
        try:
            answer = ask(
                "  which values does the reply state? numbers (e.g. 1 or 1 2), "
                "0 = none, a = it abstains, s = skip, q = quit: "
            )
        except EOFError:
            return "quit"
        if answer.strip().lower() in ("q", "quit"):
            return "quit"
        try:
            return parse_answer(answer, candidates)
        except ValueError as error:
            print(f"  {error}", file=out)


def default_reviewer() -> str:
    return os.environ.get("MEMLIFE_REVIEWER") or os.environ.get("USER") or "reviewer"
