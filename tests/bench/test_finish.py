"""bench/finish.py: a recorded run summarized with its value index held and dropped, each
in a process of its own: the same summary both ways, so that their peaks compare the same
work, and a run the recorder does not hold is one clear error."""

from __future__ import annotations

import pytest

from bench.finish import main, measure
from memlife.recorder.values import _foreign_cache
from tests.reliability.helpers import recorded_nightly_values


def test_both_orders_summarize_the_same_run(db_url: str) -> None:
    run_id = recorded_nightly_values(2, "bench-finish")
    held, dropped = measure("index-held", run_id), measure("index-dropped", run_id)
    assert held["cases"] == dropped["cases"] == 0  # started, not yet probed
    for figures in (held, dropped):
        # The kernel syncs each thread's RSS counters into VmRSS and VmHWM lazily (up to 64
        # pages a thread): a peak read later may lag a current read by a fraction of a MB.
        assert figures["peak_mb"] + 1 >= figures["rss_indexed_mb"] > 0
    assert not any(key[1] == run_id for key in _foreign_cache)  # the second one dropped it


def test_the_command_measures_a_recorder_file_side_by_side(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded_nightly_values(1, "bench-finish-file")
    assert main([db_url.removeprefix("sqlite:///")]) == 0
    out = capsys.readouterr().out
    assert "index-held: 0 cases summarized; RSS " in out
    assert "index-dropped: 0 cases summarized; RSS " in out
    assert "peak, index dropped first: " in out


def test_a_run_the_recorder_does_not_hold_is_one_clear_error(db_url: str) -> None:
    with pytest.raises(SystemExit, match=r"^bench finish: no run 'nothing-here' in sqlite"):
        main(["nothing-here"])
