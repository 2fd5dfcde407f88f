"""memlife/targets/http.py: the trace ids each target request carries are drawn afresh in a
forked process, as `random`'s own generator is, so that processes forked from one that had
imported memlife (a pre-forking server, tests/forked.py's fork server) never send the same."""

from __future__ import annotations

import os

from memlife.rules.operations import Operation
from memlife.targets import http


def _traceparent() -> str:
    with http._request_span(Operation(method="GET", path="/health")) as sent:
        return sent


def test_a_forked_child_draws_trace_ids_of_its_own() -> None:
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: its first id, then out without pytest's teardown
        os.write(write, _traceparent().encode())
        os._exit(0)
    os.close(write)
    in_child = os.read(read, 100).decode()
    os.close(read)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    in_parent = _traceparent()
    assert in_child.startswith("00-") and in_parent.startswith("00-")
    assert in_child.split("-")[1] != in_parent.split("-")[1]
