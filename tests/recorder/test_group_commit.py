"""memlife/recorder/database.py: writes made by many threads at once share transactions,
and each still returns only once its own rows are committed, or fails alone."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import IntegrityError

from memlife.recorder import RunExperimentRow
from memlife.recorder.database import _group_commit, close_engine, engine_for, merge_values

THREADS = 24


def _rows(url: str) -> dict[str, str]:
    with engine_for(url).connect() as connection:
        rows = connection.execute(text("select run_id, experiment from run_experiments"))
        return {run_id: experiment for run_id, experiment in rows}


def _at_once(write: Callable[[int], None]) -> dict[int, BaseException]:
    """`write(i)` in THREADS threads released together; what each raised."""
    start, errors = threading.Barrier(THREADS), {}

    def run(index: int) -> None:
        start.wait()
        try:
            write(index)
        except BaseException as error:
            errors[index] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return errors


def test_every_thread_finds_its_rows_committed_when_its_write_returns(db_url: str) -> None:
    seen: dict[int, bool] = {}
    commits: list[object] = []
    queue = _group_commit(engine_for(db_url))

    def commit(connection: object) -> None:
        # The first transaction is held until two writes wait behind it, so that writes
        # surely meet, however a loaded machine schedules the threads (24 writes once
        # each found the one before committed already, and made 24 transactions).
        if not commits:
            deadline = time.monotonic() + 30
            while len(queue._queued) < 2 and time.monotonic() < deadline:
                time.sleep(0.005)
        commits.append(connection)

    event.listen(engine_for(db_url), "commit", commit)

    def write(index: int) -> None:
        merge_values({RunExperimentRow: [{"run_id": f"run-{index}", "experiment": "e"}]})
        seen[index] = f"run-{index}" in _rows(db_url)  # committed, readable by another session

    assert _at_once(write) == {}
    assert seen == dict.fromkeys(range(THREADS), True)
    assert _rows(db_url) == {f"run-{index}": "e" for index in range(THREADS)}
    assert len(commits) < THREADS  # writes that met shared a transaction


def test_the_same_row_written_by_many_threads_is_one_row(db_url: str) -> None:
    def write(index: int) -> None:
        merge_values({RunExperimentRow: [{"run_id": "shared", "experiment": f"e{index}"}]})

    assert _at_once(write) == {}
    rows = _rows(db_url)
    assert list(rows) == ["shared"] and rows["shared"].startswith("e")


def test_a_write_that_cannot_be_stored_fails_alone(db_url: str) -> None:
    bad = 5

    def write(index: int) -> None:
        value: Any = None if index == bad else "e"  # experiment is NOT NULL
        merge_values({RunExperimentRow: [{"run_id": f"run-{index}", "experiment": value}]})

    errors = _at_once(write)
    assert list(errors) == [bad] and isinstance(errors[bad], IntegrityError)
    assert _rows(db_url) == {f"run-{index}": "e" for index in range(THREADS) if index != bad}


def test_a_write_alone_raises_what_the_database_said(db_url: str) -> None:
    with pytest.raises(IntegrityError):
        merge_values({RunExperimentRow: [{"run_id": "r", "experiment": None}]})
    merge_values({RunExperimentRow: [{"run_id": "r", "experiment": "after"}]})
    assert _rows(db_url) == {"r": "after"}


def test_a_closed_engine_lets_go_and_the_next_write_opens_another(db_url: str) -> None:
    merge_values({RunExperimentRow: [{"run_id": "before", "experiment": "e"}]})
    first = engine_for(db_url)
    close_engine(db_url)
    merge_values({RunExperimentRow: [{"run_id": "after", "experiment": "e"}]})
    assert engine_for(db_url) is not first
    assert _rows(db_url) == {"before": "e", "after": "e"}
