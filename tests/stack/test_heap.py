"""The collector's tuning while a worker serves (memlife/stack/heap.py): it applies for the
block, overlapping workers share it, and the process is left as it was found."""

from __future__ import annotations

import gc

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
        skip_env: WorkflowEnvironment) -> None:
    before = gc.get_threshold()
    async with embedded.running_worker(skip_env.client, "heap-test"):
        assert gc.get_threshold()[0] == heap.YOUNG_GENERATION
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
