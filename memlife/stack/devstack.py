"""`memlife dev`: a long-running local stack — the Temporal dev server (persistent, Web UI,
memlife's search attributes), memlife's codec endpoint for that UI (every payload, the
compressed ones too, reads as JSON), the reference target and a worker — until Ctrl-C —
and, where the machine has a CPU for it (worker_process.target_worker_helps), a worker
process of their own for the target requests of the runs that use the stack.

Other commands find it without flags: `.memlife/dev.json` says what runs where (the
server listens on 127.0.0.1:7233 unless --port says otherwise), and they connect there
when TEMPORAL_ADDRESS is not set (connection.connect_to_stack).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from dataclasses import asdict, dataclass
from pathlib import Path

from memlife.errors import UnreachableError
from memlife.stack import embedded
from memlife.stack.connection import STACK_FILE, ensure_search_attributes
from memlife.stack.processes import LOOPBACK


@dataclass
class StackInfo:
    temporal_address: str
    web_ui: str | None
    namespace: str
    task_queue: str
    reference_target: str
    reference_faults: list[str]
    recorder: str
    pids: dict[str, int]
    codec_endpoint: str | None = None  # stacks started before it was there: none
    # The task queue its target-request worker polls (pids["target_worker"]); runs that
    # use the stack send their target requests there. None: no such worker.
    target_task_queue: str | None = None


def read_stack(state_dir: Path) -> StackInfo | None:
    path = state_dir / STACK_FILE
    try:
        return StackInfo(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


async def serve(
    state_dir: Path,
    *,
    port: int,
    ui_port: int,
    target_port: int,
    faults: list[str],
    task_queue: str,
    codec_port: int | None = None,
    target_worker: bool = False,
    ready: asyncio.Event | None = None,
    stop: asyncio.Event | None = None,
) -> StackInfo:
    """Run the stack until `stop` is set (or SIGINT/SIGTERM); everything is stopped by PID
    (the codec endpoint, a thread of this process, with it). With `target_worker`, a
    `memlife worker --serve activities` process on worker_process.target_task_queue(
    task_queue) too, polling before the stack file is written."""
    from memlife import recorder
    from memlife.stack import DEFAULT_CODEC_PORT
    from memlife.stack.codec_server import codec_server, ui_origins
    from memlife.stack.worker_process import target_task_queue, worker_process

    for name, wanted in (("--port", port), ("--target-port", target_port)):
        if embedded.free_port(wanted) != wanted:  # the wanted port or none
            raise UnreachableError(
                f"command line: {name}: 127.0.0.1:{wanted} is already in use (another "
                f"`memlife dev`?); "
                f"stop it, or pick another port with {name}"
            )
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        # Not possible off the main thread (tests pass their own `stop`).
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop.set)
    # The UI is told where the endpoint will be; the endpoint, once the UI's port is
    # known, answers that origin only.
    codec_port = embedded.free_port(codec_port or DEFAULT_CODEC_PORT)
    server = embedded.start_dev_server(
        state_dir,
        port=port,
        ui_port=ui_port,
        codec_endpoint=f"http://{LOOPBACK}:{codec_port}" if ui_port else None,
    )
    stack_file = state_dir / STACK_FILE
    try:
        client = await embedded.wait_for_client(server)
        missing = await ensure_search_attributes(client)
        if missing:
            raise UnreachableError(
                "Temporal dev server: refused memlife's search attributes ("
                + ", ".join(missing)
                + f"); see {server.log_path}"
            )
        codec = (
            codec_server(ui_origins(int(server.web_ui.rsplit(":", 1)[1])), codec_port)
            if server.web_ui
            else contextlib.nullcontext(None)
        )
        with codec as endpoint:
            target = embedded.start_reference_target(
                state_dir, faults, port=target_port, db_path=state_dir / "dev-reference.db"
            )
            try:
                async with contextlib.AsyncExitStack() as workers:
                    pids = {
                        "temporal": server.process.pid,
                        "reference_target": target.process.pid,
                        "worker": os.getpid(),
                    }
                    target_queue, target_log = None, None
                    if target_worker:
                        # Started again if it dies; stopped by its PID when the block ends.
                        child = await workers.enter_async_context(
                            worker_process(
                                target_task_queue(task_queue),
                                state_dir,
                                db_url=recorder.database_url(),
                                address=server.address,
                                say=lambda line: print(f"memlife dev: {line}", flush=True),
                            )
                        )
                        assert child.pid is not None
                        pids["target_worker"] = child.pid
                        target_queue, target_log = child.task_queue, child.log_path
                    info = StackInfo(
                        temporal_address=server.address,
                        web_ui=server.web_ui,
                        namespace=client.namespace,
                        task_queue=task_queue,
                        reference_target=target.base_url,
                        reference_faults=list(faults),
                        recorder=recorder.database_url(),
                        pids=pids,
                        codec_endpoint=endpoint.endpoint if endpoint else None,
                        target_task_queue=target_queue,
                    )
                    stack_file.write_text(json.dumps(asdict(info), indent=2) + "\n")
                    async with embedded.running_worker(client, task_queue):
                        if ready is not None:
                            ready.set()
                        _announce(info, target_log)
                        await stop.wait()
                        print(
                            "memlife dev: stopping (worker, "
                            + ("target worker, " if target_queue else "")
                            + "reference target, codec endpoint, Temporal)…",
                            flush=True,
                        )
            finally:
                stack_file.unlink(missing_ok=True)
                target.stop()
    finally:
        server.stop()
    return info


def target_requests(info: StackInfo) -> str:
    """Where the runs that use the stack send their target requests, to follow "send
    their target requests"."""
    if info.target_task_queue is None:
        return f"with the rest of their work (task queue {info.task_queue})"
    pid = info.pids.get("target_worker")
    worker = f"its target worker, pid {pid}" if pid else "its target worker"
    return f"to task queue {info.target_task_queue} ({worker})"


def _announce(info: StackInfo, target_log: Path | None = None) -> None:
    from memlife.stack.commands import command

    faults = ", ".join(info.reference_faults) or "none"
    memlife = command()
    target_worker = (
        f"  target worker   task queue {info.target_task_queue} (pid "
        f"{info.pids.get('target_worker')}): the target requests of the runs that use "
        f"this stack (its log: {target_log})\n"
        if info.target_task_queue
        else "  target worker   none: runs that use this stack send their target requests "
        f"{target_requests(info)}\n"
    )
    print(
        "memlife dev: the local stack is up (Ctrl-C stops it)\n"
        f"  Temporal        {info.temporal_address}  namespace {info.namespace}\n"
        f"  Web UI          {info.web_ui or '(headless)'}\n"
        f"  codec endpoint  {info.codec_endpoint or '(none)'}  (the Web UI reads every "
        "payload, compressed ones too, as JSON)\n"
        f"  worker          task queue {info.task_queue} (pid {info.pids['worker']})\n"
        f"{target_worker}"
        f"  reference       {info.reference_target}  faults: {faults}\n"
        f"  recorder        {info.recorder}\n"
        "try:\n"
        f"  {memlife} schedule create nightly --scenario scenarios/lifecycle-nightly.yaml "
        "--target scenarios/targets/reference.yaml --cron '0 2 * * *'\n"
        f"  {memlife} schedule trigger nightly\n"
        f"  {memlife} status\n",
        flush=True,
    )
