"""`memlife target init` measured: from each service's OpenAPI document to a target file that
passes `memlife target check`, how many edits a person had to make. Prints a Markdown
table (docs/target-files.md, "Starting from an OpenAPI document", holds the last one).

    ./scripts/bench target-init                      # the stand-ins (seconds)
    ./scripts/bench target-init --real mem0,graphiti,letta   # and the bundled real servers

For each service: its OpenAPI document is fetched from the running server, a file proposed
and checked as it is; then the edits listed below for that service (the ones a person made,
by hand, reading the check's rows) are applied field by field and the file checked again,
which must pass. "edits" is how many fields that took. Apart from that, the proposal is
compared with the target file memlife ships for the service (written by hand from the
service's source), over the operations both describe: how many fields differ.

The stand-ins (tests/standins) run in this process on free loopback ports; a real server is
started as a user starts it (`memlife target serve KIND`) and stopped by its PID.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from bench.stacks import start_target
from memlife.rules.openapi import Proposal, propose
from memlife.rules.target import parse_target
from memlife.stack.processes import free_port, stop_process, wait_listening

REPO = Path(__file__).resolve().parents[1]
COMPARED = ("register", "say", "ask", "delete_tenant", "deletion_status", "forget")
START_SECONDS = 600
# An edit: a dotted path into the target file (list items by index) and its new value
# (None: the field removed).
Edit = tuple[str, Any]


@dataclass
class Case:
    service: str
    shipped: str  # scenarios/targets/…
    serve: Callable[[Path], contextlib.AbstractContextManager[tuple[str, dict[str, str]]]]
    edits: list[Edit] = field(default_factory=list)
    why: str = ""  # what the edits are for, for the table


@contextlib.contextmanager
def _in_thread(app: Any, env: dict[str, str]) -> Iterator[tuple[str, dict[str, str]]]:
    sys.path.insert(0, str(REPO))
    from tests.servers import serve_in_thread

    with serve_in_thread(app) as url:
        yield url, env


@contextlib.contextmanager
def mem0_standin(work: Path) -> Iterator[tuple[str, dict[str, str]]]:
    sys.path.insert(0, str(REPO))
    from tests.standins.mem0_oss import create_app

    # As the suite runs it (tests/workflows/test_public_api_targets.py): an ordinary
    # user's key, and the server's admin key for the admin-only deletions.
    keys = {"api_key": "m0sk_bench-user-key", "admin_api_key": "bench-admin-key"}
    app = create_app(work / "vectors.db", work / "history.db", **keys)
    env = {"MEM0_API_KEY": keys["api_key"], "MEM0_ADMIN_API_KEY": keys["admin_api_key"]}
    with _in_thread(app, env) as served:
        yield served


@contextlib.contextmanager
def zep_standin(work: Path) -> Iterator[tuple[str, dict[str, str]]]:
    sys.path.insert(0, str(REPO))
    from tests.standins.zep import create_app

    with _in_thread(create_app("bench-zep-key"), {"ZEP_API_KEY": "bench-zep-key"}) as served:
        yield served


@contextlib.contextmanager
def letta_standin(work: Path) -> Iterator[tuple[str, dict[str, str]]]:
    sys.path.insert(0, str(REPO))
    from tests.standins.letta import create_app

    with _in_thread(create_app("bench-letta-key"), {"LETTA_API_KEY": "bench-letta-key"}) as s:
        yield s


def real(kind: str, env_file: str) -> Callable[[Path], Any]:
    @contextlib.contextmanager
    def serve(work: Path) -> Iterator[tuple[str, dict[str, str]]]:
        port = free_port()
        data = REPO / ".memlife" / kind if kind == "letta" else work / kind
        log = (work / f"{kind}-serve.log").open("ab")
        launched = time.time()
        server = start_target(kind, port, data, log)
        try:
            started = time.monotonic()
            if not wait_listening(port, server, START_SECONDS):
                raise SystemExit(f"bench target-init: {kind} did not start (log: {log.name})")
            say(f"{kind} up in {time.monotonic() - started:.0f} s on port {port}")
            # Letta's server listens before `serve` writes its key: wait for this start's.
            env_path = data / env_file
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and (
                not env_path.exists() or env_path.stat().st_mtime < launched
            ):
                time.sleep(0.5)
            env = {}
            for line in (data / env_file).read_text(encoding="utf-8").splitlines():
                name, _, value = line.removeprefix("export ").partition("=")
                if name and value:
                    env[name.strip()] = value.strip()
            yield f"http://127.0.0.1:{port}", env
        finally:
            # Its children too (FalkorDB under graphiti's serve outlived a SIGKILLed parent
            # here), each by its PID.
            children = descendants(server.pid)
            stop_process(server, grace=30)
            for pid in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            log.close()

    return serve


def descendants(pid: int) -> list[int]:
    """The PIDs of a process's children and theirs, read from /proc (Linux)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent:
                found.append(child)
                frontier.append(child)
    return found


STANDINS = [
    Case(
        "Mem0 OSS REST server (stand-in)",
        "mem0-oss.yaml",
        mem0_standin,
        # DELETE /memories is admin-only: an ordinary user's key gets 403 (with the admin
        # key as MEM0_API_KEY, as a stock server's dashboard key is, no edit at all).
        [("operations.delete_tenant.headers", {"X-API-Key": {"env": "MEM0_ADMIN_API_KEY"}})],
        "the admin key for DELETE /memories (403 with a user's key)",
    ),
    Case(
        "Zep v4 (stand-in)",
        "zep.yaml",
        zep_standin,
        # The document shows an `authorization` header, not its scheme.
        [("headers.Authorization.prefix", "Api-Key ")],
        "`Api-Key ` for `Bearer ` (the document shows no scheme)",
    ),
    Case("Letta 0.16.8 (stand-in)", "letta.yaml", letta_standin),
]
REAL = {
    "mem0": Case("Mem0 2.x, memlife's mem0 target (real)", "mem0.yaml", real("mem0", "mem0.env")),
    "graphiti": Case(
        "Graphiti 0.31, memlife's graphiti target (real)",
        "graphiti.yaml",
        real("graphiti", "graphiti.env"),
    ),
    "letta": Case(
        "Letta server 0.16.8 (real)",
        "letta.yaml",
        real("letta", "letta.env"),
        # Letta requires an agent's model and embedding, as its server names them
        # (GET /v1/models/: the scripted model behind an OpenAI base URL).
        [
            ("operations.register.json.model", "openai-proxy/memlife-scripted"),
            ("operations.register.json.embedding", "openai/text-embedding-3-small"),
            # The scripted model answers the agent the shipped file makes (its tools and
            # blocks), not any agent: what a real model would not need.
            (
                "operations.register.json.tools",
                ["archival_memory_insert", "archival_memory_search"],
            ),
            (
                "operations.register.json.memory_blocks",
                [
                    {"label": "human", "value": "A user of this assistant."},
                    {
                        "label": "persona",
                        "value": "A helpful assistant that remembers what the user says.",
                    },
                ],
            ),
        ],
        "the agent's model and embedding handles (400 without a model); its tools and "
        "blocks, for the scripted model",
    ),
}


def say(message: str) -> None:
    print(f"bench target-init: {message}", file=sys.stderr, flush=True)


def apply(document: dict[str, Any], edits: list[Edit]) -> dict[str, Any]:
    for path, value in edits:
        *parents, last = path.split(".")
        node: Any = document
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return document


def leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        found: dict[str, Any] = {}
        for key, value in node.items():
            found |= leaves(value, f"{prefix}.{key}" if prefix else str(key))
        return found
    if isinstance(node, list) and node and isinstance(node[0], dict):
        found = {}
        for index, value in enumerate(node):
            found |= leaves(value, f"{prefix}.{index}")
        return found
    return {prefix: node}


def differing(proposed: dict[str, Any], shipped: dict[str, Any]) -> tuple[int, int]:
    """Fields that differ between the two files over the operations (and headers) both
    have; and how many operations the shipped file has that the proposal lacks."""
    ours, theirs = proposed.get("operations", {}), shipped.get("operations", {})
    both = [name for name in COMPARED if name in ours and name in theirs]
    a = leaves({"headers": proposed.get("headers", {}), **{n: ours[n] for n in both}})
    b = leaves({"headers": shipped.get("headers", {}), **{n: theirs[n] for n in both}})
    fields = sum(1 for key in a.keys() | b.keys() if a.get(key) != b.get(key))
    lacking = sum(1 for name in COMPARED if name in theirs and name not in ours)
    return fields, lacking


async def _check(document: dict[str, Any]) -> list[str]:
    from memlife.targets import http
    from memlife.targets.check import check_target

    try:
        result = await check_target(parse_target(document, "proposed"))
        return [f"{r.operation}: {r.detail}" for r in result.misconfigured]
    finally:
        await http.close_clients()


def measure(case: Case, work: Path) -> dict[str, Any]:
    with case.serve(work) as (url, env):
        os.environ.update(env)
        started = time.monotonic()
        # A server that guards its document (Letta's password) is sent its key, as
        # `memlife target init --header` would.
        headers = (
            {"Authorization": f"Bearer {env['LETTA_API_KEY']}"} if "LETTA_API_KEY" in env else {}
        )
        response = httpx.get(f"{url}/openapi.json", timeout=30, headers=headers)
        response.raise_for_status()
        document = response.json()
        (work / "openapi.json").write_text(json.dumps(document, indent=1), encoding="utf-8")
        proposal: Proposal = propose(
            document,
            f"{url}/openapi.json",
            document_url=url + "/",
            fetched_with={name: "Bearer " for name in headers},
        )
        text = proposal.render()
        seconds = time.monotonic() - started
        (work / f"{proposal.name}.yaml").write_text(text, encoding="utf-8")
        proposed = yaml.safe_load(text)
        failing = asyncio.run(_check(proposed))
        edited = apply(yaml.safe_load(text), case.edits)
        still = asyncio.run(_check(edited)) if case.edits else failing
    shipped = yaml.safe_load((REPO / "scenarios" / "targets" / case.shipped).read_text())
    fields, lacking = differing(proposed, shipped)
    live = [g.role for g in proposal.operations if g.live]
    commented = [g.role for g in proposal.operations if not g.live]
    return {
        "service": case.service,
        "operations": len(paths(document)),
        "proposed": ", ".join(live)
        + (f" (+ {', '.join(commented)} commented)" if commented else ""),
        "as proposed": "passes" if not failing else f"{len(failing)} failing",
        "failing": failing,
        "edits": len(case.edits) if not still else None,
        "why": case.why,
        "still": still,
        "shipped": case.shipped,
        "differ": fields,
        "lacking": lacking,
        "seconds": seconds,
    }


def paths(document: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (method, path)
        for path, item in (document.get("paths") or {}).items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    ]


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| service | operations in its document | proposed | `target check` as proposed | "
        "edits to pass (fields) | fields unlike the shipped file (operations it lacks) |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        edits = "did not pass" if row["edits"] is None else str(row["edits"])
        if row["why"]:
            edits += f": {row['why']}"
        lines.append(
            f"| {row['service']} | {row['operations']} | {row['proposed']} | "
            f"{row['as proposed']} | {edits} | {row['differ']} vs `{row['shipped']}` "
            f"({row['lacking']}) |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="./scripts/bench target-init", description=__doc__)
    parser.add_argument(
        "--real",
        default="",
        metavar="KINDS",
        help="also the bundled real servers, comma-separated: mem0, graphiti, letta",
    )
    args = parser.parse_args(argv)
    cases = list(STANDINS)
    for kind in filter(None, args.real.split(",")):
        if kind not in REAL:
            parser.error(f"--real: {kind!r} is not one of {', '.join(REAL)}")
        cases.append(REAL[kind])
    rows = []
    # Kept for reading: each service's document and proposal.
    kept = REPO / ".memlife" / "bench-target-init"
    say(f"documents and proposals in {kept}")
    with contextlib.nullcontext():
        for case in cases:
            work = kept / re.sub(r"[^a-z0-9]+", "-", case.service.lower()).strip("-")
            work.mkdir(parents=True, exist_ok=True)
            row = measure(case, work)
            for line in row["failing"]:
                say(f"{case.service}, as proposed: {line}")
            for line in row["still"] if case.edits else []:
                say(f"{case.service}, after the edits: {line}")
            rows.append(row)
    print(table(rows))
    return 0 if all(row["edits"] is not None for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
