"""The baseline: plain asyncio + httpx (or aiohttp, the client memlife itself uses) sending
the requests of a recorded memlife run again, to a fresh reference target, with the same
concurrency — no Temporal, no judging, no recording. Every observation memlife records is
one request; they are replayed pair by pair in the order they were made (all pairs at
once), with the scenario clock they were sent with, so the target does the same work.

On aiohttp the runner also times each conversation request as memlife does
(memlife/targets/http.py: from its headers written to its body read), beside the target's
own `Server-Timing: total`: the difference a bare client on the same stack sees, which
memlife's own latency fidelity is read against. The timing goes through aiohttp's trace
hooks, as memlife's does, and costs the runner about 3% of its rate (283 against 288 to
294 requests/s, runs alternated on one recorded 100-pair nightly).

The bench runs each replay in a process of its own (`replay_in_process`, which runs this
module): in the bench's own process, after memlife's run, the aiohttp replay went about a
quarter slower than the same replay in a fresh one, and a baseline held down by the
harness would flatter memlife's ratios.

Given the run's target file (`--target-file`), each request is built as memlife builds it
from that file (memlife/targets/http.py: its path, query and JSON body rendered from the
same variables, a forgotten fact's every value included), so that a target other than the
reference one (the bundled Mem0 stack: bench/real_server.py) gets the same requests. Store
reads memlife makes itself, not over HTTP (SQL, files), are not the target's requests: they
are neither sent nor counted. Without a target file the reference target's routes are used,
as they always were.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import httpx
from sqlalchemy import text

from memlife import recorder
from memlife.rules.target import Operation, StoreProbe, Target, load_target
from memlife.stack.processes import stop_process
from memlife.targets.http import (
    extract,
    mark_headers_sent,
    parse_server_timing,
    render,
    render_body,
    resolve_header,
)

NOW_HEADER = "X-Memlife-Now"


@dataclass(frozen=True)
class Request:
    step: int
    kind: str
    role: str
    text: str
    reply: str | None
    domain: str | None
    scenario_time: str
    alias: str = ""


@dataclass
class PlainResult:
    requests: int
    errors: int
    seconds: float
    # CPU seconds (user and system) over those seconds: the runner's own, and the target's
    # where the caller measured it (`replay_in_process` does).
    cpu_seconds: dict[str, float]
    # Per conversation request (aiohttp only): (latency as memlife records it, the
    # target's Server-Timing total), in ms.
    timed: list[tuple[float, float]] = field(default_factory=list)
    # How many answers had each status outside 2xx (a 404 is a deleted user's answer).
    statuses: dict[str, int] = field(default_factory=dict)

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds

    def figures(self) -> dict[str, Any]:
        """What BENCHMARKS.json keeps of a replay."""
        return {
            "requests": self.requests,
            "seconds": self.seconds,
            "errors": self.errors,
            "cpu_seconds": self.cpu_seconds,
        }


def recorded_requests(
    run_id: str, url: str
) -> tuple[dict[int, list[Request]], dict[tuple[int, str], str], dict[tuple[int, str, str], str]]:
    """Per pair, the requests in the order memlife made them; phones; current values."""
    engine = recorder.engine_for(url)
    by_pair: dict[int, list[Request]] = defaultdict(list)
    with engine.connect() as db:
        rows = db.execute(
            text(
                "SELECT pair_index, step_index, kind, role, request, reply, domain, "
                "scenario_time, tenant_alias FROM observations WHERE run_id = :run "
                "ORDER BY pair_index, step_index, seq"
            ),
            {"run": run_id},
        )
        for pair, step, kind, role, request, reply, domain, scenario_time, alias in rows:
            by_pair[pair].append(
                Request(step, kind, role, request, reply, domain, _iso(scenario_time), alias)
            )
        phones = {
            (pair, role): phone
            for pair, role, phone in db.execute(
                text("SELECT pair_index, role, phone FROM tenants WHERE run_id = :run"),
                {"run": run_id},
            )
        }
        every = fact_values(
            (row_id, text_value)
            for row_id, text_value in db.execute(
                text("SELECT id, text FROM run_values WHERE run_id = :run"), {"run": run_id}
            )
        )
    return dict(by_pair), phones, {key: texts[0] for key, texts in every.items()}


def recorded_fact_values(run_id: str, url: str) -> dict[tuple[int, str, str], list[str]]:
    """Every value each (pair, role, domain) fact had in the run: see `fact_values`."""
    engine = recorder.engine_for(url)
    with engine.connect() as db:
        return fact_values(
            (row_id, text_value)
            for row_id, text_value in db.execute(
                text("SELECT id, text FROM run_values WHERE run_id = :run"), {"run": run_id}
            )
        )


def fact_values(
    rows: Iterable[tuple[str, str]],
) -> dict[tuple[int, str, str], list[str]]:
    """(pair, role, domain) -> every value the fact had, the latest first and then the
    superseded ones in the order they were said, from the run's values (`…/pair/role/
    domain/n`, n counting the updates): what memlife's forget sends as `{values}`, its
    `{value}` being the first (workflows/steps.py `forget`)."""
    numbered: dict[tuple[int, str, str], list[tuple[int, str]]] = defaultdict(list)
    for row_id, text_value in rows:
        _, pair, role, domain, n = row_id.rsplit("/", 4)
        numbered[(int(pair), role, domain)].append((int(n), text_value))
    found = {}
    for key, texts in numbered.items():
        ordered = [value for _, value in sorted(texts)]
        found[key] = [ordered[-1], *ordered[:-1]]
    return found


def _iso(value: Any) -> str:
    return (value if isinstance(value, str) else value.isoformat()).replace(" ", "T")


class _Reply:
    """What the replay needs of an answer, from either client, and (aiohttp) its timing:
    latency in ms as memlife records it, and the target's Server-Timing total."""

    def __init__(
        self,
        status: int,
        body: bytes,
        latency_ms: float | None = None,
        server_total: float | None = None,
    ) -> None:
        self.status, self.body = status, body
        self.latency_ms, self.server_total = latency_ms, server_total

    def json(self) -> Any:
        return json.loads(self.body)


@contextlib.asynccontextmanager
async def _sender(base_url: str, client: str) -> AsyncIterator[Callable[..., Awaitable[_Reply]]]:
    """send(method, path, now, json=..., params=...) with httpx (the issue's baseline) or
    aiohttp (the client memlife itself uses, memlife/targets/http.py)."""
    if client == "httpx":
        async with httpx.AsyncClient(
            base_url=base_url,
            timeout=30.0,
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=32),
        ) as httpx_session:

            async def send_httpx(method: str, path: str, now: str, **kwargs: Any) -> _Reply:
                headers = {NOW_HEADER: now, **kwargs.pop("headers", {})}
                response = await httpx_session.request(method, path, headers=headers, **kwargs)
                return _Reply(response.status_code, await response.aread())

            yield send_httpx
        return
    tracing = aiohttp.TraceConfig()
    tracing.on_request_headers_sent.append(mark_headers_sent)
    async with aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=30.0),
        trace_configs=[tracing],
        connector=aiohttp.TCPConnector(limit=64),
    ) as session:

        async def send_aiohttp(method: str, path: str, now: str, **kwargs: Any) -> _Reply:
            params = kwargs.pop("params", None)
            query = (
                params  # already (name, value) pairs, as a target file's request has them
                if isinstance(params, list)
                else [
                    (name, item)
                    for name, value in (params or {}).items()
                    for item in (value if isinstance(value, list) else [value])
                ]
            )
            marks: dict[str, float] = {}
            started = time.perf_counter()
            async with session.request(
                method,
                base_url + path,
                headers={NOW_HEADER: now, **kwargs.pop("headers", {})},
                params=query or None,
                trace_request_ctx=marks,
                **kwargs,
            ) as response:
                body = await response.read()
            latency_ms = (time.perf_counter() - marks.get("sent", started)) * 1000
            total = parse_server_timing(
                ", ".join(response.headers.getall("server-timing", ()))
            ).get("total")
            return _Reply(response.status, body, latency_ms, total)

        yield send_aiohttp


@dataclass(frozen=True)
class Outgoing:
    """One request as memlife would send it from a target file's operation."""

    method: str
    path: str  # percent-encoded, after the base URL
    params: list[tuple[str, str]]
    body: Any
    headers: dict[str, str]


def outgoing(target: Target, operation: Operation, variables: dict[str, Any]) -> Outgoing:
    """The request `operation` makes with `variables`, rendered as memlife renders it
    (memlife/targets/http.py `call`): a lone placeholder keeps its value's type, and one
    holding a list in a query parameter repeats the parameter."""
    params = []
    for name, template in operation.query.items():
        value = render_body(template, variables)
        params += [(name, str(item)) for item in (value if isinstance(value, list) else [value])]
    return Outgoing(
        method=operation.method,
        path=render(operation.path, variables, url=True),
        params=params,
        body=None if operation.body is None else render_body(operation.body, variables),
        headers={
            name: resolve_header(value)
            for name, value in {**target.headers, **operation.headers}.items()
        },
    )


def one_request(target: Target, name: str) -> Operation:
    """The target file's operation `name`, which the replay sends as one request (a
    sequence's later requests depend on what memlife selected from the earlier answers,
    which the recorder does not keep)."""
    steps = target.operations.sequence(name)
    if len(steps) != 1:
        raise ValueError(
            f"target {target.name}: operations.{name} is "
            f"{'missing' if not steps else f'a sequence of {len(steps)} requests'}; the plain "
            "runner replays operations of one request"
        )
    return steps[0]


async def replay(
    base_url: str,
    run_id: str,
    url: str,
    concurrency: int,
    client: str = "httpx",
    target: Target | None = None,
) -> PlainResult:
    """Send the recorded run's requests again (see the module's docstring); with `target`
    (the run's target file) each request is built from it, else the reference target's
    routes are used."""
    by_pair, phones, values = recorded_requests(run_id, url)
    if not by_pair:  # a rate of nothing would pass for a baseline
        raise LookupError(f"no recorded requests of run {run_id!r} in {url}")
    limit = asyncio.Semaphore(concurrency)
    errors = sent = 0
    statuses: Counter[str] = Counter()
    timed: list[tuple[float, float]] = []
    every_value = recorded_fact_values(run_id, url) if target is not None else {}
    async with _sender(base_url, client) as request:

        async def send(method: str, path: str, now: str, **kwargs: Any) -> _Reply:
            nonlocal errors, sent
            async with limit:  # as in memlife, the clock starts once the request has its turn
                response = await request(method, path, now, **kwargs)
            sent += 1
            if not 200 <= response.status < 300:
                statuses[str(response.status)] += 1
            if response.status >= 400 and response.status != 404:
                errors += 1
            return response

        async def converse(phone: str, r: Request) -> None:
            response = await send(
                "POST", "/v1/preview", r.scenario_time, json={"phone": phone, "message": r.text}
            )
            if response.latency_ms is not None and response.server_total is not None:
                timed.append((response.latency_ms, response.server_total))

        user_ids_of: dict[int, dict[str, str]] = defaultdict(dict)
        current_of: dict[int, dict[str, str]] = defaultdict(dict)

        async def pair(index: int, requests: list[Request]) -> None:
            user_ids = user_ids_of[index]  # recorded user id -> this replay's
            current = current_of[index]  # role -> this replay's user id

            def user(recorded: str) -> str:
                return user_ids.get(recorded, recorded)

            for r in requests:
                phone = phones.get((index, r.role), "")
                if r.kind == "register":
                    response = await send(
                        "POST", "/v1/users", r.scenario_time, json={"phone": r.text}
                    )
                    if r.reply and response.status < 300:
                        user_ids[r.reply] = current[r.role] = response.json()["user_id"]
                elif r.kind in ("write", "update", "probe"):
                    await converse(phone, r)
                elif r.kind == "delete" and r.domain is None:
                    await send("DELETE", f"/v1/users/{user(r.text.split()[-1])}", r.scenario_time)
                elif r.kind == "delete" and r.domain is not None:  # a fact's forget
                    owner = current.get(r.role, "")
                    value = values.get((index, r.role, r.domain), "")
                    await send(
                        "POST", f"/v1/users/{owner}/forget", r.scenario_time, json={"value": value}
                    )
                elif r.kind == "deletion-status":
                    await send("GET", f"/v1/users/{user(r.text)}/deletion", r.scenario_time)
                elif r.kind == "inspect":
                    store, mode, key = r.text.split(" ", 2)
                    if mode == "scope":
                        await send(
                            "GET",
                            f"/admin/stores/{store}/records",
                            r.scenario_time,
                            params={"tenant_id": user(key)},
                        )
                    else:  # needle, or needles: the values one per line
                        await send(
                            "GET",
                            f"/admin/stores/{store}/search",
                            r.scenario_time,
                            params={"q": key.split("\n")},
                        )

        async def send_operation(
            operation: Operation, variables: dict[str, Any], now: str
        ) -> _Reply:
            assert target is not None
            built = outgoing(target, operation, variables)
            return await send(
                built.method,
                built.path,
                now,
                params=built.params or None,
                headers=built.headers,
                **({} if built.body is None else {"json": built.body}),
            )

        async def pair_from_file(index: int, requests: list[Request]) -> None:
            """`pair`, each request built from the run's target file."""
            assert target is not None
            operations = target.operations
            probes = {
                store.name: store.probe
                for store in target.stores
                if isinstance(store.probe, StoreProbe)  # the others are memlife's own reads
            }
            user_ids = user_ids_of[index]
            current = current_of[index]
            deletion_ids: dict[str, str] = {}

            def user(recorded: str) -> str:
                return user_ids.get(recorded, recorded)

            for r in requests:
                phone = phones.get((index, r.role), "")
                if r.kind == "register":
                    operation = one_request(target, "register")
                    response = await send_operation(
                        operation,
                        {
                            "phone": r.text,
                            "tenant_alias": r.alias,
                            "user_id": "",
                            "registration_key": uuid.uuid4().hex,
                        },
                        r.scenario_time,
                    )
                    pointer = operation.extract.get("user_id")
                    if r.reply and response.status < 300 and pointer is not None:
                        user_ids[r.reply] = current[r.role] = str(extract(response.json(), pointer))
                elif r.kind in ("write", "update", "probe"):
                    response = await send_operation(
                        operations.say,
                        {"phone": phone, "user_id": current.get(r.role, ""), "message": r.text},
                        r.scenario_time,
                    )
                    if response.latency_ms is not None and response.server_total is not None:
                        timed.append((response.latency_ms, response.server_total))
                elif r.kind == "delete" and r.domain is None:
                    operation = one_request(target, "delete_tenant")
                    response = await send_operation(
                        operation,
                        {"phone": phone, "user_id": user(r.text.split()[-1])},
                        r.scenario_time,
                    )
                    pointer = operation.extract.get("deletion_id")
                    if response.status < 300 and pointer is not None:
                        with contextlib.suppress(KeyError, ValueError):
                            deletion_ids[r.role] = str(extract(response.json(), pointer))
                elif r.kind == "delete" and r.domain is not None:  # a fact's forget
                    texts = every_value.get((index, r.role, r.domain), [""])
                    await send_operation(
                        one_request(target, "forget"),
                        {
                            "phone": phone,
                            "user_id": current.get(r.role, ""),
                            "value": texts[0],
                            "values": texts,
                            "domain": r.domain,
                        },
                        r.scenario_time,
                    )
                elif r.kind == "deletion-status":
                    await send_operation(
                        one_request(target, "deletion_status"),
                        {
                            "phone": phone,
                            "user_id": user(r.text),
                            "deletion_id": deletion_ids.get(r.role, ""),
                        },
                        r.scenario_time,
                    )
                elif r.kind == "inspect":
                    store, mode, key = r.text.split(" ", 2)
                    probe = probes.get(store)
                    if probe is None:
                        continue  # read by memlife itself (SQL, files): no request
                    if mode == "scope":
                        await send_operation(probe.scope, {"user_id": user(key)}, r.scenario_time)
                    elif mode == "needles" and probe.needles is not None:
                        await send_operation(
                            probe.needles, {"needles": key.split("\n")}, r.scenario_time
                        )
                    else:
                        await send_operation(probe.needle, {"needle": key}, r.scenario_time)

        # Step by step, every pair at once (as memlife's lifecycles go): the target's clock
        # then moves as it did under memlife, and does the same background work.
        steps = sorted({r.step for requests in by_pair.values() for r in requests})
        started, cpu_started = time.perf_counter(), time.process_time()
        each_pair = pair if target is None else pair_from_file
        for step in steps:
            await asyncio.gather(
                *(
                    each_pair(index, [r for r in requests if r.step == step])
                    for index, requests in by_pair.items()
                )
            )
        seconds = time.perf_counter() - started
        runner_cpu = time.process_time() - cpu_started
    return PlainResult(
        requests=sent,
        errors=errors,
        seconds=seconds,
        cpu_seconds={"runner": runner_cpu},
        timed=timed,
        statuses=dict(sorted(statuses.items())),
    )


REPO = Path(__file__).resolve().parents[1]


async def replay_in_process(
    base_url: str,
    run_id: str,
    url: str,
    concurrency: int,
    client: str = "httpx",
    target_file: Path | None = None,
) -> PlainResult:
    """`replay` in a fresh Python process (this module's main): the baseline's rate then
    owes nothing to the state of the process that asks for it. The recorder's URL goes by
    the environment, as a worker's does, never on a command line."""
    with tempfile.TemporaryDirectory(prefix="memlife-plain-") as scratch:
        out = Path(scratch) / "result.json"
        errors_path = Path(scratch) / "stderr"
        with open(errors_path, "wb") as errors:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "bench.plain_runner",
                    "--base-url",
                    base_url,
                    "--run-id",
                    run_id,
                    "--concurrency",
                    str(concurrency),
                    "--client",
                    client,
                    "--out",
                    str(out),
                    *(["--target-file", str(target_file)] if target_file else []),
                ],
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                env={**os.environ, "MEMLIFE_DB_URL": url, "PYTHONPATH": str(REPO)},
            )
            try:
                status = await asyncio.to_thread(process.wait)
            except BaseException:  # stopped (SIGTERM, Ctrl-C): the replay goes too
                stop_process(process, grace=5)
                raise
        if status:
            raise RuntimeError(
                f"the plain {client} replay of run {run_id} exited with "
                f"status {status}:\n"
                f"{errors_path.read_text(errors='replace')[-2000:]}"
            )
        figures = json.loads(out.read_text(encoding="utf-8"))
    return PlainResult(
        requests=figures["requests"],
        errors=figures["errors"],
        seconds=figures["seconds"],
        cpu_seconds=figures["cpu_seconds"],
        timed=[(latency, total) for latency, total in figures["timed"]],
        statuses=figures.get("statuses", {}),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.plain_runner",
        description="Send the requests of a recorded memlife run again, with nothing else "
        "in the process, and write the rate (and, on aiohttp, each conversation "
        "request's timing) as JSON. The recorder is MEMLIFE_DB_URL's.",
    )
    parser.add_argument("--base-url", required=True, help="a fresh reference target")
    parser.add_argument("--run-id", required=True, help="the recorded run to replay")
    parser.add_argument(
        "--concurrency",
        type=int,
        required=True,
        help="requests in flight at most (the target's max_concurrency)",
    )
    parser.add_argument("--client", choices=("httpx", "aiohttp"), default="httpx")
    parser.add_argument("--out", required=True, type=Path, help="where to write the JSON")
    parser.add_argument(
        "--target-file",
        type=Path,
        help="the run's target file: each request built from it (default: the reference "
        "target's routes)",
    )
    args = parser.parse_args(argv)
    url = os.environ.get("MEMLIFE_DB_URL")
    if not url:
        parser.error("MEMLIFE_DB_URL is not set: point it at the recorder of the run")
    try:
        target = load_target(args.target_file) if args.target_file else None
        result = asyncio.run(
            replay(args.base_url, args.run_id, url, args.concurrency, args.client, target)
        )
    except LookupError as error:
        print(f"bench.plain_runner: {error}", file=sys.stderr)
        return 2
    args.out.write_text(
        json.dumps(
            {
                "requests": result.requests,
                "errors": result.errors,
                "seconds": result.seconds,
                "cpu_seconds": result.cpu_seconds,
                "timed": result.timed,
                "statuses": result.statuses,
            }
        ),
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
