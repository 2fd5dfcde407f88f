"""The collector's tuning while a worker serves (memlife/stack/heap.py): it applies for the
block, overlapping workers share it, and the process is left as it was found."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest
from temporalio.testing import WorkflowEnvironment

from memlife.stack import embedded, heap


@pytest.fixture(autouse=True)
def _untuned() -> None:
    assert gc.get_freeze_count() == 0, "another test left objects frozen"


def test_a_serving_worker_freezes_what_exists_and_collects_the_young_less_often() -> None:
    before = gc.get_threshold()
    existing = object.__new__(type("Existing", (), {}))  # a tracked object made before
    with heap.serving():
        assert gc.get_freeze_count() > 0
        assert not any(obj is existing for obj in gc.get_objects())  # out of sight
        assert gc.get_threshold() == (heap.YOUNG_GENERATION, *before[1:])
        made_while_serving = [[] for _ in range(3)]
        assert any(obj is made_while_serving for obj in gc.get_objects())  # still traced
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    assert any(obj is existing for obj in gc.get_objects())


def test_overlapping_workers_keep_the_tuning_until_the_last_one_stops() -> None:
    before = gc.get_threshold()
    first, second = heap.serving(), heap.serving()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold()[0] == heap.YOUNG_GENERATION
    assert gc.get_freeze_count() > 0
    second.__exit__(None, None, None)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_a_worker_that_fails_still_leaves_the_collector_as_it_was() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError, match="worker failed"), heap.serving():
        raise RuntimeError("worker failed")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_garbage_cycles_made_while_serving_are_still_collected() -> None:
    collected = []

    class Node:
        def __del__(self) -> None:
            collected.append(True)

    with heap.serving():
        node = Node()
        node.self = node  # type: ignore[attr-defined]  # a cycle only the collector frees
        del node
        gc.collect()
        assert collected == [True]


async def test_the_worker_memlife_run_starts_serves_tuned_and_stops_untuned(
    skip_env: WorkflowEnvironment,
) -> None:
    before = gc.get_threshold()
    async with embedded.running_worker(skip_env.client, "heap-test"):
        assert gc.get_threshold()[0] == heap.YOUNG_GENERATION
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


# Eight threads alive at once, each allocating from malloc (4 KiB: past CPython's
# small-object allocator, below glibc's mmap threshold); then glibc's own count of arenas.
_ARENAS = """
import ctypes, sys, threading
from memlife.stack import heap
applied = heap.limit_malloc_arenas() if sys.argv[1] == "limit" else None
barrier, held = threading.Barrier(9), []
def allocate():
    held.append([bytearray(4096) for _ in range(64)])
    barrier.wait()
threads = [threading.Thread(target=allocate) for _ in range(8)]
for thread in threads:
    thread.start()
barrier.wait()
libc = ctypes.CDLL(None)
libc.open_memstream.restype = ctypes.c_void_p
libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_size_t)]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
text, size = ctypes.c_char_p(), ctypes.c_size_t()
stream = libc.open_memstream(ctypes.byref(text), ctypes.byref(size))
libc.malloc_info(0, stream)
libc.fclose(stream)
print(applied, text.value.decode().count("<heap nr="))
for thread in threads:
    thread.join()
"""


def _arenas(mode: str, **env: str) -> tuple[str, int]:
    environment = {key: value for key, value in os.environ.items() if key != "MALLOC_ARENA_MAX"}
    done = subprocess.run(
        [sys.executable, "-c", _ARENAS, mode],
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    applied, arenas = done.stdout.split()
    return applied, int(arenas)


def test_a_worker_process_keeps_to_two_malloc_arenas_however_many_threads_allocate() -> None:
    # The main thread's, and one for each thread (glibc allows eight per core).
    assert _arenas("default") == ("None", min(9, 8 * (os.cpu_count() or 1)))
    assert _arenas("limit") == ("True", heap.MALLOC_ARENAS)


def test_an_operators_malloc_arena_max_is_left_as_set() -> None:
    assert _arenas("limit", MALLOC_ARENA_MAX="4") == ("False", 4)
