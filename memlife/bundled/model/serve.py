"""Run the scripted model: in this process for tests and bundled stacks
(`scripted_model()`), or in the foreground (`memlife model serve`)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from memlife.bundled.model import graphiti, letta, mem0
from memlife.bundled.model.app import Call, CallLog, create_app
from memlife.bundled.model.script import Rule
from memlife.stack.processes import LOOPBACK

# Every stack's prompts the model knows; one rule per kind of prompt.
RULES: tuple[Rule, ...] = (*mem0.RULES, *graphiti.RULES, *letta.RULES)
START_SECONDS = 20


class ModelUnavailable(RuntimeError):
    """The scripted model's server did not start."""


@dataclass
class ScriptedModel:
    """A running scripted model: point an OpenAI client at `base_url` (any API key)."""

    base_url: str
    log: CallLog

    def calls(self) -> list[Call]:
        return self.log.all()


def summary(calls: Iterable[Call]) -> list[tuple[str, int, float]]:
    """(kind, count, mean milliseconds) per kind of call, most frequent first."""
    counts: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for call in calls:
        counts[call.kind] += 1
        total[call.kind] += call.milliseconds
    return [(kind, n, total[kind] / n) for kind, n in counts.most_common()]


def bound_socket(host: str = LOOPBACK, port: int = 0) -> socket.socket:
    """A listening-ready socket on `host:port` (0: a free port, held from here on, so no
    other process can take it between choosing and listening)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


@contextlib.contextmanager
def scripted_model(
    rules: Iterable[Rule] = RULES, port: int = 0, **uvicorn_config: Any
) -> Iterator[ScriptedModel]:
    """The scripted model served on a loopback port in a thread of this process."""
    import uvicorn

    log = CallLog()
    sock = bound_socket(port=port)
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(rules, log), log_level="warning", lifespan="off", **uvicorn_config
        )
    )
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="scripted-model", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + START_SECONDS
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        if not server.started:
            raise ModelUnavailable(
                f"the scripted model did not start on {LOOPBACK}:{sock.getsockname()[1]}"
            )
        yield ScriptedModel(f"http://{LOOPBACK}:{sock.getsockname()[1]}/v1", log)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
